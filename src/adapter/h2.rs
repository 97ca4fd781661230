//! H2 over its PostgreSQL-protocol server (tokio-postgres), as a member of the PostgreSQL
//! adapter family: `h2://sa@127.0.0.1:5435/mem:dbsweep`.
//!
//! Owns the namespace's schema (`dbsweep`, or `dbsweep_NAME` with `--namespace NAME`) in
//! the database the URL names, marked like PostgreSQL's by the schema comment
//! `dbsweep-owned` (H2 keeps it in `INFORMATION_SCHEMA.SCHEMATA.REMARKS`); such a schema
//! without it is refused with `NotOwned`. Tables are one typed column per attribute, named
//! as in `pg-row`; `cleanup` drops them, and the schema when it is empty. The run's lease
//! record is a row of `<schema>.dbsweep_lease` (see [`lease`]). Must not touch any other
//! schema. The URL's database is passed to H2 verbatim
//! (its PG server opens `jdbc:h2:NAME`): `mem:NAME` is an in-memory database, to which the
//! adapter adds `;DB_CLOSE_DELAY=-1` (else H2 drops it when the last session closes,
//! i.e. between `prepare` and `load`). Defaults: port 5435 (H2's), user `sa`, empty
//! password, database `mem:dbsweep`.
//!
//! Shared with the PostgreSQL adapter: table naming and parameter encoding (`PgTable` of
//! the row layout: keys and integers as int8, decimals as hundredths in int8, dates as
//! days since 1970 in int4), error mapping and the streamed fetch-all. What H2 does
//! differently, each handled explicitly below:
//! - **Results are binary or nothing.** tokio-postgres asks for every result column in
//!   binary; H2's PG server has binary output for numbers, dates and bytea but fails
//!   ("output binary format is undefined") for text. Text columns are therefore selected
//!   as `STRINGTOUTF8(col)` (bytea of the UTF-8 text) — the same bytes travel, decoded
//!   client-side. Version and settings are read with the simple (text) protocol.
//! - **Parameter typing.** A `$1::int8` cast leaves H2's parameter type unknown (and the
//!   value undecodable); statements are prepared with explicit types instead and use
//!   `CAST`-free `$n`, with `DATEADD`/`DATEDIFF` for the day-number encoding of dates.
//! - **No arrays on the wire** (H2 reads a binary int8[] parameter as a string) and no
//!   `type[]` syntax: `= ANY($1)` becomes `IN ($1, ..., $n)` lists of at most
//!   `MAX_IN_KEYS` distinct keys, each padded (with its own last key) to a power of two, so
//!   a handful of statements per table serve every list length; `INSERT ... SELECT FROM UNNEST(arrays)`
//!   becomes a multi-row `INSERT ... VALUES (...), (...)`.
//! - **No COPY**: bulk load is multi-row `INSERT ... VALUES` of up to [`MAX_PARAMS`]
//!   parameters per statement, one prepared statement per chunk size, autocommitted per
//!   chunk.
//! - **No hstore/jsonb**: only the row layout exists (system `h2`).
//! - **No advisory locks** (`pg_advisory_xact_lock`) and DDL commits at once: `prepare`
//!   checks the marker, then `CREATE SCHEMA` (which fails if someone created it meanwhile,
//!   whereupon the marker is checked again). Two dbsweep targets preparing the *same*
//!   tables in one H2 database at once are not serialized (one H2 target per database).
//! - **A failed statement does not abort the transaction** (PostgreSQL's does): a
//!   pipelined `BEGIN; ...; COMMIT` would commit the statements that succeeded. Batches
//!   therefore send `BEGIN` and their statements pipelined, wait for every reply, and
//!   then send `COMMIT` only if all succeeded, else `ROLLBACK`.
//! - **Indexes**: named (`CREATE INDEX "t_col_idx" ON ...`), no expression indexes; `TEXT`
//!   would be a CLOB in H2, so text columns are `VARCHAR`.
//! - **Nagle on the server side**: H2 writes each message in several small writes on a
//!   socket without `TCP_NODELAY`, so with delayed ACKs every request took ~40 ms. The
//!   client socket acknowledges at once (`QuickAck`, Linux `TCP_QUICKACK`).
//! - `ON CONFLICT` is not used (as in `pg-row`): a duplicate key is an error.
//! - **TPC-H Q1/Q3/Q6/Q14** use the PostgreSQL dialect's SQL unchanged (H2 parses it),
//!   but run through the simple (text) protocol, since Q1 returns text columns; each cell
//!   is parsed into the type `answer_columns` names. They are not prepared (H2 parses them
//!   per run; negligible next to their runtime).
//!
//! Memory (`engine_memory`): `MEMORY_USED()`, which H2 computes as JVM heap in use right
//! after a full garbage collection it forces. Caveats: it is the whole server's live heap
//! (H2's engine, caches, sessions, and any other database in the JVM), not dbsweep's
//! tables alone; per-table figures do not exist for in-memory tables (`DISK_SPACE_USED`
//! is 0 without a file store). Reading it runs a GC in the server; no data changes. Must
//! not time anything.

use super::postgres::conn::{count_streamed, describe, op_error, refs};
use super::postgres::sql::{Layout, MARKER, Param, PgTable, quote_ident, quote_literal};
use super::{Capabilities, Connection, EngineMemory, Execution, OpenContext, RowSource, Target, TargetInfo, TargetUrl};
use crate::adapter::sql::tpch::Dialect;
use crate::base::op::{Answer, ErrorClass, Op, OpError, OpKind, Outcome, QueryId, RangeAgg};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use crate::data::tpch_queries;
use crate::error::{Error, Result};
use async_trait::async_trait;
use futures_util::future::{BoxFuture, FutureExt};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, Statement};

mod lease;

/// H2's PG server port when the URL names none.
pub const DEFAULT_PORT: u16 = 5435;
/// H2's customary administrator.
pub const DEFAULT_USER: &str = "sa";
/// The database when the URL names none.
pub const DEFAULT_DATABASE: &str = "mem:dbsweep";
/// Parameters per multi-row statement (the protocol counts them in an i16; H2 parses
/// each statement, so very long ones cost more than they save).
const MAX_PARAMS: usize = 4096;
/// Keys per `IN (...)` statement.
const MAX_IN_KEYS: usize = 1024;

