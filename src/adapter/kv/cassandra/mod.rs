//! Cassandra adapter on the `scylla` driver (CQL native protocol, async).
//!
//! Mapping: one keyspace (the namespace's name, `dbsweep` or `dbsweep_NAME` with
//! `--namespace NAME`, unless the URL's path names another; SimpleStrategy with
//! `?replication_factor=N`, 1 by default) holding one table per `TableDef`; column 0 is the partition key. Types: Int →
//! `bigint`, Float → `double`, Decimal → `bigint` hundredths, Text → `text`, Date → `date`.
//! Each indexed column gets a storage-attached index (`USING 'sai'`), which serves the
//! numeric ranges of `Op::Range` (rows, COUNT, MAX) without ALLOW FILTERING.
//!
//! Every statement is prepared (once per connection), so the driver's default
//! load-balancing policy routes each one token-aware to a replica of its partition.
//! Delete and Update must report how many rows they touched: by default they are
//! lightweight transactions (`IF EXISTS`, Paxos) whose `[applied]` flag is that count;
//! `?affected=read` instead reads the key first and then writes unconditionally (two round
//! trips, not atomic); `?affected=plain` sends a plain `DELETE` (one round trip, what the
//! in-memory study's paper sent) whose reply cannot tell whether the key existed, so the
//! runner reads the deleted keys back after the run, untimed (`Target::blind_deletes`);
//! updates stay lightweight transactions there (a plain UPDATE is an upsert). Scan is not offered: Cassandra keeps partitions in token order,
//! not key order. Insert is a plain INSERT, i.e. an upsert. Custom runs a study's own CQL
//! statement in the keyspace (`custom.rs`).
//!
//! URL: `cassandra://host:port[,host:port...][/keyspace][?affected=lwt|read|plain]
//! [&replication_factor=N]`: several contact points for a cluster (the driver learns the
//! other nodes from any of them). Each `connect` opens its own driver session (its own
//! connections, to every node). The replication factor applies when dbsweep creates the
//! keyspace; an existing dbsweep keyspace with another one is refused (drop it or name
//! another keyspace).
//!
//! Safety: the keyspace is dbsweep's only when it holds the marker table `dbsweep_owner`
//! whose comment is [`MARKER_COMMENT`]; dbsweep's tables carry the comment
//! [`TABLE_COMMENT`]. `prepare` refuses with `Error::NotOwned` a same-named keyspace
//! without the marker and a same-named table without the comment; it drops only tables it
//! marked, and `cleanup` drops the keyspace only when nothing but dbsweep's tables is in
//! it. The run's lease record is the one row of the keyspace's table `dbsweep_lease`
//! (see [`lease`]). Never touches any other keyspace.

use crate::adapter::declaration::{CapabilitySet, Declaration, Needs, OpSet, TargetInfoCell, UrlOptions};
use crate::adapter::{Execution, OpenContext, TargetUrl};
use crate::base::op::{ErrorClass, OpError, OpKind};
use crate::base::table::TableDef;
use crate::error::{Error, Result};
use crate::servers::ServerKind;
pub use connection::CassandraConnection;
use connection::{applied, single_value};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{ExecutionError, RequestAttemptError};
use scylla::statement::prepared::PreparedStatement;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use table::{TableCql, quote};

mod connection;
mod custom;
mod lease;
mod table;
mod target;

/// The marker table that proves the keyspace is dbsweep's own.
const MARKER_TABLE: &str = "dbsweep_owner";

const MARKER_COMMENT: &str = "dbsweep marker: this keyspace was created by dbsweep";

/// The comment on every table dbsweep creates.
const TABLE_COMMENT: &str = "created by dbsweep";

/// How long a keyspace without tables may wait for the marker table of the dbsweep run
/// that is creating it.
const MARKER_WAIT: Duration = Duration::from_secs(20);

/// Bulk loading: UNLOGGED BATCHes of this many prepared inserts (about 2x the rate of
/// single inserts here; small enough for Cassandra's 50 KiB batch limit with TPC-H rows)...
const LOAD_BATCH: usize = 32;

/// ... with this many inserts in flight.
const LOAD_CONCURRENCY: usize = 256;

/// Statements per UNLOGGED BATCH of an insert batch ...
const BATCH_CHUNK: usize = 100;

