//! DuckDB adapter: the embedded column store (the MonetDB/HyPer family), linked against
//! the prebuilt libduckdb that `scripts/setup-embedded` installs (see `build.rs`).
//!
//! `duckdb:` uses a throwaway file in the run's scratch directory; `duckdb:/path` the user's
//! file, locked for the run by a `lease::FileLease` (see `sqlite::EngineFile`). One `duckdb::Connection` is opened on the file and every client gets its own
//! `try_clone()` of it (`Execution::Blocking`). dbsweep's tables are `dbsweep_<table>`,
//! registered in the marker table `dbsweep_owner`; `prepare` replaces only registered
//! tables and refuses with `NotOwned` when a same-named table is not registered.
//!
//! Tables get a `PRIMARY KEY` and an index on each indexed column; both are ART indexes,
//! which DuckDB uses for point lookups and highly selective filters (otherwise it scans
//! with zone maps). Bulk loads use the Appender inside one transaction; ops use cached
//! prepared statements; a batch is one transaction, and so is a read-modify-write.
//! Types: Int `BIGINT`, Float `DOUBLE`, Decimal `DECIMAL(15,2)`, Text `VARCHAR`, Date
//! `DATE` (converted exactly to and from dbsweep's hundredths and days). Must not time
//! anything.

use super::lease::FileLease;
use super::sqlite::{ANALYTIC_QUERIES, EngineFile, OWNER_TABLE, SqlText, TABLE_PREFIX, clip, query_sql, quote};
use super::{Capabilities, Connection, Execution, OpenContext, RowSource, Target, TargetInfo, TargetUrl};
use crate::adapter::sql::tpch::Dialect;
use crate::base::op::{Answer, Op, OpError, OpKind, Outcome, QueryId, RangeAgg};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, TableId, Value};
use crate::data::tpch_queries;
use crate::error::{Error, Result};
use ::duckdb::types::{ToSqlOutput, ValueRef};
use ::duckdb::{appender_params_from_iter, params_from_iter};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Prepared statements kept per connection (multi-gets add one per batch size).
const STATEMENT_CACHE: usize = 256;
/// Most keys looked up with an `IN ($1, ...)` list; larger multi-gets pass the keys as one
/// list parameter (`k IN (SELECT unnest($1::BIGINT[]))`), which DuckDB runs 2-4x faster
/// from about a thousand keys on (an IN list of 100,000 keys takes seconds to plan).
const IN_LIST_MAX: usize = 100;

pub struct DuckDb {
    info: TargetInfo,
    path: PathBuf,
    /// The connection clients are cloned from, also used by `prepare`, `load`,
    /// `count_rows` and `cleanup`; `None` after cleanup.
    base: Mutex<Option<::duckdb::Connection>>,
    /// Tables by `TableId`, as given to `prepare`.
    tables: Mutex<Vec<Arc<TableDef>>>,
    /// The throwaway directory holding the file for `duckdb:`.
    scratch: Mutex<Option<tempfile::TempDir>>,
    /// The lease on a user's file; declared last, so it is dropped after the connections.
    _lease: Option<FileLease>,
}

fn runtime(e: ::duckdb::Error) -> Error {
    Error::runtime(format!("duckdb: {e}"))
}

fn op_error(e: ::duckdb::Error) -> OpError {
    OpError::server(clip(format!("duckdb: {e}")))
}

fn sql_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Int => "BIGINT",
        ColumnType::Float => "DOUBLE",
        ColumnType::Decimal => "DECIMAL(15,2)",
        ColumnType::Text => "VARCHAR",
        ColumnType::Date => "DATE",
    }
}

