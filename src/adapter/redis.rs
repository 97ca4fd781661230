//! Redis adapter: the studies' row mappings on the `redis` crate (async, one multiplexed
//! connection per client), for Redis and for LedisDB (`ledis://`, a Redis-protocol server
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
//!
//! URL: `redis://[[user]:password@]host:port/DB[?batch=multi|pipeline]`; the password comes
//! from the URL (userinfo or `?password=`), else from `REDISCLI_AUTH` (see [`password`]). Batches go in one MULTI/EXEC by default (as the
//! study did) or one plain pipeline with `batch=pipeline`.
//!
//! LedisDB (`ledis://host:port/DB`, DB 0-15) has no MULTI/EXEC: what Redis does in one
//! transaction goes in one pipeline, not atomically, and batches are pipelines; rows are
//! written with HMSET and removed with HCLEAR; there is no engine memory figure. Every op
//! kind still runs (its Lua scripts are gopher-lua's, run one at a time).
//!
//! Safety: only keys under the namespace's prefix (`dbsweep:`, or `dbsweep_NAME:` with
//! `--namespace NAME`) in the URL's DB index are touched, and only once the marker key
//! `<prefix>owner` (= "dbsweep") says they are ours. The run's lease record is the key
//! `<prefix>lease` (taken with `SETNX`, renewed and removed by a compare-and-swap Lua
//! script); clearing the namespace leaves it to the lease protocol. This module must never
//! send FLUSHDB or FLUSHALL, and must never show the password.

use super::lease::LeaseStore;
use super::{Capabilities, Connection, Execution, OpenContext, RowSource, Target, TargetInfo, TargetUrl};
use crate::base::op::{Answer, ErrorClass, Op, OpError, OpKind, Outcome, QueryId, RangeAgg};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, TableId, Value};
use crate::error::{Error, Result};
use async_trait::async_trait;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Cmd, ConnectionAddr, IntoConnectionInfo, Pipeline, RedisConnectionInfo, RedisError, Script};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

mod dialect;
pub(crate) mod strings;
mod tpch;

use dialect::Dialect;

/// The marker key (after the namespace's prefix) that proves the prefixed keys in this
/// DB are dbsweep's own, and its value.
const MARKER_KEY: &str = "owner";
const MARKER_VALUE: &str = "dbsweep";
/// The lease record's key, after the prefix.
const LEASE_KEY: &str = "lease";
/// Replaces the lease record KEYS[1] by ARGV[2] ('' = delete it) if it is ARGV[1].
const LEASE_SWAP_LUA: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1
";
/// The password for a Redis-protocol URL: the URL's (userinfo or `?password=`), else
/// `REDISCLI_AUTH`.
pub fn password(url: &TargetUrl) -> Option<String> {
    url.password_or_env("REDISCLI_AUTH")
}

/// What a refusal with this error code and text says about the server, with the fix, when
/// it is the server's state rather than the URL: out of client slots, or loading its data.
fn server_busy(code: Option<&str>, text: &str) -> Option<&'static str> {
    if code == Some("LOADING") || text.contains("loading the dataset") {
        Some("is loading its dataset into memory; wait until it is done, then run again")
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

/// Writes one column of an existing row; returns 1, or 0 when the row does not exist.
/// KEYS[1] row hash, KEYS[2] (optional) the column's index set; ARGV: field, text value,
/// pk (index member), score, '1' when the new value is NULL.
const UPDATE_LUA: &str = r"
if redis.call('HLEN', KEYS[1]) == 0 then return 0 end
if ARGV[5] == '1' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[3]) end
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  if KEYS[2] then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3]) end
end
return 1
";

/// MAX of a column over the rows whose indexed value lies in [lo, hi]; returns the stored
/// text of the maximum, or nil when nothing matches. KEYS[1] index set; ARGV: lo, hi,
/// row-key prefix, field, 'num' (compare as numbers) or 'str' (compare as text).
const MAX_LUA: &str = r"
local members = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2])
local best, best_text = nil, false
for _, pk in ipairs(members) do
  local v = redis.call('HGET', ARGV[3] .. pk, ARGV[4])
  if v then
    local cmp = v
    if ARGV[5] == 'num' then cmp = tonumber(v) end
    if cmp ~= nil and (best == nil or cmp > best) then best = cmp; best_text = v end
  end
end
return best_text
";

/// How `execute_batch` groups a batch's commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchMode {
    /// One MULTI/EXEC transaction per batch (the study's choice).
    Multi,
    /// One plain pipeline per batch: one round trip, no atomicity.
    Pipeline,
}

/// The keys of one table in dbsweep's namespace.
struct TableKeys {
    def: Arc<TableDef>,
    /// Stored as plain string keys (see [`strings`]) instead of hashes and sorted sets.
    strings: bool,
    /// Row hashes are `<row_prefix><pk>`.
    row_prefix: String,
    /// Sorted set of all primary keys.
    pk_set: String,
    /// Per column: the index sorted set, if the column is indexed.
    index_sets: Vec<Option<String>>,
}

impl TableKeys {
    fn new(prefix: &str, def: &Arc<TableDef>) -> Self {
        let row_prefix = format!("{prefix}{}", def.name);
        let index_sets =
            (0..def.columns.len()).map(|c| def.indexed.contains(&c).then(|| format!("{row_prefix}:idx:{}", def.columns[c].name))).collect();
        TableKeys { def: def.clone(), strings: strings::applies_to(def), pk_set: format!("{row_prefix}:pk"), row_prefix, index_sets }
    }

    fn row_key(&self, pk: i64) -> String {
        format!("{}{pk}", self.row_prefix)
    }
}

