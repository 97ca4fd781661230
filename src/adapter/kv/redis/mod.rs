//! Redis adapter: the studies' row mappings on the `redis` crate, for Redis and for LedisDB (`ledis://`, a Redis-protocol server
//! on LevelDB); what differs between the two is in [`dialect`].
//!
//! A two-column table without secondary indexes (`pairs`) is stored as plain string keys,
//! one per row, with SET/GET/MSET/MGET (see [`strings`]; the insert-find and in-memory
//! studies). Every other table uses the kv-vs-relational study's mapping (seed 000/001):
//! every row is a hash `dbsweep:<table><pk>` (e.g. `dbsweep:kv17`)
//! with one field per column, values as text (Decimal `12.34`, Date ISO `1998-12-01`, Null
//! = field absent). A sorted set `dbsweep:<table>:pk` (score = member = pk) serves Scan and
//! `count_rows`; each indexed column has a sorted set `dbsweep:<table>:idx:<col>` with
//! score = the column value and member = pk, so one pk never has two index entries. Range
//! COUNT is `ZCOUNT`; range MAX is a server-side Lua script; Update is a Lua script that
//! writes only when the row exists. Insert (DEL + HSET + ZADDs) and Delete (DEL + ZREMs:
//! index members are pks, so no read of the old values is needed) are one MULTI/EXEC each.
//! TPC-H Q1 and Q6 are read-only Lua scripts over the lineitem hashes (see [`tpch`]); they
//! block the server while they run, as in the study. Q3 and Q14 (joins) are not offered.
//! The server's version and settings are read by `prepare`; `info()` shows them from then.
//! Setup steps use the crate's multiplexed connection; each client of a run has a
//! connection of its own (see [`direct`]), or the crate's cluster client for a cluster.
//!
//! URL: `redis://[[user]:password@]host:port/DB[?batch=multi|pipeline][&cluster=true]`; the password comes
//! from the URL (userinfo or `?password=`), else from `REDISCLI_AUTH` (see [`password`]). Batches go in one MULTI/EXEC by default (as the
//! study did) or one plain pipeline with `batch=pipeline`.
//!
//! Redis Cluster (`cluster=true`, DB 0, the URL names any one node; see [`cluster`]): a
//! row's commands (its hash, the key set and the index sets, in one MULTI/EXEC) and the
//! scripts that read a range's rows must stay in one slot, so a hash-mapped table's keys
//! carry the table as a hash tag (`dbsweep:{kv}17`, `dbsweep:{kv}:pk`): each such table
//! lives on one master, and the cluster spreads tables, not one table's rows. Plain string
//! keys (`pairs`) carry no tag and spread over every master; their batches are one MSET,
//! MGET or DEL that the cluster client splits by slot, and a batch that is not (updates)
//! runs op by op.
//!
//! LedisDB (`ledis://host:port/DB`, DB 0-15) has no MULTI/EXEC: what Redis does in one
//! transaction goes in one pipeline, not atomically, and batches are pipelines; rows are
//! written with HMSET and removed with HCLEAR; there is no engine memory figure. Every op
//! kind still runs, but its measured ops send no Lua scripts (each leaks a slot of the
//! server's shared Lua stack; see [`dialect`]): an update is `HLEN` and the write in one
//! pipeline, and a range MAX reads the range's rows.
//!
//! Safety: only keys under the namespace's prefix (`dbsweep:`, or `dbsweep_NAME:` with
//! `--namespace NAME`) in the URL's DB index are touched, and only once the marker key
//! `<prefix>owner` (= "dbsweep") says they are ours. The run's lease record is the key
//! `<prefix>lease` (taken with `SETNX`, renewed and removed by a compare-and-swap Lua
//! script); clearing the namespace leaves it to the lease protocol. This module must never
//! send FLUSHDB or FLUSHALL, and must never show the password.

