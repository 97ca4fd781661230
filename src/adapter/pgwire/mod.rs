//! The engines dbsweep reaches over the PostgreSQL wire protocol (tokio-postgres):
//! PostgreSQL itself (`pg-row`, `pg-hstore`, `pg-jsonb`), HyPer and H2.
//!
//! One session (`session::PgSession`) serves all three; each engine is a small `Flavor`
//! (its dialect, whether parameters are typed, how a batch commits, how query answers
//! travel) and a `Target` of its own for what differs outside a session: the namespace and
//! its ownership marker, DDL, the bulk-load path (`copy_in` where the engine has COPY).
//! Values are encoded by `encode`; the run's lease record (PostgreSQL, H2) by `lease`.
//! Must not time anything.

pub mod direct;
pub mod encode;
pub mod h2;
pub mod hyper;
mod lease;
mod pgpass;
pub mod postgres;
pub mod session;

use crate::adapter::declaration::TargetInfoCell;
use crate::adapter::lease::LeaseStore;
use crate::adapter::sql::connection::SqlConnection;
use crate::adapter::sql::dialect::{Dialect, SqlTable};
use crate::adapter::sql::dialects::Layout;
use crate::adapter::{Connection, ConnectionRoom, EngineMemory, Target, TargetInfo};
use crate::base::op::{ErrorClass, OpError};
use crate::base::table::{RowSource, TableDef};
use crate::error::{Error, Result};
use async_trait::async_trait;
use bytes::Bytes;
use encode::Wire;
use futures_util::SinkExt;
use session::PgSession;
use std::sync::{Arc, Mutex};
use tokio_postgres::Client;

/// The marker of dbsweep's namespace: the schema comment (PostgreSQL, H2), the value in
/// the marker table (HyPer).
pub const MARKER: &str = "dbsweep-owned";

/// How a batch's transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// `BEGIN; ...; COMMIT` sent as one pipeline: the engine aborts a transaction at its
    /// first failed statement, so the COMMIT then only rolls back.
    Pipelined,
    /// `BEGIN`, the statements, and `COMMIT` only once every statement succeeded (else
    /// `ROLLBACK`): a failed statement does not abort the transaction (H2), or the engine
    /// is not asked to take the whole pipeline (HyPer).
    WhenAllSucceeded,
}

/// What a PostgreSQL-protocol engine does differently inside a session.
pub struct Flavor {
    pub dialect: &'static dyn Dialect,
    /// How rows are stored, which decides how parameters are encoded.
    pub layout: Layout,
    /// Statements are prepared with their parameter types (hyperd takes a Parse without
    /// types as "no parameters"; H2 cannot infer a type from a cast).
    pub typed_parameters: bool,
    pub commit: Commit,
    /// Analytic queries run over the simple (text) protocol (H2's server has no binary
    /// output for text), each cell parsed into its answer type.
    pub text_answers: bool,
    /// The statements every workload uses are prepared when a session opens, so the first
    /// measured ops do not pay for preparing (PostgreSQL). Otherwise each is prepared at its
    /// first use (HyPer, H2): a table dropped before the run then fails the requests that
    /// use it, not the connection.
    pub prepare_on_connect: bool,
    /// The server's CommandComplete of a SELECT names the rows it sent (`SELECT n`): rows
    /// that only count are read from that tag instead of building a row for each DataRow
    /// (PostgreSQL). The messages sent are the same either way.
    pub rows_in_tag: bool,
}

/// What the three PostgreSQL-protocol targets keep alike: their description (completed
/// at the first connection), their session's flavor and the tables of the last `prepare`.
pub struct PgTarget {
    /// The description before the server was asked for its version and settings, then
    /// the full one, set once at the first successful connection.
    info: TargetInfoCell,
    pub flavor: &'static Flavor,
    /// The schema that holds dbsweep's tables: the namespace's name.
    schema: String,
    /// Tables of the last `prepare`, by `TableId`.
    tables: Mutex<Arc<Vec<SqlTable>>>,
}

impl PgTarget {
    /// A target whose tables live in `schema` (see `lease::Namespace`).
    pub fn new(initial: TargetInfo, flavor: &'static Flavor, schema: &str) -> Self {
        PgTarget { info: TargetInfoCell::new(initial), flavor, schema: schema.to_string(), tables: Mutex::new(Arc::new(Vec::new())) }
    }