pub struct H2 {
    initial: TargetInfo,
    described: OnceLock<TargetInfo>,
    /// Connection parameters, password included (never printed).
    config: tokio_postgres::Config,
    /// `host:port`, for messages.
    endpoint: String,
    /// Where to connect (the socket is opened by the adapter, see `QuickAck`).
    host: String,
    port: u16,
    /// dbsweep's schema: the namespace's name.
    schema: String,
    /// Tables of the last `prepare`, by `TableId`.
    tables: Mutex<Arc<Vec<PgTable>>>,
}

/// The database name sent to H2: an in-memory database is kept until the server stops.
fn database_name(database: &str) -> String {
    let lower = database.to_ascii_lowercase();
    if lower.starts_with("mem:") && !lower.contains("db_close_delay") {
        format!("{database};DB_CLOSE_DELAY=-1")
    } else {
        database.to_string()
    }
}

impl H2 {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let host = url.host().unwrap_or("127.0.0.1").to_string();
        let port = url.port().unwrap_or(DEFAULT_PORT);
        let user = url.username().unwrap_or_else(|| DEFAULT_USER.into());
        let database = url.database().unwrap_or_else(|| DEFAULT_DATABASE.into());
        let mut config = tokio_postgres::Config::new();
        config
            .host(&host)
            .port(port)
            .user(&user)
            // H2 always asks for a password; `sa` of a new database has an empty one.
            .password(url.password().unwrap_or_default())
            .dbname(database_name(&database))
            .application_name("dbsweep")
            .connect_timeout(Duration::from_secs(5));
        let mut settings = BTreeMap::new();
        settings.insert("database".into(), database.clone());
        let in_memory = database.to_ascii_lowercase().starts_with("mem:");
        settings.insert(
            "storage".into(),
            if in_memory { "in-memory (mem:, DB_CLOSE_DELAY=-1)".into() } else { "as the database name says (not mem:)".into() },
        );
        settings.insert("load".into(), format!("multi-row INSERT ... VALUES, {MAX_PARAMS} parameters per statement (no COPY in H2)"));
        settings.insert("text_on_the_wire".into(), "STRINGTOUTF8 (bytea): H2's PG server has no binary text output".into());
        settings.insert("queries".into(), "TPC-H in PostgreSQL syntax, simple (text) protocol".into());
        settings.insert("request.insert".into(), "INSERT INTO <table> VALUES ($1, …), prepared".into());
        settings.insert(
            "request.insert_batch".into(),
            format!("multi-row INSERT … VALUES of up to {MAX_PARAMS} parameters per statement; several in one transaction"),
        );
        settings.insert(
            "request.multi_get".into(),
            format!("SELECT … WHERE <key> IN ($1, …): up to {MAX_IN_KEYS} distinct keys per statement, padded to a power of two"),
        );
        let ops = OpKind::ALL.to_vec();
        Ok(H2 {
            initial: TargetInfo {
                name: name.to_string(),
                system: "h2".into(),
                url: url.redacted(),
                execution: Execution::Async,
                capabilities: Capabilities {
                    ops,
                    queries: vec![QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14],
                    native_batch: true,
                    secondary_indexes: true,
                },
                version: "unknown (not connected yet)".into(),
                settings,
            },
            described: OnceLock::new(),
            config,
            endpoint: format!("{host}:{port}"),
            host,
            port,
            schema: ctx.namespace.name().to_string(),
            tables: Mutex::new(Arc::new(Vec::new())),
        })
    }

    fn name(&self) -> &str {
        &self.initial.name
    }

    fn runtime(&self, what: &str, e: &tokio_postgres::Error) -> Error {
        Error::runtime(format!("target '{}': {what}: {}", self.name(), describe(e)))
    }

    fn unreachable(&self, detail: &str) -> Error {
        Error::unreachable(
            self.name(),
            format!(
                "cannot log in to H2's PG server at {} ({detail}); start it (java -cp h2.jar org.h2.tools.Server -pg -ifNotExists), \
                 fix host/port/user/password in the URL, or use --spawn h2",
                self.endpoint
            ),
        )
    }

    /// Opens one session over a [`QuickAck`] socket; failures are `Unreachable` with the
    /// fix in the message.
    async fn open_client(&self) -> Result<Client> {
        let connect = async {
            let stream = tokio::net::TcpStream::connect((self.host.as_str(), self.port)).await.map_err(|e| e.to_string())?;
            stream.set_nodelay(true).map_err(|e| e.to_string())?;
            quick_ack(&stream);
            self.config.connect_raw(QuickAck(stream), NoTls).await.map_err(|e| describe(&e))
        };
        let (client, connection) = match tokio::time::timeout(Duration::from_secs(5), connect).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(detail)) => return Err(self.unreachable(&detail)),
            Err(_) => return Err(self.unreachable("no answer within 5 s")),
        };
        tokio::spawn(async move {
            let _ = connection.await;
        });
        if self.described.get().is_none() {
            let info = self.describe(&client).await?;
            let _ = self.described.set(info);
        }
        Ok(client)
    }

    /// Version and isolation level, through the simple (text) protocol.
    async fn describe(&self, client: &Client) -> Result<TargetInfo> {
        let mut info = self.initial.clone();
        let version = first_cell(client, "SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS WHERE SETTING_NAME = 'info.VERSION'")
            .await
            .map_err(|e| self.runtime("reading H2's version", &e))?;
        info.version = format!("H2 {}", version.unwrap_or_else(|| "(unknown version)".into()));
        let isolation = first_cell(client, "SELECT ISOLATION_LEVEL FROM INFORMATION_SCHEMA.SESSIONS WHERE SESSION_ID = SESSION_ID()")
            .await
            .map_err(|e| self.runtime("reading the isolation level", &e))?;
        if let Some(isolation) = isolation {
            info.settings.insert("isolation".into(), isolation);
        }
        Ok(info)
    }

    /// Whether `dbsweep` exists and carries the marker: `None` = absent.
    async fn schema_owned(&self, client: &Client) -> Result<Option<bool>> {
        // An INT answer: H2 cannot send text (or booleans) in binary.
        let sql = format!(
            "SELECT CASE WHEN REMARKS = {} THEN 1 ELSE 0 END FROM INFORMATION_SCHEMA.SCHEMATA WHERE SCHEMA_NAME = {}",
            quote_literal(MARKER),
            quote_literal(&self.schema)
        );
        let rows = client.query(&sql, &[]).await.map_err(|e| self.runtime("checking schema", &e))?;
        match rows.first() {
            None => Ok(None),
            Some(row) => Ok(Some(row.try_get::<_, i32>(0).map_err(|e| self.runtime("checking schema", &e))? == 1)),
        }
    }

    fn not_owned(&self) -> Error {
        Error::not_owned(
            self.name(),
            format!(
                "schema {} in H2 at {} exists but was not created by dbsweep (its comment is not '{MARKER}'); \
                 drop or rename it, or point the target at another database",
                self.schema, self.endpoint
            ),
        )
    }

    /// Creates the marked schema, or checks the marker of an existing one.
    async fn ensure_schema(&self, client: &Client) -> Result<()> {
        // No advisory lock in H2: another dbsweep session may be creating the schema right
        // now. Its CREATE and COMMENT are two statements, so an unmarked schema gets a
        // moment to show the marker before it counts as someone else's; a CREATE that
        // fails means someone else created it first, and the marker decides.
        for _ in 0..40 {
            match self.schema_owned(client).await? {
                Some(true) => return Ok(()),
                Some(false) => {}
                None => {
                    if client.batch_execute(&format!("CREATE SCHEMA {}", quote_ident(&self.schema))).await.is_ok() {
                        let comment = format!("COMMENT ON SCHEMA {} IS {}", quote_ident(&self.schema), quote_literal(MARKER));
                        return client.batch_execute(&comment).await.map_err(|e| self.runtime(&comment, &e));
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Err(self.not_owned())
    }

    /// The number of tables in dbsweep's schema.
    async fn tables_in_schema(&self, client: &Client) -> Result<i64> {
        let sql = format!("SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = {}", quote_literal(&self.schema));
        client.query_one(&sql, &[]).await.and_then(|r| r.try_get(0)).map_err(|e| self.runtime("cleanup", &e))
    }

    /// Drops dbsweep's (marked) schema when no table is left in it.
    async fn drop_schema_if_empty(&self, client: &Client) -> Result<()> {
        if self.tables_in_schema(client).await? == 0 {
            // RESTRICT: fails (and the schema stays) if anything was put in it meanwhile.
            if let Err(e) = client.batch_execute(&format!("DROP SCHEMA {} RESTRICT", quote_ident(&self.schema))).await {
                tracing::info!("keeping schema {}: {}", self.schema, describe(&e));
            }
        }
        Ok(())
    }

    fn table(&self, def: &TableDef) -> Result<(Arc<Vec<PgTable>>, usize)> {
        let tables = self.tables.lock().unwrap().clone();
        let index = tables
            .iter()
            .position(|t| t.def.name == def.name)
            .ok_or_else(|| Error::runtime(format!("target '{}': table {} was not prepared", self.name(), def.name)))?;
        Ok((tables, index))
    }
}

/// A client socket that acknowledges every read at once (Linux `TCP_QUICKACK`, re-armed
/// after each read since the kernel drops it again).
///
/// Why: H2's PG server does not set `TCP_NODELAY` and writes each protocol message in
/// three unbuffered writes (type byte, length, body). Under Nagle's algorithm each write
/// after the first waits for the client's ACK, which Linux delays by up to 40 ms: measured,
/// every request took ~45 ms (22 echoes/s). Acknowledging at once leaves one loopback
/// round trip per write, i.e. H2's own cost. Only when ACKs are sent changes; no data.
struct QuickAck(tokio::net::TcpStream);

fn quick_ack(stream: &tokio::net::TcpStream) {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: a plain setsockopt on a socket we own, with a correctly sized int option.
    // A failure only means ACKs stay delayed (slower, not wrong), so it is ignored.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

impl tokio::io::AsyncRead for QuickAck {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.0).poll_read(cx, buf);
        if matches!(polled, std::task::Poll::Ready(Ok(()))) && buf.filled().len() > before {
            quick_ack(&self.0);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for QuickAck {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}

/// The first column of the first row a simple (text-protocol) query returns.
async fn first_cell(client: &Client, sql: &str) -> std::result::Result<Option<String>, tokio_postgres::Error> {
    let messages = client.simple_query(sql).await?;
    Ok(messages
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(row.get(0).map(str::to_string)),
            _ => None,
        })
        .flatten())
}

/// H2's type of a column. `TEXT` would be a CLOB (a LOB, stored apart), so text is VARCHAR.
fn sql_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Int => "BIGINT",
        ColumnType::Float => "DOUBLE PRECISION",
        ColumnType::Decimal => "NUMERIC(15,2)",
        ColumnType::Text => "VARCHAR",
        ColumnType::Date => "DATE",
    }
}

/// The protocol type a parameter of this column travels as (`PgTable`'s row encoding).
fn wire_type(ty: ColumnType) -> Type {
    match ty {
        ColumnType::Int | ColumnType::Decimal => Type::INT8,
        ColumnType::Float => Type::FLOAT8,
        ColumnType::Text => Type::TEXT,
        ColumnType::Date => Type::INT4,
    }
}

/// Turns parameter `$n` (of `wire_type`) into the column's SQL type.
fn from_wire(ty: ColumnType, n: usize) -> String {
    match ty {
        ColumnType::Decimal => format!("(${n} * 0.01)"),
        ColumnType::Date => format!("DATEADD(DAY, ${n}, DATE '1970-01-01')"),
        ColumnType::Int | ColumnType::Float | ColumnType::Text => format!("${n}"),
    }
}

/// Turns an expression of the column's SQL type into what the client decodes.
fn to_wire(ty: ColumnType, expr: &str) -> String {
    match ty {
        ColumnType::Decimal => format!("CAST({expr} * 100 AS BIGINT)"),
        ColumnType::Date => format!("DATEDIFF(DAY, DATE '1970-01-01', {expr})"),
        // Binary text output does not exist in H2's PG server; bytea does.
        ColumnType::Text => format!("STRINGTOUTF8({expr})"),
        ColumnType::Int | ColumnType::Float => expr.to_string(),
    }
}

fn column(t: &PgTable, c: usize) -> String {
    quote_ident(&t.def.columns[c].name)
}

fn key(t: &PgTable) -> String {
    column(t, 0)
}

/// Every column, text ones as UTF-8 bytes.
fn select_list(t: &PgTable) -> String {
    let cols: Vec<String> = t
        .def
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| match c.ty {
            ColumnType::Text => format!("{} AS {}", to_wire(c.ty, &column(t, i)), column(t, i)),
            _ => column(t, i),
        })
        .collect();
    cols.join(", ")
}