use crate::adapter::declaration::{CapabilitySet, Declaration, Needs, OpSet, TargetInfoCell, UrlOptions};
use crate::adapter::{Execution, OpenContext, TargetUrl};
use crate::base::durability::{self, Durability};
use crate::base::op::{ErrorClass, OpError, QueryId};
use crate::base::table::TableDef;
use crate::error::{Error, Result};
use crate::servers::ServerKind;
use cluster::Conn;
pub use connection::RedisConnection;
use connection::{MAX_LUA, UPDATE_LUA};
use dialect::Dialect;
use lease::LEASE_KEY;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, RedisError, Script};
use rows::key_of;
pub(crate) use rows::value_text;
use rows::{TableKeys, describe_mappings};
use std::sync::{Arc, RwLock};
use std::time::Duration;

mod cluster;
mod connection;
mod custom;
mod dialect;
mod direct;
mod lease;
mod replies;
mod rows;
pub(crate) mod strings;
mod target;
mod tpch;

/// The marker key (after the namespace's prefix) that proves the prefixed keys in this
/// DB are dbsweep's own, and its value.
const MARKER_KEY: &str = "owner";

const MARKER_VALUE: &str = "dbsweep";

/// The password for a Redis-protocol URL: the URL's (userinfo or `?password=`), else
/// `REDISCLI_AUTH`.
pub fn password(url: &TargetUrl) -> Option<String> {
    url.password_or_env("REDISCLI_AUTH")
}

/// What a refusal with this error code and text says about the server, with the fix, when
/// it is the server's state rather than the URL: out of client slots, loading its data, or
/// running a script (a TPC-H query whose request timed out keeps running on the server, and
/// Redis answers everyone else `BUSY` until it ends).
fn server_busy(code: Option<&str>, text: &str) -> Option<&'static str> {
    if code == Some("LOADING") || text.contains("loading the dataset") {
        Some("is loading its dataset into memory; wait until it is done, then run again")
    } else if code == Some("BUSY") || text.starts_with("BUSY") {
        Some(
            "is busy running a script (e.g. a TPC-H query whose request timed out) and answers no one until it ends; \
             wait for it (or SCRIPT KILL it), then run again, with a longer --timeout for queries",
        )
    } else if text.contains("max number of clients") {
        Some("has reached maxclients; use fewer --clients, or raise maxclients on the server")
    } else {
        None
    }
}

/// Rows per round trip when bulk loading.
const LOAD_CHUNK: usize = 1000;

/// Rows per pipeline of a fetch-all.
const FETCH_ALL_CHUNK: usize = 1000;

/// How `execute_batch` groups a batch's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchMode {
    /// One MULTI/EXEC transaction per batch (the study's choice).
    Multi,
    /// One plain pipeline per batch: one round trip, no atomicity.
    Pipeline,
}

/// What the Redis mapping runs, on Redis and on LedisDB alike (and on any server that
/// speaks Redis's protocol, see `Redis::speaking_redis`).
pub const CAPABILITIES: CapabilitySet = CapabilitySet {
    ops: OpSet::NO_SQL.with(crate::base::op::OpKind::Custom),
    queries: &[QueryId::TpchQ1, QueryId::TpchQ6],
    native_batch: true,
    secondary_indexes: true,
    statements: Some(crate::base::custom::Family::Redis),
};

pub const REDIS: Declaration = Declaration {
    system: "redis",
    url: "redis://",
    description: "Redis: a hash per row, sorted sets for keys and indexes, Lua for MAX (?batch=multi|pipeline); two-column pairs tables as plain string keys (SET/MGET/MSET)",
    needs: Needs::Server(ServerKind::Redis),
    schemes: &["redis"],
    options: UrlOptions::Only(&["cluster", "batch"]),
    several_hosts: false,
    capabilities: CAPABILITIES,
    open: Some(|name, url, ctx| Ok(Arc::new(Redis::new(name, url, ctx)?))),
};

pub const LEDISDB: Declaration = Declaration {
    system: "ledisdb",
    url: "ledis://",
    description: "LedisDB 0.5 (ledisdb at d35789ec47e6): Redis protocol on LevelDB, SSDB's design; Redis' mapping, batches as pipelines (no MULTI/EXEC)",
    needs: Needs::Server(ServerKind::LedisDb),
    schemes: &["ledis", "ledisdb"],
    // The same adapter (its dialect follows the scheme), options and capabilities.
    ..REDIS
};