impl DuckDb {
    pub fn open(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let file = EngineFile::new(name, url, ctx, "duckdb", "dbsweep.duckdb")?;
        let file_settings = file.settings();
        let EngineFile { path, scratch, lease } = file;
        let base = ::duckdb::Connection::open(&path).map_err(|e| {
            Error::usage(format!("target '{name}': cannot open DuckDB file {}: {e}; check the path in the URL", path.display()))
        })?;
        let version = base.version().map_err(runtime)?;
        let setting = |name: &str| -> Result<String> {
            base.query_row(&format!("SELECT current_setting('{name}')::VARCHAR"), [], |r| r.get(0)).map_err(runtime)
        };
        let mut settings = BTreeMap::from([
            ("threads".to_string(), setting("threads")?),
            ("memory_limit".to_string(), setting("memory_limit")?),
            ("checkpoint_threshold".to_string(), setting("checkpoint_threshold")?),
            ("durability".to_string(), "WAL written and synced at each commit (DuckDB's fixed behaviour)".to_string()),
            (
                "indexes".to_string(),
                "ART on the primary key and each indexed column (used for point lookups and highly selective filters)".to_string(),
            ),
            ("decimal".to_string(), "DECIMAL(15,2)".to_string()),
            ("date".to_string(), "DATE".to_string()),
            ("bulk_load".to_string(), "Appender in one transaction".to_string()),
            ("library".to_string(), concat!(env!("DBSWEEP_DUCKDB_LIB_DIR"), "/libduckdb.so").to_string()),
            ("batch".to_string(), "one transaction per batch".to_string()),
            ("echo".to_string(), "SELECT 1 through a cached prepared statement".to_string()),
            ("request.insert".to_string(), "INSERT INTO <table> VALUES (?, …), a cached prepared statement".to_string()),
            ("request.insert_batch".to_string(), "one transaction of single-row prepared INSERTs".to_string()),
            (
                "request.multi_get".to_string(),
                format!(
                    "SELECT … WHERE <key> IN (?, …) of bound keys up to {IN_LIST_MAX}, else IN (SELECT unnest(one BIGINT[] parameter))"
                ),
            ),
        ]);
        settings.extend(file_settings);
        Ok(DuckDb {
            info: TargetInfo {
                name: name.to_string(),
                system: "duckdb".into(),
                url: url.redacted(),
                execution: Execution::Blocking,
                capabilities: Capabilities {
                    ops: OpKind::ALL.to_vec(),
                    queries: ANALYTIC_QUERIES.to_vec(),
                    native_batch: true,
                    secondary_indexes: true,
                },
                version,
                settings,
            },
            path,
            base: Mutex::new(Some(base)),
            tables: Mutex::new(Vec::new()),
            scratch: Mutex::new(scratch),
            _lease: lease,
        })
    }

    fn with_base<T>(&self, f: impl FnOnce(&::duckdb::Connection) -> Result<T>) -> Result<T> {
        let guard = self.base.lock().unwrap();
        f(guard.as_ref().ok_or_else(|| Error::runtime("duckdb: target already cleaned up"))?)
    }
}

fn table_exists(conn: &::duckdb::Connection, table: &str) -> ::duckdb::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

fn owned_tables(conn: &::duckdb::Connection) -> ::duckdb::Result<Vec<String>> {
    if !table_exists(conn, OWNER_TABLE)? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare(&format!("SELECT tbl FROM {OWNER_TABLE}"))?;
    stmt.query_map([], |r| r.get(0))?.collect()
}