fn create_sql(t: &PgTable) -> Vec<String> {
    let mut cols: Vec<String> = t.def.columns.iter().map(|c| format!("{} {}", quote_ident(&c.name), sql_type(c.ty))).collect();
    cols[0].push_str(" PRIMARY KEY");
    let mut out = vec![format!("CREATE TABLE {} ({})", t.qualified, cols.join(", "))];
    // H2 wants a name (unique in the schema) and takes no expression indexes.
    for &i in t.def.indexed.iter().filter(|&&i| i != 0) {
        let name = quote_ident(&format!("{}_{}_idx", t.def.name, t.def.columns[i].name));
        out.push(format!("CREATE INDEX {name} ON {} ({})", t.qualified, column(t, i)));
    }
    out
}

/// `rows` rows from `$1..`, `columns` parameters per row.
fn insert_sql(t: &PgTable, rows: usize) -> String {
    let cols: Vec<String> = (0..t.def.columns.len()).map(|i| column(t, i)).collect();
    let width = cols.len();
    let tuples: Vec<String> = (0..rows)
        .map(|r| {
            let values: Vec<String> = t.def.columns.iter().enumerate().map(|(i, c)| from_wire(c.ty, r * width + i + 1)).collect();
            format!("({})", values.join(", "))
        })
        .collect();
    format!("INSERT INTO {} ({}) VALUES {}", t.qualified, cols.join(", "), tuples.join(", "))
}