/// How the target reaches its server.
#[expect(clippy::large_enum_variant, reason = "one per target: boxing would save nothing that matters")]
enum Client {
    Single(redis::Client),
    /// A Redis Cluster, through the node the URL names; `login` opens connections to each
    /// master (`host` stands for a master that does not know its own address).
    Cluster {
        client: redis::cluster::ClusterClient,
        login: RedisConnectionInfo,
        host: String,
    },
}

pub struct Redis {
    /// What is known before the server was asked, then what `prepare` learned from it.
    info: TargetInfoCell,
    client: Client,
    /// Redis or LedisDB.
    dialect: Dialect,
    /// `host:port/db` for messages (never the password).
    address: String,
    /// The namespace's key prefix, e.g. `dbsweep:`; every key starts with it.
    prefix: String,
    /// `<prefix>owner` and `<prefix>lease`.
    marker_key: String,
    lease_key: String,
    batch: BatchMode,
    tables: RwLock<Arc<Vec<TableKeys>>>,
    update_script: Arc<Script>,
    max_script: Arc<Script>,
    query_scripts: Arc<tpch::Scripts>,
}

/// The URL's `cluster=true|false` (Redis only, DB 0 only).
fn cluster_param(name: &str, url: &TargetUrl, dialect: Dialect, db: i64) -> Result<bool> {
    let label = dialect.label();
    Ok(match url.param("cluster").as_deref() {
        None | Some("false" | "no" | "0") => false,
        Some("true" | "yes" | "1") if dialect == Dialect::Redis && db == 0 => true,
        Some("true" | "yes" | "1") if dialect == Dialect::Redis => {
            return Err(Error::usage(format!("target '{name}': a Redis Cluster has only DB 0; write /0 with cluster=true")));
        }
        Some("true" | "yes" | "1") => {
            return Err(Error::usage(format!("target '{name}': {label} has no cluster mode; drop cluster=true")));
        }
        Some(other) => return Err(Error::usage(format!("target '{name}': cluster must be 'true' or 'false', got '{other}'"))),
    })
}

/// The URL's `batch=multi|pipeline` (`multi` where the dialect has MULTI/EXEC).
fn batch_param(name: &str, url: &TargetUrl, dialect: Dialect) -> Result<BatchMode> {
    let label = dialect.label();
    Ok(match url.param("batch").as_deref() {
        None | Some("multi") if dialect.has_multi() => BatchMode::Multi,
        None | Some("pipeline") => BatchMode::Pipeline,
        Some("multi") => {
            return Err(Error::usage(format!("target '{name}': {label} has no MULTI/EXEC; use batch=pipeline or leave batch out")));
        }
        Some(other) => {
            return Err(Error::usage(format!("target '{name}': batch must be 'multi' or 'pipeline', got '{other}'")));
        }
    })
}

