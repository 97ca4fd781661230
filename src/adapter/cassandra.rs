//! Cassandra adapter on the `scylla` driver (CQL native protocol, async).
//!
//! Mapping: one keyspace (the namespace's name, `dbsweep` or `dbsweep_NAME` with
//! `--namespace NAME`, unless the URL's path names another; SimpleStrategy,
//! RF 1) holding one table per `TableDef`; column 0 is the partition key. Types: Int →
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
//! not key order. Insert is a plain INSERT, i.e. an upsert.
//!
//! URL: `cassandra://host:port[/keyspace][?affected=lwt|read|plain]`. Each `connect` opens its
//! own driver session (its own connection).
//!
//! Safety: the keyspace is dbsweep's only when it holds the marker table `dbsweep_owner`
//! whose comment is [`MARKER_COMMENT`]; dbsweep's tables carry the comment
//! [`TABLE_COMMENT`]. `prepare` refuses with `Error::NotOwned` a same-named keyspace
//! without the marker and a same-named table without the comment; it drops only tables it
//! marked, and `cleanup` drops the keyspace only when nothing but dbsweep's tables is in
//! it. The run's lease record is the one row of the keyspace's table `dbsweep_lease`
//! (see [`lease`]). Never touches any other keyspace.

use super::{Capabilities, Connection, EngineMemory, Execution, OpenContext, RowSource, Target, TargetInfo, TargetUrl};
use crate::base::op::{Answer, ErrorClass, Op, OpError, OpKind, Outcome, RangeAgg};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, TableId, Value};
use crate::error::{Error, Result};
use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::future::{BoxFuture, FutureExt};
use futures_util::stream::{self, TryStreamExt};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{ExecutionError, RequestAttemptError};
use scylla::response::PagingState;
use scylla::statement::batch::{Batch, BatchStatement, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlDate, CqlValue};
use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

mod lease;

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

/// CQL text of one table's statements, built once by `prepare`.
#[derive(Debug)]
struct TableCql {
    def: Arc<TableDef>,
    insert: String,
    get: String,
    multi_get: String,
    exists: String,
    delete: String,
    delete_lwt: String,
    /// Per column (None for the key).
    update: Vec<Option<String>>,
    update_lwt: Vec<Option<String>>,
    fetch_all: String,
    /// Per indexed column: rows, count.
    range_rows: Vec<Option<String>>,
    range_count: Vec<Option<String>>,
}

/// `"name"`, with inner quotes doubled.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn cql_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Int | ColumnType::Decimal => "bigint",
        ColumnType::Float => "double",
        ColumnType::Text => "text",
        ColumnType::Date => "date",
    }
}

impl TableCql {
    fn new(ks: &str, def: &Arc<TableDef>) -> Self {
        let t = format!("{}.{}", quote(ks), quote(&def.name));
        let key = quote(&def.columns[0].name);
        let names: Vec<String> = def.columns.iter().map(|c| quote(&c.name)).collect();
        let marks = vec!["?"; names.len()].join(", ");
        let update_of = |lwt: bool| {
            (0..def.columns.len())
                .map(|c| (c > 0).then(|| format!("UPDATE {t} SET {} = ? WHERE {key} = ?{}", names[c], if lwt { " IF EXISTS" } else { "" })))
                .collect()
        };
        let per_index = |what: &str| {
            (0..def.columns.len())
                .map(|c| def.indexed.contains(&c).then(|| format!("SELECT {what} FROM {t} WHERE {} >= ? AND {} <= ?", names[c], names[c])))
                .collect()
        };
        TableCql {
            def: def.clone(),
            insert: format!("INSERT INTO {t} ({}) VALUES ({marks})", names.join(", ")),
            get: format!("SELECT * FROM {t} WHERE {key} = ?"),
            multi_get: format!("SELECT * FROM {t} WHERE {key} IN ?"),
            exists: format!("SELECT {key} FROM {t} WHERE {key} = ?"),
            delete: format!("DELETE FROM {t} WHERE {key} = ?"),
            delete_lwt: format!("DELETE FROM {t} WHERE {key} = ? IF EXISTS"),
            update: update_of(false),
            update_lwt: update_of(true),
            fetch_all: format!("SELECT * FROM {t}"),
            range_rows: per_index("*"),
            range_count: per_index("COUNT(*)"),
        }
    }