fn in_list(n: usize) -> String {
    (1..=n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

fn get_sql(t: &PgTable) -> String {
    format!("SELECT {} FROM {} WHERE {} = $1", select_list(t), t.qualified, key(t))
}

fn get_many_sql(t: &PgTable, n: usize) -> String {
    format!("SELECT {} FROM {} WHERE {} IN ({})", select_list(t), t.qualified, key(t), in_list(n))
}

fn delete_sql(t: &PgTable) -> String {
    format!("DELETE FROM {} WHERE {} = $1", t.qualified, key(t))
}

fn delete_many_sql(t: &PgTable, n: usize) -> String {
    format!("DELETE FROM {} WHERE {} IN ({})", t.qualified, key(t), in_list(n))
}

fn update_sql(t: &PgTable, c: usize) -> String {
    format!("UPDATE {} SET {} = {} WHERE {} = $2", t.qualified, column(t, c), from_wire(t.def.columns[c].ty, 1), key(t))
}

fn scan_sql(t: &PgTable) -> String {
    format!("SELECT {} FROM {} WHERE {k} >= $1 ORDER BY {k} LIMIT $2", select_list(t), t.qualified, k = key(t))
}

fn range_sql(t: &PgTable, c: usize, agg: RangeAgg) -> String {
    let ty = t.def.columns[c].ty;
    let filter = format!("{} BETWEEN {} AND {}", column(t, c), from_wire(ty, 1), from_wire(ty, 2));
    match agg {
        RangeAgg::Rows => format!("SELECT {} FROM {} WHERE {filter}", select_list(t), t.qualified),
        RangeAgg::Count => format!("SELECT COUNT(*) FROM {} WHERE {filter}", t.qualified),
        RangeAgg::Max { column: of } => {
            let max = to_wire(t.def.columns[of].ty, &format!("MAX({})", column(t, of)));
            format!("SELECT {max} FROM {} WHERE {filter}", t.qualified)
        }
    }
}

fn fetch_all_sql(t: &PgTable) -> String {
    format!("SELECT {} FROM {}", select_list(t), t.qualified)
}

/// Rows per multi-row insert.
fn chunk_rows(t: &PgTable) -> usize {
    (MAX_PARAMS / t.def.columns.len().max(1)).max(1)
}

/// The `IN` lists for `keys`: distinct keys, at most `MAX_IN_KEYS` per list, each list
/// padded with its own last key to a power of two (a repeated key matches its row once
/// within one statement, so results do not change and few statement shapes are prepared).
fn in_lists(keys: &[i64]) -> Vec<Vec<i64>> {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys.dedup();
    keys.chunks(MAX_IN_KEYS)
        .map(|chunk| {
            let mut list = chunk.to_vec();
            list.resize(chunk.len().next_power_of_two(), chunk[chunk.len() - 1]);
            list
        })
        .collect()
}

/// Decodes the single value `range_sql(.., Max { column })` returns into the column's type.
fn decode_max(t: &PgTable, column: usize, row: &tokio_postgres::Row) -> Result<Value, OpError> {
    let bad = |e: tokio_postgres::Error| OpError::client(format!("decoding max: {e}"));
    Ok(match t.def.columns[column].ty {
        ColumnType::Int => row.try_get::<_, Option<i64>>(0).map_err(bad)?.map_or(Value::Null, Value::Int),
        ColumnType::Float => row.try_get::<_, Option<f64>>(0).map_err(bad)?.map_or(Value::Null, Value::Float),
        ColumnType::Decimal => row.try_get::<_, Option<i64>>(0).map_err(bad)?.map_or(Value::Null, |d| Value::Decimal(Decimal(d))),
        ColumnType::Date => match row.try_get::<_, Option<i64>>(0).map_err(bad)? {
            None => Value::Null,
            Some(d) => Value::Date(Date(i32::try_from(d).map_err(|_| OpError::client(format!("date {d} out of range")))?)),
        },
        ColumnType::Text => match row.try_get::<_, Option<Vec<u8>>>(0).map_err(bad)? {
            None => Value::Null,
            Some(bytes) => Value::Text(String::from_utf8(bytes).map_err(|e| OpError::client(format!("max is not UTF-8: {e}")))?.into()),
        },
    })
}

/// One text cell of a query result as the answer type `ty`.
fn parse_cell(ty: ColumnType, text: Option<&str>) -> Result<Value, OpError> {
    let Some(text) = text else { return Ok(Value::Null) };
    let bad = || OpError::client(format!("cannot read {text:?} as {ty:?}"));
    Ok(match ty {
        ColumnType::Int => Value::Int(text.parse().map_err(|_| bad())?),
        ColumnType::Float => Value::Float(text.parse().map_err(|_| bad())?),
        ColumnType::Text => Value::Text(text.into()),
        ColumnType::Date => Value::Date(Date::from_iso(text).ok_or_else(bad)?),
        ColumnType::Decimal => {
            let hundredths = (text.parse::<f64>().map_err(|_| bad())? * 100.0).round();
            Value::Decimal(Decimal(hundredths as i64))
        }
    })
}

#[async_trait]
impl Target for H2 {
    fn info(&self) -> &TargetInfo {
        self.described.get().unwrap_or(&self.initial)
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let client = self.open_client().await?;
        self.ensure_schema(&client).await?;
        let tables: Vec<PgTable> = tables.iter().map(|t| PgTable::in_schema(t.clone(), Layout::Row, &self.schema)).collect();
        for t in &tables {
            for sql in std::iter::once(t.drop_sql()).chain(create_sql(t)) {
                client.batch_execute(&sql).await.map_err(|e| self.runtime(&sql, &e))?;
            }
        }
        *self.tables.lock().unwrap() = Arc::new(tables);
        Ok(())
    }

    async fn load(&self, def: &TableDef, rows: RowSource) -> Result<u64> {
        let (tables, index) = self.table(def)?;
        let t = &tables[index];
        let client = self.open_client().await?;
        let width = t.def.columns.len();
        let chunk = chunk_rows(t);
        let types: Vec<Type> = t.def.columns.iter().map(|c| wire_type(c.ty)).collect();
        let prepare = |n: usize| {
            let sql = insert_sql(t, n);
            let types: Vec<Type> = types.iter().cycle().take(n * width).cloned().collect();
            let client = &client;
            async move { client.prepare_typed(&sql, &types).await }
        };
        let full = prepare(chunk).await.map_err(|e| self.runtime("preparing the load", &e))?;
        let fail = |e: OpError| Error::runtime(format!("target '{}': loading {}: {}", self.name(), def.name, e.message));
        let mut loaded = 0u64;
        let mut params: Vec<Param> = Vec::with_capacity(chunk * width);
        let mut pending = 0;
        let mut rows = rows.peekable();
        while let Some(row) = rows.next() {
            params.extend(t.insert_params(&row).map_err(fail)?);
            pending += 1;
            if pending == chunk || rows.peek().is_none() {
                let statement =
                    if pending == chunk { full.clone() } else { prepare(pending).await.map_err(|e| self.runtime("INSERT", &e))? };
                loaded += client.execute(&statement, &refs(&params)).await.map_err(|e| self.runtime("INSERT", &e))?;
                params.clear();
                pending = 0;
            }
        }
        // Fresh statistics, as the PostgreSQL adapter does after COPY.
        let analyze = format!("ANALYZE TABLE {}", t.qualified);
        client.batch_execute(&analyze).await.map_err(|e| self.runtime(&analyze, &e))?;
        Ok(loaded)
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let client = self.open_client().await?;
        let tables = self.tables.lock().unwrap().clone();
        let echo = client.prepare("SELECT 1").await.map_err(|e| self.runtime("prepare", &e))?;
        Ok(Box::new(H2Connection { client, tables, echo, statements: HashMap::new() }))
    }

    async fn count_rows(&self, def: &TableDef) -> Result<u64> {
        let (tables, index) = self.table(def)?;
        let client = self.open_client().await?;
        let row = client.query_one(&tables[index].count_sql(), &[]).await.map_err(|e| self.runtime("count", &e))?;
        let n: i64 = row.try_get(0).map_err(|e| self.runtime("count", &e))?;
        Ok(n as u64)
    }

    async fn cleanup(&self) -> Result<()> {
        let client = self.open_client().await?;
        if self.schema_owned(&client).await? != Some(true) {
            // Absent or someone else's: nothing of ours can be there.
            *self.tables.lock().unwrap() = Arc::new(Vec::new());
            return Ok(());
        }
        let tables = self.tables.lock().unwrap().clone();
        for t in tables.iter() {
            let sql = t.drop_sql();
            client.batch_execute(&sql).await.map_err(|e| self.runtime(&sql, &e))?;
        }
        self.drop_schema_if_empty(&client).await?;
        *self.tables.lock().unwrap() = Arc::new(Vec::new());
        Ok(())
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn super::lease::LeaseStore>> {
        Some(self)
    }

    /// `MEMORY_USED()`: the H2 server's JVM heap in use after a full GC (see the module doc).
    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        let client = self.open_client().await?;
        let kib: i64 = client
            .query_one("SELECT MEMORY_USED()", &[])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| self.runtime("MEMORY_USED()", &e))?;
        Ok(Some(EngineMemory {
            bytes: kib.max(0) as u64 * 1024,
            source: "H2 MEMORY_USED(): JVM heap in use after a forced full GC, whole server (not per table)".into(),
        }))
    }
}

/// A statement in the per-session cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    /// A multi-row insert of this many rows.
    Insert(usize, usize),
    Get(usize),
    /// An `IN` list of this many keys (a power of two).
    GetMany(usize, usize),
    Delete(usize),
    DeleteMany(usize, usize),
    Update(usize, usize),
    Scan(usize),
    RangeRows(usize, usize),
    RangeCount(usize, usize),
    RangeMax(usize, usize, usize),
    FetchAll(usize),
}

