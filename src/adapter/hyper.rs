//! HyPer (Tableau's Hyper, `hyperd`) over its PostgreSQL wire protocol (tokio-postgres):
//! `hyper://tableau_internal_user@127.0.0.1:PORT/ABSOLUTE/PATH/db.hyper`.
//!
//! Owns one database file: the URL's path (without a path: `dbsweep-<target>.hyper` in
//! the run's scratch directory, which hyperd must be able to reach, i.e. a local server).
//! `prepare` creates the file with `CREATE DATABASE` and marks it with the table
//! `dbsweep.dbsweep_owner` (one row, `dbsweep-owned`); an existing file without that marker
//! is refused with `NotOwned`. Tables live in the file's `dbsweep` schema, one typed column
//! per attribute, and `cleanup` drops them and then the database file itself (it is
//! dbsweep's by its marker). Must not touch any other database file.
//!
//! HyPer has no indexes: `PRIMARY KEY` and `CREATE INDEX` are refused, so every op is a
//! scan (declared: `secondary_indexes: false`, setting `indexes`). Key uniqueness is
//! still honoured: an insert is `INSERT ... SELECT ... WHERE NOT EXISTS (same key)`, a
//! duplicate inserts nothing and is reported as an error (a batch with a duplicate is
//! rolled back), as a primary key would. That check sees only committed rows: two
//! concurrent transactions inserting the same key both succeed (measured; hyperd accepts
//! `ISOLATION LEVEL SERIALIZABLE` but still lets both commit), so uniqueness holds only
//! when clients insert disjoint keys, as dbsweep's workloads do. Bulk load is `COPY ... WITH (FORMAT text)`
//! (hyperd needs the explicit format; its binary COPY is disabled). Statement texts and
//! value encoding are the PostgreSQL adapter's row layout (`postgres::sql::PgTable`);
//! TPC-H Q1/Q3/Q6/Q14 use `tpch::sql(.., Dialect::Hyper, ..)`.
//!
//! hyperd's PostgreSQL dialect, as found: one statement per query string; a Parse
//! without parameter types means "no parameters" (so every statement is prepared with
//! its types); `LIMIT` takes no parameter (one scan statement per scan length); no
//! `PRIMARY KEY`/indexes. The URL's defaults are port 7483 (hyperd's) and the user
//! `tableau_internal_user`. Must not time anything.

use super::postgres::conn::{describe, op_error, refs};
use super::postgres::sql::{Layout, Param, PgTable, SCHEMA, from_wire, quote_ident, quote_literal, wire_type};
use super::{Capabilities, Connection, Execution, OpenContext, RowSource, Target, TargetInfo, TargetUrl};
use crate::adapter::sql::tpch::{self, Dialect};
use crate::base::op::{Answer, ErrorClass, Op, OpError, OpKind, Outcome, QueryId, RangeAgg};
use crate::base::table::{ColumnType, Date, Row, TableDef, Value};
use crate::data::tpch_queries;
use crate::error::{Error, Result};
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::SinkExt;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio_postgres::types::{FromSql, Type};
use tokio_postgres::{Client, NoTls, Statement};

/// The user hyperd's `--init-user` creates; the default when the URL names none.
pub const DEFAULT_USER: &str = "tableau_internal_user";
/// The marker table's value.
const MARKER: &str = "dbsweep-owned";
/// The marker table, inside the database file.
const OWNER_TABLE: &str = "dbsweep.dbsweep_owner";

pub struct Hyper {
    initial: TargetInfo,
    described: OnceLock<TargetInfo>,
    /// The database file (absolute, as hyperd sees it).
    path: String,
    /// Login without a database (for CREATE/DROP DATABASE).
    admin: tokio_postgres::Config,
    /// Login into the database file.
    config: tokio_postgres::Config,
    endpoint: String,
    tables: Mutex<Arc<Vec<PgTable>>>,
}

fn pg_error(target: &str, what: &str, e: &tokio_postgres::Error) -> Error {
    Error::runtime(format!("target '{target}': {what}: {}", describe(e)))
}