    fn create(&self, ks: &str) -> Vec<String> {
        let def = &self.def;
        let t = format!("{}.{}", quote(ks), quote(&def.name));
        let columns: Vec<String> = def
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{} {}{}", quote(&c.name), cql_type(c.ty), if i == 0 { " PRIMARY KEY" } else { "" }))
            .collect();
        let mut out = vec![format!("CREATE TABLE {t} ({}) WITH comment = '{TABLE_COMMENT}'", columns.join(", "))];
        for &c in &def.indexed {
            let index = quote(&format!("{}_{}_sai", def.name, def.columns[c].name));
            out.push(format!("CREATE INDEX {index} ON {t} ({}) USING 'sai'", quote(&def.columns[c].name)));
        }
        out
    }

    fn range_max(&self, ks: &str, column: usize, of: usize) -> String {
        let c = quote(&self.def.columns[column].name);
        format!(
            "SELECT MAX({}) FROM {}.{} WHERE {c} >= ? AND {c} <= ?",
            quote(&self.def.columns[of].name),
            quote(ks),
            quote(&self.def.name)
        )
    }
}

/// Days since 1970-01-01 in CQL's encoding (2^31 = the epoch).
fn cql_date(days: i64) -> CqlDate {
    CqlDate((days + (1i64 << 31)) as u32)
}

/// A value for a column of type `ty` (numbers are converted between the numeric types).
fn to_cql(ty: ColumnType, v: &Value) -> Result<Option<CqlValue>, OpError> {
    let bad = || OpError::client(format!("cassandra: {v:?} does not fit a {ty:?} column"));
    Ok(Some(match (ty, v) {
        (_, Value::Null) => return Ok(None),
        (ColumnType::Int, Value::Int(i)) => CqlValue::BigInt(*i),
        (ColumnType::Decimal, Value::Decimal(d)) => CqlValue::BigInt(d.0),
        (ColumnType::Decimal, Value::Int(i)) => CqlValue::BigInt(i.checked_mul(100).ok_or_else(bad)?),
        (ColumnType::Float, Value::Float(f)) => CqlValue::Double(*f),
        (ColumnType::Float, Value::Int(i)) => CqlValue::Double(*i as f64),
        (ColumnType::Float, Value::Decimal(d)) => CqlValue::Double(d.0 as f64 / 100.0),
        (ColumnType::Text, Value::Text(s)) => CqlValue::Text(s.to_string()),
        (ColumnType::Date, Value::Date(d)) => CqlValue::Date(cql_date(i64::from(d.0))),
        _ => return Err(bad()),
    }))
}

/// A range bound (in the units of `Op::Range`) for an indexed column of type `ty`.
fn bound(ty: ColumnType, v: i64) -> Result<CqlValue, OpError> {
    Ok(match ty {
        ColumnType::Int | ColumnType::Decimal => CqlValue::BigInt(v),
        ColumnType::Float => CqlValue::Double(v as f64),
        ColumnType::Date => CqlValue::Date(cql_date(v)),
        ColumnType::Text => return Err(OpError::new(ErrorClass::Unsupported, "cassandra: no numeric range over a text column")),
    })
}