/// Runs `body` between `BEGIN TRANSACTION` and `COMMIT`, rolling back if anything fails.
fn in_transaction<T, E>(
    conn: &::duckdb::Connection,
    wrap: impl Fn(::duckdb::Error) -> E,
    body: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    conn.execute_batch("BEGIN TRANSACTION").map_err(&wrap)?;
    match body() {
        Ok(v) => match conn.execute_batch("COMMIT") {
            Ok(()) => Ok(v),
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(wrap(e))
            }
        },
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

#[async_trait]
impl Target for DuckDb {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        self.with_base(|conn| {
            in_transaction(conn, runtime, || {
                let owned = owned_tables(conn).map_err(runtime)?;
                // Check every table before changing anything: a refusal leaves the file as it was.
                for t in tables {
                    let name = format!("{TABLE_PREFIX}{}", t.name);
                    if table_exists(conn, &name).map_err(runtime)? && !owned.contains(&name) {
                        return Err(Error::not_owned(
                            &self.info.name,
                            format!(
                                "table {name} in {} was not created by dbsweep; rename or drop it, or use another file",
                                self.path.display()
                            ),
                        ));
                    }
                }
                conn.execute_batch(&format!(
                    "CREATE TABLE IF NOT EXISTS {OWNER_TABLE} (tbl VARCHAR PRIMARY KEY, created_by VARCHAR NOT NULL)"
                ))
                .map_err(runtime)?;
                for t in tables {
                    let name = format!("{TABLE_PREFIX}{}", t.name);
                    let columns: Vec<String> = t
                        .columns
                        .iter()
                        .enumerate()
                        .map(|(i, c)| format!("{} {}{}", quote(&c.name), sql_type(c.ty), if i == 0 { " PRIMARY KEY" } else { "" }))
                        .collect();
                    let mut ddl = format!("DROP TABLE IF EXISTS {0}; CREATE TABLE {0} ({1});", quote(&name), columns.join(", "));
                    for &c in &t.indexed {
                        let col = &t.columns[c].name;
                        ddl.push_str(&format!(
                            " CREATE INDEX {} ON {} ({});",
                            quote(&format!("{name}_{col}_idx")),
                            quote(&name),
                            quote(col)
                        ));
                    }
                    conn.execute_batch(&ddl).map_err(runtime)?;
                    conn.execute(
                        &format!("INSERT OR REPLACE INTO {OWNER_TABLE} (tbl, created_by) VALUES ($1, $2)"),
                        [name.as_str(), concat!("dbsweep ", env!("CARGO_PKG_VERSION"))],
                    )
                    .map_err(runtime)?;
                }
                Ok(())
            })
        })?;
        *self.tables.lock().unwrap() = tables.to_vec();
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let name = format!("{TABLE_PREFIX}{}", table.name);
        self.with_base(|conn| {
            in_transaction(conn, runtime, || {
                let mut appender = conn.appender(&name).map_err(runtime)?;
                let mut n = 0;
                for row in rows {
                    appender.append_row(appender_params_from_iter(row.iter().map(Bind))).map_err(runtime)?;
                    n += 1;
                }
                appender.flush().map_err(runtime)?;
                Ok(n)
            })
        })
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let conn = self.with_base(|base| base.try_clone().map_err(runtime))?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let tables = self.tables.lock().unwrap().iter().map(|t| SqlText::new(t.clone(), TABLE_PREFIX, '$')).collect();
        Ok(Box::new(DuckDbConnection { conn, tables, multi_get: HashMap::new(), queries: HashMap::new() }))
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let sql = format!("SELECT COUNT(*) FROM {}", quote(&format!("{TABLE_PREFIX}{}", table.name)));
        self.with_base(|conn| conn.query_row(&sql, [], |r| r.get::<_, i64>(0)).map(|n| n as u64).map_err(runtime))
    }

    /// The buffer manager's memory (`duckdb_memory()`, summed over its tags): what DuckDB
    /// holds in memory for the database, its indexes and its work areas.
    async fn engine_memory(&self) -> Result<Option<super::EngineMemory>> {
        let sql = "SELECT COALESCE(SUM(memory_usage_bytes), 0)::BIGINT FROM duckdb_memory()";
        let bytes = self.with_base(|conn| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).map_err(runtime))?;
        Ok(Some(super::EngineMemory { bytes: bytes as u64, source: "duckdb_memory() memory_usage_bytes".into() }))
    }

    async fn cleanup(&self) -> Result<()> {
        let Some(conn) = self.base.lock().unwrap().take() else {
            return Ok(());
        };
        if let Some(dir) = self.scratch.lock().unwrap().take() {
            drop(conn);
            return dir.close().map_err(|e| Error::runtime(format!("duckdb: cannot remove the throwaway file: {e}")));
        }
        in_transaction(&conn, runtime, || {
            for t in owned_tables(&conn).map_err(runtime)? {
                conn.execute_batch(&format!("DROP TABLE IF EXISTS {};", quote(&t))).map_err(runtime)?;
            }
            conn.execute_batch(&format!("DROP TABLE IF EXISTS {OWNER_TABLE};")).map_err(runtime)
        })
    }
}

/// Binds a dbsweep value as a DuckDB value of the matching column type.
struct Bind<'a>(&'a Value);