impl Redis {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let dialect = Dialect::from_scheme(url.scheme())
            .ok_or_else(|| Error::usage(format!("target '{name}': '{}:' is not a Redis-protocol URL", url.scheme())))?;
        Self::open(dialect, dialect.declaration(), name, url, ctx)
    }

    /// A server that speaks Redis's protocol in full (MULTI/EXEC, Lua, `INFO server`'s
    /// `redis_version`), reported as the `system` it declares (with its capabilities): what
    /// a new Redis-protocol system's declaration opens (docs/adding-a-system.md).
    pub fn speaking_redis(system: &'static Declaration, name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        Self::open(Dialect::Redis, system, name, url, ctx)
    }

    fn open(dialect: Dialect, system: &'static Declaration, name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let label = dialect.label();
        let host = url.host().unwrap_or("127.0.0.1").to_string();
        let port = url.port().unwrap_or(6379);
        let prefix = ctx.namespace.key_prefix();
        let db = match url.database() {
            None => 0,
            Some(d) => d
                .parse::<i64>()
                .ok()
                .filter(|d| *d >= 0)
                .ok_or_else(|| Error::usage(format!("target '{name}': the {label} URL path must be a DB index like /0, got '/{d}'")))?,
        };
        let cluster = cluster_param(name, url, dialect, db)?;
        let batch = batch_param(name, url, dialect)?;
        let mut settings = RedisConnectionInfo::default().set_db(db);
        if let Some(user) = url.username() {
            settings = settings.set_username(user);
        }
        if let Some(password) = password(url) {
            settings = settings.set_password(password);
        }
        let bad_address = |e: RedisError| Error::usage(format!("target '{name}': bad {label} address: {e}"));
        let info =
            ConnectionAddr::Tcp(host.clone(), port).into_connection_info().map_err(bad_address)?.set_redis_settings(settings.clone());
        let client = if cluster {
            let client = redis::cluster::ClusterClientBuilder::new([info])
                .connection_timeout(Duration::from_secs(5))
                .build()
                .map_err(bad_address)?;
            Client::Cluster { client, login: settings, host: host.clone() }
        } else {
            Client::Single(redis::Client::open(info).map_err(bad_address)?)
        };

        let mut settings = dialect.fixed_settings();
        settings.insert("db".to_string(), db.to_string());
        settings.insert(
            "batch".to_string(),
            match batch {
                BatchMode::Multi => "multi (one MULTI/EXEC transaction per batch)",
                BatchMode::Pipeline => "pipeline (one pipeline per batch, not atomic)",
            }
            .to_string(),
        );
        let layout = if cluster {
            "hash per row; sorted sets for pk and indexed columns; a hash-mapped table's keys share the hash tag {<table>} (one slot per table)"
        } else {
            "hash per row; sorted sets for pk and indexed columns"
        };
        settings.insert("layout".to_string(), layout.to_string());
        if cluster {
            settings.insert("cluster".to_string(), "Redis Cluster (the redis crate's cluster client)".to_string());
        }
        let base = system.target_info(name, url, Execution::Async, "unknown (not yet connected)", settings);
        Ok(Redis {
            info: TargetInfoCell::new(base),
            client,
            dialect,
            address: format!("{host}:{port}/{db}"),
            marker_key: format!("{prefix}{MARKER_KEY}"),
            lease_key: format!("{prefix}{LEASE_KEY}"),
            prefix,
            batch,
            tables: RwLock::new(Arc::new(Vec::new())),
            update_script: Arc::new(Script::new(UPDATE_LUA)),
            max_script: Arc::new(Script::new(MAX_LUA)),
            query_scripts: Arc::new(tpch::Scripts::new()),
        })
    }

    fn name(&self) -> &str {
        &self.info.opened().name
    }

    fn is_cluster(&self) -> bool {
        matches!(self.client, Client::Cluster { .. })
    }

    /// A run failure naming the server's state and the fix, when `e` says the server is out
    /// of client slots or still loading its data (not the URL's fault).
    pub(super) fn busy_error(&self, e: &redis::RedisError) -> Option<Error> {
        let why = server_busy(e.code(), &e.to_string())?;
        Some(Error::runtime(format!("target '{}': {} at {} {why} ({e})", self.name(), self.dialect.label(), self.address)))
    }

    /// Opens a connection for setup steps; failures are `Error::Unreachable`, or a run
    /// failure when the server is full or loading.
    async fn admin(&self) -> Result<Conn> {
        let connected = match &self.client {
            Client::Single(client) => match self.dialect.segment_size() {
                None => client.get_multiplexed_async_connection_with_config(&admin_config()).await.map(Conn::Single),
                Some(segment) => multiplexed_with_segment(client.get_connection_info(), segment).await.map(Conn::Single),
            },
            Client::Cluster { client, .. } => client.get_async_connection().await.map(Conn::Cluster),
        };
        let mut conn = connected.map_err(|e| {
            if let Some(failure) = self.busy_error(&e) {
                return failure;
            }
            Error::unreachable(
                self.name(),
                format!(
                    "cannot connect to {} at {}: {e}; start the server or fix the URL (password: URL or REDISCLI_AUTH)",
                    self.dialect.label(),
                    self.address
                ),
            )
        })?;
        // A successful connect can still hide a refused login on some servers: ask once.
        redis::cmd("PING").query_async::<()>(&mut conn).await.map_err(|e| {
            if let Some(failure) = self.busy_error(&e) {
                return failure;
            }
            Error::unreachable(self.name(), format!("{} at {} refused us: {e}; check the password", self.dialect.label(), self.address))
        })?;
        Ok(conn)
    }

    /// Connections to every server that holds keys: the one server (a clone of `conn`), or
    /// each master of the cluster.
    async fn nodes(&self, conn: &mut Conn) -> Result<Vec<Conn>> {
        let Client::Cluster { login, host, .. } = &self.client else { return Ok(vec![conn.clone()]) };
        let text: String = redis::cmd("CLUSTER").arg("NODES").query_async(conn).await.map_err(|e| self.setup_error("CLUSTER NODES", e))?;
        let mut nodes = Vec::new();
        for (node_host, port) in cluster::masters(&text, host) {
            let info = ConnectionAddr::Tcp(node_host.clone(), port)
                .into_connection_info()
                .map_err(|e| self.setup_error("reading the cluster's nodes", e))?
                .set_redis_settings(login.clone());
            let node = redis::Client::open(info)
                .map_err(|e| self.setup_error("reading the cluster's nodes", e))?
                .get_multiplexed_async_connection_with_config(&admin_config())
                .await
                .map_err(|e| Error::unreachable(self.name(), format!("cannot connect to the cluster's master {node_host}:{port}: {e}")))?;
            nodes.push(Conn::Single(node));
        }
        if nodes.is_empty() {
            return Err(Error::runtime(format!("target '{}': the cluster at {} has no master serving slots", self.name(), self.address)));
        }
        Ok(nodes)
    }

    /// Asks the server (a cluster: its first master) for its version and the settings that
    /// change results, and describes the mappings `tables` use (capabilities and requests).
    async fn probe(&self, conn: &mut Conn, tables: &[Arc<TableDef>]) {
        if self.info.is_reached() {
            return;
        }
        let mut info = self.info.opened().clone();
        describe_mappings(self.dialect, &mut info, tables);
        let nodes = self.nodes(conn).await.unwrap_or_default();
        if self.is_cluster() {
            info.settings.insert("cluster.masters".into(), nodes.len().to_string());
        }
        let mut first = nodes.into_iter().next();
        let conn = first.as_mut().unwrap_or(conn);
        if let Ok(text) = redis::cmd("INFO").arg("server").query_async::<String>(conn).await
            && let Some(v) = info_field(&text, self.dialect.version_field())
        {
            info.version = v.to_string();
        }
        // lua-time-limit (busy-reply-threshold since 7.0): how long a script (the TPC-H
        // queries) runs before other clients get BUSY replies.
        let config_keys: &[&str] = match self.dialect {
            Dialect::Redis => &["save", "appendonly", "appendfsync", "maxmemory", "maxmemory-policy", "lua-time-limit"],
            // LedisDB's CONFIG GET knows only `databases`; INFO names the storage engine.
            Dialect::LedisDb => {
                if let Ok(text) = redis::cmd("INFO").query_async::<String>(conn).await
                    && let Some(store) = info_field(&text, "name")
                {
                    info.settings.insert("storage".into(), format!("{store} (LevelDB files in the server's data_dir)"));
                }
                &[]
            }
        };
        for &key in config_keys {
            if let Ok(pairs) = redis::cmd("CONFIG").arg("GET").arg(key).query_async::<Vec<String>>(conn).await
                && let [_, value] = pairs.as_slice()
            {
                let shown = if key == "save" && value.is_empty() { "'' (no snapshots)" } else { value };
                info.settings.insert(key.to_string(), shown.to_string());
            }
        }
        if let (Some(appendonly), Some(appendfsync), Some(save)) =
            (info.settings.get("appendonly"), info.settings.get("appendfsync"), info.settings.get("save"))
        {
            let durability = durability_of(appendonly, appendfsync, save);
            info.settings.insert(durability::SETTING.into(), durability);
        }
        self.info.set(info);
    }

    /// Deletes every key under our prefix (not the lease record), page by page, and the
    /// marker last.
    async fn clear_namespace(&self, conn: &mut Conn) -> Result<()> {
        for mut node in self.nodes(conn).await? {
            self.dialect
                .delete_all(&mut node, &mut conn.clone(), &self.prefix, &[&self.lease_key, &self.marker_key])
                .await
                .map_err(|e| self.setup_error("clearing dbsweep's keys", e))?;
        }
        // The marker goes last: a cleanup interrupted before this line leaves keys that
        // are still marked dbsweep's, and the next run (or cleanup) removes them.
        redis::cmd("DEL").arg(&self.marker_key).query_async::<()>(conn).await.map_err(|e| self.setup_error("DEL", e))
    }

    /// The first key under our prefix, if any, besides the lease record.
    async fn any_prefixed_key(&self, conn: &mut Conn) -> Result<Option<String>> {
        for mut node in self.nodes(conn).await? {
            let key = self
                .dialect
                .any_key(&mut node, &self.prefix, &self.lease_key)
                .await
                .map_err(|e| self.setup_error("listing dbsweep's keys", e))?;
            if key.is_some() {
                return Ok(key);
            }
        }
        Ok(None)
    }

    /// Whether the marker says the prefixed keys are ours; `Err(NotOwned)` when keys with
    /// our prefix exist that dbsweep did not mark.
    async fn check_owned(&self, conn: &mut Conn) -> Result<bool> {
        let (marker_key, prefix, label) = (&self.marker_key, &self.prefix, self.dialect.label());
        let marker: Option<String> = redis::cmd("GET").arg(marker_key).query_async(conn).await.map_err(|e| {
            if is_wrong_type(&e) {
                Error::not_owned(self.name(), format!("key '{marker_key}' in {label} {} is not dbsweep's marker; dbsweep will not touch keys it did not create: delete the '{prefix}*' keys yourself or use another DB index", self.address))
            } else {
                self.setup_error("GET", e)
            }
        })?;
        match marker.as_deref() {
            Some(MARKER_VALUE) => Ok(true),
            Some(_) => Err(Error::not_owned(
                self.name(),
                format!(
                    "key '{marker_key}' in {label} {} was not written by dbsweep; dbsweep will not touch keys it did not create: delete the '{prefix}*' keys yourself or use another DB index",
                    self.address
                ),
            )),
            None => match self.any_prefixed_key(conn).await? {
                Some(key) => Err(Error::not_owned(
                    self.name(),
                    format!(
                        "key '{key}' in {label} {} has dbsweep's prefix but no '{marker_key}' marker, so dbsweep did not create it; delete the '{prefix}*' keys yourself or use another DB index",
                        self.address
                    ),
                )),
                None => Ok(false),
            },
        }
    }

    fn setup_error(&self, what: &str, e: RedisError) -> Error {
        if let Some(failure) = self.busy_error(&e) {
            failure
        } else if is_connection_error(&e) {
            Error::unreachable(
                self.name(),
                format!("lost the connection to {} at {} during {what}: {e}", self.dialect.label(), self.address),
            )
        } else {
            Error::runtime(format!("target '{}': {} {what} failed: {e}", self.name(), self.dialect.label()))
        }
    }

    fn keys_of(&self, table: &TableDef) -> Result<Arc<Vec<TableKeys>>> {
        let tables = self.tables.read().unwrap().clone();
        if tables.iter().any(|t| t.def.name == table.name) {
            Ok(tables)
        } else {
            Err(Error::runtime(format!("target '{}': table {} was not prepared", self.name(), table.name)))
        }
    }
}