/// A stored value back into the column's type.
fn from_cql(ty: ColumnType, v: Option<CqlValue>) -> Result<Value, OpError> {
    Ok(match (ty, v) {
        (_, None) => Value::Null,
        (ColumnType::Int, Some(CqlValue::BigInt(i))) => Value::Int(i),
        (ColumnType::Decimal, Some(CqlValue::BigInt(i))) => Value::Decimal(Decimal(i)),
        (ColumnType::Float, Some(CqlValue::Double(f))) => Value::Float(f),
        (ColumnType::Text, Some(CqlValue::Text(s))) => Value::Text(s.into()),
        (ColumnType::Date, Some(CqlValue::Date(d))) => Value::Date(Date((i64::from(d.0) - (1i64 << 31)) as i32)),
        (ty, Some(other)) => return Err(OpError::server(format!("cassandra: a {ty:?} column returned {other:?}"))),
    })
}

fn row_values(def: &TableDef, row: &Row) -> Result<Vec<Option<CqlValue>>, OpError> {
    if row.len() != def.columns.len() {
        return Err(OpError::client(format!("cassandra: a row of {} values for {} columns of {}", row.len(), def.columns.len(), def.name)));
    }
    def.columns.iter().zip(row).map(|(c, v)| to_cql(c.ty, v)).collect()
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

/// Rows of a result (0 for a result without rows).
fn rows_of(result: scylla::response::query_result::QueryResult) -> Result<u64, OpError> {
    if !result.is_rows() {
        return Ok(0);
    }
    Ok(result.into_rows_result().map_err(|e| OpError::server(format!("cassandra: {e}")))?.rows_num() as u64)
}

/// The `[applied]` flag of a lightweight transaction's result, as 0 or 1.
fn applied(result: scylla::response::query_result::QueryResult) -> Result<u64, OpError> {
    let rows = result.into_rows_result().map_err(|e| OpError::server(format!("cassandra: LWT result: {e}")))?;
    let row: scylla::value::Row = rows.first_row().map_err(|e| OpError::server(format!("cassandra: LWT result: {e}")))?;
    match row.columns.first() {
        Some(Some(CqlValue::Boolean(b))) => Ok(u64::from(*b)),
        other => Err(OpError::server(format!("cassandra: LWT result without [applied]: {other:?}"))),
    }
}

/// The single value of a one-row, one-column result.
fn single_value(result: scylla::response::query_result::QueryResult) -> Result<Option<CqlValue>, OpError> {
    let rows = result.into_rows_result().map_err(|e| OpError::server(format!("cassandra: {e}")))?;
    let row: scylla::value::Row = rows.first_row().map_err(|e| OpError::server(format!("cassandra: {e}")))?;
    Ok(row.columns.into_iter().next().flatten())
}

/// Runs a prepared statement page by page; returns the number of rows.
async fn count_pages(session: &Session, stmt: &PreparedStatement, values: &[CqlValue]) -> Result<u64, ExecutionError> {
    let mut state = PagingState::start();
    let mut rows = 0u64;
    loop {
        let (result, next) = session.execute_single_page(stmt, values, state).await?;
        if result.is_rows() {
            rows += result.into_rows_result().map(|r| r.rows_num() as u64).unwrap_or(0);
        }
        match next.into_paging_control_flow() {
            ControlFlow::Continue(s) => state = s,
            ControlFlow::Break(()) => return Ok(rows),
        }
    }
}

pub struct Cassandra {
    /// Filled in by `prepare` with the server's version.
    probed: OnceLock<TargetInfo>,
    base: TargetInfo,
    /// `host:port`.
    node: String,
    keyspace: String,
    affected: Affected,
    /// The session for setup steps (prepare, load, count, cleanup).
    admin: tokio::sync::OnceCell<Arc<Session>>,
    tables: RwLock<Arc<Vec<TableCql>>>,
}

impl Cassandra {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let host = url.host().unwrap_or("127.0.0.1").to_string();
        let port = url.port().unwrap_or(9042);
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
        settings.insert("keyspace".into(), format!("{keyspace} (SimpleStrategy, replication_factor 1)"));
        settings.insert(
            "consistency".into(),
            "LOCAL_QUORUM, serial LOCAL_SERIAL (driver defaults; one replica at RF 1); client timeout 30 s".into(),
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
        let base = TargetInfo {
            name: name.to_string(),
            system: "cassandra".into(),
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
                    OpKind::RangeRows,
                    OpKind::RangeCount,
                    OpKind::RangeMax,
                    OpKind::FetchAll,
                ],
                queries: vec![],
                native_batch: true,
                secondary_indexes: true,
            },
            version: "unknown (not yet connected)".into(),
            settings,
        };
        Ok(Cassandra {
            probed: OnceLock::new(),
            base,
            node: format!("{host}:{port}"),
            keyspace,
            affected,
            admin: tokio::sync::OnceCell::new(),
            tables: RwLock::new(Arc::new(Vec::new())),
        })
    }

    fn name(&self) -> &str {
        &self.base.name
    }

    async fn new_session(&self) -> Result<Session> {
        SessionBuilder::new()
            .known_node(&self.node)
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
        if self.probed.get().is_some() {
            return Ok(());
        }
        let result = self.run("SELECT release_version FROM system.local", ()).await?;
        let version = single_value(result).ok().flatten().and_then(|v| v.into_string()).unwrap_or_else(|| "unknown".into());
        let mut info = self.base.clone();
        info.version = version;
        let _ = self.probed.set(info);
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
            return Ok(existing);
        }
        // IF NOT EXISTS: another dbsweep (another target of this run, or a second run about
        // to lose the lease) may be creating the same keyspace at this moment.
        let ks = quote(&self.keyspace);
        self.run(
            &format!("CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"),
            (),
        )
        .await?;
        self.run(&format!("CREATE TABLE IF NOT EXISTS {ks}.{MARKER_TABLE} (id int PRIMARY KEY) WITH comment = '{MARKER_COMMENT}'"), ())
            .await?;
        Ok(self.owned_tables().await?.unwrap_or_default())
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