/// ... and at most about this many bytes of values (Cassandra fails batches above 50 KiB)
/// ...
const BATCH_BYTES: usize = 40 * 1024;

/// ... with at most this many chunks in flight: a 70,000-row batch sent as 700 concurrent
/// chunks times out in a single node's write path on a small machine.
const BATCH_CHUNKS_IN_FLIGHT: usize = 4;

/// Keys per `IN` request of a multi-get (larger multi-gets are split, see `execute`).
const MULTI_GET_CHUNK: usize = 1000;

/// Rows per page of full-table reads.
const PAGE_SIZE: i32 = 5000;

/// Client-side timeout of schema changes and full-table reads.
const SLOW_TIMEOUT: Duration = Duration::from_secs(120);

/// How Delete and Update learn whether the key existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Affected {
    /// `IF EXISTS` (a Paxos round): atomic, the `[applied]` flag is the count.
    Lwt,
    /// A read of the key, then an unconditional write when it exists (not atomic).
    Read,
    /// A plain DELETE (the key's existence unknown: verified by reading back after the run);
    /// updates as `Lwt`.
    Plain,
}

/// The class of a failed request: time-outs and broken connections apart from server errors.
fn op_error(e: ExecutionError) -> OpError {
    use scylla::errors::DbError;
    let class = match &e {
        ExecutionError::RequestTimeout(_) => ErrorClass::Timeout,
        ExecutionError::ConnectionPoolError(_) => ErrorClass::Connection,
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(DbError::ReadTimeout { .. } | DbError::WriteTimeout { .. }, _)) => {
            ErrorClass::Timeout
        }
        ExecutionError::LastAttemptError(RequestAttemptError::BrokenConnectionError(_) | RequestAttemptError::UnableToAllocStreamId) => {
            ErrorClass::Connection
        }
        ExecutionError::BadQuery(_) => ErrorClass::Client,
        _ => ErrorClass::Server,
    };
    OpError::new(class, format!("cassandra: {e}"))
}

fn is_connection_error(e: &ExecutionError) -> bool {
    matches!(
        e,
        ExecutionError::ConnectionPoolError(_)
            | ExecutionError::RequestTimeout(_)
            | ExecutionError::LastAttemptError(RequestAttemptError::BrokenConnectionError(_))
    )
}

pub const SYSTEM: Declaration = Declaration {
    system: "cassandra",
    url: "cassandra://",
    description: "Apache Cassandra (CQL, scylla driver): several contact points h1:p,h2:p, ?replication_factor=N; prepared statements, token-aware; SAI indexes for ranges; IF EXISTS deletes/updates (?affected=read: read then write; ?affected=plain: plain DELETE, read back after the run); no scans",
    needs: Needs::Server(ServerKind::Cassandra),
    schemes: &["cassandra"],
    options: UrlOptions::Only(&["affected", "replication_factor"]),
    several_hosts: true,
    capabilities: CapabilitySet {
        ops: OpSet::NO_SQL.without(OpKind::ReadModifyWrite).without(OpKind::Scan).with(OpKind::Custom),
        queries: &[],
        native_batch: true,
        secondary_indexes: true,
        statements: Some(crate::base::custom::Family::Cql),
    },
    open: Some(|name, url, ctx| Ok(Arc::new(Cassandra::new(name, url, ctx)?))),
};

pub struct Cassandra {
    /// What is known before the server was asked, then what `prepare` learned from it.
    info: TargetInfoCell,
    /// The contact points, `host:port` joined by commas.
    node: String,
    keyspace: String,
    /// SimpleStrategy's replication factor of the keyspace.
    replication_factor: u32,
    affected: Affected,
    /// The session for setup steps (prepare, load, count, cleanup).
    admin: tokio::sync::OnceCell<Arc<Session>>,
    tables: RwLock<Arc<Vec<TableCql>>>,
}