    pub fn schema(&self) -> &str {
        &self.schema
    }

    pub fn name(&self) -> &str {
        &self.info.opened().name
    }

    pub fn info(&self) -> &TargetInfo {
        self.info.get()
    }

    /// The description before the server was asked.
    pub fn initial(&self) -> &TargetInfo {
        self.info.opened()
    }

    pub fn is_described(&self) -> bool {
        self.info.is_reached()
    }

    /// Completes the description at the first successful connection.
    pub async fn describe_once<F: std::future::Future<Output = Result<TargetInfo>>>(&self, describe: impl FnOnce() -> F) -> Result<()> {
        if !self.info.is_reached() {
            self.info.set(describe().await?);
        }
        Ok(())
    }

    pub fn dialect(&self) -> &'static dyn Dialect {
        self.flavor.dialect
    }

    /// Drops (if there) and creates each table with its indexes; returns them for
    /// `set_tables` once the whole `prepare` succeeded.
    pub async fn create_tables(&self, client: &Client, defs: &[Arc<TableDef>]) -> Result<Vec<SqlTable>> {
        let tables: Vec<SqlTable> = defs.iter().map(|def| SqlTable::in_schema(self.dialect(), def.clone(), &self.schema)).collect();
        for table in &tables {
            for sql in std::iter::once(table.drop()).chain(table.create(self.dialect())) {
                client.batch_execute(&sql).await.map_err(|e| self.runtime(&sql, &e))?;
            }
        }
        Ok(tables)
    }

    /// `create_tables`, kept at once: for servers whose `prepare` has nothing after it.
    pub async fn create_and_keep_tables(&self, client: &Client, defs: &[Arc<TableDef>]) -> Result<()> {
        let tables = self.create_tables(client, defs).await?;
        self.set_tables(tables);
        Ok(())
    }

    pub fn tables(&self) -> Arc<Vec<SqlTable>> {
        self.tables.lock().unwrap().clone()
    }

    pub fn set_tables(&self, tables: Vec<SqlTable>) {
        *self.tables.lock().unwrap() = Arc::new(tables);
    }

    /// The prepared table named like `def`, with all the prepared tables.
    pub fn table(&self, def: &TableDef) -> Result<(Arc<Vec<SqlTable>>, usize)> {
        let tables = self.tables();
        let index = tables
            .iter()
            .position(|t| t.def.name == def.name)
            .ok_or_else(|| Error::runtime(format!("target '{}': table {} was not prepared", self.name(), def.name)))?;
        Ok((tables, index))
    }

    /// A client session on a logged-in client, its common statements prepared.
    pub async fn connect(&self, client: Client) -> Result<Box<dyn Connection>> {
        let tables = self.tables();
        let session = PgSession::new(client, self.flavor, tables.clone())
            .await
            .map_err(|e| Error::runtime(format!("target '{}': preparing statements: {e}", self.name())))?;
        Ok(Box::new(SqlConnection::new(self.dialect(), tables, session)))
    }

    /// `SELECT COUNT(*)` of a prepared table.
    pub async fn count_rows(&self, client: &Client, def: &TableDef) -> Result<u64> {
        let (tables, index) = self.table(def)?;
        let row = client.query_one(&tables[index].count(), &[]).await.map_err(|e| self.runtime("count", &e))?;
        let n: i64 = row.try_get(0).map_err(|e| self.runtime("count", &e))?;
        Ok(n as u64)
    }

    /// `target 'NAME': WHAT: the driver's message`.
    pub fn runtime(&self, what: &str, e: &tokio_postgres::Error) -> Error {
        Error::runtime(format!("target '{}': {what}: {}", self.name(), describe(e)))
    }
}

/// Drives a connection's I/O in a task of its own; it ends when the client is dropped or
/// the server goes away (errors surface on the client's next request).
pub fn drive<S, T>(connection: tokio_postgres::Connection<S, T>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let _ = connection.await;
    });
}