/// One client's session and its prepared statements (prepared on first use).
pub struct CassandraConnection {
    session: Arc<Session>,
    keyspace: String,
    affected: Affected,
    tables: Arc<Vec<TableCql>>,
    prepared: HashMap<String, PreparedStatement>,
}

impl CassandraConnection {
    fn table(&self, id: TableId) -> Result<&TableCql, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("cassandra: no table #{id} (was prepare called?)")))
    }

    async fn stmt(&mut self, cql: &str) -> Result<PreparedStatement, OpError> {
        if let Some(s) = self.prepared.get(cql) {
            return Ok(s.clone());
        }
        let mut stmt = self.session.prepare(cql).await.map_err(|e| OpError::server(format!("cassandra: prepare {cql}: {e}")))?;
        stmt.set_page_size(PAGE_SIZE);
        self.prepared.insert(cql.to_string(), stmt.clone());
        Ok(stmt)
    }

    /// Everything an op needs, resolved before it runs (so batches can run concurrently).
    async fn plan(&mut self, op: &Op) -> Result<Planned, OpError> {
        let plain = |stmt, values| Planned { stmt, values, how: How::Rows, check: None };
        Ok(match op {
            Op::Echo => plain(self.stmt("SELECT key FROM system.local WHERE key = 'local'").await?, vec![]),
            Op::Insert { table, row } => {
                let t = self.table(*table)?;
                let (cql, values) = (t.insert.clone(), row_values(&t.def, row)?);
                Planned { how: How::Fixed(1), ..plain(self.stmt(&cql).await?, values) }
            }
            Op::Get { table, key } => {
                let cql = self.table(*table)?.get.clone();
                plain(self.stmt(&cql).await?, vec![Some(CqlValue::BigInt(*key))])
            }
            Op::MultiGet { table, keys } => {
                let cql = self.table(*table)?.multi_get.clone();
                let list = CqlValue::List(keys.iter().map(|k| CqlValue::BigInt(*k)).collect());
                plain(self.stmt(&cql).await?, vec![Some(list)])
            }
            Op::Delete { table, key } => {
                let t = self.table(*table)?;
                let key = vec![Some(CqlValue::BigInt(*key))];
                match self.affected {
                    Affected::Plain => {
                        let cql = t.delete.clone();
                        Planned { how: How::Fixed(1), ..plain(self.stmt(&cql).await?, key) }
                    }
                    Affected::Lwt => {
                        let cql = t.delete_lwt.clone();
                        Planned { how: How::Applied, ..plain(self.stmt(&cql).await?, key) }
                    }
                    Affected::Read => {
                        let (cql, exists) = (t.delete.clone(), t.exists.clone());
                        let check = Some((self.stmt(&exists).await?, key.clone()));
                        Planned { how: How::Fixed(1), check, ..plain(self.stmt(&cql).await?, key) }
                    }
                }
            }
            Op::Update { table, key, column, value } => {
                let t = self.table(*table)?;
                let Some(col) = t.def.columns.get(*column).filter(|_| *column > 0) else {
                    return Err(OpError::client(format!("cassandra: cannot update column {column} of {}", t.def.name)));
                };
                let values = vec![to_cql(col.ty, value)?, Some(CqlValue::BigInt(*key))];
                match self.affected {
                    Affected::Lwt | Affected::Plain => {
                        let cql = t.update_lwt[*column].clone().expect("a non-key column");
                        Planned { how: How::Applied, ..plain(self.stmt(&cql).await?, values) }
                    }
                    Affected::Read => {
                        let (cql, exists) = (t.update[*column].clone().expect("a non-key column"), t.exists.clone());
                        let check = Some((self.stmt(&exists).await?, vec![Some(CqlValue::BigInt(*key))]));
                        Planned { how: How::Fixed(1), check, ..plain(self.stmt(&cql).await?, values) }
                    }
                }
            }
            Op::Range { table, column, lo, hi, agg } => {
                let t = self.table(*table)?;
                let ty =
                    t.def.columns.get(*column).map(|c| c.ty).ok_or_else(|| OpError::client(format!("cassandra: no column {column}")))?;
                let unindexed =
                    || OpError::new(ErrorClass::Unsupported, format!("cassandra: column {column} of {} has no index", t.def.name));
                let values = vec![Some(bound(ty, *lo)?), Some(bound(ty, *hi)?)];
                let (cql, how) = match agg {
                    RangeAgg::Rows => (t.range_rows[*column].clone().ok_or_else(unindexed)?, How::Pages),
                    RangeAgg::Count => (t.range_count[*column].clone().ok_or_else(unindexed)?, How::Count),
                    RangeAgg::Max { column: of } => {
                        if t.range_rows[*column].is_none() {
                            return Err(unindexed());
                        }
                        let of_ty =
                            t.def.columns.get(*of).map(|c| c.ty).ok_or_else(|| OpError::client(format!("cassandra: no column {of}")))?;
                        (t.range_max(&self.keyspace, *column, *of), How::Max(of_ty))
                    }
                };
                Planned { how, ..plain(self.stmt(&cql).await?, values) }
            }
            Op::FetchAll { table } => {
                let cql = self.table(*table)?.fetch_all.clone();
                Planned { how: How::Pages, ..plain(self.stmt(&cql).await?, vec![]) }
            }
            Op::Scan { .. } | Op::ReadModifyWrite { .. } | Op::Query(_) => {
                return Err(OpError::unsupported(op.kind(), "cassandra"));
            }
        })
    }
}