impl Hyper {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let host = url.host().unwrap_or("127.0.0.1").to_string();
        let port = url.port().unwrap_or(7483);
        let user = url.username().filter(|u| !u.is_empty()).unwrap_or_else(|| DEFAULT_USER.into());
        let path: PathBuf = match url.file_path().filter(|p| p.as_os_str() != "/") {
            Some(p) => p,
            None => std::path::absolute(ctx.scratch_dir.join(format!("dbsweep-{name}.hyper")))
                .map_err(|e| Error::usage(format!("target '{name}': bad scratch directory: {e}")))?,
        };
        let path = path.to_str().ok_or_else(|| Error::usage(format!("target '{name}': the database path is not UTF-8")))?.to_string();
        if path.contains('"') {
            return Err(Error::usage(format!("target '{name}': the database path must not contain '\"'")));
        }
        let mut admin = tokio_postgres::Config::new();
        admin.host(&host).port(port).user(&user).application_name("dbsweep").connect_timeout(Duration::from_secs(5));
        if let Some(p) = url.password() {
            admin.password(p);
        }
        let mut config = admin.clone();
        config.dbname(&path);
        let mut settings = BTreeMap::new();
        settings.insert("database_file".into(), path.clone());
        settings.insert("indexes".into(), "none (HyPer has none)".into());
        settings.insert(
            "key_uniqueness".into(),
            "INSERT ... WHERE NOT EXISTS (a scan per insert; no PRIMARY KEY in HyPer; not atomic across concurrent inserts of one key)"
                .into(),
        );
        settings.insert("load".into(), "COPY FROM STDIN WITH (FORMAT text)".into());
        settings.insert("request.insert".into(), "INSERT … SELECT $1, … WHERE NOT EXISTS (the key), prepared".into());
        settings.insert("request.insert_batch".into(), "one INSERT … SELECT FROM UNNEST(one array per column), prepared".into());
        settings.insert("request.multi_get".into(), "one SELECT … WHERE <key> = ANY($1::int8[]), prepared".into());
        let ops = OpKind::ALL.iter().copied().filter(|k| *k != OpKind::Query).collect();
        Ok(Hyper {
            initial: TargetInfo {
                name: name.to_string(),
                system: "hyper".into(),
                url: url.redacted(),
                execution: Execution::Async,
                capabilities: Capabilities {
                    ops,
                    queries: vec![QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14],
                    native_batch: true,
                    secondary_indexes: false,
                },
                version: "unknown (not connected yet)".into(),
                settings,
            },
            described: OnceLock::new(),
            path,
            admin,
            config,
            endpoint: format!("{host}:{port}"),
            tables: Mutex::new(Arc::new(Vec::new())),
        })
    }

    fn name(&self) -> &str {
        &self.initial.name
    }

    fn runtime(&self, what: &str, e: &tokio_postgres::Error) -> Error {
        pg_error(self.name(), what, e)
    }

    async fn login(&self, config: &tokio_postgres::Config) -> std::result::Result<Client, tokio_postgres::Error> {
        let (client, connection) = config.connect(NoTls).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    }

    fn unreachable(&self, e: &tokio_postgres::Error) -> Error {
        Error::unreachable(
            self.name(),
            format!(
                "cannot log in to HyPer at {} ({}); start hyperd, fix host/port/user in the URL, or use --spawn hyper",
                self.endpoint,
                describe(e)
            ),
        )
    }

    /// A session without a database.
    async fn admin_session(&self) -> Result<Client> {
        let client = self.login(&self.admin).await.map_err(|e| self.unreachable(&e))?;
        if self.described.get().is_none() {
            let version: String = client
                .query_one("SELECT version()", &[])
                .await
                .and_then(|r| r.try_get(0))
                .map_err(|e| self.runtime("SELECT version()", &e))?;
            let mut info = self.initial.clone();
            info.version = version.split("hyper version ").nth(1).map_or(version.clone(), |v| format!("hyper {v}"));
            let _ = self.described.set(info);
        }
        Ok(client)
    }

    /// A session on the database file (which must exist).
    async fn session(&self) -> Result<Client> {
        match self.login(&self.config).await {
            Ok(client) => Ok(client),
            Err(e) if e.as_db_error().is_some() => Err(Error::runtime(format!(
                "target '{}': cannot open the database file {} ({}); run prepare first",
                self.name(),
                self.path,
                describe(&e)
            ))),
            Err(e) => Err(self.unreachable(&e)),
        }
    }

    /// Whether the open database file carries dbsweep's marker.
    async fn owned(&self, client: &Client) -> Result<bool> {
        match client.query(&format!("SELECT marker FROM {OWNER_TABLE}"), &[]).await {
            Ok(rows) => Ok(rows.iter().any(|r| r.try_get::<_, String>(0).is_ok_and(|m| m == MARKER))),
            Err(e) if e.as_db_error().is_some_and(|db| db.code().code() == "42P01" || db.code().code() == "3F000") => Ok(false),
            Err(e) => Err(self.runtime("checking the dbsweep_owner marker", &e)),
        }
    }

    fn not_owned(&self) -> Error {
        Error::not_owned(
            self.name(),
            format!(
                "the HyPer database file {} exists but was not created by dbsweep (no {OWNER_TABLE} marker); \
                 remove it or point the URL at another path",
                self.path
            ),
        )
    }

    /// Creates the database file with its marker, or checks the marker of an existing one.
    async fn ensure_database(&self) -> Result<Client> {
        if self.described.get().is_none() {
            drop(self.admin_session().await?);
        }
        // An existing file (hyperd refuses CREATE DATABASE of a file in use, so look first).
        if let Ok(client) = self.login(&self.config).await {
            return if self.owned(&client).await? { Ok(client) } else { Err(self.not_owned()) };
        }
        let admin = self.admin_session().await?;
        let created = match admin.batch_execute(&format!("CREATE DATABASE {}", quote_ident(&self.path))).await {
            Ok(()) => true,
            // Created by someone else in the meantime: its marker decides.
            Err(e) if e.as_db_error().is_some_and(|db| db.code().code() == "42P04" || db.code().code() == "55006") => false,
            Err(e) => return Err(self.runtime(&format!("CREATE DATABASE {}", self.path), &e)),
        };
        drop(admin);
        let client = self.session().await?;
        if !created {
            return if self.owned(&client).await? { Ok(client) } else { Err(self.not_owned()) };
        }
        for sql in [
            format!("CREATE SCHEMA {SCHEMA}"),
            format!("CREATE TABLE {OWNER_TABLE} (marker TEXT NOT NULL)"),
            format!("INSERT INTO {OWNER_TABLE} VALUES ({})", quote_literal(MARKER)),
        ] {
            client.batch_execute(&sql).await.map_err(|e| self.runtime(&sql, &e))?;
        }
        Ok(client)
    }

    fn table(&self, def: &TableDef) -> Result<PgTableRef> {
        let tables = self.tables.lock().unwrap().clone();
        let index = tables
            .iter()
            .position(|t| t.def.name == def.name)
            .ok_or_else(|| Error::runtime(format!("target '{}': table {} was not prepared", self.name(), def.name)))?;
        Ok(PgTableRef { tables, index })
    }
}