pub struct H2Connection {
    client: Client,
    tables: Arc<Vec<PgTable>>,
    echo: Statement,
    statements: HashMap<Key, Statement>,
}

/// What one statement of a batch returned.
enum Step {
    Rows(Vec<tokio_postgres::Row>),
    Count(u64),
}

impl H2Connection {
    fn table(&self, id: usize) -> Result<&PgTable, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("no table #{id} was prepared")))
    }

    fn check_column(&self, table: usize, column: usize) -> Result<(), OpError> {
        let t = self.table(table)?;
        if column < t.def.columns.len() { Ok(()) } else { Err(OpError::client(format!("{} has no column #{column}", t.def.name))) }
    }

    /// The SQL of a statement and its parameter types (always given: see the module doc).
    fn sql(&self, key: Key) -> Result<(String, Vec<Type>), OpError> {
        let types = |id: usize, c: usize| -> Result<Type, OpError> { Ok(wire_type(self.table(id)?.def.columns[c].ty)) };
        Ok(match key {
            Key::Insert(id, n) => {
                let t = self.table(id)?;
                let row: Vec<Type> = t.def.columns.iter().map(|c| wire_type(c.ty)).collect();
                (insert_sql(t, n), row.iter().cycle().take(n * row.len()).cloned().collect())
            }
            Key::Get(id) => (get_sql(self.table(id)?), vec![Type::INT8]),
            Key::GetMany(id, n) => (get_many_sql(self.table(id)?, n), vec![Type::INT8; n]),
            Key::Delete(id) => (delete_sql(self.table(id)?), vec![Type::INT8]),
            Key::DeleteMany(id, n) => (delete_many_sql(self.table(id)?, n), vec![Type::INT8; n]),
            Key::Update(id, c) => (update_sql(self.table(id)?, c), vec![types(id, c)?, Type::INT8]),
            Key::Scan(id) => (scan_sql(self.table(id)?), vec![Type::INT8, Type::INT8]),
            Key::RangeRows(id, c) => (range_sql(self.table(id)?, c, RangeAgg::Rows), vec![types(id, c)?; 2]),
            Key::RangeCount(id, c) => (range_sql(self.table(id)?, c, RangeAgg::Count), vec![types(id, c)?; 2]),
            Key::RangeMax(id, c, of) => (range_sql(self.table(id)?, c, RangeAgg::Max { column: of }), vec![types(id, c)?; 2]),
            Key::FetchAll(id) => (fetch_all_sql(self.table(id)?), vec![]),
        })
    }

    async fn statement(&mut self, key: Key) -> Result<Statement, OpError> {
        if let Some(s) = self.statements.get(&key) {
            return Ok(s.clone());
        }
        let (sql, types) = self.sql(key)?;
        let statement = self.client.prepare_typed(&sql, &types).await.map_err(op_error)?;
        self.statements.insert(key, statement.clone());
        Ok(statement)
    }

    /// The statement and parameters of an op that is one statement (not a multi-get, a
    /// read-modify-write's read, or a query).
    async fn plan(&mut self, op: &Op) -> Result<(Statement, Vec<Param>), OpError> {
        Ok(match op {
            Op::Echo => (self.echo.clone(), vec![]),
            Op::Insert { table, row } => {
                let params = self.table(*table)?.insert_params(row)?;
                (self.statement(Key::Insert(*table, 1)).await?, params)
            }
            Op::Get { table, key } => (self.statement(Key::Get(*table)).await?, vec![Box::new(*key)]),
            Op::Delete { table, key } => (self.statement(Key::Delete(*table)).await?, vec![Box::new(*key)]),
            Op::Update { table, key, column, value } | Op::ReadModifyWrite { table, key, column, value } => {
                self.check_column(*table, *column)?;
                let v = self.table(*table)?.update_value(*column, value)?;
                (self.statement(Key::Update(*table, *column)).await?, vec![v, Box::new(*key)])
            }
            Op::Scan { table, start, count } => {
                (self.statement(Key::Scan(*table)).await?, vec![Box::new(*start), Box::new(i64::try_from(*count).unwrap_or(i64::MAX))])
            }
            Op::Range { table, column, lo, hi, agg } => {
                self.check_column(*table, *column)?;
                let key = match agg {
                    RangeAgg::Rows => Key::RangeRows(*table, *column),
                    RangeAgg::Count => Key::RangeCount(*table, *column),
                    RangeAgg::Max { column: of } => {
                        self.check_column(*table, *of)?;
                        Key::RangeMax(*table, *column, *of)
                    }
                };
                let t = self.table(*table)?;
                let params = vec![t.range_bound(*column, *lo)?, t.range_bound(*column, *hi)?];
                (self.statement(key).await?, params)
            }
            Op::FetchAll { table } => (self.statement(Key::FetchAll(*table)).await?, vec![]),
            Op::MultiGet { .. } | Op::Query(_) => {
                return Err(OpError::client(format!("{} is not a single planned statement", op.kind())));
            }
        })
    }

    fn returns_rows(op: &Op) -> bool {
        !matches!(op, Op::Insert { .. } | Op::Delete { .. } | Op::Update { .. } | Op::ReadModifyWrite { .. })
    }

    fn outcome(&self, op: &Op, step: Step) -> Result<Outcome, OpError> {
        Ok(match (op, step) {
            (Op::Echo, _) => Outcome::rows(0),
            (_, Step::Count(n)) => Outcome::rows(n),
            (Op::Range { agg: RangeAgg::Count, .. }, Step::Rows(rows)) => {
                let n: i64 = rows.first().ok_or_else(|| OpError::server("count returned no row"))?.try_get(0).map_err(op_error)?;
                Outcome::answer(1, Answer::Scalar(Value::Int(n)))
            }
            (Op::Range { table, agg: RangeAgg::Max { column }, .. }, Step::Rows(rows)) => {
                let row = rows.first().ok_or_else(|| OpError::server("max returned no row"))?;
                Outcome::answer(1, Answer::Scalar(decode_max(self.table(*table)?, *column, row)?))
            }
            (_, Step::Rows(rows)) => Outcome::rows(rows.len() as u64),
        })
    }

    /// An analytic query in PostgreSQL syntax over the simple protocol (text results).
    async fn query(&mut self, query: QueryId) -> Result<Outcome, OpError> {
        let sql = crate::adapter::postgres::conn::query_sql(query, Dialect::Postgres, &self.tables)?;
        let messages = self.client.simple_query(&sql).await.map_err(op_error)?;
        let types = tpch_queries::answer_columns(query);
        let mut out = Vec::new();
        for message in &messages {
            if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                if row.len() != types.len() {
                    return Err(OpError::new(
                        ErrorClass::WrongResult,
                        format!("{query:?} returned {} columns, expected {}", row.len(), types.len()),
                    ));
                }
                let cells: Vec<Value> = types.iter().enumerate().map(|(i, ty)| parse_cell(*ty, row.get(i))).collect::<Result<_, _>>()?;
                out.push(cells);
            }
        }
        Ok(Outcome::answer(out.len() as u64, Answer::Table(out)))
    }

    /// Rows with these keys found (`Get`) or deleted, through `IN` lists.
    async fn by_keys(&mut self, table: usize, keys: &[i64], delete: bool) -> Result<u64, OpError> {
        let mut rows = 0;
        for chunk in &in_lists(keys) {
            let n = chunk.len();
            let key = if delete { Key::DeleteMany(table, n) } else { Key::GetMany(table, n) };
            let statement = self.statement(key).await?;
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
                chunk.iter().map(|k| k as &(dyn tokio_postgres::types::ToSql + Sync)).collect();
            rows += if delete {
                self.client.execute(&statement, &params).await.map_err(op_error)?
            } else {
                self.client.query(&statement, &params).await.map_err(op_error)?.len() as u64
            };
        }
        Ok(rows)
    }

    /// Multi-row inserts into one table, `chunk_rows` rows per statement.
    async fn insert_rows(&mut self, table: usize, rows: &[&Row]) -> Result<u64, OpError> {
        let chunk = chunk_rows(self.table(table)?);
        let mut inserted = 0;
        for part in rows.chunks(chunk) {
            let mut params = Vec::with_capacity(part.len() * self.table(table)?.def.columns.len());
            for row in part {
                params.extend(self.table(table)?.insert_params(row)?);
            }
            let statement = self.statement(Key::Insert(table, part.len())).await?;
            inserted += self.client.execute(&statement, &refs(&params)).await.map_err(op_error)?;
        }
        Ok(inserted)
    }

    async fn run_one(&mut self, op: &Op) -> Result<Outcome, OpError> {
        if let Op::MultiGet { table, keys } = op {
            return Ok(Outcome::rows(self.by_keys(*table, keys, false).await?));
        }
        let (statement, params) = self.plan(op).await?;
        if let Op::FetchAll { .. } = op {
            return Ok(Outcome::rows(count_streamed(&self.client, &statement).await?));
        }
        let step = if Self::returns_rows(op) {
            Step::Rows(self.client.query(&statement, &refs(&params)).await.map_err(op_error)?)
        } else {
            Step::Count(self.client.execute(&statement, &refs(&params)).await.map_err(op_error)?)
        };
        self.outcome(op, step)
    }

    /// Sends every op's statement before awaiting the first reply; results in order.
    async fn pipelined(&mut self, ops: &[Op]) -> Result<Vec<Step>, OpError> {
        let mut planned = Vec::with_capacity(ops.len());
        for op in ops {
            planned.push(self.plan(op).await?);
        }
        let client = &self.client;
        let futures: Vec<BoxFuture<'_, Result<Step, tokio_postgres::Error>>> = ops
            .iter()
            .zip(&planned)
            .map(|(op, (statement, params))| {
                if Self::returns_rows(op) {
                    async move { client.query(statement, &refs(params)).await.map(Step::Rows) }.boxed()
                } else {
                    async move { client.execute(statement, &refs(params)).await.map(Step::Count) }.boxed()
                }
            })
            .collect();
        // join_all polls every future once in order, which sends every request; every
        // reply is awaited even after an error (H2 carries on with the transaction).
        futures_util::future::join_all(futures).await.into_iter().map(|r| r.map_err(op_error)).collect()
    }

    /// The body of a batch inside one transaction; see `in_transaction`.
    async fn batch_body(&mut self, ops: &[Op]) -> Result<u64, OpError> {
        let mut ops: Vec<Op> = ops.to_vec();
        if ops.iter().any(|op| matches!(op, Op::ReadModifyWrite { .. })) {
            // All reads, then the writes of the rows found.
            let reads: Vec<Op> = ops
                .iter()
                .map(|op| match op {
                    Op::ReadModifyWrite { table, key, .. } => Ok(Op::Get { table: *table, key: *key }),
                    other => Err(OpError::client(format!("a batch mixes read_modify_write with {}", other.kind()))),
                })
                .collect::<Result<_, _>>()?;
            let found = self.pipelined(&reads).await?;
            ops = ops.into_iter().zip(found).filter(|(_, step)| matches!(step, Step::Rows(r) if !r.is_empty())).map(|(op, _)| op).collect();
        }
        if ops.iter().any(|op| matches!(op, Op::MultiGet { .. })) {
            let mut rows = 0;
            for op in &ops {
                rows += self.run_one(op).await?.rows;
            }
            return Ok(rows);
        }
        let steps = self.pipelined(&ops).await?;
        let mut rows = 0;
        for (op, step) in ops.iter().zip(steps) {
            rows += self.outcome(op, step)?.rows;
        }
        Ok(rows)
    }

    /// `BEGIN`, the batch, then `COMMIT` only if every statement succeeded, else
    /// `ROLLBACK`: a failed statement does not abort an H2 transaction, so a COMMIT sent
    /// ahead in the pipeline would keep the statements that worked.
    async fn in_transaction(&mut self, ops: &[Op]) -> Result<u64, OpError> {
        self.client.batch_execute("BEGIN").await.map_err(op_error)?;
        match self.batch_body(ops).await {
            Ok(rows) => {
                self.client.batch_execute("COMMIT").await.map_err(op_error)?;
                Ok(rows)
            }
            Err(e) => {
                let _ = self.client.batch_execute("ROLLBACK").await;
                Err(e)
            }
        }
    }
}