/// Bytes a row's values take in a request, roughly.
fn value_bytes(values: &[Option<CqlValue>]) -> usize {
    values
        .iter()
        .map(|v| match v {
            Some(CqlValue::Text(t)) => t.len() + 4,
            _ => 12,
        })
        .sum()
}

/// Splits an insert batch into UNLOGGED BATCH chunks of at most `BATCH_CHUNK` statements
/// and about `BATCH_BYTES` of values (a chunk always has at least one statement).
fn batch_chunks<T>(plans: &[T], values: impl Fn(&T) -> &[Option<CqlValue>]) -> Vec<&[T]> {
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, p) in plans.iter().enumerate() {
        let size = value_bytes(values(p));
        if i > start && (i - start == BATCH_CHUNK || bytes + size > BATCH_BYTES) {
            chunks.push(&plans[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < plans.len() {
        chunks.push(&plans[start..]);
    }
    chunks
}

/// How a planned statement's result becomes an outcome.
#[derive(Debug, Clone, Copy)]
enum How {
    /// The rows of a single-page result.
    Rows,
    /// A fixed count (written rows).
    Fixed(u64),
    /// The `[applied]` flag of an LWT.
    Applied,
    /// Every page's rows.
    Pages,
    /// COUNT(*) as `Answer::Scalar(Int)`.
    Count,
    /// MAX(column) as `Answer::Scalar` of the column's type.
    Max(ColumnType),
}

struct Planned {
    stmt: PreparedStatement,
    values: Vec<Option<CqlValue>>,
    how: How,
    /// For `affected=read`: a read that must find the key before the write runs.
    check: Option<(PreparedStatement, Vec<Option<CqlValue>>)>,
}

impl Planned {
    async fn run(&self, session: &Session) -> Result<Outcome, OpError> {
        if let Some((read, key)) = &self.check
            && rows_of(session.execute_unpaged(read, key).await.map_err(op_error)?)? == 0
        {
            return Ok(Outcome::rows(0));
        }
        if let How::Pages = self.how {
            let values: Vec<CqlValue> = self.values.iter().flatten().cloned().collect();
            return Ok(Outcome::rows(count_pages(session, &self.stmt, &values).await.map_err(op_error)?));
        }
        let result = session.execute_unpaged(&self.stmt, &self.values).await.map_err(op_error)?;
        Ok(match self.how {
            How::Rows => Outcome::rows(rows_of(result)?),
            How::Fixed(n) => Outcome::rows(n),
            How::Applied => Outcome::rows(applied(result)?),
            How::Count => {
                let n = match single_value(result)? {
                    Some(CqlValue::BigInt(n)) => n,
                    other => return Err(OpError::server(format!("cassandra: COUNT returned {other:?}"))),
                };
                Outcome::answer(1, Answer::Scalar(Value::Int(n)))
            }
            How::Max(ty) => Outcome::answer(1, Answer::Scalar(from_cql(ty, single_value(result)?)?)),
            How::Pages => unreachable!("handled above"),
        })
    }
}

/// Sends one chunk of an insert batch as one UNLOGGED BATCH; returns its row count.
async fn send_chunk(session: &Session, chunk: &[Planned]) -> Result<u64, OpError> {
    let mut batch = Batch::new(BatchType::Unlogged);
    for p in chunk {
        batch.append_statement(BatchStatement::PreparedStatement(p.stmt.clone()));
    }
    let values: Vec<&Vec<Option<CqlValue>>> = chunk.iter().map(|p| &p.values).collect();
    session.batch(&batch, values).await.map_err(op_error)?;
    Ok(chunk.len() as u64)
}

#[async_trait]
impl Connection for CassandraConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        if let Op::MultiGet { table, keys } = op
            && keys.len() > MULTI_GET_CHUNK
        {
            // One coordinator read of 70,000 partitions times out on a single node: IN
            // requests of MULTI_GET_CHUNK keys, a few in flight.
            let mut plans = Vec::with_capacity(keys.len().div_ceil(MULTI_GET_CHUNK));
            for chunk in keys.chunks(MULTI_GET_CHUNK) {
                plans.push(self.plan(&Op::MultiGet { table: *table, keys: chunk.to_vec() }).await?);
            }
            let session = &*self.session;
            let runs: Vec<BoxFuture<'_, Result<Outcome, OpError>>> = plans.iter().map(|p| p.run(session).boxed()).collect();
            let outcomes: Vec<Outcome> = stream::iter(runs).buffer_unordered(BATCH_CHUNKS_IN_FLIGHT).try_collect().await?;
            return Ok(Outcome::rows(outcomes.iter().map(|o| o.rows).sum()));
        }
        let planned = self.plan(op).await?;
        planned.run(&self.session).await
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let mut plans = Vec::with_capacity(ops.len());
        for op in ops {
            plans.push(self.plan(op).await?);
        }
        let session = &*self.session;
        if ops.iter().all(|op| matches!(op, Op::Insert { .. })) {
            // Writes to different partitions: UNLOGGED BATCHes (no batch log), one request
            // per chunk, a few chunks concurrently.
            let chunks: Vec<BoxFuture<'_, Result<u64, OpError>>> =
                batch_chunks(&plans, |p| &p.values).into_iter().map(|chunk| send_chunk(session, chunk).boxed()).collect();
            let done: Vec<u64> = stream::iter(chunks).buffer_unordered(BATCH_CHUNKS_IN_FLIGHT).try_collect().await?;
            return Ok(Outcome::rows(done.iter().sum()));
        }
        let runs: Vec<BoxFuture<'_, Result<Outcome, OpError>>> = plans.iter().map(|p| p.run(session).boxed()).collect();
        let outcomes: Vec<Outcome> = stream::iter(runs).buffer_unordered(LOAD_CONCURRENCY).try_collect().await?;
        Ok(Outcome::rows(outcomes.iter().map(|o| o.rows).sum()))
    }
}

#[async_trait]
impl Target for Cassandra {
    fn info(&self) -> &TargetInfo {
        self.probed.get().unwrap_or(&self.base)
    }

    fn blind_deletes(&self) -> bool {
        self.affected == Affected::Plain
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        for t in tables {
            if t.columns.first().map(|c| c.ty) != Some(ColumnType::Int) {
                return Err(Error::runtime(format!("cassandra: table {}: column 0 must be an Int key", t.name)));
            }
            if t.name == MARKER_TABLE {
                return Err(Error::runtime(format!("cassandra: '{MARKER_TABLE}' is dbsweep's marker table name")));
            }
        }
        self.probe().await?;
        let ks = quote(&self.keyspace);
        let existing = self.ensure_keyspace().await?;
        // A same-named table dbsweep did not create is refused before anything is dropped.
        for t in tables {
            if let Some(comment) = existing.get(&t.name)
                && comment != TABLE_COMMENT
            {
                return Err(Error::not_owned(
                    self.name(),
                    format!(
                        "table '{}.{}' on Cassandra {} was not created by dbsweep (its comment is not '{TABLE_COMMENT}'); \
                         drop it yourself or name another keyspace in the URL path",
                        self.keyspace, t.name, self.node
                    ),
                ));
            }
        }
        for (name, comment) in &existing {
            if comment == TABLE_COMMENT {
                self.run(&format!("DROP TABLE IF EXISTS {ks}.{}", quote(name)), ()).await?;
            }
        }
        let cql: Vec<TableCql> = tables.iter().map(|t| TableCql::new(&self.keyspace, t)).collect();
        for t in &cql {
            for statement in t.create(&self.keyspace) {
                self.run(&statement, ()).await?;
            }
        }
        *self.tables.write().unwrap() = Arc::new(cql);
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let (tables, i) = self.tables_of(table)?;
        let t = &tables[i];
        let stmt = self.prepare_stmt(&t.insert).await?;
        let session = self.admin().await?.clone();
        let def = t.def.clone();
        let (stmt, session) = (&stmt, &session);
        // Chunks of up to LOAD_BATCH rows and about BATCH_BYTES of values.
        let mut rows = rows.peekable();
        let chunks = std::iter::from_fn(move || {
            let (mut chunk, mut bytes) = (Vec::new(), 0);
            while chunk.len() < LOAD_BATCH {
                let Some(row) = rows.peek() else { break };
                let values = match row_values(&def, row) {
                    Ok(values) => values,
                    Err(e) => return Some(Err(Error::runtime(e.message))),
                };
                let size = value_bytes(&values);
                if !chunk.is_empty() && bytes + size > BATCH_BYTES {
                    break;
                }
                rows.next();
                bytes += size;
                chunk.push(values);
            }
            (!chunk.is_empty()).then_some(Ok(chunk))
        });
        let mut writes = futures_util::stream::iter(chunks.map(|chunk| async move {
            let chunk = chunk?;
            let n = chunk.len() as u64;
            if chunk.len() == 1 {
                session.execute_unpaged(stmt, &chunk[0]).await.map_err(|e| self.setup_error("load", e))?;
            } else {
                let statements = vec![BatchStatement::PreparedStatement(stmt.clone()); chunk.len()];
                let batch = Batch::new_with_statements(BatchType::Unlogged, statements);
                session.batch(&batch, &chunk).await.map_err(|e| self.setup_error("load", e))?;
            }
            Ok::<u64, Error>(n)
        }))
        .buffer_unordered(LOAD_CONCURRENCY / LOAD_BATCH);
        let mut loaded = 0u64;
        while let Some(done) = writes.next().await {
            loaded += done?;
        }
        Ok(loaded)
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let session = self.new_session().await?;
        Ok(Box::new(CassandraConnection {
            session: Arc::new(session),
            keyspace: self.keyspace.clone(),
            affected: self.affected,
            tables: self.tables.read().unwrap().clone(),
            prepared: HashMap::new(),
        }))
    }

    /// Counts the keys page by page (a single `COUNT(*)` could hit the server's range
    /// timeout on large tables).
    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let (tables, i) = self.tables_of(table)?;
        let t = &tables[i];
        let key = quote(&t.def.columns[0].name);
        let cql = format!("SELECT {key} FROM {}.{}", quote(&self.keyspace), quote(&t.def.name));
        let mut stmt = self.prepare_stmt(&cql).await?;
        stmt.set_page_size(PAGE_SIZE);
        stmt.set_request_timeout(Some(SLOW_TIMEOUT));
        count_pages(self.admin().await?, &stmt, &[]).await.map_err(|e| self.setup_error("count", e))
    }

    /// None: Cassandra 5.0 reports no memory figure for a table's data over CQL. Its
    /// memtable sizes (MemtableOnHeapSize, MemtableLiveDataSize) are JMX metrics only, and
    /// the CQL-visible candidates measure something else: `system_views.disk_usage` and
    /// `max_partition_size` are on-disk SSTables in whole MiB (0 while the data is still in
    /// memtables, as it is after a load), `system.size_estimates` / `table_estimates`
    /// cover SSTables only and are refreshed every 5 minutes, and `system_views.caches`
    /// are the key/row/counter caches. The runner's resident-memory reading of the JVM is
    /// the figure for Cassandra (with a fixed heap it grows as the heap is touched and
    /// does not shrink after deletes).
    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        Ok(None)
    }

    async fn cleanup(&self) -> Result<()> {
        let Some(existing) = self.keyspace_tables().await? else { return Ok(()) };
        // Without the marker nothing here is dbsweep's.
        if existing.get(MARKER_TABLE).map(String::as_str) != Some(MARKER_COMMENT) {
            return Ok(());
        }
        let ks = quote(&self.keyspace);
        for (name, comment) in &existing {
            if comment == TABLE_COMMENT {
                self.run(&format!("DROP TABLE IF EXISTS {ks}.{}", quote(name)), ()).await?;
            }
        }
        self.drop_keyspace_if_empty(&existing).await?;
        *self.tables.write().unwrap() = Arc::new(Vec::new());
        Ok(())
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn super::lease::LeaseStore>> {
        Some(self)
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
    use super::*;

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
        assert!(!c.info().capabilities.ops.contains(&OpKind::Scan));
    }
}