pub struct Redis {
    /// Filled in by `prepare` with the server's version and settings.
    probed: OnceLock<TargetInfo>,
    /// What is known before the server was asked.
    base: TargetInfo,
    client: redis::Client,
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

impl Redis {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let dialect = Dialect::from_scheme(url.scheme())
            .ok_or_else(|| Error::usage(format!("target '{name}': '{}:' is not a Redis-protocol URL", url.scheme())))?;
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
        let batch = match url.param("batch").as_deref() {
            None | Some("multi") if dialect.has_multi() => BatchMode::Multi,
            None | Some("pipeline") => BatchMode::Pipeline,
            Some("multi") => {
                return Err(Error::usage(format!("target '{name}': {label} has no MULTI/EXEC; use batch=pipeline or leave batch out")));
            }
            Some(other) => {
                return Err(Error::usage(format!("target '{name}': batch must be 'multi' or 'pipeline', got '{other}'")));
            }
        };
        let mut settings = RedisConnectionInfo::default().set_db(db);
        if let Some(user) = url.username() {
            settings = settings.set_username(user);
        }
        if let Some(password) = password(url) {
            settings = settings.set_password(password);
        }
        let info = ConnectionAddr::Tcp(host.clone(), port)
            .into_connection_info()
            .map_err(|e| Error::usage(format!("target '{name}': bad {label} address: {e}")))?
            .set_redis_settings(settings);
        let client = redis::Client::open(info).map_err(|e| Error::usage(format!("target '{name}': bad {label} address: {e}")))?;

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
        settings.insert("layout".to_string(), "hash per row; sorted sets for pk and indexed columns".to_string());
        let base = TargetInfo {
            name: name.to_string(),
            system: dialect.system().into(),
            url: url.redacted(),
            execution: Execution::Async,
            capabilities: Capabilities {
                ops: vec![
                    OpKind::Echo,
                    OpKind::Insert,
                    OpKind::Get,
                    OpKind::MultiGet,
                    OpKind::Delete,
                    OpKind::Update,
                    OpKind::ReadModifyWrite,
                    OpKind::Scan,
                    OpKind::RangeRows,
                    OpKind::RangeCount,
                    OpKind::RangeMax,
                    OpKind::FetchAll,
                ],
                queries: vec![QueryId::TpchQ1, QueryId::TpchQ6],
                native_batch: true,
                secondary_indexes: true,
            },
            version: "unknown (not yet connected)".into(),
            settings,
        };
        Ok(Redis {
            probed: OnceLock::new(),
            base,
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
        &self.base.name
    }

    /// A run failure naming the server's state and the fix, when `e` says the server is out
    /// of client slots or still loading its data (not the URL's fault).
    fn busy_error(&self, e: &redis::RedisError) -> Option<Error> {
        let why = server_busy(e.code(), &e.to_string())?;
        Some(Error::runtime(format!("target '{}': {} at {} {why} ({e})", self.name(), self.dialect.label(), self.address)))
    }

    /// Opens a connection for setup steps; failures are `Error::Unreachable`, or a run
    /// failure when the server is full or loading.
    async fn admin(&self) -> Result<MultiplexedConnection> {
        let config = AsyncConnectionConfig::new().set_connection_timeout(Some(Duration::from_secs(5))).set_response_timeout(None);
        let mut conn = self.client.get_multiplexed_async_connection_with_config(&config).await.map_err(|e| {
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

    /// Asks the server for its version and the settings that change results, and describes
    /// the mappings `tables` use (capabilities and requests).
    async fn probe(&self, conn: &mut MultiplexedConnection, tables: &[Arc<TableDef>]) {
        if self.probed.get().is_some() {
            return;
        }
        let mut info = self.base.clone();
        describe_mappings(self.dialect, &mut info, tables);
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
        let _ = self.probed.set(info);
    }

    /// Deletes every key under our prefix (the marker too, not the lease record), page by
    /// page.
    async fn clear_namespace(&self, conn: &mut MultiplexedConnection) -> Result<()> {
        self.dialect.delete_all(conn, &self.prefix, &self.lease_key).await.map_err(|e| self.setup_error("clearing dbsweep's keys", e))
    }

    /// The first key under our prefix, if any, besides the lease record.
    async fn any_prefixed_key(&self, conn: &mut MultiplexedConnection) -> Result<Option<String>> {
        self.dialect.any_key(conn, &self.prefix, &self.lease_key).await.map_err(|e| self.setup_error("listing dbsweep's keys", e))
    }

    /// Whether the marker says the prefixed keys are ours; `Err(NotOwned)` when keys with
    /// our prefix exist that dbsweep did not mark.
    async fn check_owned(&self, conn: &mut MultiplexedConnection) -> Result<bool> {
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
        if is_connection_error(&e) {
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

/// The requests of the hash mapping on `dialect`'s server, for the target's settings.
fn hash_requests(dialect: Dialect) -> [(&'static str, String); 4] {
    let (open, close) = if dialect.has_multi() { ("MULTI, ", ", EXEC") } else { ("one pipeline (no transactions): ", "") };
    let (remove, write) = (dialect.row_delete_name(), dialect.hash_write());
    let batch = if dialect.has_multi() {
        "every row's commands in one MULTI/EXEC (batch=pipeline: one pipeline)"
    } else {
        "every row's commands in one pipeline"
    };
    [
        ("request.insert", format!("hash rows: {open}{remove}, {write} of every column, ZADD to the key set and each index set{close}")),
        ("request.insert_batch", format!("hash rows: {batch}")),
        ("request.multi_get", "hash rows: one pipeline of HGETALL per key".into()),
        ("request.delete", format!("hash rows: {open}{remove}, ZREM from the key set and each index set{close}")),
    ]
}

/// Capabilities, layout and requests of the mappings the prepared tables use. The
/// plain-string mapping offers fewer ops; a target holding a pairs table declares only
/// those (capabilities are per target, and must never promise what one table cannot do).
fn describe_mappings(dialect: Dialect, info: &mut TargetInfo, tables: &[Arc<TableDef>]) {
    let strings = tables.iter().any(|t| strings::applies_to(t));
    let hashes = tables.iter().any(|t| !strings::applies_to(t));
    let mut layouts = Vec::new();
    let mut requests: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    if hashes {
        layouts.push(info.settings.get("layout").cloned().unwrap_or_default());
        hash_requests(dialect).into_iter().for_each(|(k, v)| requests.entry(k).or_default().push(v));
    }
    if strings {
        info.capabilities.ops.retain(|k| strings::OPS.contains(k));
        info.capabilities.secondary_indexes = hashes;
        layouts.push(strings::LAYOUT.to_string());
        strings::REQUESTS.into_iter().chain(dialect.string_requests()).for_each(|(k, v)| requests.entry(k).or_default().push(v.into()));
    }
    info.settings.insert("layout".into(), layouts.join("; "));
    for (k, v) in requests {
        info.settings.insert(k.to_string(), v.join("; "));
    }
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

/// A value as stored in a hash field; `None` for NULL (the field is left out).
pub(crate) fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Text(s) => Some(s.to_string()),
        other => Some(other.to_string()),
    }
}

/// Parses a stored field back into a value of the column's type.
pub(crate) fn parse_value(ty: ColumnType, text: &str) -> Option<Value> {
    Some(match ty {
        ColumnType::Int => Value::Int(text.parse().ok()?),
        ColumnType::Float => Value::Float(text.parse().ok()?),
        ColumnType::Decimal => Value::Decimal(parse_decimal(text)?),
        ColumnType::Date => Value::Date(Date::from_iso(text)?),
        ColumnType::Text => Value::Text(text.into()),
    })
}

/// Parses `-12.34`, `12.3` or `12` into hundredths.
fn parse_decimal(text: &str) -> Option<Decimal> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > 2 || !frac.bytes().all(|b| b.is_ascii_digit()) || whole.is_empty() {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let frac: i64 = if frac.is_empty() { 0 } else { format!("{frac:0<2}").parse().ok()? };
    let abs = whole.checked_mul(100)?.checked_add(frac)?;
    Some(Decimal(if negative { -abs } else { abs }))
}

/// The sorted-set score of an indexed value, in the units of `Op::Range` bounds, as the
/// text sent to the server: whole numbers without a fraction (LedisDB's scores are
/// integers and refuse `3.0`), floats in their shortest exact form.
fn score(v: &Value) -> Option<String> {
    match v {
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Decimal(d) => Some(d.0.to_string()),
        Value::Date(d) => Some(d.0.to_string()),
        Value::Null | Value::Text(_) => None,
    }
}

fn key_of(row: &Row) -> Result<i64, OpError> {
    row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("redis: the key column must be an integer"))
}

/// The commands that store one row (after clearing any previous version of it).
fn insert_commands(dialect: Dialect, t: &TableKeys, row: &Row, out: &mut Vec<Cmd>) -> Result<(), OpError> {
    let pk = key_of(row)?;
    let key = t.row_key(pk);
    out.push(dialect.row_delete(&key));
    out.push(hset_row(dialect, t, &key, row));
    out.push(redis::cmd("ZADD").arg(&t.pk_set).arg(pk).arg(pk).clone());
    for (c, set) in t.index_sets.iter().enumerate() {
        if let Some(set) = set {
            match row.get(c).and_then(score) {
                Some(s) => out.push(redis::cmd("ZADD").arg(set).arg(s).arg(pk).clone()),
                None => out.push(redis::cmd("ZREM").arg(set).arg(pk).clone()),
            }
        }
    }
    Ok(())
}

fn hset_row(dialect: Dialect, t: &TableKeys, key: &str, row: &Row) -> Cmd {
    let mut cmd = redis::cmd(dialect.hash_write());
    cmd.arg(key);
    for (c, v) in row.iter().enumerate() {
        if let Some(text) = value_text(v) {
            cmd.arg(&t.def.columns[c].name).arg(text);
        }
    }
    cmd
}

/// How the replies of an op's commands become its outcome.
#[derive(Debug, Clone, Copy)]
enum Reduce {
    /// A fixed row count (inserts: 1, echo: 0).
    Fixed(u64),
    /// The first reply is the row count (the update script).
    FirstInt,
    /// The first reply is > 0 when the row existed (DEL, HCLEAR: removed fields): 1 or 0.
    Existed,
    /// Every reply is an HGETALL; rows = the non-empty ones.
    NonEmptyHashes,
    /// A GET or MGET reply; rows = the non-nil values.
    NonNil,
    /// `SET … XX`: 1 when it wrote (`OK`), 0 when the key did not exist (nil).
    Written,
    /// ZCOUNT: an `Answer::Scalar(Int)`.
    Count,
    /// The max script's text reply, decoded to the column's type.
    Max(ColumnType),
    /// A TPC-H query script's reply, decoded to the query's answer table.
    Query(QueryId),
}

/// An op compiled to commands that need one round trip.
struct Planned {
    cmds: Vec<Cmd>,
    /// When executed alone, wrap the commands in MULTI/EXEC (a row and its index entries).
    atomic: bool,
    reduce: Reduce,
}

pub struct RedisConnection {
    conn: MultiplexedConnection,
    dialect: Dialect,
    tables: Arc<Vec<TableKeys>>,
    batch: BatchMode,
    update_script: Arc<Script>,
    max_script: Arc<Script>,
    query_scripts: Arc<tpch::Scripts>,
}

impl RedisConnection {
    fn table(&self, id: TableId) -> Result<&TableKeys, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("redis: no table #{id} (was prepare called?)")))
    }

    fn index_set<'a>(&self, t: &'a TableKeys, column: usize) -> Result<&'a str, OpError> {
        t.index_sets.get(column).and_then(Option::as_deref).ok_or_else(|| {
            OpError::new(ErrorClass::Unsupported, format!("redis: column {column} of {} has no index sorted set", t.def.name))
        })
    }

    /// Compiles an op on a plain-string table (see [`strings`]); `None` for fetch-all,
    /// which needs several round trips.
    fn plan_strings(&self, t: &TableKeys, op: &Op) -> Result<Option<Planned>, OpError> {
        let one = |cmd: Cmd, reduce| Some(Planned { cmds: vec![cmd], atomic: false, reduce });
        Ok(match op {
            Op::Insert { row, .. } => {
                one(redis::cmd("SET").arg(t.row_key(key_of(row)?)).arg(strings::value_text(row)?).clone(), Reduce::Fixed(1))
            }
            Op::Get { key, .. } => one(redis::cmd("GET").arg(t.row_key(*key)).clone(), Reduce::NonNil),
            Op::MultiGet { keys, .. } if keys.is_empty() => one(redis::cmd("ECHO").arg("dbsweep").clone(), Reduce::Fixed(0)),
            Op::MultiGet { keys, .. } => {
                one(redis::cmd("MGET").arg(keys.iter().map(|k| t.row_key(*k)).collect::<Vec<_>>()).clone(), Reduce::NonNil)
            }
            Op::Delete { key, .. } => one(self.dialect.string_delete(vec![t.row_key(*key)]), Reduce::FirstInt),
            Op::Update { key, column: 1, value, .. } => {
                let text = value_text(value).ok_or_else(|| OpError::client("redis: a pairs value cannot be NULL"))?;
                one(self.dialect.string_update(t.row_key(*key), text), Reduce::Written)
            }
            Op::FetchAll { .. } => None,
            other => {
                return Err(OpError::new(
                    ErrorClass::Unsupported,
                    format!("redis: {} is not offered on {} (plain string keys keep no order or index)", other.kind(), t.def.name),
                ));
            }
        })
    }

    /// One command for a batch of inserts, gets or deletes on one plain-string table:
    /// `MSET`, `MGET` or `DEL` of every key. `None` for other batches.
    fn strings_batch(&self, ops: &[Op]) -> Result<Option<Planned>, OpError> {
        let Some(table) = ops.first().and_then(Op::table) else { return Ok(None) };
        let t = self.table(table)?;
        if !t.strings || ops.iter().any(|op| op.table() != Some(table) || op.kind() != ops[0].kind()) {
            return Ok(None);
        }
        let planned = |cmd: Cmd, reduce| Some(Planned { cmds: vec![cmd], atomic: false, reduce });
        let keys = |f: &dyn Fn(&Op) -> Vec<i64>| ops.iter().flat_map(f).map(|k| t.row_key(k)).collect::<Vec<_>>();
        Ok(match ops[0].kind() {
            OpKind::Insert => {
                let rows = ops.iter().filter_map(|op| if let Op::Insert { row, .. } = op { Some(row) } else { None });
                planned(strings::mset(|k| t.row_key(k), rows)?, Reduce::Fixed(ops.len() as u64))
            }
            OpKind::Get | OpKind::MultiGet => {
                let keys = keys(&|op| match op {
                    Op::Get { key, .. } => vec![*key],
                    Op::MultiGet { keys, .. } => keys.clone(),
                    _ => Vec::new(),
                });
                if keys.is_empty() {
                    return Ok(None);
                }
                planned(redis::cmd("MGET").arg(keys).clone(), Reduce::NonNil)
            }
            OpKind::Delete => {
                let keys = keys(&|op| if let Op::Delete { key, .. } = op { vec![*key] } else { Vec::new() });
                planned(self.dialect.string_delete(keys), Reduce::FirstInt)
            }
            _ => None,
        })
    }

    /// Compiles a one-round-trip op; `None` for ops that need two (Scan, RangeRows, RMW).
    fn plan(&self, op: &Op) -> Result<Option<Planned>, OpError> {
        if let Some(table) = op.table()
            && let t = self.table(table)?
            && t.strings
        {
            return self.plan_strings(t, op);
        }
        let one = |cmd: Cmd, reduce| Some(Planned { cmds: vec![cmd], atomic: false, reduce });
        Ok(match op {
            Op::Echo => one(redis::cmd("ECHO").arg("dbsweep").clone(), Reduce::Fixed(0)),
            Op::Insert { table, row } => {
                let mut cmds = Vec::new();
                insert_commands(self.dialect, self.table(*table)?, row, &mut cmds)?;
                Some(Planned { cmds, atomic: true, reduce: Reduce::Fixed(1) })
            }
            Op::Get { table, key } => one(redis::cmd("HGETALL").arg(self.table(*table)?.row_key(*key)).clone(), Reduce::NonEmptyHashes),
            Op::MultiGet { table, keys } => {
                let t = self.table(*table)?;
                let cmds = keys.iter().map(|k| redis::cmd("HGETALL").arg(t.row_key(*k)).clone()).collect();
                Some(Planned { cmds, atomic: false, reduce: Reduce::NonEmptyHashes })
            }
            Op::Delete { table, key } => {
                let t = self.table(*table)?;
                let mut cmds = vec![self.dialect.row_delete(&t.row_key(*key)), redis::cmd("ZREM").arg(&t.pk_set).arg(*key).clone()];
                // Index members are pks, so removing needs no read of the old values.
                for set in t.index_sets.iter().flatten() {
                    cmds.push(redis::cmd("ZREM").arg(set).arg(*key).clone());
                }
                Some(Planned { cmds, atomic: true, reduce: Reduce::Existed })
            }
            Op::Update { table, key, column, value } => {
                let t = self.table(*table)?;
                if *column == 0 || *column >= t.def.columns.len() {
                    return Err(OpError::client(format!("redis: cannot update column {column} of {}", t.def.name)));
                }
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(self.update_script.get_hash());
                let index = t.index_sets[*column].as_deref();
                cmd.arg(if index.is_some() { 2 } else { 1 }).arg(t.row_key(*key));
                if let Some(set) = index {
                    cmd.arg(set);
                }
                let text = value_text(value);
                cmd.arg(&t.def.columns[*column].name)
                    .arg(text.as_deref().unwrap_or(""))
                    .arg(*key)
                    .arg(score(value).unwrap_or_else(|| "0".into()))
                    .arg(if text.is_none() { "1" } else { "0" });
                one(cmd, Reduce::FirstInt)
            }
            Op::Range { table, column, lo, hi, agg: RangeAgg::Count } => {
                let t = self.table(*table)?;
                one(redis::cmd("ZCOUNT").arg(self.index_set(t, *column)?).arg(*lo).arg(*hi).clone(), Reduce::Count)
            }
            Op::Range { table, column, lo, hi, agg: RangeAgg::Max { column: of } } => {
                let t = self.table(*table)?;
                let set = self.index_set(t, *column)?;
                let of_col = t.def.columns.get(*of).ok_or_else(|| OpError::client(format!("redis: no column {of} in {}", t.def.name)))?;
                let mode = match of_col.ty {
                    ColumnType::Int | ColumnType::Float | ColumnType::Decimal => "num",
                    ColumnType::Text | ColumnType::Date => "str",
                };
                let cmd = redis::cmd("EVALSHA")
                    .arg(self.max_script.get_hash())
                    .arg(1)
                    .arg(set)
                    .arg(*lo)
                    .arg(*hi)
                    .arg(&t.row_prefix)
                    .arg(&of_col.name)
                    .arg(mode)
                    .clone();
                one(cmd, Reduce::Max(of_col.ty))
            }
            Op::Scan { .. } | Op::Range { agg: RangeAgg::Rows, .. } | Op::ReadModifyWrite { .. } | Op::FetchAll { .. } => None,
            Op::Query(q) => {
                let unsupported = || OpError::new(ErrorClass::Unsupported, format!("redis does not run {q:?}"));
                let t = self.tables.iter().find(|t| t.def.name == tpch::LINEITEM).ok_or_else(|| {
                    OpError::client(format!("redis: {q:?} needs the TPC-H {} table (prepare the tpch dataset)", tpch::LINEITEM))
                })?;
                let cmd = self.query_scripts.command(*q, &t.row_prefix, &t.pk_set).ok_or_else(unsupported)?;
                one(cmd, Reduce::Query(*q))
            }
        })
    }

    /// Sends commands in one round trip and returns one reply per command.
    async fn send(&mut self, cmds: Vec<Cmd>, atomic: bool) -> Result<Vec<redis::Value>, OpError> {
        // Without MULTI/EXEC (LedisDB) the commands still share one round trip.
        let atomic = atomic && self.dialect.has_multi();
        let replies = if cmds.len() == 1 && !atomic {
            vec![cmds[0].query_async::<redis::Value>(&mut self.conn).await.map_err(|e| op_error(self.dialect, e))?]
        } else {
            let mut pipe = Pipeline::with_capacity(cmds.len());
            if atomic {
                pipe.atomic();
            }
            for cmd in cmds {
                pipe.add_command(cmd);
            }
            pipe.query_async::<Vec<redis::Value>>(&mut self.conn).await.map_err(|e| op_error(self.dialect, e))?
        };
        replies.into_iter().map(|r| r.extract_error().map_err(|e| op_error(self.dialect, e))).collect()
    }

    /// Fetches row hashes in one pipeline; returns how many exist.
    async fn fetch_rows(&mut self, t_prefix: &str, pks: &[i64]) -> Result<u64, OpError> {
        if pks.is_empty() {
            return Ok(0);
        }
        let cmds = pks.iter().map(|pk| redis::cmd("HGETALL").arg(format!("{t_prefix}{pk}")).clone()).collect();
        let replies = self.send(cmds, false).await?;
        Ok(replies.iter().filter(|r| is_non_empty(r)).count() as u64)
    }

    async fn two_step(&mut self, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::FetchAll { table } if self.table(*table)?.strings => {
                // The table's keys a page at a time, one MGET per page of keys not seen yet.
                let prefix = self.table(*table)?.row_prefix.clone();
                let (mut rows, mut seen) = (0u64, std::collections::HashSet::new());
                let mut cursor = Some(self.dialect.first_cursor().to_string());
                while let Some(at) = cursor {
                    let (next, keys) =
                        self.dialect.string_key_page(&mut self.conn, &prefix, &at).await.map_err(|e| op_error(self.dialect, e))?;
                    let ours: Vec<String> =
                        keys.into_iter().filter(|k| strings::is_row_key(&prefix, k) && seen.insert(k.clone())).collect();
                    if !ours.is_empty() {
                        let reply = redis::cmd("MGET").arg(ours).query_async::<redis::Value>(&mut self.conn).await;
                        rows += strings::non_nil(&reply.map_err(|e| op_error(self.dialect, e))?);
                    }
                    cursor = next;
                }
                Ok(Outcome::rows(rows))
            }
            Op::FetchAll { table } => {
                // Every pk from the table's key set, then the hashes in pipelines of
                // FETCH_ALL_CHUNK, so the client never holds more than one chunk of rows.
                let t = self.table(*table)?;
                let (set, prefix) = (t.pk_set.clone(), t.row_prefix.clone());
                let pks: Vec<i64> = redis::cmd("ZRANGE")
                    .arg(set)
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut self.conn)
                    .await
                    .map_err(|e| op_error(self.dialect, e))?;
                let mut rows = 0;
                for chunk in pks.chunks(FETCH_ALL_CHUNK) {
                    rows += self.fetch_rows(&prefix, chunk).await?;
                }
                Ok(Outcome::rows(rows))
            }
            Op::Scan { table, start, count } => {
                let t = self.table(*table)?;
                let (set, prefix) = (t.pk_set.clone(), t.row_prefix.clone());
                let pks: Vec<i64> = redis::cmd("ZRANGEBYSCORE")
                    .arg(set)
                    .arg(*start)
                    .arg("+inf")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(*count)
                    .query_async(&mut self.conn)
                    .await
                    .map_err(|e| op_error(self.dialect, e))?;
                Ok(Outcome::rows(self.fetch_rows(&prefix, &pks).await?))
            }
            Op::Range { table, column, lo, hi, agg: RangeAgg::Rows } => {
                let t = self.table(*table)?;
                let set = self.index_set(t, *column)?.to_string();
                let prefix = t.row_prefix.clone();
                let pks: Vec<i64> = redis::cmd("ZRANGEBYSCORE")
                    .arg(set)
                    .arg(*lo)
                    .arg(*hi)
                    .query_async(&mut self.conn)
                    .await
                    .map_err(|e| op_error(self.dialect, e))?;
                Ok(Outcome::rows(self.fetch_rows(&prefix, &pks).await?))
            }
            Op::ReadModifyWrite { table, key, column, value } => {
                let t = self.table(*table)?;
                if *column == 0 || *column >= t.def.columns.len() {
                    return Err(OpError::client(format!("redis: cannot update column {column} of {}", t.def.name)));
                }
                let row_key = t.row_key(*key);
                let field = t.def.columns[*column].name.clone();
                let index = t.index_sets[*column].clone();
                let current = redis::cmd("HGETALL")
                    .arg(&row_key)
                    .query_async::<redis::Value>(&mut self.conn)
                    .await
                    .map_err(|e| op_error(self.dialect, e))?;
                if !is_non_empty(&current) {
                    return Ok(Outcome::rows(0));
                }
                let mut cmds = Vec::new();
                match value_text(value) {
                    Some(text) => cmds.push(redis::cmd("HSET").arg(&row_key).arg(&field).arg(text).clone()),
                    None => cmds.push(redis::cmd("HDEL").arg(&row_key).arg(&field).clone()),
                }
                if let Some(set) = index {
                    match score(value) {
                        Some(s) => cmds.push(redis::cmd("ZADD").arg(set).arg(s).arg(*key).clone()),
                        None => cmds.push(redis::cmd("ZREM").arg(set).arg(*key).clone()),
                    }
                }
                let atomic = cmds.len() > 1;
                self.send(cmds, atomic).await?;
                Ok(Outcome::rows(1))
            }
            other => Err(OpError::client(format!("redis: {} is not a two-step op", other.kind()))),
        }
    }
}