struct PgTableRef {
    tables: Arc<Vec<PgTable>>,
    index: usize,
}

impl std::ops::Deref for PgTableRef {
    type Target = PgTable;
    fn deref(&self) -> &PgTable {
        &self.tables[self.index]
    }
}

/// SQL type of a column (HyPer's names; NUMERIC(15,2) like TPC-H's DECIMAL).
fn sql_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Int => "BIGINT",
        ColumnType::Float => "DOUBLE PRECISION",
        ColumnType::Decimal => "NUMERIC(15,2)",
        ColumnType::Text => "TEXT",
        ColumnType::Date => "DATE",
    }
}

/// `CREATE TABLE` without a key constraint or index (HyPer refuses both).
fn create_sql(t: &PgTable) -> String {
    let cols: Vec<String> = t
        .def
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{} {}{}", quote_ident(&c.name), sql_type(c.ty), if i == 0 { " NOT NULL" } else { "" }))
        .collect();
    format!("CREATE TABLE {} ({})", t.qualified, cols.join(", "))
}

fn column_list(t: &PgTable) -> String {
    t.def.columns.iter().map(|c| quote_ident(&c.name)).collect::<Vec<_>>().join(", ")
}

/// One row from `$1..$n`, inserted only if its key is absent.
fn insert_sql(t: &PgTable) -> String {
    let exprs: Vec<String> = t
        .def
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| from_wire(c.ty, Layout::Row, &format!("${}::{}", i + 1, wire_type(c.ty, Layout::Row))))
        .collect();
    let key = quote_ident(&t.def.columns[0].name);
    format!(
        "INSERT INTO {q} ({}) SELECT {} WHERE NOT EXISTS (SELECT 1 FROM {q} WHERE {key} = $1::int8)",
        column_list(t),
        exprs.join(", "),
        q = t.qualified
    )
}

/// Many rows from one array per column, each inserted only if its key is absent.
fn insert_many_sql(t: &PgTable) -> String {
    let arrays: Vec<String> =
        t.def.columns.iter().enumerate().map(|(i, c)| format!("${}::{}[]", i + 1, wire_type(c.ty, Layout::Row))).collect();
    let aliases: Vec<String> = (0..t.def.columns.len()).map(|i| format!("c{i}")).collect();
    let exprs: Vec<String> = t.def.columns.iter().enumerate().map(|(i, c)| from_wire(c.ty, Layout::Row, &format!("u.c{i}"))).collect();
    let key = quote_ident(&t.def.columns[0].name);
    format!(
        "INSERT INTO {q} ({}) SELECT {} FROM UNNEST({}) AS u({}) WHERE NOT EXISTS (SELECT 1 FROM {q} AS e WHERE e.{key} = u.c0)",
        column_list(t),
        exprs.join(", "),
        arrays.join(", "),
        aliases.join(", "),
        q = t.qualified
    )
}