#[async_trait]
impl Connection for H2Connection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::ReadModifyWrite { table, key, .. } => {
                // Read the row, then write it: two requests, as a client-side RMW is.
                if self.run_one(&Op::Get { table: *table, key: *key }).await?.rows == 0 {
                    return Ok(Outcome::rows(0));
                }
                self.run_one(op).await
            }
            Op::Query(q) => self.query(*q).await,
            op => self.run_one(op).await,
        }
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let Some(first) = ops.first() else { return Ok(Outcome::rows(0)) };
        let table_of = |op: &Op| match op {
            Op::Insert { table, .. } | Op::Get { table, .. } | Op::MultiGet { table, .. } | Op::Delete { table, .. } => Some(*table),
            _ => None,
        };
        let single = table_of(first).filter(|t| ops.iter().all(|op| table_of(op) == Some(*t)));
        if let Some(table) = single {
            match first.kind() {
                // One multi-row INSERT (several, in a transaction, beyond MAX_PARAMS).
                OpKind::Insert => {
                    let rows: Vec<&Row> =
                        ops.iter().filter_map(|op| if let Op::Insert { row, .. } = op { Some(row) } else { None }).collect();
                    if rows.len() == ops.len() {
                        if rows.len() <= chunk_rows(self.table(table)?) {
                            return Ok(Outcome::rows(self.insert_rows(table, &rows).await?));
                        }
                        self.client.batch_execute("BEGIN").await.map_err(op_error)?;
                        return match self.insert_rows(table, &rows).await {
                            Ok(n) => {
                                self.client.batch_execute("COMMIT").await.map_err(op_error)?;
                                Ok(Outcome::rows(n))
                            }
                            Err(e) => {
                                let _ = self.client.batch_execute("ROLLBACK").await;
                                Err(e)
                            }
                        };
                    }
                }
                // Gets, multi-gets and deletes: `IN` lists instead of `= ANY($1)`.
                OpKind::Get | OpKind::MultiGet | OpKind::Delete => {
                    let mut keys = Vec::new();
                    for op in ops {
                        match op {
                            Op::Get { key, .. } | Op::Delete { key, .. } => keys.push(*key),
                            Op::MultiGet { keys: more, .. } => keys.extend_from_slice(more),
                            _ => return Err(OpError::client("a batch mixes op kinds")),
                        }
                    }
                    return Ok(Outcome::rows(self.by_keys(table, &keys, first.kind() == OpKind::Delete).await?));
                }
                _ => {}
            }
        }
        Ok(Outcome::rows(self.in_transaction(ops).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::Column;

    fn table() -> PgTable {
        let col = |name: &str, ty| Column { name: name.into(), ty };
        PgTable::new(
            Arc::new(TableDef {
                name: "t".into(),
                columns: vec![
                    col("k", ColumnType::Int),
                    col("price", ColumnType::Decimal),
                    col("day", ColumnType::Date),
                    col("note", ColumnType::Text),
                ],
                indexed: vec![2],
            }),
            Layout::Row,
        )
    }

    #[test]
    fn tables_use_varchar_and_named_indexes() {
        let t = table();
        assert_eq!(
            create_sql(&t),
            vec![
                "CREATE TABLE dbsweep.\"t\" (\"k\" BIGINT PRIMARY KEY, \"price\" NUMERIC(15,2), \"day\" DATE, \"note\" VARCHAR)",
                "CREATE INDEX \"t_day_idx\" ON dbsweep.\"t\" (\"day\")",
            ]
        );
    }

    #[test]
    fn text_travels_as_bytes_and_dates_as_day_numbers() {
        let t = table();
        assert_eq!(get_sql(&t), "SELECT \"k\", \"price\", \"day\", STRINGTOUTF8(\"note\") AS \"note\" FROM dbsweep.\"t\" WHERE \"k\" = $1");
        assert_eq!(
            range_sql(&t, 2, RangeAgg::Max { column: 3 }),
            "SELECT STRINGTOUTF8(MAX(\"note\")) FROM dbsweep.\"t\" WHERE \"day\" BETWEEN DATEADD(DAY, $1, DATE '1970-01-01') \
             AND DATEADD(DAY, $2, DATE '1970-01-01')"
        );
        assert!(range_sql(&t, 1, RangeAgg::Max { column: 2 }).starts_with("SELECT DATEDIFF(DAY, DATE '1970-01-01', MAX(\"day\"))"));
        assert!(range_sql(&t, 1, RangeAgg::Count).ends_with("WHERE \"price\" BETWEEN ($1 * 0.01) AND ($2 * 0.01)"));
        assert!(range_sql(&t, 2, RangeAgg::Max { column: 1 }).starts_with("SELECT CAST(MAX(\"price\") * 100 AS BIGINT)"));
    }

    #[test]
    fn multi_row_inserts_and_in_lists_number_their_parameters() {
        let t = table();
        assert_eq!(
            insert_sql(&t, 2),
            "INSERT INTO dbsweep.\"t\" (\"k\", \"price\", \"day\", \"note\") VALUES \
             ($1, ($2 * 0.01), DATEADD(DAY, $3, DATE '1970-01-01'), $4), ($5, ($6 * 0.01), DATEADD(DAY, $7, DATE '1970-01-01'), $8)"
        );
        assert_eq!(delete_many_sql(&t, 3), "DELETE FROM dbsweep.\"t\" WHERE \"k\" IN ($1, $2, $3)");
        assert_eq!(chunk_rows(&t), MAX_PARAMS / 4);
        assert_eq!(update_sql(&t, 3), "UPDATE dbsweep.\"t\" SET \"note\" = $1 WHERE \"k\" = $2");
        assert!(scan_sql(&t).ends_with("WHERE \"k\" >= $1 ORDER BY \"k\" LIMIT $2"));
    }

    #[test]
    fn key_lists_are_distinct_and_padded_to_a_power_of_two() {
        assert_eq!(in_lists(&[5, 1, 5, 3, 9]), vec![vec![1, 3, 5, 9]]);
        assert_eq!(in_lists(&[4, 2, 7]), vec![vec![2, 4, 7, 7]]);
        assert_eq!(in_lists(&[1, 2, 3, 4, 5]), vec![vec![1, 2, 3, 4, 5, 5, 5, 5]]);
        assert!(in_lists(&[]).is_empty());
        // Beyond one list, every list pads with its own keys: no key is counted twice.
        let many: Vec<i64> = (0..MAX_IN_KEYS as i64 * 2 + 3).collect();
        let lists = in_lists(&many);
        assert_eq!(lists.iter().map(Vec::len).collect::<Vec<_>>(), [MAX_IN_KEYS, MAX_IN_KEYS, 4]);
        assert_eq!(lists[2], vec![2048, 2049, 2050, 2050]);
    }

    #[test]
    fn query_cells_parse_into_the_answer_types() {
        assert_eq!(parse_cell(ColumnType::Text, Some("A")).unwrap(), Value::Text("A".into()));
        assert_eq!(parse_cell(ColumnType::Float, Some("1.5E7")).unwrap(), Value::Float(1.5e7));
        assert_eq!(parse_cell(ColumnType::Int, Some("42")).unwrap(), Value::Int(42));
        assert_eq!(parse_cell(ColumnType::Date, Some("1995-03-15")).unwrap(), Value::Date(Date::from_iso("1995-03-15").unwrap()));
        assert_eq!(parse_cell(ColumnType::Decimal, Some("-12.34")).unwrap(), Value::Decimal(Decimal(-1234)));
        assert_eq!(parse_cell(ColumnType::Int, None).unwrap(), Value::Null);
        assert!(parse_cell(ColumnType::Int, Some("x")).is_err());
    }

    #[test]
    fn in_memory_databases_outlive_their_sessions() {
        assert_eq!(database_name("mem:dbsweep"), "mem:dbsweep;DB_CLOSE_DELAY=-1");
        assert_eq!(database_name("mem:x;db_close_delay=10"), "mem:x;db_close_delay=10");
        assert_eq!(database_name("~/bench"), "~/bench");
    }

    #[test]
    fn urls_default_to_sa_on_h2s_port() {
        let h = H2::new("h", &TargetUrl::parse("h2://127.0.0.1").unwrap(), &OpenContext::new("/tmp")).unwrap();
        assert_eq!(h.endpoint, "127.0.0.1:5435");
        assert_eq!(h.config.get_user(), Some("sa"));
        assert_eq!(h.config.get_dbname(), Some("mem:dbsweep;DB_CLOSE_DELAY=-1"));
        assert_eq!(h.info().system, "h2");
        assert!(h.info().capabilities.queries.contains(&QueryId::TpchQ14));
        assert!(h.info().capabilities.ops.contains(&OpKind::FetchAll));
    }
}