fn is_non_empty(reply: &redis::Value) -> bool {
    match reply {
        redis::Value::Array(items) | redis::Value::Set(items) => !items.is_empty(),
        redis::Value::Map(pairs) => !pairs.is_empty(),
        _ => false,
    }
}

fn reply_int(reply: &redis::Value) -> Result<i64, OpError> {
    match reply {
        redis::Value::Int(i) => Ok(*i),
        other => Err(OpError::server(format!("redis: expected an integer reply, got {other:?}"))),
    }
}

fn reduce(reduce: Reduce, replies: &[redis::Value]) -> Result<Outcome, OpError> {
    Ok(match reduce {
        Reduce::Fixed(n) => Outcome::rows(n),
        Reduce::FirstInt => Outcome::rows(reply_int(replies.first().unwrap_or(&redis::Value::Nil))?.max(0) as u64),
        Reduce::Existed => Outcome::rows(u64::from(reply_int(replies.first().unwrap_or(&redis::Value::Nil))? > 0)),
        Reduce::NonEmptyHashes => Outcome::rows(replies.iter().filter(|r| is_non_empty(r)).count() as u64),
        Reduce::NonNil => Outcome::rows(replies.iter().map(strings::non_nil).sum()),
        Reduce::Written => Outcome::rows(replies.iter().filter(|r| !matches!(r, redis::Value::Nil)).count() as u64),
        Reduce::Count => Outcome::answer(1, Answer::Scalar(Value::Int(reply_int(replies.first().unwrap_or(&redis::Value::Nil))?))),
        Reduce::Max(ty) => {
            let value = match replies.first() {
                None | Some(redis::Value::Nil) => Value::Null,
                Some(redis::Value::BulkString(bytes)) => {
                    let text = std::str::from_utf8(bytes).map_err(|_| OpError::server("redis: max is not UTF-8"))?;
                    parse_value(ty, text).ok_or_else(|| OpError::server(format!("redis: max '{text}' is not a {ty:?}")))?
                }
                Some(other) => return Err(OpError::server(format!("redis: unexpected max reply {other:?}"))),
            };
            Outcome::answer(1, Answer::Scalar(value))
        }
        Reduce::Query(q) => {
            let answer = tpch::decode(q, replies.first().unwrap_or(&redis::Value::Nil))?;
            let rows = match &answer {
                Answer::Table(rows) => rows.len() as u64,
                Answer::Scalar(_) => 1,
            };
            Outcome::answer(rows, answer)
        }
    })
}