/// The `count` rows from key `$1` on, in key order.
fn scan_sql(t: &PgTable, count: u64) -> String {
    let key = quote_ident(&t.def.columns[0].name);
    format!("SELECT * FROM {} WHERE {key} >= $1::int8 ORDER BY {key} LIMIT {count}", t.qualified)
}

fn copy_sql(t: &PgTable) -> String {
    format!("COPY {} ({}) FROM STDIN WITH (FORMAT text)", t.qualified, column_list(t))
}

#[async_trait]
impl Target for Hyper {
    fn info(&self) -> &TargetInfo {
        self.described.get().unwrap_or(&self.initial)
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let client = self.ensure_database().await?;
        let tables: Vec<PgTable> = tables.iter().map(|t| PgTable::new(t.clone(), Layout::Row)).collect();
        for t in &tables {
            for sql in [t.drop_sql(), create_sql(t)] {
                client.batch_execute(&sql).await.map_err(|e| self.runtime(&sql, &e))?;
            }
        }
        *self.tables.lock().unwrap() = Arc::new(tables);
        Ok(())
    }

    async fn load(&self, def: &TableDef, rows: RowSource) -> Result<u64> {
        let table = self.table(def)?;
        let client = self.session().await?;
        let sink = client.copy_in::<_, Bytes>(&copy_sql(&table)).await.map_err(|e| self.runtime("COPY", &e))?;
        futures_util::pin_mut!(sink);
        let mut chunk = String::with_capacity(300 * 1024);
        let mut sent = 0u64;
        for row in rows {
            table.copy_row(&row, &mut chunk).map_err(|e| Error::runtime(format!("target '{}': loading {}: {e}", self.name(), def.name)))?;
            sent += 1;
            if chunk.len() >= 256 * 1024 {
                let bytes = Bytes::from(std::mem::replace(&mut chunk, String::with_capacity(300 * 1024)));
                sink.send(bytes).await.map_err(|e| self.runtime("COPY", &e))?;
            }
        }
        if !chunk.is_empty() {
            sink.send(Bytes::from(chunk)).await.map_err(|e| self.runtime("COPY", &e))?;
        }
        let loaded = sink.finish().await.map_err(|e| self.runtime("COPY", &e))?;
        if loaded != sent {
            return Err(Error::runtime(format!("target '{}': COPY stored {loaded} of {sent} rows", self.name())));
        }
        Ok(loaded)
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let client = self.session().await?;
        let tables = self.tables.lock().unwrap().clone();
        let echo = client.prepare("SELECT 1").await.map_err(|e| self.runtime("prepare", &e))?;
        Ok(Box::new(HyperConnection { client, tables, echo, statements: HashMap::new() }))
    }

    async fn count_rows(&self, def: &TableDef) -> Result<u64> {
        let table = self.table(def)?;
        let client = self.session().await?;
        let row = client.query_one(&table.count_sql(), &[]).await.map_err(|e| self.runtime("count", &e))?;
        let n: i64 = row.try_get(0).map_err(|e| self.runtime("count", &e))?;
        Ok(n as u64)
    }