impl ::duckdb::ToSql for Bind<'_> {
    fn to_sql(&self) -> ::duckdb::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self.0 {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::BigInt(*v),
            Value::Float(v) => ValueRef::Double(*v),
            Value::Decimal(d) => ValueRef::Decimal(decimal(*d)?),
            Value::Date(d) => ValueRef::Date32(d.0),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// Hundredths as a DuckDB decimal with scale 2.
fn decimal(d: Decimal) -> ::duckdb::Result<::duckdb::types::Decimal> {
    let width = if d.0.unsigned_abs() < 10u64.pow(18) { 18 } else { 38 };
    ::duckdb::types::Decimal::new(width, 2, i128::from(d.0)).map_err(|e| ::duckdb::Error::ToSqlConversionFailure(Box::new(e)))
}

/// A range bound in the column's type (days for dates, hundredths for decimals).
fn bound(ty: ColumnType, v: i64) -> Value {
    match ty {
        ColumnType::Date => Value::Date(Date(v.clamp(i32::MIN.into(), i32::MAX.into()) as i32)),
        ColumnType::Decimal => Value::Decimal(Decimal(v)),
        _ => Value::Int(v),
    }
}

/// Reads a DuckDB value back as dbsweep's value of the column's type.
fn decode(value: ValueRef<'_>, ty: ColumnType) -> Result<Value, OpError> {
    Ok(match (value, ty) {
        (ValueRef::Null, _) => Value::Null,
        (ValueRef::BigInt(v), ColumnType::Int) => Value::Int(v),
        (ValueRef::Int(v), ColumnType::Int) => Value::Int(v.into()),
        (ValueRef::Double(v), ColumnType::Float) => Value::Float(v),
        (ValueRef::BigInt(v), ColumnType::Float) => Value::Float(v as f64),
        (ValueRef::Decimal(d), ColumnType::Decimal) => {
            let scale = u32::from(d.scale());
            let hundredths = if scale >= 2 { d.value() / 10i128.pow(scale - 2) } else { d.value() * 10i128.pow(2 - scale) };
            Value::Decimal(Decimal(i64::try_from(hundredths).map_err(|_| OpError::client("duckdb: decimal out of range"))?))
        }
        (ValueRef::Date32(d), ColumnType::Date) => Value::Date(Date(d)),
        (ValueRef::Text(s), ColumnType::Text) => Value::Text(String::from_utf8_lossy(s).into()),
        (other, ty) => return Err(OpError::client(format!("duckdb: a {ty:?} column returned {:?}", other.data_type()))),
    })
}

fn decode_row(row: &::duckdb::Row<'_>, def: &TableDef) -> Result<Row, OpError> {
    def.columns.iter().enumerate().map(|(i, c)| decode(row.get_ref(i).map_err(op_error)?, c.ty)).collect()
}

struct DuckDbConnection {
    conn: ::duckdb::Connection,
    /// Statement texts by `TableId`.
    tables: Vec<SqlText>,
    /// `IN (...)` lookups by (table, number of keys).
    multi_get: HashMap<(TableId, usize), String>,
    /// Analytic query texts (prepared through the statement cache).
    queries: HashMap<QueryId, String>,
}

impl DuckDbConnection {
    /// Runs an analytic query (a cached prepared statement) and decodes its rows into
    /// the types of `answer_columns`.
    fn query(&mut self, query: QueryId) -> Result<Outcome, OpError> {
        if !self.queries.contains_key(&query) {
            let sql = query_sql(query, Dialect::DuckDb, &self.tables)?;
            self.queries.insert(query, sql);
        }
        let types = tpch_queries::answer_columns(query);
        let mut stmt = self.conn.prepare_cached(&self.queries[&query]).map_err(op_error)?;
        let mut rows = stmt.query([]).map_err(op_error)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(op_error)? {
            if out.is_empty() && row.as_ref().column_count() != types.len() {
                return Err(OpError::client(format!(
                    "{query:?} returns {} columns, expected {}",
                    row.as_ref().column_count(),
                    types.len()
                )));
            }
            out.push(types.iter().enumerate().map(|(i, ty)| decode(row.get_ref(i).map_err(op_error)?, *ty)).collect::<Result<Row, _>>()?);
        }
        Ok(Outcome::answer(out.len() as u64, Answer::Table(out)))
    }

    fn read_rows(&self, sql: &str, def: &TableDef, params: impl ::duckdb::Params) -> Result<u64, OpError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(op_error)?;
        let mut rows = stmt.query(params).map_err(op_error)?;
        let mut n = 0;
        while let Some(row) = rows.next().map_err(op_error)? {
            black_box(decode_row(row, def)?);
            n += 1;
        }
        Ok(n)
    }

    fn write(&self, sql: &str, params: impl ::duckdb::Params) -> Result<u64, OpError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(op_error)?;
        stmt.execute(params).map(|n| n as u64).map_err(op_error)
    }

    /// Executes one op; `in_txn` is true inside a batch's transaction.
    fn run(&mut self, op: &Op, in_txn: bool) -> Result<Outcome, OpError> {
        if let Op::Echo = op {
            let mut stmt = self.conn.prepare_cached("SELECT 1").map_err(op_error)?;
            black_box(stmt.query_row([], |r| r.get::<_, i32>(0)).map_err(op_error)?);
            return Ok(Outcome::rows(0));
        }
        if let Op::Query(query) = op {
            return self.query(*query);
        }
        let id = op.table().ok_or_else(|| OpError::unsupported(op.kind(), "duckdb"))?;
        let t = self.tables.get(id).ok_or_else(|| OpError::client(format!("duckdb: no table #{id} (prepare first)")))?;
        let def = t.def.clone();
        let column_ty = |c: usize| def.columns.get(c).map(|c| c.ty).ok_or_else(|| OpError::client("duckdb: no such column"));
        Ok(match op {
            Op::Insert { row, .. } => Outcome::rows(self.write(&t.insert, params_from_iter(row.iter().map(Bind)))?),
            Op::Get { key, .. } => Outcome::rows(self.read_rows(&t.get, &def, [key])?),
            Op::MultiGet { table, keys } => {
                if keys.is_empty() {
                    return Ok(Outcome::rows(0));
                }
                if keys.len() > IN_LIST_MAX {
                    let mut list = String::with_capacity(keys.len() * 8 + 2);
                    list.push('[');
                    for (i, key) in keys.iter().enumerate() {
                        if i > 0 {
                            list.push(',');
                        }
                        let _ = write!(list, "{key}");
                    }
                    list.push(']');
                    let sql = format!("SELECT * FROM {} WHERE {} IN (SELECT unnest(CAST($1 AS BIGINT[])))", t.table(), t.key());
                    return Ok(Outcome::rows(self.read_rows(&sql, &def, [list])?));
                }
                let cached = (*table, keys.len());
                self.multi_get.entry(cached).or_insert_with(|| t.multi_get(keys.len()));
                Outcome::rows(self.read_rows(&self.multi_get[&cached], &def, params_from_iter(keys.iter()))?)
            }
            Op::Delete { key, .. } => Outcome::rows(self.write(&t.delete, [key])?),
            Op::Update { key, column, value, .. } => {
                let sql = t.update.get(*column).ok_or_else(|| OpError::client("duckdb: no such column"))?;
                Outcome::rows(self.write(sql, ::duckdb::params![Bind(value), key])?)
            }
            Op::ReadModifyWrite { key, column, value, .. } => {
                let update = t.update.get(*column).ok_or_else(|| OpError::client("duckdb: no such column"))?;
                let rmw = || -> Result<u64, OpError> {
                    if self.read_rows(&t.get, &def, [key])? == 0 {
                        return Ok(0);
                    }
                    self.write(update, ::duckdb::params![Bind(value), key])
                };
                Outcome::rows(if in_txn { rmw()? } else { in_transaction(&self.conn, op_error, rmw)? })
            }
            Op::Scan { start, count, .. } => Outcome::rows(self.read_rows(&t.scan, &def, ::duckdb::params![start, *count as i64])?),
            Op::FetchAll { .. } => Outcome::rows(self.read_rows(&t.fetch_all, &def, [])?),
            Op::Range { column, lo, hi, agg, .. } => {
                let sql = t.range_sql(*column, *agg);
                let ty = column_ty(*column)?;
                let (lo, hi) = (bound(ty, *lo), bound(ty, *hi));
                let params = ::duckdb::params![Bind(&lo), Bind(&hi)];
                match agg {
                    RangeAgg::Rows => Outcome::rows(self.read_rows(&sql, &def, params)?),
                    RangeAgg::Count => {
                        let mut stmt = self.conn.prepare_cached(&sql).map_err(op_error)?;
                        let n: i64 = stmt.query_row(params, |r| r.get(0)).map_err(op_error)?;
                        Outcome::answer(1, Answer::Scalar(Value::Int(n)))
                    }
                    RangeAgg::Max { column: of } => {
                        let ty = column_ty(*of)?;
                        let mut stmt = self.conn.prepare_cached(&sql).map_err(op_error)?;
                        let mut rows = stmt.query(params).map_err(op_error)?;
                        let row = rows.next().map_err(op_error)?.ok_or_else(|| OpError::server("duckdb: MAX returned no row"))?;
                        Outcome::answer(1, Answer::Scalar(decode(row.get_ref(0).map_err(op_error)?, ty)?))
                    }
                }
            }
            Op::Echo | Op::Query(_) => unreachable!("handled above"),
        })
    }
}