#[async_trait]
impl Connection for RedisConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        match self.plan(op)? {
            Some(planned) => {
                let replies = self.send(planned.cmds, planned.atomic).await?;
                reduce(planned.reduce, &replies)
            }
            None => self.two_step(op).await,
        }
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        if let Some(planned) = self.strings_batch(ops)? {
            let replies = self.send(planned.cmds, false).await?;
            return reduce(planned.reduce, &replies);
        }
        let mut plans = Vec::with_capacity(ops.len());
        for op in ops {
            match self.plan(op)? {
                Some(p) => plans.push(p),
                // Two-step ops cannot share one round trip: one request each.
                None => {
                    let mut rows = 0;
                    for op in ops {
                        rows += self.two_step(op).await?.rows;
                    }
                    return Ok(Outcome::rows(rows));
                }
            }
        }
        let mut cmds = Vec::new();
        let mut shapes = Vec::with_capacity(plans.len());
        for p in plans {
            shapes.push((p.cmds.len(), p.reduce));
            cmds.extend(p.cmds);
        }
        let replies = self.send(cmds, self.batch == BatchMode::Multi).await?;
        let mut rows = 0;
        let mut at = 0;
        for (n, r) in shapes {
            let slice = replies.get(at..at + n).ok_or_else(|| OpError::server("redis: fewer replies than commands"))?;
            rows += reduce(r, slice)?.rows;
            at += n;
        }
        Ok(Outcome::rows(rows))
    }
}