impl Cassandra {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let node = url.hosts().iter().map(|(host, port)| format!("{host}:{}", port.unwrap_or(9042))).collect::<Vec<_>>().join(",");
        let node = if node.is_empty() { "127.0.0.1:9042".to_string() } else { node };
        let replication_factor = match url.param("replication_factor") {
            None => 1,
            Some(n) => n
                .parse()
                .ok()
                .filter(|n| (1..=32).contains(n))
                .ok_or_else(|| Error::usage(format!("target '{name}': replication_factor must be a number from 1 to 32, got '{n}'")))?,
        };
        let keyspace = url.database().filter(|d| !d.is_empty()).unwrap_or_else(|| ctx.namespace.name().to_string());
        if keyspace.len() > 48 || !keyspace.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
            return Err(Error::usage(format!(
                "target '{name}': the keyspace in the URL path must be 1-48 lowercase letters, digits or '_', got '{keyspace}'"
            )));
        }
        let affected = match url.param("affected").as_deref() {
            None | Some("lwt") => Affected::Lwt,
            Some("read") => Affected::Read,
            Some("plain") => Affected::Plain,
            Some(other) => {
                return Err(Error::usage(format!("target '{name}': affected must be 'lwt', 'read' or 'plain', got '{other}'")));
            }
        };
        let mut settings = BTreeMap::new();
        settings.insert("keyspace".into(), format!("{keyspace} (SimpleStrategy, replication_factor {replication_factor})"));
        settings.insert("contact_points".into(), node.clone());
        settings.insert(
            "consistency".into(),
            format!(
                "LOCAL_QUORUM, serial LOCAL_SERIAL (driver defaults; {} of {replication_factor} replicas answer); client timeout 30 s",
                replication_factor / 2 + 1
            ),
        );
        settings.insert("routing".into(), "prepared statements everywhere; the driver's default policy routes them token-aware".into());
        settings.insert(
            "delete_update".into(),
            match affected {
                Affected::Lwt => "IF EXISTS lightweight transactions (Paxos); [applied] is the row count",
                Affected::Read => "read the key, then an unconditional write if it exists (two round trips, not atomic)",
                Affected::Plain => {
                    "deletes: plain DELETE, one round trip, rows verified by reading the keys back after the run (untimed); updates: IF EXISTS lightweight transactions"
                }
            }
            .into(),
        );
        settings.insert("request.insert".into(), "plain INSERT (an upsert: a duplicate key overwrites)".into());
        settings.insert("request.insert_batch".into(), "UNLOGGED BATCHes of INSERTs, see batch".into());
        settings.insert(
            "request.multi_get".into(),
            format!(
                "one SELECT ... WHERE key IN ? request; beyond {MULTI_GET_CHUNK} keys, requests of {MULTI_GET_CHUNK} keys, {BATCH_CHUNKS_IN_FLIGHT} in flight"
            ),
        );
        settings.insert(
            "batch".into(),
            format!(
                "inserts: UNLOGGED BATCHes of up to {BATCH_CHUNK} statements and ~{} KiB, {BATCH_CHUNKS_IN_FLIGHT} chunks in flight; other kinds: concurrent requests, {LOAD_CONCURRENCY} in flight",
                BATCH_BYTES / 1024
            ),
        );
        settings.insert("indexes".into(), "storage-attached (USING 'sai') on indexed columns; ranges use them".into());
        settings.insert("decimal".into(), "bigint hundredths".into());
        settings.insert("scan".into(), "not offered: partitions are in token order, not key order".into());
        settings.insert(
            "load".into(),
            format!("UNLOGGED BATCHes of {LOAD_BATCH} prepared INSERTs, {} batches in flight", LOAD_CONCURRENCY / LOAD_BATCH),
        );
        settings.insert("engine_memory".into(), "none over CQL (memtable sizes are JMX-only); see the server's resident memory".into());
        settings.insert("echo".into(), "SELECT key FROM system.local WHERE key = 'local' (prepared)".into());
        let base = SYSTEM.target_info(name, url, Execution::Async, "unknown (not yet connected)", settings);
        Ok(Cassandra {
            info: TargetInfoCell::new(base),
            node,
            keyspace,
            replication_factor,
            affected,
            admin: tokio::sync::OnceCell::new(),
            tables: RwLock::new(Arc::new(Vec::new())),
        })
    }

    fn name(&self) -> &str {
        &self.info.opened().name
    }

    async fn new_session(&self) -> Result<Session> {
        SessionBuilder::new()
            .known_nodes(self.node.split(','))
            .connection_timeout(Duration::from_secs(5))
            // Keyspace and partitioner metadata (for token-aware routing), not column details.
            .fetch_full_schema_metadata(false)
            .build()
            .await
            .map_err(|e| {
                Error::unreachable(
                    self.name(),
                    format!("cannot connect to Cassandra at {}: {e}; start the server or fix the URL", self.node),
                )
            })
    }

    async fn admin(&self) -> Result<&Arc<Session>> {
        self.admin.get_or_try_init(|| async { self.new_session().await.map(Arc::new) }).await
    }

    fn setup_error(&self, what: &str, e: ExecutionError) -> Error {
        if is_connection_error(&e) {
            Error::unreachable(self.name(), format!("lost Cassandra at {} during {what}: {e}", self.node))
        } else {
            Error::runtime(format!("target '{}': Cassandra {what} failed: {e}", self.name()))
        }
    }

    /// Runs one setup statement (DDL or a system-table read) with a long timeout.
    async fn run(
        &self,
        cql: &str,
        values: impl scylla::serialize::row::SerializeRow,
    ) -> Result<scylla::response::query_result::QueryResult> {
        let session = self.admin().await?;
        let mut stmt = scylla::statement::Statement::new(cql);
        stmt.set_request_timeout(Some(SLOW_TIMEOUT));
        session.query_unpaged(stmt, values).await.map_err(|e| self.setup_error(cql, e))
    }

    /// Reads the server's version once.
    async fn probe(&self) -> Result<()> {
        if self.info.is_reached() {
            return Ok(());
        }
        let result = self.run("SELECT release_version FROM system.local", ()).await?;
        let version = single_value(result).ok().flatten().and_then(|v| v.into_string()).unwrap_or_else(|| "unknown".into());
        let mut info = self.info.opened().clone();
        info.version = version;
        self.info.set(info);
        Ok(())
    }

    /// The keyspace's tables and their comments; `None` when the keyspace does not exist.
    async fn keyspace_tables(&self) -> Result<Option<BTreeMap<String, String>>> {
        let ks = self.run("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?", (&self.keyspace,)).await?;
        let exists = ks.into_rows_result().map(|r| r.rows_num() > 0).unwrap_or(false);
        if !exists {
            return Ok(None);
        }
        let result = self.run("SELECT table_name, comment FROM system_schema.tables WHERE keyspace_name = ?", (&self.keyspace,)).await?;
        let rows = result.into_rows_result().map_err(|e| Error::runtime(format!("cassandra: system_schema.tables: {e}")))?;
        let tables = rows
            .rows::<(String, Option<String>)>()
            .map_err(|e| Error::runtime(format!("cassandra: system_schema.tables: {e}")))?
            .filter_map(|r| r.ok())
            .map(|(t, c)| (t, c.unwrap_or_default()))
            .collect();
        Ok(Some(tables))
    }

    /// The keyspace's tables when it is dbsweep's (has the marker); `NotOwned` otherwise.
    async fn owned_tables(&self) -> Result<Option<BTreeMap<String, String>>> {
        let Some(mut tables) = self.keyspace_tables().await? else { return Ok(None) };
        // A keyspace without any table is another dbsweep creating it this instant (its
        // marker table follows at once): wait for the marker rather than refuse.
        let deadline = std::time::Instant::now() + MARKER_WAIT;
        while tables.is_empty() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let Some(now) = self.keyspace_tables().await? else { return Ok(None) };
            tables = now;
        }
        if tables.get(MARKER_TABLE).map(String::as_str) != Some(MARKER_COMMENT) {
            return Err(Error::not_owned(
                self.name(),
                format!(
                    "keyspace '{}' on Cassandra {} exists but has no dbsweep marker table '{MARKER_TABLE}', so dbsweep did not create it; \
                     drop it yourself or name another keyspace in the URL path",
                    self.keyspace, self.node
                ),
            ));
        }
        Ok(Some(tables))
    }

    /// Creates the keyspace with its marker table unless it exists and is dbsweep's;
    /// returns its tables and their comments.
    async fn ensure_keyspace(&self) -> Result<BTreeMap<String, String>> {
        if let Some(existing) = self.owned_tables().await? {
            self.check_replication().await?;
            return Ok(existing);
        }
        // IF NOT EXISTS: another dbsweep (another target of this run, or a second run about
        // to lose the lease) may be creating the same keyspace at this moment.
        let ks = quote(&self.keyspace);
        self.run(
            &format!(
                "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {}}}",
                self.replication_factor
            ),
            (),
        )
        .await?;
        self.run(&format!("CREATE TABLE IF NOT EXISTS {ks}.{MARKER_TABLE} (id int PRIMARY KEY) WITH comment = '{MARKER_COMMENT}'"), ())
            .await?;
        Ok(self.owned_tables().await?.unwrap_or_default())
    }

    /// Refuses dbsweep's existing keyspace when its replication factor is not the URL's.
    async fn check_replication(&self) -> Result<()> {
        let result = self.run("SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?", (&self.keyspace,)).await?;
        let replication: Option<BTreeMap<String, String>> = single_value(result)
            .ok()
            .flatten()
            .and_then(|v| v.into_pair_vec())
            .map(|pairs| pairs.into_iter().filter_map(|(k, v)| Some((k.into_string()?, v.into_string()?))).collect());
        let theirs = replication.as_ref().and_then(|r| r.get("replication_factor")).cloned().unwrap_or_else(|| "unknown".into());
        if theirs != self.replication_factor.to_string() {
            return Err(Error::usage(format!(
                "target '{}': dbsweep's keyspace '{}' on Cassandra {} has replication_factor {theirs}, the URL asks for {}; \
                 drop the keyspace (DROP KEYSPACE) or name another keyspace in the URL path",
                self.name(),
                self.keyspace,
                self.node,
                self.replication_factor
            )));
        }
        Ok(())
    }

    fn tables_of(&self, table: &TableDef) -> Result<(Arc<Vec<TableCql>>, usize)> {
        let tables = self.tables.read().unwrap().clone();
        match tables.iter().position(|t| t.def.name == table.name) {
            Some(i) => Ok((tables, i)),
            None => Err(Error::runtime(format!("target '{}': table {} was not prepared", self.name(), table.name))),
        }
    }

    async fn prepare_stmt(&self, cql: &str) -> Result<PreparedStatement> {
        let session = self.admin().await?;
        session.prepare(cql).await.map_err(|e| Error::runtime(format!("target '{}': cannot prepare {cql}: {e}", self.name())))
    }
}