#[async_trait]
impl Connection for DuckDbConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        self.run(op, false)
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        if ops.is_empty() {
            return Ok(Outcome::rows(0));
        }
        // DuckDB transactions are optimistic (conflicts fail at write time), so reads and
        // writes begin the same way.
        self.conn.execute_batch("BEGIN TRANSACTION").map_err(op_error)?;
        let mut rows = 0;
        for op in ops {
            match self.run(op, true) {
                Ok(out) => rows += out.rows,
                Err(e) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(e);
                }
            }
        }
        if let Err(e) = self.conn.execute_batch("COMMIT") {
            let _ = self.conn.execute_batch("ROLLBACK");
            return Err(op_error(e));
        }
        Ok(Outcome::rows(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::Column;
    use std::path::Path;

    fn open_at(path: &Path) -> DuckDb {
        let url = TargetUrl::parse(&format!("duckdb:{}", path.display())).unwrap();
        DuckDb::open("t", &url, &OpenContext::new(path.parent().unwrap().to_path_buf())).unwrap()
    }

    #[tokio::test]
    async fn reports_the_library_version() {
        let dir = tempfile::tempdir().unwrap();
        let target = open_at(&dir.path().join("v.duckdb"));
        assert_eq!(target.info().version, "v1.5.6");
        assert!(target.info().settings["threads"].parse::<u32>().unwrap() >= 1);
    }

    #[tokio::test]
    async fn decimals_and_dates_round_trip_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let target = open_at(&dir.path().join("types.duckdb"));
        let def = Arc::new(TableDef {
            name: "typed".into(),
            columns: vec![
                Column { name: "k".into(), ty: ColumnType::Int },
                Column { name: "price".into(), ty: ColumnType::Decimal },
                Column { name: "day".into(), ty: ColumnType::Date },
            ],
            indexed: vec![2],
        });
        target.prepare(std::slice::from_ref(&def)).await.unwrap();
        let rows = vec![
            vec![Value::Int(1), Value::Decimal(Decimal(1234)), Value::Date(Date(8035))],
            vec![Value::Int(2), Value::Decimal(Decimal(-5)), Value::Date(Date(10_591))],
        ];
        target.load(&def, Box::new(rows.into_iter())).await.unwrap();
        let mut conn = target.connect().await.unwrap();
        // DuckDB itself sees the right values, not just a round trip of dbsweep's numbers.
        let text: String = target
            .with_base(|c| {
                c.query_row("SELECT string_agg(price::VARCHAR || ' ' || day::VARCHAR, ',' ORDER BY k) FROM dbsweep_typed", [], |r| r.get(0))
                    .map_err(runtime)
            })
            .unwrap();
        assert_eq!(text, "12.34 1992-01-01,-0.05 1998-12-31");
        let insert = Op::Insert { table: 0, row: vec![Value::Int(3), Value::Decimal(Decimal(99_999_999)), Value::Date(Date(9000))] };
        assert_eq!(conn.execute(&insert).await.unwrap().rows, 1);
        // A range over the date column (days), MAX of the decimal column (hundredths).
        let max = Op::Range { table: 0, column: 2, lo: 8035, hi: 9000, agg: RangeAgg::Max { column: 1 } };
        assert_eq!(conn.execute(&max).await.unwrap().answer, Some(Answer::Scalar(Value::Decimal(Decimal(99_999_999)))));
        let max_day = Op::Range { table: 0, column: 2, lo: 0, hi: 20_000, agg: RangeAgg::Max { column: 2 } };
        assert_eq!(conn.execute(&max_day).await.unwrap().answer, Some(Answer::Scalar(Value::Date(Date(10_591)))));
    }
}