#[async_trait]
impl Target for Redis {
    fn info(&self) -> &TargetInfo {
        self.probed.get().unwrap_or(&self.base)
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        for t in tables {
            if t.columns.first().map(|c| c.ty) != Some(ColumnType::Int) {
                return Err(Error::runtime(format!("redis: table {}: column 0 must be an Int key", t.name)));
            }
            if let Some(&c) = t.indexed.iter().find(|&&c| t.columns.get(c).is_none_or(|col| col.ty == ColumnType::Text)) {
                return Err(Error::runtime(format!("redis: table {}: column #{c} cannot be indexed by a sorted set", t.name)));
            }
            if self.dialect == Dialect::LedisDb
                && let Some(&c) = t.indexed.iter().find(|&&c| t.columns[c].ty == ColumnType::Float)
            {
                return Err(Error::runtime(format!(
                    "ledisdb: table {}: column {} holds floats, and LedisDB's sorted-set scores are integers, so it cannot be indexed there",
                    t.name, t.columns[c].name
                )));
            }
        }
        let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
        if let Some((a, b)) = strings::ambiguous_names(&names) {
            return Err(Error::runtime(format!("redis: tables {a} and {b} would share row keys (dbsweep:<table><key>); rename one")));
        }
        let mut conn = self.admin().await?;
        self.probe(&mut conn, tables).await;
        self.check_owned(&mut conn).await?;
        self.clear_namespace(&mut conn).await?;
        redis::cmd("SET")
            .arg(&self.marker_key)
            .arg(MARKER_VALUE)
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| self.setup_error("SET", e))?;
        for script in [&*self.update_script, &*self.max_script].into_iter().chain(self.query_scripts.all()) {
            script.load_async(&mut conn).await.map_err(|e| self.setup_error("SCRIPT LOAD", e))?;
        }
        *self.tables.write().unwrap() = Arc::new(tables.iter().map(|t| TableKeys::new(&self.prefix, t)).collect());
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let tables = self.keys_of(table)?;
        let t = tables.iter().find(|t| t.def.name == table.name).expect("checked by keys_of");
        let mut conn = self.admin().await?;
        let mut loaded = 0u64;
        let mut rows = rows.peekable();
        if t.strings {
            // One MSET per chunk of rows.
            while rows.peek().is_some() {
                let chunk: Vec<Row> = rows.by_ref().take(LOAD_CHUNK).collect();
                let cmd = strings::mset(|k| t.row_key(k), chunk.iter()).map_err(|e| Error::runtime(e.message))?;
                cmd.query_async::<()>(&mut conn).await.map_err(|e| self.setup_error("MSET", e))?;
                loaded += chunk.len() as u64;
            }
            return Ok(loaded);
        }
        while rows.peek().is_some() {
            let mut pipe = redis::pipe();
            let mut pk_pairs = Vec::with_capacity(LOAD_CHUNK * 2);
            let mut index_pairs: Vec<Vec<(String, i64)>> = vec![Vec::new(); t.index_sets.len()];
            for row in rows.by_ref().take(LOAD_CHUNK) {
                let pk = key_of(&row).map_err(|e| Error::runtime(e.message))?;
                pipe.add_command(hset_row(self.dialect, t, &t.row_key(pk), &row)).ignore();
                pk_pairs.push((pk, pk));
                for (c, set) in t.index_sets.iter().enumerate() {
                    if set.is_some()
                        && let Some(s) = row.get(c).and_then(score)
                    {
                        index_pairs[c].push((s, pk));
                    }
                }
                loaded += 1;
            }
            pipe.cmd("ZADD").arg(&t.pk_set).arg(&pk_pairs).ignore();
            for (c, set) in t.index_sets.iter().enumerate() {
                if let Some(set) = set
                    && !index_pairs[c].is_empty()
                {
                    pipe.cmd("ZADD").arg(set).arg(&index_pairs[c]).ignore();
                }
            }
            pipe.query_async::<()>(&mut conn).await.map_err(|e| self.setup_error("load pipeline", e))?;
        }
        Ok(loaded)
    }

    fn joins_workers(&self) -> bool {
        true
    }

    async fn attach(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let mut conn = self.admin().await?;
        let marker: Option<String> =
            redis::cmd("GET").arg(&self.marker_key).query_async(&mut conn).await.map_err(|e| self.setup_error("GET", e))?;
        if marker.as_deref() != Some(MARKER_VALUE) {
            return Err(Error::runtime(format!(
                "{}: no dbsweep data under '{}' at {} to join: the coordinator has not prepared it",
                self.name(),
                self.prefix,
                self.address
            )));
        }
        self.probe(&mut conn, tables).await;
        *self.tables.write().unwrap() = Arc::new(tables.iter().map(|t| TableKeys::new(&self.prefix, t)).collect());
        Ok(())
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let mut conn = self.admin().await?;
        // Idempotent; makes EVALSHA safe even after a server restart between prepare and run.
        for script in [&*self.update_script, &*self.max_script].into_iter().chain(self.query_scripts.all()) {
            script.load_async(&mut conn).await.map_err(|e| self.setup_error("SCRIPT LOAD", e))?;
        }
        Ok(Box::new(RedisConnection {
            conn,
            dialect: self.dialect,
            tables: self.tables.read().unwrap().clone(),
            batch: self.batch,
            update_script: self.update_script.clone(),
            max_script: self.max_script.clone(),
            query_scripts: self.query_scripts.clone(),
        }))
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let tables = self.keys_of(table)?;
        let t = tables.iter().find(|t| t.def.name == table.name).expect("checked by keys_of");
        let mut conn = self.admin().await?;
        if t.strings {
            // Plain string keys have no key set: count the table's row keys, each once.
            let mut seen = std::collections::HashSet::new();
            let mut cursor = Some(self.dialect.first_cursor().to_string());
            while let Some(at) = cursor {
                let (next, keys) =
                    self.dialect.string_key_page(&mut conn, &t.row_prefix, &at).await.map_err(|e| self.setup_error("listing keys", e))?;
                seen.extend(keys.into_iter().filter(|k| strings::is_row_key(&t.row_prefix, k)));
                cursor = next;
            }
            return Ok(seen.len() as u64);
        }
        redis::cmd("ZCARD").arg(&t.pk_set).query_async::<u64>(&mut conn).await.map_err(|e| self.setup_error("ZCARD", e))
    }

    /// `INFO memory` `used_memory`: everything the allocator holds for the dataset and
    /// the server's own structures (the whole server; deltas isolate dbsweep's data).
    async fn engine_memory(&self) -> Result<Option<super::EngineMemory>> {
        if self.dialect == Dialect::LedisDb {
            // Its INFO `Mem` section is the Go heap, not the data, which lives in LevelDB.
            return Ok(None);
        }
        let mut conn = self.admin().await?;
        let info: String = redis::cmd("INFO").arg("memory").query_async(&mut conn).await.map_err(|e| self.setup_error("INFO memory", e))?;
        let used = info.lines().find_map(|line| line.trim_end().strip_prefix("used_memory:")).and_then(|v| v.parse().ok());
        Ok(used.map(|bytes| super::EngineMemory { bytes, source: "INFO memory used_memory".into() }))
    }

    async fn cleanup(&self) -> Result<()> {
        let mut conn = self.admin().await?;
        // Without our marker nothing under the prefix is ours (or nothing is there).
        if self.check_owned(&mut conn).await? {
            self.clear_namespace(&mut conn).await?;
        }
        Ok(())
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn LeaseStore>> {
        Some(self)
    }
}