impl Cassandra {
    /// Drops the (marked) keyspace when, of the tables listed in `existing`, only the
    /// marker and dbsweep's own tables were there (and have been dropped).
    async fn drop_keyspace_if_empty(&self, existing: &BTreeMap<String, String>) -> Result<()> {
        if existing.iter().all(|(name, comment)| comment == TABLE_COMMENT || name == MARKER_TABLE) {
            self.run(&format!("DROP KEYSPACE IF EXISTS {}", quote(&self.keyspace)), ()).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::connection::batch_chunks;
    use super::table::{bound, cql_date, from_cql, to_cql};
    use super::*;
    use crate::adapter::Target;
    use crate::base::table::{ColumnType, Date, Decimal, Value};
    use scylla::value::{CqlDate, CqlValue};

    #[test]
    fn statements_for_the_kv_table() {
        let def = crate::data::kv::shared_def();
        let t = TableCql::new("dbsweep", &def);
        assert_eq!(t.insert, r#"INSERT INTO "dbsweep"."kv" ("k", "grp", "val", "payload") VALUES (?, ?, ?, ?)"#);
        assert_eq!(t.get, r#"SELECT * FROM "dbsweep"."kv" WHERE "k" = ?"#);
        assert_eq!(t.multi_get, r#"SELECT * FROM "dbsweep"."kv" WHERE "k" IN ?"#);
        assert_eq!(t.delete_lwt, r#"DELETE FROM "dbsweep"."kv" WHERE "k" = ? IF EXISTS"#);
        assert_eq!(t.update_lwt[2].as_deref(), Some(r#"UPDATE "dbsweep"."kv" SET "val" = ? WHERE "k" = ? IF EXISTS"#));
        assert_eq!(t.update[0], None);
        assert_eq!(t.range_count[1].as_deref(), Some(r#"SELECT COUNT(*) FROM "dbsweep"."kv" WHERE "grp" >= ? AND "grp" <= ?"#));
        assert_eq!(t.range_count[2], None);
        assert_eq!(t.range_max("dbsweep", 1, 2), r#"SELECT MAX("val") FROM "dbsweep"."kv" WHERE "grp" >= ? AND "grp" <= ?"#);
        assert_eq!(
            t.create("dbsweep"),
            vec![
                r#"CREATE TABLE "dbsweep"."kv" ("k" bigint PRIMARY KEY, "grp" bigint, "val" double, "payload" text) WITH comment = 'created by dbsweep'"#,
                r#"CREATE INDEX "kv_grp_sai" ON "dbsweep"."kv" ("grp") USING 'sai'"#,
            ]
        );
    }

    #[test]
    fn values_round_trip_through_cql_types() {
        let cases = [
            (ColumnType::Int, Value::Int(-7)),
            (ColumnType::Float, Value::Float(12.5)),
            (ColumnType::Decimal, Value::Decimal(Decimal(1234))),
            (ColumnType::Text, Value::Text("x".into())),
            (ColumnType::Date, Value::Date(Date::from_iso("1998-12-01").unwrap())),
            (ColumnType::Date, Value::Date(Date(-1))),
            (ColumnType::Float, Value::Null),
        ];
        for (ty, v) in cases {
            assert_eq!(from_cql(ty, to_cql(ty, &v).unwrap()).unwrap(), v, "{ty:?}");
        }
        assert_eq!(cql_date(0), CqlDate(1 << 31));
        assert!(to_cql(ColumnType::Int, &Value::Text("a".into())).is_err());
        assert!(matches!(bound(ColumnType::Text, 1), Err(e) if e.class == ErrorClass::Unsupported));
        assert_eq!(bound(ColumnType::Float, 3).unwrap(), CqlValue::Double(3.0));
    }

    #[test]
    fn insert_batches_split_by_count_and_size() {
        let row = |text: usize| vec![Some(CqlValue::BigInt(1)), Some(CqlValue::Text("x".repeat(text)))];
        let sizes = |rows: &[Vec<Option<CqlValue>>]| -> Vec<usize> { batch_chunks(rows, |r| r).iter().map(|c| c.len()).collect() };
        let small: Vec<_> = (0..250).map(|_| row(10)).collect();
        assert_eq!(sizes(&small), [100, 100, 50]);
        // 1 KiB rows: 39 per chunk; one huge row is a chunk of its own.
        let big: Vec<_> = (0..100).map(|_| row(1024)).collect();
        assert_eq!(sizes(&big), [39, 39, 22]);
        assert_eq!(sizes(&[row(100_000), row(1)]), [1, 1]);
        assert!(sizes(&[]).is_empty());
    }

    #[test]
    fn names_are_quoted() {
        assert_eq!(quote("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn the_url_names_the_keyspace_and_the_delete_mode() {
        let open = |url: &str| Cassandra::new("c", &TargetUrl::parse(url).unwrap(), &OpenContext::new("/tmp"));
        let c = open("cassandra://127.0.0.1:9042").unwrap();
        assert_eq!((c.keyspace.as_str(), c.affected, c.node.as_str()), ("dbsweep", Affected::Lwt, "127.0.0.1:9042"));
        let c = open("cassandra://h:1/other_ks?affected=read").unwrap();
        assert_eq!((c.keyspace.as_str(), c.affected), ("other_ks", Affected::Read));
        assert!(!c.blind_deletes());
        let c = open("cassandra://h:1?affected=plain").unwrap();
        assert_eq!(c.affected, Affected::Plain);
        assert!(c.blind_deletes() && c.info().settings["delete_update"].starts_with("deletes: plain DELETE"));
        assert_eq!(open("cassandra://h:1/Bad-Name").err().unwrap().exit_code(), 2);
        assert_eq!(open("cassandra://h:1/?affected=maybe").err().unwrap().exit_code(), 2);
        let c = open("cassandra://127.0.0.2:9042,127.0.0.3:9042/ks?replication_factor=2").unwrap();
        assert_eq!((c.node.as_str(), c.replication_factor), ("127.0.0.2:9042,127.0.0.3:9042", 2));
        assert_eq!(c.info().settings["keyspace"], "ks (SimpleStrategy, replication_factor 2)");
        assert!(c.info().settings["consistency"].contains("2 of 2 replicas"));
        for bad in ["0", "x", "33"] {
            assert_eq!(open(&format!("cassandra://h:1?replication_factor={bad}")).err().unwrap().exit_code(), 2, "{bad}");
        }
        assert!(!c.info().capabilities.ops.contains(&OpKind::Scan));
    }
}
