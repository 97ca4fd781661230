//! H2 over its PostgreSQL-protocol server (tokio-postgres), as a member of the PostgreSQL
//! adapter family: `h2://sa@127.0.0.1:5435/mem:dbsweep`.
//!
//! Owns the namespace's schema (`dbsweep`, or `dbsweep_NAME` with `--namespace NAME`) in
//! the database the URL names, marked like PostgreSQL's by the schema comment
//! `dbsweep-owned` (H2 keeps it in `INFORMATION_SCHEMA.SCHEMATA.REMARKS`); such a schema
//! without it is refused with `NotOwned`. Tables are one typed column per attribute, named
//! as in `pg-row`; `cleanup` drops them, and the schema when it is empty. The run's lease
//! record is a row of `<schema>.dbsweep_lease` (see `pgwire::lease`). Must not touch any
//! other schema. The URL's database is passed to H2 verbatim
//! (its PG server opens `jdbc:h2:NAME`): `mem:NAME` is an in-memory database, to which the
//! adapter adds `;DB_CLOSE_DELAY=-1` (else H2 drops it when the last session closes,
//! i.e. between `prepare` and `load`). Defaults: port 5435 (H2's), user `sa`, empty
//! password, database `mem:dbsweep`.
//!
//! Shared with the PostgreSQL adapter: the session (`pgwire::session`), table naming and
//! parameter encoding (the row layout: keys and integers as int8, decimals as hundredths
//! in int8, dates as days since 1970 in int4). What H2 does differently, each handled by
//! its dialect (`sql::dialects::H2`), its `Flavor` or below:
//! - **Results are binary or nothing.** tokio-postgres asks for every result column in
//!   binary; H2's PG server has binary output for numbers, dates and bytea but fails
//!   ("output binary format is undefined") for text. Text columns are therefore selected
//!   as `STRINGTOUTF8(col)` (bytea of the UTF-8 text) — the same bytes travel, decoded
//!   client-side. Version and settings are read with the simple (text) protocol.
//! - **Parameter typing.** A `$1::int8` cast leaves H2's parameter type unknown (and the
//!   value undecodable); statements are prepared with explicit types instead and use
//!   `CAST`-free `$n`, with `DATEADD`/`DATEDIFF` for the day-number encoding of dates.
//! - **No arrays on the wire** (H2 reads a binary int8[] parameter as a string) and no
//!   `type[]` syntax: `= ANY($1)` becomes `IN ($1, ..., $n)` lists of at most 1,024
//!   distinct keys, each padded (with its own last key) to a power of two, so a handful of
//!   statements per table serve every list length; `INSERT ... SELECT FROM UNNEST(arrays)`
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

use super::encode::{Param, Wire, pg_type};
use super::{Commit, Flavor, MARKER, PgServer, PgTarget, describe, drive};
use crate::adapter::declaration::{Declaration, Needs, UrlOptions};
use crate::adapter::lease::LeaseStore;
use crate::adapter::sql::dialect::Dialect;
use crate::adapter::sql::dialects::{H2_SQL, Layout, quote_literal};
use crate::adapter::sql::statement::Statement;
use crate::adapter::{EngineMemory, Execution, OpenContext, TargetInfo, TargetUrl};
use crate::base::op::OpError;
use crate::base::table::{RowSource, TableDef};
use crate::error::{Error, Result};
use crate::servers::ServerKind;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls};

/// H2's session: typed parameters, a batch commits only once every statement succeeded
/// (a failed statement does not abort an H2 transaction), query answers as text.
static FLAVOR: Flavor = Flavor {
    dialect: &H2_SQL,
    layout: Layout::Row,
    typed_parameters: true,
    commit: Commit::WhenAllSucceeded,
    text_answers: true,
    prepare_on_connect: false,
    rows_in_tag: false,
};

/// H2's PG server port when the URL names none.
pub const DEFAULT_PORT: u16 = 5435;
/// H2's customary administrator.
pub const DEFAULT_USER: &str = "sa";
/// The database when the URL names none.
pub const DEFAULT_DATABASE: &str = "mem:dbsweep";

pub const SYSTEM: Declaration = Declaration {
    system: "h2",
    url: "h2://",
    description: "H2 (Java), PostgreSQL wire protocol of its PG server; in-memory database mem:NAME, typed columns",
    needs: Needs::Server(ServerKind::H2),
    schemes: &["h2"],
    options: UrlOptions::Only(&[]),
    several_hosts: false,
    capabilities: crate::adapter::sql::CAPABILITIES,
    open: Some(|name, url, ctx| Ok(Arc::new(super::PgWire(H2::new(name, url, ctx)?)))),
};

pub struct H2 {
    /// Description, flavor and prepared tables.
    pg: PgTarget,
    /// Connection parameters, password included (never printed).
    config: tokio_postgres::Config,
    /// `host:port`, for messages.
    endpoint: String,
    /// Where to connect (the socket is opened by the adapter, see `QuickAck`).
    host: String,
    port: u16,
}