#[async_trait]
impl LeaseStore for Redis {
    fn place(&self) -> String {
        format!("key prefix '{}' in {} {}", self.prefix, self.dialect.label(), self.address)
    }

    fn alternatives(&self) -> String {
        "point the URL at another DB index (redis://host:port/N), or add --namespace NAME to run side by side under another key prefix"
            .into()
    }

    async fn read(&self) -> Result<Option<String>> {
        let mut conn = self.admin().await?;
        redis::cmd("GET").arg(&self.lease_key).query_async(&mut conn).await.map_err(|e| {
            if is_wrong_type(&e) {
                Error::not_owned(
                    self.name(),
                    format!(
                        "key '{}' in {} {} is not a dbsweep lease; delete it yourself or use another DB index",
                        self.lease_key,
                        self.dialect.label(),
                        self.address
                    ),
                )
            } else {
                self.setup_error("GET", e)
            }
        })
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let mut conn = self.admin().await?;
        match (current, next) {
            (None, None) => Ok(self.read().await?.is_none()),
            (None, Some(next)) => {
                // A namespace with foreign keys is refused before anything is written.
                self.check_owned(&mut conn).await?;
                // SETNX rather than SET ... NX: LedisDB knows only the former.
                let set: i64 = redis::cmd("SETNX")
                    .arg(&self.lease_key)
                    .arg(next)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.setup_error("SETNX", e))?;
                Ok(set == 1)
            }
            (Some(current), next) => {
                // A plain EVAL, not the script cache's EVALSHA: the lease's calls stay apart
                // from the measured ops' scripts in the server's command statistics.
                let swapped: i64 = redis::cmd("EVAL")
                    .arg(LEASE_SWAP_LUA)
                    .arg(1)
                    .arg(&self.lease_key)
                    .arg(current)
                    .arg(next.unwrap_or(""))
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.setup_error("the lease script", e))?;
                Ok(swapped == 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_or_loading_servers_are_named_with_the_fix() {
        assert!(server_busy(Some("ERR"), "ERR max number of clients reached").unwrap().contains("maxclients"));
        assert!(server_busy(Some("LOADING"), "LOADING Redis is loading the dataset in memory").unwrap().contains("wait"));
        assert_eq!(server_busy(Some("WRONGPASS"), "WRONGPASS invalid username-password pair"), None);
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
        let t = TableKeys::new("dbsweep:", &def);
        assert_eq!(t.row_key(17), "dbsweep:kv17");
        assert_eq!(t.pk_set, "dbsweep:kv:pk");
        assert_eq!(t.index_sets[crate::data::kv::GROUP].as_deref(), Some("dbsweep:kv:idx:grp"));
        assert_eq!(t.index_sets[crate::data::kv::VALUE], None);
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
}