/// How long connecting to a server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Setup connections: 5 s to connect, no limit on a reply (a load pipeline, a cleanup).
fn admin_config() -> AsyncConnectionConfig {
    AsyncConnectionConfig::new().set_connection_timeout(Some(CONNECT_TIMEOUT)).set_response_timeout(None)
}

/// The crate's multiplexed connection over a TCP stream of ours whose segments are at most
/// `segment` bytes (see `Dialect::segment_size`), logged in as `info` says; its driver runs
/// as a task, as the crate's own constructor runs it.
async fn multiplexed_with_segment(info: &redis::ConnectionInfo, segment: u32) -> redis::RedisResult<MultiplexedConnection> {
    let ConnectionAddr::Tcp(host, port) = info.addr() else {
        return Err(RedisError::from((redis::ErrorKind::InvalidClientConfig, "only TCP addresses are supported")));
    };
    let stream = direct::connect_tcp(host, *port, CONNECT_TIMEOUT, Some(segment)).await?;
    stream.set_nodelay(true)?;
    let login = MultiplexedConnection::new_with_config(info.redis_settings(), stream, admin_config());
    let (conn, driver) = tokio::time::timeout(CONNECT_TIMEOUT, login)
        .await
        .map_err(|_| RedisError::from((redis::ErrorKind::Io, "logging in timed out")))??;
    tokio::spawn(driver);
    Ok(conn)
}