/// What a PostgreSQL-protocol engine's target does its own way: logging in, its
/// namespace with its ownership marker and DDL (`prepare`, `cleanup`), its bulk-load path
/// and its memory figure. Everything else of `Target` is `PgWire`'s, once.
#[async_trait]
pub trait PgServer: Send + Sync {
    /// Description, flavor and prepared tables.
    fn pg(&self) -> &PgTarget;
    /// A logged-in session on dbsweep's database.
    async fn session(&self) -> Result<Client>;
    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()>;
    async fn load(&self, def: &TableDef, rows: RowSource) -> Result<u64>;
    async fn cleanup(&self) -> Result<()>;
    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        Ok(None)
    }
    /// Where the run's lease record lives (see `lease`); `None` when no other run can reach
    /// this target's data.
    fn lease_store(&self) -> Option<&dyn LeaseStore> {
        None
    }
    /// See `Target::connection_room`; `None` where the engine does not tell.
    async fn connection_room(&self) -> Result<Option<ConnectionRoom>> {
        Ok(None)
    }
    /// A client session, its common statements prepared: on a tokio-postgres client by
    /// default.
    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let client = self.session().await?;
        self.pg().connect(client).await
    }
}

/// The `Target` of a PostgreSQL-protocol engine.
pub struct PgWire<S>(pub S);

#[async_trait]
impl<S: PgServer + 'static> Target for PgWire<S> {
    fn info(&self) -> &TargetInfo {
        self.0.pg().info()
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        self.0.prepare(tables).await
    }

    async fn load(&self, def: &TableDef, rows: RowSource) -> Result<u64> {
        self.0.load(def, rows).await
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        self.0.connect().await
    }

    async fn count_rows(&self, def: &TableDef) -> Result<u64> {
        let client = self.0.session().await?;
        self.0.pg().count_rows(&client, def).await
    }

    async fn cleanup(&self) -> Result<()> {
        self.0.cleanup().await
    }

    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        self.0.engine_memory().await
    }

    async fn connection_room(&self) -> Result<Option<ConnectionRoom>> {
        self.0.connection_room().await
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn LeaseStore>> {
        self.0.lease_store().is_some().then_some(self as Arc<dyn LeaseStore>)
    }
}

/// A one-line description of a driver error (the server's message for SQL errors).
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

pub fn op_error(e: tokio_postgres::Error) -> OpError {
    let class = if e.as_db_error().is_some() {
        ErrorClass::Server
    } else if e.is_closed() || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()) {
        ErrorClass::Connection
    } else {
        ErrorClass::Client
    };
    OpError::new(class, describe(&e))
}

/// Bulk-loads rows with text-format COPY (`copy`: the engine's `COPY ... FROM STDIN`),
/// sent in chunks of about 256 KiB; returns the rows stored, which must be all of them.
pub async fn copy_in(target: &PgTarget, client: &Client, copy: &str, wire: Wire<'_>, rows: RowSource) -> Result<u64> {
    let (name, failed) = (target.name(), |e: tokio_postgres::Error| target.runtime("COPY", &e));
    let sink = client.copy_in::<_, Bytes>(copy).await.map_err(failed)?;
    futures_util::pin_mut!(sink);
    let mut chunk = String::with_capacity(300 * 1024);
    let mut sent = 0u64;
    for row in rows {
        wire.copy_row(&row, &mut chunk).map_err(|e| Error::runtime(format!("target '{name}': loading {}: {e}", wire.def.name)))?;
        sent += 1;
        if chunk.len() >= 256 * 1024 {
            let bytes = Bytes::from(std::mem::replace(&mut chunk, String::with_capacity(300 * 1024)));
            sink.send(bytes).await.map_err(failed)?;
        }
    }
    if !chunk.is_empty() {
        sink.send(Bytes::from(chunk)).await.map_err(failed)?;
    }
    let loaded = sink.finish().await.map_err(failed)?;
    if loaded != sent {
        return Err(Error::runtime(format!("target '{name}': COPY stored {loaded} of {sent} rows")));
    }
    Ok(loaded)
}

/// The stored column list of a COPY (`(pk, v)` in the document layouts).
pub fn copy_columns(dialect: &dyn Dialect, table: &SqlTable) -> String {
    dialect.insert_row(table, 1).0.join(", ")
}