impl H2 {
    pub(super) fn endpoint(&self) -> &str {
        &self.endpoint
    }
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
        settings.insert("load".into(), format!("multi-row INSERT ... VALUES, {} parameters per statement (no COPY in H2)", max_params()));
        settings.insert("text_on_the_wire".into(), "STRINGTOUTF8 (bytea): H2's PG server has no binary text output".into());
        settings.insert("queries".into(), "TPC-H in PostgreSQL syntax, simple (text) protocol".into());
        settings.insert("request.insert".into(), "INSERT INTO <table> VALUES ($1, …), prepared".into());
        settings.insert(
            "request.insert_batch".into(),
            format!("multi-row INSERT … VALUES of up to {} parameters per statement; several in one transaction", max_params()),
        );
        settings.insert(
            "request.multi_get".into(),
            format!("SELECT … WHERE <key> IN ($1, …): up to {} distinct keys per statement, padded to a power of two", H2_SQL.max_keys()),
        );
        Ok(H2 {
            pg: PgTarget::new(
                SYSTEM.target_info(name, url, Execution::Async, "unknown (not connected yet)", settings),
                &FLAVOR,
                ctx.namespace.name(),
            ),
            config,
            endpoint: format!("{host}:{port}"),
            host,
            port,
        })
    }

    fn unreachable(&self, detail: &str) -> Error {
        Error::unreachable(
            self.pg.name(),
            format!(
                "cannot log in to H2's PG server at {} ({detail}); start it (java -cp h2.jar org.h2.tools.Server -pg -ifNotExists), \
                 fix host/port/user/password in the URL, or use --spawn h2",
                self.endpoint
            ),
        )
    }

    /// Version and isolation level, through the simple (text) protocol.
    async fn describe(&self, client: &Client) -> Result<TargetInfo> {
        let mut info = self.pg.initial().clone();
        let version = first_cell(client, "SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS WHERE SETTING_NAME = 'info.VERSION'")
            .await
            .map_err(|e| self.pg.runtime("reading H2's version", &e))?;
        info.version = format!("H2 {}", version.unwrap_or_else(|| "(unknown version)".into()));
        let isolation = first_cell(client, "SELECT ISOLATION_LEVEL FROM INFORMATION_SCHEMA.SESSIONS WHERE SESSION_ID = SESSION_ID()")
            .await
            .map_err(|e| self.pg.runtime("reading the isolation level", &e))?;
        if let Some(isolation) = isolation {
            info.settings.insert("isolation".into(), isolation);
        }
        Ok(info)
    }

    /// Whether dbsweep's schema exists and carries the marker: `None` = absent.
    pub(super) async fn schema_owned(&self, client: &Client) -> Result<Option<bool>> {
        // An INT answer: H2 cannot send text (or booleans) in binary.
        let sql = format!(
            "SELECT CASE WHEN REMARKS = {} THEN 1 ELSE 0 END FROM INFORMATION_SCHEMA.SCHEMATA WHERE SCHEMA_NAME = {}",
            quote_literal(MARKER),
            quote_literal(self.pg.schema())
        );
        let rows = client.query(&sql, &[]).await.map_err(|e| self.pg.runtime("checking schema", &e))?;
        match rows.first() {
            None => Ok(None),
            Some(row) => Ok(Some(row.try_get::<_, i32>(0).map_err(|e| self.pg.runtime("checking schema", &e))? == 1)),
        }
    }

    pub(super) fn not_owned(&self) -> Error {
        Error::not_owned(
            self.pg.name(),
            format!(
                "schema {} in H2 at {} exists but was not created by dbsweep (its comment is not '{MARKER}'); \
                 drop or rename it, or point the target at another database",
                self.pg.schema(),
                self.endpoint
            ),
        )
    }

    /// Creates the marked schema, or checks the marker of an existing one.
    pub(super) async fn ensure_schema(&self, client: &Client) -> Result<()> {
        // No advisory lock in H2: another dbsweep session may be creating the schema right
        // now. Its CREATE and COMMENT are two statements, so an unmarked schema gets a
        // moment to show the marker before it counts as someone else's; a CREATE that
        // fails means someone else created it first, and the marker decides.
        let schema = H2_SQL.quote(self.pg.schema());
        for _ in 0..40 {
            match self.schema_owned(client).await? {
                Some(true) => return Ok(()),
                Some(false) => {}
                None => {
                    if client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.is_ok() {
                        let comment = format!("COMMENT ON SCHEMA {schema} IS {}", quote_literal(MARKER));
                        return client.batch_execute(&comment).await.map_err(|e| self.pg.runtime(&comment, &e));
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Err(self.not_owned())
    }

    /// Drops dbsweep's (marked) schema when no table is left in it.
    pub(super) async fn drop_schema_if_empty(&self, client: &Client) -> Result<()> {
        let schema = self.pg.schema();
        let left: i64 = client
            .query_one(&format!("SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = {}", quote_literal(schema)), &[])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| self.pg.runtime("cleanup", &e))?;
        if left == 0 {
            // RESTRICT: fails (and the schema stays) if anything was put in it meanwhile.
            if let Err(e) = client.batch_execute(&format!("DROP SCHEMA {} RESTRICT", H2_SQL.quote(schema))).await {
                tracing::info!("keeping schema {schema}: {}", describe(&e));
            }
        }
        Ok(())
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
pub(super) async fn first_cell(client: &Client, sql: &str) -> std::result::Result<Option<String>, tokio_postgres::Error> {
    let messages = client.simple_query(sql).await?;
    Ok(messages
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(row.get(0).map(str::to_string)),
            _ => None,
        })
        .flatten())
}

/// Parameters per multi-row insert (the protocol counts them in an i16; H2 parses each
/// statement, so very long ones cost more than they save).
fn max_params() -> usize {
    match H2_SQL.row_batch() {
        crate::adapter::sql::dialect::RowBatch::Values { max_params } => max_params,
        _ => unreachable!("H2 inserts multi-row VALUES"),
    }
}

#[async_trait]
impl PgServer for H2 {
    fn pg(&self) -> &PgTarget {
        &self.pg
    }

    /// Opens one session over a [`QuickAck`] socket; failures are `Unreachable` with the
    /// fix in the message.
    async fn session(&self) -> Result<Client> {
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
        drive(connection);
        self.pg.describe_once(|| self.describe(&client)).await?;
        Ok(client)
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let client = self.session().await?;
        self.ensure_schema(&client).await?;
        self.pg.create_and_keep_tables(&client, tables).await
    }

    async fn load(&self, def: &TableDef, rows: RowSource) -> Result<u64> {
        let (tables, index) = self.pg.table(def)?;
        let t = &tables[index];
        let client = self.session().await?;
        let width = t.def.columns.len();
        let chunk = t.rows_per_statement(&H2_SQL, max_params());
        let types: Vec<Type> = t.def.columns.iter().map(|c| pg_type(c.ty, Layout::Row, false)).collect();
        let wire = Wire { def: &t.def, layout: Layout::Row };
        let prepare = |n: usize| {
            let sql = t.text(&H2_SQL, Statement::Insert { table: index, rows: n });
            let types: Vec<Type> = types.iter().cycle().take(n * width).cloned().collect();
            let client = &client;
            async move { client.prepare_typed(&sql, &types).await }
        };
        let full = prepare(chunk).await.map_err(|e| self.pg.runtime("preparing the load", &e))?;
        let fail = |e: OpError| Error::runtime(format!("target '{}': loading {}: {}", self.pg.name(), def.name, e.message));
        let mut loaded = 0u64;
        let mut params: Vec<Param> = Vec::with_capacity(chunk * width);
        let mut pending = 0;
        let mut rows = rows.peekable();
        while let Some(row) = rows.next() {
            params.extend(wire.insert_params(&row).map_err(fail)?);
            pending += 1;
            if pending == chunk || rows.peek().is_none() {
                let statement =
                    if pending == chunk { full.clone() } else { prepare(pending).await.map_err(|e| self.pg.runtime("INSERT", &e))? };
                let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)).collect();
                loaded += client.execute(&statement, &refs).await.map_err(|e| self.pg.runtime("INSERT", &e))?;
                params.clear();
                pending = 0;
            }
        }
        // Fresh statistics, as the PostgreSQL adapter does after COPY.
        let analyze = format!("ANALYZE TABLE {}", t.name);
        client.batch_execute(&analyze).await.map_err(|e| self.pg.runtime(&analyze, &e))?;
        Ok(loaded)
    }

    fn lease_store(&self) -> Option<&dyn LeaseStore> {
        Some(self)
    }

    async fn cleanup(&self) -> Result<()> {
        let client = self.session().await?;
        if self.schema_owned(&client).await? != Some(true) {
            // Absent or someone else's: nothing of ours can be there.
            self.pg.set_tables(Vec::new());
            return Ok(());
        }
        let tables = self.pg.tables();
        for t in tables.iter() {
            let sql = t.drop();
            client.batch_execute(&sql).await.map_err(|e| self.pg.runtime(&sql, &e))?;
        }
        self.drop_schema_if_empty(&client).await?;
        self.pg.set_tables(Vec::new());
        Ok(())
    }

    /// `MEMORY_USED()`: the H2 server's JVM heap in use after a full GC (see the module doc).
    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        let client = self.session().await?;
        let kib: i64 = client
            .query_one("SELECT MEMORY_USED()", &[])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| self.pg.runtime("MEMORY_USED()", &e))?;
        Ok(Some(EngineMemory {
            bytes: kib.max(0) as u64 * 1024,
            source: "H2 MEMORY_USED(): JVM heap in use after a forced full GC, whole server (not per table)".into(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(h.pg().info().system, "h2");
        assert!(h.pg().info().capabilities.queries.contains(&crate::base::op::QueryId::TpchQ14));
        assert!(h.pg().info().capabilities.ops.contains(&crate::base::op::OpKind::FetchAll));
    }
}