fn info_field<'a>(text: &'a str, field: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':')).map(str::trim)
}

fn is_wrong_type(e: &RedisError) -> bool {
    e.kind() == redis::ErrorKind::UnexpectedReturnType || e.code() == Some("WRONGTYPE")
}

fn is_connection_error(e: &RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout()
}

/// The class of a failed op: broken connections and time-outs apart from server errors.
fn op_error(dialect: Dialect, e: RedisError) -> OpError {
    let class = if e.is_timeout() {
        ErrorClass::Timeout
    } else if is_connection_error(&e) {
        ErrorClass::Connection
    } else {
        ErrorClass::Server
    };
    OpError::new(class, format!("{}: {e}", dialect.system()))
}

/// The `durability` setting of a Redis server from its persistence configuration.
fn durability_of(appendonly: &str, appendfsync: &str, save: &str) -> String {
    let snapshots = if save.starts_with("''") || save.is_empty() { String::new() } else { format!(", snapshots at save {save}") };
    match (appendonly, appendfsync) {
        ("yes", "always") => Durability::Commit.describe("append-only file fsynced at every write (appendfsync always)"),
        ("yes", "everysec") => Durability::Periodic.describe("append-only file fsynced every second (appendfsync everysec)"),
        ("yes", _) => Durability::None.describe("append-only file written, fsync left to the OS (appendfsync no)"),
        _ => Durability::None.describe(&format!("no append-only file (appendonly no{snapshots})")),
    }
}