    async fn cleanup(&self) -> Result<()> {
        let client = match self.login(&self.config).await {
            Ok(client) => client,
            // No database file: nothing of ours exists.
            Err(e) if e.as_db_error().is_some() => return Ok(()),
            Err(e) => return Err(self.unreachable(&e)),
        };
        if !self.owned(&client).await? {
            return Ok(());
        }
        let tables = self.tables.lock().unwrap().clone();
        for t in tables.iter() {
            let sql = t.drop_sql();
            client.batch_execute(&sql).await.map_err(|e| self.runtime(&sql, &e))?;
        }
        drop(client);
        *self.tables.lock().unwrap() = Arc::new(Vec::new());
        // The file is dbsweep's (marked): remove it. Sessions that just closed may still
        // hold it for a while (seconds on a loaded machine); if it stays busy for 10 s the
        // (now table-less) file is kept.
        let admin = self.admin_session().await?;
        let drop_sql = format!("DROP DATABASE IF EXISTS {}", quote_ident(&self.path));
        let mut last = None;
        for _ in 0..100 {
            match admin.batch_execute(&drop_sql).await {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(describe(&e)),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tracing::info!("keeping the HyPer file {}: {}", self.path, last.unwrap_or_default());
        Ok(())
    }
}

/// A statement in the per-session cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Insert(usize),
    InsertMany(usize),
    Get(usize),
    GetMany(usize),
    Delete(usize),
    DeleteMany(usize),
    Update(usize, usize),
    /// hyperd takes no parameter in LIMIT: one statement per scan length.
    Scan(usize, u64),
    RangeRows(usize, usize),
    RangeCount(usize, usize),
    RangeMax(usize, usize, usize),
    Query(QueryId),
    FetchAll(usize),
}

pub struct HyperConnection {
    client: Client,
    tables: Arc<Vec<PgTable>>,
    echo: Statement,
    statements: HashMap<Key, Statement>,
}

/// A PostgreSQL-protocol DATE (binary: days since 2000-01-01) as days since 1970-01-01.
struct WireDate(i32);

impl<'a> FromSql<'a> for WireDate {
    fn from_sql(_: &Type, raw: &'a [u8]) -> std::result::Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let bytes: [u8; 4] = raw.try_into().map_err(|_| "a DATE is 4 bytes")?;
        Ok(WireDate(i32::from_be_bytes(bytes) + 10_957))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::DATE
    }
}

/// One result column as the answer type the query declares.
fn decode(row: &tokio_postgres::Row, index: usize, ty: ColumnType) -> Result<Value, OpError> {
    let bad = |e: tokio_postgres::Error| OpError::client(format!("decoding column {index}: {e}"));
    Ok(match ty {
        ColumnType::Int => match row.try_get::<_, Option<i64>>(index) {
            Ok(v) => v.map_or(Value::Null, Value::Int),
            Err(_) => row.try_get::<_, Option<i32>>(index).map_err(bad)?.map_or(Value::Null, |v| Value::Int(v.into())),
        },
        ColumnType::Float => row.try_get::<_, Option<f64>>(index).map_err(bad)?.map_or(Value::Null, Value::Float),
        ColumnType::Text => row.try_get::<_, Option<String>>(index).map_err(bad)?.map_or(Value::Null, |s| Value::Text(s.into())),
        ColumnType::Date => row.try_get::<_, Option<WireDate>>(index).map_err(bad)?.map_or(Value::Null, |d| Value::Date(Date(d.0))),
        ColumnType::Decimal => return Err(OpError::client("decimal answer columns are not decoded (queries cast to double)")),
    })
}

/// The protocol type of a `wire_type` name (or of an array of it).
fn wire_pg_type(name: &str, array: bool) -> Type {
    match (name, array) {
        ("int8", false) => Type::INT8,
        ("int8", true) => Type::INT8_ARRAY,
        ("int4", false) => Type::INT4,
        ("int4", true) => Type::INT4_ARRAY,
        ("float8", false) => Type::FLOAT8,
        ("float8", true) => Type::FLOAT8_ARRAY,
        (_, false) => Type::TEXT,
        (_, true) => Type::TEXT_ARRAY,
    }
}

fn duplicate(table: &PgTable, n: u64, of: usize) -> OpError {
    OpError::server(format!("{}: duplicate key: {} of {of} rows inserted (HyPer has no primary key; dbsweep checks)", table.def.name, n))
}

impl HyperConnection {
    fn table(&self, id: usize) -> Result<&PgTable, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("no table #{id} was prepared")))
    }

    fn column(&self, table: usize, column: usize) -> Result<(), OpError> {
        let t = self.table(table)?;
        if column < t.def.columns.len() { Ok(()) } else { Err(OpError::client(format!("{} has no column #{column}", t.def.name))) }
    }

    fn sql(&self, key: Key) -> Result<String, OpError> {
        Ok(match key {
            Key::Insert(id) => insert_sql(self.table(id)?),
            Key::InsertMany(id) => insert_many_sql(self.table(id)?),
            Key::Get(id) => self.table(id)?.get_sql(),
            Key::GetMany(id) => self.table(id)?.get_many_sql(),
            Key::Delete(id) => self.table(id)?.delete_sql(),
            Key::DeleteMany(id) => self.table(id)?.delete_many_sql(),
            Key::Update(id, c) => self.table(id)?.update_sql(c),
            Key::Scan(id, count) => scan_sql(self.table(id)?, count),
            Key::FetchAll(id) => format!("SELECT * FROM {}", self.table(id)?.qualified),
            Key::RangeRows(id, c) => self.table(id)?.range_sql(c, RangeAgg::Rows),
            Key::RangeCount(id, c) => self.table(id)?.range_sql(c, RangeAgg::Count),
            Key::RangeMax(id, c, of) => self.table(id)?.range_sql(c, RangeAgg::Max { column: of }),
            Key::Query(q) => {
                let name = |t: &str| format!("{SCHEMA}.{}", quote_ident(t));
                tpch::sql(q, Dialect::Hyper, &name)
            }
        })
    }

    /// The parameter types of a statement: hyperd takes a Parse without types as a
    /// statement without parameters, so they are always given.
    fn param_types(&self, key: Key) -> Result<Vec<Type>, OpError> {
        let wire = |id: usize, c: usize, array: bool| -> Result<Type, OpError> {
            let ty = self.table(id)?.def.columns.get(c).ok_or_else(|| OpError::client(format!("no column #{c}")))?.ty;
            Ok(wire_pg_type(wire_type(ty, Layout::Row), array))
        };
        let columns = |id: usize| self.table(id).map(|t| t.def.columns.len());
        Ok(match key {
            Key::Get(_) | Key::Delete(_) => vec![Type::INT8],
            Key::GetMany(_) | Key::DeleteMany(_) => vec![Type::INT8_ARRAY],
            Key::Scan(..) => vec![Type::INT8],
            Key::Update(id, c) => vec![wire(id, c, false)?, Type::INT8],
            Key::RangeRows(id, c) | Key::RangeCount(id, c) | Key::RangeMax(id, c, _) => vec![wire(id, c, false)?; 2],
            Key::Insert(id) => (0..columns(id)?).map(|c| wire(id, c, false)).collect::<Result<_, _>>()?,
            Key::InsertMany(id) => (0..columns(id)?).map(|c| wire(id, c, true)).collect::<Result<_, _>>()?,
            Key::Query(_) | Key::FetchAll(_) => vec![],
        })
    }

    async fn statement(&mut self, key: Key) -> Result<Statement, OpError> {
        if let Some(s) = self.statements.get(&key) {
            return Ok(s.clone());
        }
        let sql = self.sql(key)?;
        let types = self.param_types(key)?;
        let statement = self.client.prepare_typed(&sql, &types).await.map_err(op_error)?;
        self.statements.insert(key, statement.clone());
        Ok(statement)
    }

    /// The statement and parameters of an op that is one statement (not Insert or Query;
    /// for a read-modify-write, its write).
    async fn plan(&mut self, op: &Op) -> Result<(Statement, Vec<Param>), OpError> {
        Ok(match op {
            Op::Echo => (self.echo.clone(), vec![]),
            Op::Get { table, key } => (self.statement(Key::Get(*table)).await?, vec![Box::new(*key)]),
            Op::MultiGet { table, keys } => (self.statement(Key::GetMany(*table)).await?, vec![Box::new(keys.clone())]),
            Op::Delete { table, key } => (self.statement(Key::Delete(*table)).await?, vec![Box::new(*key)]),
            Op::Update { table, key, column, value } | Op::ReadModifyWrite { table, key, column, value } => {
                self.column(*table, *column)?;
                let v = self.table(*table)?.update_value(*column, value)?;
                (self.statement(Key::Update(*table, *column)).await?, vec![v, Box::new(*key)])
            }
            Op::Scan { table, start, count } => (self.statement(Key::Scan(*table, *count as u64)).await?, vec![Box::new(*start)]),
            Op::Range { table, column, lo, hi, agg } => {
                self.column(*table, *column)?;
                let key = match agg {
                    RangeAgg::Rows => Key::RangeRows(*table, *column),
                    RangeAgg::Count => Key::RangeCount(*table, *column),
                    RangeAgg::Max { column: of } => {
                        self.column(*table, *of)?;
                        Key::RangeMax(*table, *column, *of)
                    }
                };
                let t = self.table(*table)?;
                let params = vec![t.range_bound(*column, *lo)?, t.range_bound(*column, *hi)?];
                (self.statement(key).await?, params)
            }
            Op::FetchAll { table } => (self.statement(Key::FetchAll(*table)).await?, vec![]),
            Op::Insert { .. } | Op::Query(_) => {
                return Err(OpError::client(format!("{} is not a single planned statement", op.kind())));
            }
        })
    }

    async fn run_planned(&mut self, op: &Op) -> Result<Outcome, OpError> {
        let (statement, params) = self.plan(op).await?;
        match op {
            Op::Delete { .. } | Op::Update { .. } | Op::ReadModifyWrite { .. } => {
                Ok(Outcome::rows(self.client.execute(&statement, &refs(&params)).await.map_err(op_error)?))
            }
            Op::FetchAll { .. } => Ok(Outcome::rows(crate::adapter::postgres::conn::count_streamed(&self.client, &statement).await?)),
            _ => {
                let rows = self.client.query(&statement, &refs(&params)).await.map_err(op_error)?;
                self.outcome(op, rows)
            }
        }
    }

    fn outcome(&self, op: &Op, rows: Vec<tokio_postgres::Row>) -> Result<Outcome, OpError> {
        Ok(match op {
            Op::Echo => Outcome::rows(0),
            Op::Range { agg: RangeAgg::Count, .. } => {
                let n: i64 = rows.first().ok_or_else(|| OpError::server("count returned no row"))?.try_get(0).map_err(op_error)?;
                Outcome::answer(1, Answer::Scalar(Value::Int(n)))
            }
            Op::Range { table, agg: RangeAgg::Max { column }, .. } => {
                let row = rows.first().ok_or_else(|| OpError::server("max returned no row"))?;
                Outcome::answer(1, Answer::Scalar(self.table(*table)?.decode_max(*column, row)?))
            }
            _ => Outcome::rows(rows.len() as u64),
        })
    }

    async fn insert_one(&mut self, table: usize, row: &Row) -> Result<u64, OpError> {
        let params = self.table(table)?.insert_params(row)?;
        let statement = self.statement(Key::Insert(table)).await?;
        let n = self.client.execute(&statement, &refs(&params)).await.map_err(op_error)?;
        if n != 1 {
            return Err(duplicate(self.table(table)?, n, 1));
        }
        Ok(n)
    }

    async fn query(&mut self, q: QueryId) -> Result<Outcome, OpError> {
        let statement = self.statement(Key::Query(q)).await?;
        let rows = self.client.query(&statement, &[]).await.map_err(op_error)?;
        let types = tpch_queries::answer_columns(q);
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            if row.len() != types.len() {
                return Err(OpError::new(ErrorClass::WrongResult, format!("{q:?}: {} columns, expected {}", row.len(), types.len())));
            }
            out.push(types.iter().enumerate().map(|(i, ty)| decode(row, i, *ty)).collect::<Result<Row, _>>()?);
        }
        Ok(Outcome::answer(rows.len() as u64, Answer::Table(out)))
    }

    /// Runs `body` inside BEGIN/COMMIT; rolls back on error.
    async fn in_transaction(&mut self, ops: &[Op]) -> Result<u64, OpError> {
        self.client.batch_execute("BEGIN").await.map_err(op_error)?;
        let result = self.batch_body(ops).await;
        match result {
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

    /// The statements of a batch; writes of read-modify-writes only for rows found. All
    /// statements of one phase are sent before the first reply is awaited.
    async fn batch_body(&mut self, ops: &[Op]) -> Result<u64, OpError> {
        if let Some(Op::Insert { table, .. }) = ops.first() {
            let table = *table;
            let mut rows = Vec::with_capacity(ops.len());
            for op in ops {
                match op {
                    Op::Insert { table: t, row } if *t == table => rows.push(row),
                    _ => return Err(OpError::client("a batch mixes inserts into several tables or other ops")),
                }
            }
            let params = self.table(table)?.insert_many_params(&rows)?;
            let statement = self.statement(Key::InsertMany(table)).await?;
            let n = self.client.execute(&statement, &refs(&params)).await.map_err(op_error)?;
            if n != rows.len() as u64 {
                return Err(duplicate(self.table(table)?, n, rows.len()));
            }
            return Ok(n);
        }
        let mut ops: Vec<Op> = ops.to_vec();
        if ops.iter().any(|op| matches!(op, Op::ReadModifyWrite { .. })) {
            let reads: Vec<Op> = ops
                .iter()
                .map(|op| match op {
                    Op::ReadModifyWrite { table, key, .. } => Ok(Op::Get { table: *table, key: *key }),
                    other => Err(OpError::client(format!("a batch mixes read_modify_write with {}", other.kind()))),
                })
                .collect::<Result<_, _>>()?;
            let found = self.pipelined(&reads).await?;
            ops = ops.into_iter().zip(found).filter(|(_, o)| o.rows > 0).map(|(op, _)| op).collect();
        }
        Ok(self.pipelined(&ops).await?.iter().map(|o| o.rows).sum())
    }

    /// Sends every op's statement, then collects the replies in order.
    async fn pipelined(&mut self, ops: &[Op]) -> Result<Vec<Outcome>, OpError> {
        if ops.iter().any(|op| matches!(op, Op::Insert { .. } | Op::Query(_))) {
            let mut out = Vec::with_capacity(ops.len());
            for op in ops {
                out.push(self.execute(op).await?);
            }
            return Ok(out);
        }
        let mut planned = Vec::with_capacity(ops.len());
        for op in ops {
            planned.push(self.plan(op).await?);
        }
        let client = &self.client;
        let futures = ops.iter().zip(&planned).map(|(op, (statement, params))| async move {
            match op {
                Op::Delete { .. } | Op::Update { .. } | Op::ReadModifyWrite { .. } => {
                    client.execute(statement, &refs(params)).await.map(Err)
                }
                _ => client.query(statement, &refs(params)).await.map(Ok),
            }
        });
        // join_all polls every future once in order, which sends every request.
        let results = futures_util::future::join_all(futures).await;
        let mut out = Vec::with_capacity(ops.len());
        for (op, result) in ops.iter().zip(results) {
            out.push(match result.map_err(op_error)? {
                Ok(rows) => self.outcome(op, rows)?,
                Err(n) => Outcome::rows(n),
            });
        }
        Ok(out)
    }
}

#[async_trait]
impl Connection for HyperConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::Insert { table, row } => Ok(Outcome::rows(self.insert_one(*table, row).await?)),
            Op::ReadModifyWrite { table, key, .. } => {
                // Read the row, then write it: two requests, as a client-side RMW is.
                if self.run_planned(&Op::Get { table: *table, key: *key }).await?.rows == 0 {
                    return Ok(Outcome::rows(0));
                }
                self.run_planned(op).await
            }
            Op::Query(q) => self.query(*q).await,
            op => self.run_planned(op).await,
        }
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let Some(first) = ops.first() else { return Ok(Outcome::rows(0)) };
        // Gets, multi-gets and deletes of one table: one `= ANY($1)` statement.
        let table_of = |op: &Op| match op {
            Op::Get { table, .. } | Op::MultiGet { table, .. } | Op::Delete { table, .. } => Some(*table),
            _ => None,
        };
        if let Some(table) = table_of(first).filter(|t| ops.iter().all(|op| table_of(op) == Some(*t))) {
            let mut keys = Vec::new();
            for op in ops {
                match op {
                    Op::Get { key, .. } | Op::Delete { key, .. } => keys.push(*key),
                    Op::MultiGet { keys: more, .. } => keys.extend_from_slice(more),
                    _ => unreachable!("filtered above"),
                }
            }
            let params: Vec<Param> = vec![Box::new(keys)];
            let n = if first.kind() == OpKind::Delete {
                let statement = self.statement(Key::DeleteMany(table)).await?;
                self.client.execute(&statement, &refs(&params)).await.map_err(op_error)?
            } else {
                let statement = self.statement(Key::GetMany(table)).await?;
                self.client.query(&statement, &refs(&params)).await.map_err(op_error)?.len() as u64
            };
            return Ok(Outcome::rows(n));
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
                columns: vec![col("k", ColumnType::Int), col("price", ColumnType::Decimal), col("day", ColumnType::Date)],
                indexed: vec![2],
            }),
            Layout::Row,
        )
    }

    #[test]
    fn tables_have_no_key_constraint_and_inserts_check_the_key() {
        let t = table();
        assert_eq!(create_sql(&t), "CREATE TABLE dbsweep.\"t\" (\"k\" BIGINT NOT NULL, \"price\" NUMERIC(15,2), \"day\" DATE)");
        let one = insert_sql(&t);
        assert!(one.contains("WHERE NOT EXISTS (SELECT 1 FROM dbsweep.\"t\" WHERE \"k\" = $1::int8)"), "{one}");
        assert!(one.contains("($2::int8 * 0.01)") && one.contains("(DATE '1970-01-01' + $3::int4)"), "{one}");
        let many = insert_many_sql(&t);
        assert!(many.contains("FROM UNNEST($1::int8[], $2::int8[], $3::int4[]) AS u(c0, c1, c2)"), "{many}");
        assert!(many.ends_with("WHERE NOT EXISTS (SELECT 1 FROM dbsweep.\"t\" AS e WHERE e.\"k\" = u.c0)"), "{many}");
        assert_eq!(copy_sql(&t), "COPY dbsweep.\"t\" (\"k\", \"price\", \"day\") FROM STDIN WITH (FORMAT text)");
    }

    #[test]
    fn wire_dates_count_from_2000() {
        let d = WireDate::from_sql(&Type::DATE, &0i32.to_be_bytes()).unwrap();
        assert_eq!(Date(d.0).to_iso(), "2000-01-01");
        let d = WireDate::from_sql(&Type::DATE, &(-10_957i32).to_be_bytes()).unwrap();
        assert_eq!(d.0, 0);
        assert!(WireDate::from_sql(&Type::DATE, &[0, 1]).is_err());
    }

    #[test]
    fn urls_name_the_database_file() {
        let ctx = OpenContext::new(PathBuf::from("/scratch"));
        let url = TargetUrl::parse("hyper://tableau_internal_user@127.0.0.1:7000/tmp/x/db.hyper").unwrap();
        let h = Hyper::new("h", &url, &ctx).unwrap();
        assert_eq!(h.path, "/tmp/x/db.hyper");
        assert_eq!(h.endpoint, "127.0.0.1:7000");
        assert!(!h.info().capabilities.secondary_indexes);
        assert_eq!(h.info().settings["indexes"], "none (HyPer has none)");
        let bare = Hyper::new("h2", &TargetUrl::parse("hyper://127.0.0.1:7000").unwrap(), &ctx).unwrap();
        assert_eq!(bare.path, "/scratch/dbsweep-h2.hyper");
    }
}