#[cfg(test)]
mod tests {
    use super::rows::{parse_decimal, parse_value};
    use super::*;
    use crate::adapter::Target;
    use crate::base::table::{ColumnType, Date, Decimal, Value};

    #[test]
    fn full_or_loading_servers_are_named_with_the_fix() {
        assert!(server_busy(Some("ERR"), "ERR max number of clients reached").unwrap().contains("maxclients"));
        assert!(server_busy(Some("LOADING"), "LOADING Redis is loading the dataset in memory").unwrap().contains("wait"));
        assert_eq!(server_busy(Some("WRONGPASS"), "WRONGPASS invalid username-password pair"), None);
        let busy = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
        assert!(server_busy(Some("BUSY"), busy).unwrap().contains("--timeout"));
    }

    #[test]
    fn decimals_and_dates_round_trip_through_field_text() {
        for (d, text) in [(1234, "12.34"), (-5, "-0.05"), (100, "1.00"), (0, "0.00")] {
            assert_eq!(value_text(&Value::Decimal(Decimal(d))).as_deref(), Some(text));
            assert_eq!(parse_value(ColumnType::Decimal, text), Some(Value::Decimal(Decimal(d))));
        }
        assert_eq!(parse_decimal("12.3"), Some(Decimal(1230)));
        assert_eq!(parse_decimal("7"), Some(Decimal(700)));
        assert_eq!(parse_decimal("1.234"), None);
        assert_eq!(parse_value(ColumnType::Date, "1998-12-01"), Some(Value::Date(Date::from_iso("1998-12-01").unwrap())));
        assert_eq!(parse_value(ColumnType::Float, "123456.5"), Some(Value::Float(123456.5)));
        assert_eq!(value_text(&Value::Null), None);
    }

    #[test]
    fn keys_follow_the_study_mapping() {
        let def = crate::data::kv::shared_def();
        let t = TableKeys::new("dbsweep:", &def, false);
        assert_eq!(t.row_key(17), "dbsweep:kv17");
        assert_eq!(t.pk_set, "dbsweep:kv:pk");
        assert_eq!(t.index_sets[crate::data::kv::GROUP].as_deref(), Some("dbsweep:kv:idx:grp"));
        assert_eq!(t.index_sets[crate::data::kv::VALUE], None);
    }

    #[test]
    fn in_a_cluster_a_hash_tables_keys_share_its_hash_tag_and_plain_strings_spread() {
        let def = crate::data::kv::shared_def();
        let t = TableKeys::new("dbsweep:", &def, true);
        assert_eq!(t.row_key(17), "dbsweep:{kv}17");
        assert_eq!(t.pk_set, "dbsweep:{kv}:pk");
        assert_eq!(t.index_sets[crate::data::kv::GROUP].as_deref(), Some("dbsweep:{kv}:idx:grp"));
        let pairs = Arc::new(TableDef { name: "pairs".into(), columns: def.columns[..2].to_vec(), indexed: Vec::new() });
        assert!(strings::applies_to(&pairs));
        assert_eq!(TableKeys::new("dbsweep:", &pairs, true).row_key(5), "dbsweep:pairs5");
    }

    #[test]
    fn cluster_urls_need_redis_and_db_0() {
        let open = |url: &str| Redis::new("r", &TargetUrl::parse(url).unwrap(), &OpenContext::new("/tmp"));
        assert!(open("redis://127.0.0.1:7000/0?cluster=true").unwrap().is_cluster());
        assert!(!open("redis://127.0.0.1:7000/0").unwrap().is_cluster());
        for bad in
            ["redis://127.0.0.1:7000/1?cluster=true", "ledis://127.0.0.1:7000/0?cluster=true", "redis://127.0.0.1:7000/0?cluster=maybe"]
        {
            assert_eq!(open(bad).err().expect(bad).exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn bad_urls_are_usage_errors() {
        for bad in ["redis://127.0.0.1:6379/x", "redis://127.0.0.1:6379/0?batch=lots"] {
            let err = Redis::new("r", &TargetUrl::parse(bad).unwrap(), &OpenContext::new("/tmp")).err().expect(bad);
            assert_eq!(err.exit_code(), 2, "{bad}");
        }
        let ok =
            Redis::new("r", &TargetUrl::parse("redis://:pw@127.0.0.1:1/3?batch=pipeline").unwrap(), &OpenContext::new("/tmp")).unwrap();
        assert_eq!(ok.batch, BatchMode::Pipeline);
        assert_eq!(ok.info().settings["db"], "3");
        assert!(!format!("{:?}", ok.info()).contains("pw@"));
    }

    #[test]
    fn info_fields_are_read_from_info_text() {
        let text = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n";
        assert_eq!(info_field(text, "redis_version"), Some("7.0.15"));
        assert_eq!(info_field(text, "nope"), None);
    }

    #[test]
    fn durability_follows_the_append_only_file() {
        assert_eq!(durability_of("yes", "always", "''"), "commit: append-only file fsynced at every write (appendfsync always)");
        assert!(durability_of("yes", "everysec", "").starts_with("periodic: "));
        assert!(durability_of("yes", "no", "").starts_with("none: append-only file written, fsync left to the OS"));
        assert_eq!(durability_of("no", "everysec", "3600 1"), "none: no append-only file (appendonly no, snapshots at save 3600 1)");
        assert_eq!(durability_of("no", "everysec", "'' (no snapshots)"), "none: no append-only file (appendonly no)");
    }
}
