//! SQLite adapter (rusqlite, bundled SQLite): the embedded row store.
//!
//! `sqlite:` uses a throwaway file in the run's scratch directory; `sqlite:/path/file.db`
//! uses the user's file, locked for the run by `EngineFile` (a `lease::FileLease` on
//! `<file>.dbsweep-lock`: a second run on the same file is refused). dbsweep's tables are `dbsweep_<table>`, each registered in the
//! marker table `dbsweep_owner`; `prepare` replaces only registered tables and refuses with
//! `NotOwned` when a same-named table is not registered. Nothing else in the file is read
//! or written.
//!
//! Settings (recorded in `TargetInfo.settings`): WAL journal, `synchronous=NORMAL` by default
//! (a commit survives a crash of the process but not of the OS: no fsync per commit;
//! `sqlite:?synchronous=full` syncs every commit, as DuckDB and redb do), a busy timeout so
//! concurrent writers wait for the lock instead of failing. Every client opens its own
//! `rusqlite::Connection` on the file (`Execution::Blocking`); statements are prepared once
//! per connection and cached; a batch is one transaction (`BEGIN IMMEDIATE` for writes,
//! `BEGIN DEFERRED` for reads); a read-modify-write is one `BEGIN IMMEDIATE` transaction.
//!
//! Type mapping: Int → `INTEGER` (the key is `INTEGER PRIMARY KEY`, SQLite's rowid), Float →
//! `REAL`, Text → `TEXT`, Decimal → `INTEGER` hundredths (SQLite has no exact decimal type;
//! hundredths keep values, ordering, `MAX` and sums exact; queries divide by 100.0 where
//! they need the number), Date → `INTEGER` days since 1970-01-01 (compact, compares as
//! integers; `date(col * 86400, 'unixepoch')` shows it as text).
//!
//! This module also holds the statement texts shared with the DuckDB adapter, whose
//! dialect agrees on them. It must not time anything.

use super::lease::FileLease;
use super::{Capabilities, Connection, Execution, OpenContext, RowSource, Target, TargetInfo, TargetUrl};
use crate::adapter::sql::tpch::{self, Dialect};
use crate::base::op::{Answer, Op, OpError, OpKind, Outcome, QueryId, RangeAgg};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, TableId, Value};
use crate::data::tpch_queries;
use crate::error::{Error, Result};
use async_trait::async_trait;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{OptionalExtension, params_from_iter};
use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a connection waits for another connection's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);
/// Prepared statements kept per connection (multi-gets add one per batch size).
const STATEMENT_CACHE: usize = 256;
/// Most keys in one `IN (...)` statement; SQLite allows 32,766 bound parameters, and a
/// larger multi-get runs as several statements in one read transaction.
const IN_LIST_MAX: usize = 10_000;
/// The analytic queries the SQL engines run (TPC-H Q1, Q3, Q6, Q14).
pub(super) const ANALYTIC_QUERIES: [QueryId; 4] = [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14];
/// Name prefix of every table dbsweep creates in an SQL engine.
pub(super) const TABLE_PREFIX: &str = "dbsweep_";
/// The marker table listing the tables dbsweep created.
pub(super) const OWNER_TABLE: &str = "dbsweep_owner";

pub struct Sqlite {
    info: TargetInfo,
    path: PathBuf,
    /// The journal mode a user's file had before dbsweep switched it to WAL, restored by
    /// `cleanup`; `None` when there is nothing to restore.
    original_journal: Option<String>,
    /// `PRAGMA synchronous` for every connection: `NORMAL` unless the URL says otherwise.
    synchronous: &'static str,
    /// The connection `prepare`, `load`, `count_rows` and `cleanup` use; `None` after cleanup.
    admin: Mutex<Option<rusqlite::Connection>>,
    /// Tables by `TableId`, as given to `prepare`.
    tables: Mutex<Vec<Arc<TableDef>>>,
    /// The throwaway directory holding the file for `sqlite:`.
    scratch: Mutex<Option<tempfile::TempDir>>,
    /// The lease on a user's file; declared last, so it is dropped after the connections.
    _lease: Option<FileLease>,
}

impl Sqlite {
    pub fn open(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let file = EngineFile::new(name, url, ctx, "sqlite", "dbsweep.sqlite")?;
        let file_settings = file.settings();
        let EngineFile { path, scratch, lease } = file;
        let synchronous = match url.param("synchronous").map(|v| v.to_ascii_uppercase()).as_deref() {
            None | Some("NORMAL") => "NORMAL",
            Some("FULL") => "FULL",
            Some("EXTRA") => "EXTRA",
            Some("OFF") => "OFF",
            Some(other) => {
                return Err(Error::usage(format!("target '{name}': synchronous must be off, normal, full or extra, got '{other}'")));
            }
        };
        let admin = open_connection(&path, synchronous).map_err(|e| {
            Error::usage(format!("target '{name}': cannot open SQLite file {}: {e}; check the path in the URL", path.display()))
        })?;
        let journal_mode: String = admin
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(|e| Error::usage(format!("target '{name}': {} is not a usable SQLite file: {e}", path.display())))?;
        // A user's file is switched to WAL only once `prepare` has found nothing foreign in
        // it, and switched back by `cleanup`; a throwaway file is switched now.
        let original_journal = journal_mode.to_lowercase();
        if scratch.is_some() {
            switch_to_wal(&admin).map_err(|e| Error::runtime(format!("sqlite: {e}")))?;
        }
        let level: i64 = admin.query_row("PRAGMA synchronous", [], |r| r.get(0)).map_err(runtime)?;
        let level = match level {
            0 => "off",
            1 => "normal",
            2 => "full",
            3 => "extra",
            _ => "unknown",
        };
        let mut settings = BTreeMap::from([
            ("journal_mode".to_string(), "wal".to_string()),
            ("synchronous".to_string(), level.to_string()),
            ("busy_timeout_ms".to_string(), BUSY_TIMEOUT.as_millis().to_string()),
            ("durability".to_string(), durability("wal", level)),
            ("indexes".to_string(), "B-tree on secondary columns; key is the rowid".to_string()),
            ("decimal".to_string(), "INTEGER hundredths".to_string()),
            ("date".to_string(), "INTEGER days since 1970-01-01".to_string()),
            ("batch".to_string(), "one transaction per batch".to_string()),
            ("echo".to_string(), "SELECT 1 through a cached prepared statement".to_string()),
            ("request.insert".to_string(), "INSERT INTO <table> VALUES (?, …), a cached prepared statement".to_string()),
            ("request.insert_batch".to_string(), "one transaction (BEGIN IMMEDIATE … COMMIT) of single-row prepared INSERTs".to_string()),
            (
                "request.multi_get".to_string(),
                format!("SELECT … WHERE <key> IN (?, …) of bound keys, {IN_LIST_MAX} per statement, in one read transaction"),
            ),
        ]);
        settings.extend(file_settings);
        Ok(Sqlite {
            info: TargetInfo {
                name: name.to_string(),
                system: "sqlite".into(),
                url: url.redacted(),
                execution: Execution::Blocking,
                capabilities: Capabilities {
                    ops: OpKind::ALL.to_vec(),
                    queries: ANALYTIC_QUERIES.to_vec(),
                    native_batch: true,
                    secondary_indexes: true,
                },
                version: rusqlite::version().to_string(),
                settings,
            },
            original_journal: (scratch.is_none() && original_journal != "wal").then_some(original_journal),
            path,
            synchronous,
            admin: Mutex::new(Some(admin)),
            tables: Mutex::new(Vec::new()),
            scratch: Mutex::new(scratch),
            _lease: lease,
        })
    }

    fn with_admin<T>(&self, f: impl FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T>) -> Result<T> {
        let mut guard = self.admin.lock().unwrap();
        let conn = guard.as_mut().ok_or_else(|| Error::runtime("sqlite: target already cleaned up"))?;
        f(conn).map_err(runtime)
    }
}

/// Where an embedded engine keeps its data: the URL's file, locked for this run by a
/// [`FileLease`] (another run on the same file is refused), or a throwaway file named
/// `file_name` in a fresh directory under the run's scratch directory.
pub(super) struct EngineFile {
    pub path: PathBuf,
    /// The throwaway directory; `None` for a user's file.
    pub scratch: Option<tempfile::TempDir>,
    /// The lease on a user's file; hold it until the engine has closed the file.
    pub lease: Option<FileLease>,
}

impl EngineFile {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext, system: &str, file_name: &str) -> Result<Self> {
        match url.file_path() {
            Some(path) => {
                let lease = FileLease::acquire(name, &path, &ctx.holder)?;
                Ok(EngineFile { path, scratch: None, lease: Some(lease) })
            }
            None => {
                let dir = throwaway_dir(ctx, system)?;
                Ok(EngineFile { path: dir.path().join(file_name), scratch: Some(dir), lease: None })
            }
        }
    }

    /// The `file` setting, and `lease` when a gone run's lock was taken over.
    pub fn settings(&self) -> Vec<(String, String)> {
        let mut settings =
            vec![("file".to_string(), if self.scratch.is_some() { "throwaway".to_string() } else { self.path.display().to_string() })];
        if let Some(note) = self.lease.as_ref().and_then(|l| l.took_over.clone()) {
            settings.push(("lease".to_string(), note));
        }
        settings
    }
}

/// A directory for a throwaway database file under the run's scratch directory.
pub(super) fn throwaway_dir(ctx: &OpenContext, system: &str) -> Result<tempfile::TempDir> {
    std::fs::create_dir_all(&ctx.scratch_dir)
        .and_then(|_| tempfile::Builder::new().prefix(&format!("{system}-")).tempdir_in(&ctx.scratch_dir))
        .map_err(|e| Error::runtime(format!("cannot create a {system} scratch directory in {}: {e}", ctx.scratch_dir.display())))
}

/// Switches the file to WAL (persistent in the file) and checks that SQLite agreed.
fn switch_to_wal(conn: &rusqlite::Connection) -> std::result::Result<(), String> {
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).map_err(|e| e.to_string())?;
    if mode.eq_ignore_ascii_case("wal") { Ok(()) } else { Err(format!("journal_mode stayed '{mode}' instead of WAL")) }
}

fn runtime(e: rusqlite::Error) -> Error {
    Error::runtime(format!("sqlite: {e}"))
}

/// Opens one connection with dbsweep's per-connection settings.
fn open_connection(path: &Path, synchronous: &str) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", synchronous)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// What a commit survives, in words, for the report.
fn durability(journal_mode: &str, synchronous: &str) -> String {
    match (journal_mode.to_lowercase().as_str(), synchronous) {
        ("wal", "normal") => "no fsync per commit (WAL synced at checkpoints): survives a process crash, not an OS crash".into(),
        (_, "full" | "extra") => "fsync at every commit".into(),
        (_, "off") => "never synced: a crash of the OS may lose or corrupt data".into(),
        (mode, level) => format!("journal_mode={mode}, synchronous={level}"),
    }
}

fn sql_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Int | ColumnType::Decimal | ColumnType::Date => "INTEGER",
        ColumnType::Float => "REAL",
        ColumnType::Text => "TEXT",
    }
}

fn table_exists(conn: &rusqlite::Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

fn owned_tables(conn: &rusqlite::Connection) -> rusqlite::Result<Vec<String>> {
    if !table_exists(conn, OWNER_TABLE)? {
        return Ok(Vec::new());
    }
    let mut stmt = conn.prepare(&format!("SELECT tbl FROM {OWNER_TABLE}"))?;
    stmt.query_map([], |r| r.get(0))?.collect()
}

#[async_trait]
impl Target for Sqlite {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let target = &self.info.name;
        let mut guard = self.admin.lock().unwrap();
        let conn = guard.as_mut().ok_or_else(|| Error::runtime("sqlite: target already cleaned up"))?;
        // Check every table before changing anything, so a refusal leaves the file as it was.
        let refuse_foreign = |conn: &rusqlite::Connection| -> Result<()> {
            let owned = owned_tables(conn).map_err(runtime)?;
            for t in tables {
                let name = format!("{TABLE_PREFIX}{}", t.name);
                if table_exists(conn, &name).map_err(runtime)? && !owned.contains(&name) {
                    return Err(Error::not_owned(
                        target,
                        format!(
                            "table {name} in {} was not created by dbsweep; rename or drop it, or use another file",
                            self.path.display()
                        ),
                    ));
                }
            }
            Ok(())
        };
        refuse_foreign(conn)?;
        // The journal mode cannot change inside a transaction: switch first, check again inside.
        switch_to_wal(conn).map_err(|e| Error::runtime(format!("sqlite: {e}")))?;
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(runtime)?;
        refuse_foreign(&tx)?;
        tx.execute_batch(&format!("CREATE TABLE IF NOT EXISTS {OWNER_TABLE} (tbl TEXT PRIMARY KEY, created_by TEXT NOT NULL)"))
            .map_err(runtime)?;
        for t in tables {
            let name = format!("{TABLE_PREFIX}{}", t.name);
            let mut ddl = format!("DROP TABLE IF EXISTS {}; CREATE TABLE {} (", quote(&name), quote(&name));
            for (i, c) in t.columns.iter().enumerate() {
                if i > 0 {
                    ddl.push_str(", ");
                }
                ddl.push_str(&format!("{} {}", quote(&c.name), sql_type(c.ty)));
                if i == 0 {
                    ddl.push_str(" PRIMARY KEY");
                }
            }
            ddl.push_str(");");
            for &c in &t.indexed {
                let col = &t.columns[c].name;
                ddl.push_str(&format!(" CREATE INDEX {} ON {} ({});", quote(&format!("{name}_{col}_idx")), quote(&name), quote(col)));
            }
            tx.execute_batch(&ddl).map_err(runtime)?;
            tx.execute(
                &format!("INSERT OR REPLACE INTO {OWNER_TABLE} (tbl, created_by) VALUES (?1, ?2)"),
                [name.as_str(), concat!("dbsweep ", env!("CARGO_PKG_VERSION"))],
            )
            .map_err(runtime)?;
        }
        tx.commit().map_err(runtime)?;
        *self.tables.lock().unwrap() = tables.to_vec();
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let sql = SqlText::new(Arc::new(table.clone()), TABLE_PREFIX, '?');
        self.with_admin(|conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let mut n = 0;
            {
                let mut insert = tx.prepare(&sql.insert)?;
                for row in rows {
                    insert.execute(params_from_iter(row.iter().map(Bind)))?;
                    n += 1;
                }
            }
            tx.commit()?;
            Ok(n)
        })
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        if self.admin.lock().unwrap().is_none() {
            return Err(Error::runtime("sqlite: target already cleaned up"));
        }
        let conn = open_connection(&self.path, self.synchronous).map_err(runtime)?;
        let tables = self.tables.lock().unwrap().iter().map(|t| SqlText::new(t.clone(), TABLE_PREFIX, '?')).collect();
        Ok(Box::new(SqliteConnection { conn, tables, multi_get: HashMap::new(), queries: HashMap::new() }))
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let sql = format!("SELECT COUNT(*) FROM {}", quote(&format!("{TABLE_PREFIX}{}", table.name)));
        self.with_admin(|conn| conn.query_row(&sql, [], |r| r.get::<_, i64>(0))).map(|n| n as u64)
    }

    /// The database's pages in use (`(page_count − freelist_count) × page_size`): SQLite
    /// keeps the data in its file and a bounded page cache, so this is the storage the data
    /// takes (free pages left by dropped tables are not counted).
    async fn engine_memory(&self) -> Result<Option<super::EngineMemory>> {
        let sql = "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()";
        let bytes = self.with_admin(|conn| conn.query_row(sql, [], |r| r.get::<_, i64>(0)))?;
        Ok(Some(super::EngineMemory { bytes: bytes as u64, source: "pages in use × page_size (database file)".into() }))
    }

    async fn cleanup(&self) -> Result<()> {
        let conn = self.admin.lock().unwrap().take();
        if let Some(conn) = conn {
            if let Some(dir) = self.scratch.lock().unwrap().take() {
                drop(conn);
                return dir.close().map_err(|e| Error::runtime(format!("sqlite: cannot remove the throwaway file: {e}")));
            }
            let mut ddl = String::new();
            for t in owned_tables(&conn).map_err(runtime)? {
                ddl.push_str(&format!("DROP TABLE IF EXISTS {};", quote(&t)));
            }
            ddl.push_str(&format!("DROP TABLE IF EXISTS {OWNER_TABLE};"));
            conn.execute_batch(&format!("BEGIN IMMEDIATE; {ddl} COMMIT;")).map_err(runtime)?;
            if let Some(mode) = &self.original_journal {
                let now: String = conn.query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get(0)).map_err(runtime)?;
                if !now.eq_ignore_ascii_case(mode) {
                    return Err(Error::runtime(format!(
                        "sqlite: could not restore journal_mode={mode} (still {now}); is another program using the file?"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Quotes an SQL identifier.
pub(super) fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// The statement texts for one table, in the SQL both SQLite and DuckDB accept. Parameters
/// are numbered with the engine's marker: `?1` for SQLite, `$1` for DuckDB.
pub(super) struct SqlText {
    pub def: Arc<TableDef>,
    pub insert: String,
    pub get: String,
    pub delete: String,
    /// `UPDATE` of one column, by column index.
    pub update: Vec<String>,
    pub scan: String,
    pub fetch_all: String,
    /// `COUNT(*)` / rows over a range of the column, by column index (indexed columns only).
    pub range_count: HashMap<usize, String>,
    pub range_rows: HashMap<usize, String>,
    /// `MAX(of)` over a range of the column, by (column, of) for indexed columns.
    pub range_max: HashMap<(usize, usize), String>,
    table: String,
    key: String,
    param: char,
}

impl SqlText {
    pub fn new(def: Arc<TableDef>, prefix: &str, param: char) -> Self {
        let table = quote(&format!("{prefix}{}", def.name));
        let cols: Vec<String> = def.columns.iter().map(|c| quote(&c.name)).collect();
        let key = cols[0].clone();
        let placeholders = (1..=cols.len()).map(|i| format!("{param}{i}")).collect::<Vec<_>>().join(", ");
        let (p1, p2) = (format!("{param}1"), format!("{param}2"));
        let mut text = SqlText {
            insert: format!("INSERT INTO {table} ({}) VALUES ({placeholders})", cols.join(", ")),
            get: format!("SELECT * FROM {table} WHERE {key} = {p1}"),
            delete: format!("DELETE FROM {table} WHERE {key} = {p1}"),
            update: cols.iter().map(|c| format!("UPDATE {table} SET {c} = {p1} WHERE {key} = {p2}")).collect(),
            scan: format!("SELECT * FROM {table} WHERE {key} >= {p1} ORDER BY {key} LIMIT {p2}"),
            fetch_all: format!("SELECT * FROM {table}"),
            range_count: HashMap::new(),
            range_rows: HashMap::new(),
            range_max: HashMap::new(),
            table,
            key,
            param,
            def,
        };
        for &c in &text.def.indexed.clone() {
            text.range_count.insert(c, text.range(c, "COUNT(*)"));
            text.range_rows.insert(c, text.range(c, "*"));
            for (of, col) in cols.iter().enumerate() {
                text.range_max.insert((c, of), text.range(c, &format!("MAX({col})")));
            }
        }
        text
    }

    /// `SELECT <what>` over `?1 <= column <= ?2`; built on the fly for unindexed columns.
    pub fn range(&self, column: usize, what: &str) -> String {
        let p = self.param;
        format!("SELECT {what} FROM {} WHERE {} BETWEEN {p}1 AND {p}2", self.table, quote(&self.def.columns[column].name))
    }

    pub fn range_sql(&self, column: usize, agg: RangeAgg) -> std::borrow::Cow<'_, str> {
        let cached = match agg {
            RangeAgg::Rows => self.range_rows.get(&column),
            RangeAgg::Count => self.range_count.get(&column),
            RangeAgg::Max { column: of } => self.range_max.get(&(column, of)),
        };
        match (cached, agg) {
            (Some(sql), _) => sql.as_str().into(),
            (None, RangeAgg::Rows) => self.range(column, "*").into(),
            (None, RangeAgg::Count) => self.range(column, "COUNT(*)").into(),
            (None, RangeAgg::Max { column: of }) => self.range(column, &format!("MAX({})", quote(&self.def.columns[of].name))).into(),
        }
    }

    /// The quoted table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The quoted key column name.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// `SELECT * ... WHERE key IN (?1, ..., ?n)`.
    pub fn multi_get(&self, n: usize) -> String {
        let list = (1..=n).map(|i| format!("{}{i}", self.param)).collect::<Vec<_>>().join(", ");
        format!("SELECT * FROM {} WHERE {} IN ({list})", self.table, self.key)
    }
}

/// The SQL of `query` in `dialect` over dbsweep's prefixed tables, or an error naming a
/// TPC-H table this run did not prepare.
pub(super) fn query_sql(query: QueryId, dialect: Dialect, tables: &[SqlText]) -> Result<String, OpError> {
    let missing = std::cell::RefCell::new(None::<String>);
    let text = tpch::sql(query, dialect, &|name: &str| match tables.iter().find(|t| t.def.name == name) {
        Some(t) => t.table.clone(),
        None => {
            missing.borrow_mut().get_or_insert_with(|| name.to_string());
            name.to_string()
        }
    });
    match missing.into_inner() {
        None => Ok(text),
        Some(name) => Err(OpError::client(format!("{query:?} needs the TPC-H table {name}, which this run did not prepare"))),
    }
}

/// True for op kinds that write.
pub(super) fn writes(kind: OpKind) -> bool {
    matches!(kind, OpKind::Insert | OpKind::Delete | OpKind::Update | OpKind::ReadModifyWrite)
}

/// Binds a dbsweep value as an SQLite value (see the module doc for the mapping).
struct Bind<'a>(&'a Value);

impl rusqlite::ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self.0 {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::Integer(*v),
            Value::Float(v) => ValueRef::Real(*v),
            Value::Decimal(d) => ValueRef::Integer(d.0),
            Value::Date(d) => ValueRef::Integer(d.0.into()),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// Reads a stored value back as the column's type.
fn decode(value: ValueRef<'_>, ty: ColumnType) -> Result<Value, OpError> {
    Ok(match (value, ty) {
        (ValueRef::Null, _) => Value::Null,
        (ValueRef::Integer(v), ColumnType::Int) => Value::Int(v),
        (ValueRef::Integer(v), ColumnType::Decimal) => Value::Decimal(Decimal(v)),
        (ValueRef::Integer(v), ColumnType::Date) => Value::Date(Date(v as i32)),
        (ValueRef::Integer(v), ColumnType::Float) => Value::Float(v as f64),
        (ValueRef::Real(v), ColumnType::Float) => Value::Float(v),
        (ValueRef::Text(s), ColumnType::Text) => Value::Text(String::from_utf8_lossy(s).into()),
        (other, ty) => return Err(OpError::client(format!("sqlite: a {ty:?} column holds {:?}", other.data_type()))),
    })
}

fn decode_row(row: &rusqlite::Row<'_>, def: &TableDef) -> Result<Row, OpError> {
    def.columns.iter().enumerate().map(|(i, c)| decode(row.get_ref(i).map_err(op_error)?, c.ty)).collect()
}

fn op_error(e: rusqlite::Error) -> OpError {
    OpError::server(clip(format!("sqlite: {e}")))
}

/// Shortens an error message for the report: engines quote the whole statement, which for
/// a multi-get of thousands of keys is hundreds of kilobytes.
pub(super) fn clip(mut message: String) -> String {
    const MAX: usize = 300;
    if message.len() > MAX {
        let mut end = MAX;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

struct SqliteConnection {
    conn: rusqlite::Connection,
    /// Statement texts by `TableId`.
    tables: Vec<SqlText>,
    /// `IN (...)` lookups by (table, number of keys).
    multi_get: HashMap<(TableId, usize), String>,
    /// Analytic query texts (prepared through the statement cache).
    queries: HashMap<QueryId, String>,
}

impl SqliteConnection {
    fn table(&self, id: TableId) -> Result<&SqlText, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("sqlite: no table #{id} (prepare first)")))
    }

    /// Runs `SELECT *`-shaped statements and returns the number of rows read.
    fn read_rows(&self, sql: &str, def: &TableDef, params: impl rusqlite::Params) -> Result<u64, OpError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(op_error)?;
        let mut rows = stmt.query(params).map_err(op_error)?;
        let mut n = 0;
        while let Some(row) = rows.next().map_err(op_error)? {
            black_box(decode_row(row, def)?);
            n += 1;
        }
        Ok(n)
    }

    fn write(&self, sql: &str, params: impl rusqlite::Params) -> Result<u64, OpError> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(op_error)?;
        stmt.execute(params).map(|n| n as u64).map_err(op_error)
    }

    /// Runs `body` in one transaction, rolled back if it fails.
    fn in_transaction<T>(&mut self, begin: &str, body: impl FnOnce(&mut Self) -> Result<T, OpError>) -> Result<T, OpError> {
        self.conn.execute_batch(begin).map_err(op_error)?;
        match body(self) {
            Ok(v) => {
                if let Err(e) = self.conn.execute_batch("COMMIT") {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(op_error(e));
                }
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Runs an analytic query (a cached prepared statement) and decodes its rows into
    /// the types of `answer_columns`.
    fn query(&mut self, query: QueryId) -> Result<Outcome, OpError> {
        if !self.queries.contains_key(&query) {
            let sql = query_sql(query, Dialect::Sqlite, &self.tables)?;
            self.queries.insert(query, sql);
        }
        let types = tpch_queries::answer_columns(query);
        let mut stmt = self.conn.prepare_cached(&self.queries[&query]).map_err(op_error)?;
        if stmt.column_count() != types.len() {
            return Err(OpError::client(format!("{query:?} returns {} columns, expected {}", stmt.column_count(), types.len())));
        }
        let mut rows = stmt.query([]).map_err(op_error)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(op_error)? {
            out.push(types.iter().enumerate().map(|(i, ty)| decode(row.get_ref(i).map_err(op_error)?, *ty)).collect::<Result<Row, _>>()?);
        }
        Ok(Outcome::answer(out.len() as u64, Answer::Table(out)))
    }

    /// Executes one op; `in_txn` is true inside a batch's transaction.
    fn run(&mut self, op: &Op, in_txn: bool) -> Result<Outcome, OpError> {
        if let Op::Echo = op {
            let mut stmt = self.conn.prepare_cached("SELECT 1").map_err(op_error)?;
            black_box(stmt.query_row([], |r| r.get::<_, i64>(0)).map_err(op_error)?);
            return Ok(Outcome::rows(0));
        }
        if let Op::Query(query) = op {
            return self.query(*query);
        }
        let Some(id) = op.table() else {
            return Err(OpError::unsupported(op.kind(), "sqlite"));
        };
        let t = self.tables.get(id).ok_or_else(|| OpError::client(format!("sqlite: no table #{id} (prepare first)")))?;
        let def = t.def.clone();
        Ok(match op {
            Op::Insert { row, .. } => Outcome::rows(self.write(&t.insert, params_from_iter(row.iter().map(Bind)))?),
            Op::Get { key, .. } => Outcome::rows(self.read_rows(&t.get, &def, [key])?),
            Op::MultiGet { table, keys } => {
                if keys.is_empty() {
                    return Ok(Outcome::rows(0));
                }
                let table = *table;
                let lookup = |this: &mut Self| -> Result<u64, OpError> {
                    let mut n = 0;
                    for chunk in keys.chunks(IN_LIST_MAX) {
                        let cached = (table, chunk.len());
                        let tables = &this.tables;
                        this.multi_get.entry(cached).or_insert_with(|| tables[table].multi_get(chunk.len()));
                        n += this.read_rows(&this.multi_get[&cached], &def, params_from_iter(chunk.iter()))?;
                    }
                    Ok(n)
                };
                let n = if in_txn || keys.len() <= IN_LIST_MAX { lookup(self)? } else { self.in_transaction("BEGIN DEFERRED", lookup)? };
                Outcome::rows(n)
            }
            Op::Delete { key, .. } => Outcome::rows(self.write(&t.delete, [key])?),
            Op::Update { key, column, value, .. } => {
                let sql = t.update.get(*column).ok_or_else(|| OpError::client("sqlite: no such column"))?;
                Outcome::rows(self.write(sql, rusqlite::params![Bind(value), key])?)
            }
            Op::ReadModifyWrite { key, column, value, .. } => {
                let rmw = |this: &mut Self| -> Result<u64, OpError> {
                    let t = this.table(id)?;
                    if this.read_rows(&t.get, &def, [key])? == 0 {
                        return Ok(0);
                    }
                    let sql = t.update.get(*column).ok_or_else(|| OpError::client("sqlite: no such column"))?;
                    this.write(sql, rusqlite::params![Bind(value), key])
                };
                let n = if in_txn { rmw(self)? } else { self.in_transaction("BEGIN IMMEDIATE", rmw)? };
                Outcome::rows(n)
            }
            Op::Scan { start, count, .. } => Outcome::rows(self.read_rows(&t.scan, &def, rusqlite::params![start, *count as i64])?),
            Op::FetchAll { .. } => Outcome::rows(self.read_rows(&t.fetch_all, &def, [])?),
            Op::Range { column, lo, hi, agg, .. } => {
                let sql = t.range_sql(*column, *agg);
                match agg {
                    RangeAgg::Rows => Outcome::rows(self.read_rows(&sql, &def, [lo, hi])?),
                    RangeAgg::Count => {
                        let mut stmt = self.conn.prepare_cached(&sql).map_err(op_error)?;
                        let n: i64 = stmt.query_row([lo, hi], |r| r.get(0)).map_err(op_error)?;
                        Outcome::answer(1, Answer::Scalar(Value::Int(n)))
                    }
                    RangeAgg::Max { column: of } => {
                        let ty = def.columns.get(*of).ok_or_else(|| OpError::client("sqlite: no such column"))?.ty;
                        let mut stmt = self.conn.prepare_cached(&sql).map_err(op_error)?;
                        let mut rows = stmt.query([lo, hi]).map_err(op_error)?;
                        let row = rows.next().map_err(op_error)?.ok_or_else(|| OpError::server("sqlite: MAX returned no row"))?;
                        Outcome::answer(1, Answer::Scalar(decode(row.get_ref(0).map_err(op_error)?, ty)?))
                    }
                }
            }
            Op::Echo | Op::Query(_) => unreachable!("handled above"),
        })
    }
}

#[async_trait]
impl Connection for SqliteConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        self.run(op, false)
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let Some(first) = ops.first() else {
            return Ok(Outcome::rows(0));
        };
        let begin = if writes(first.kind()) { "BEGIN IMMEDIATE" } else { "BEGIN DEFERRED" };
        self.in_transaction(begin, |this| {
            let mut rows = 0;
            for op in ops {
                rows += this.run(op, true)?.rows;
            }
            Ok(Outcome::rows(rows))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::kv;

    fn open_at(path: &Path) -> Sqlite {
        let url = TargetUrl::parse(&format!("sqlite:{}", path.display())).unwrap();
        Sqlite::open("t", &url, &OpenContext::new(path.parent().unwrap().to_path_buf())).unwrap()
    }

    #[tokio::test]
    async fn settings_record_wal_and_normal_sync() {
        let dir = tempfile::tempdir().unwrap();
        let target = open_at(&dir.path().join("a.db"));
        let s = &target.info().settings;
        assert_eq!(s["journal_mode"], "wal");
        assert_eq!(s["synchronous"], "normal");
        assert!(target.info().version.starts_with('3'), "{}", target.info().version);
        // What the settings say is what a client connection gets.
        target.prepare(&[kv::shared_def()]).await.unwrap();
        let conn = open_connection(&target.path, target.synchronous).unwrap();
        assert_eq!(conn.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0)).unwrap(), "wal");
        assert_eq!(conn.query_row("PRAGMA synchronous", [], |r| r.get::<_, i64>(0)).unwrap(), 1);
        assert_eq!(conn.query_row("PRAGMA busy_timeout", [], |r| r.get::<_, i64>(0)).unwrap(), BUSY_TIMEOUT.as_millis() as i64);
    }

    #[test]
    fn long_messages_are_clipped_on_a_char_boundary() {
        assert_eq!(clip("short".into()), "short");
        let long = "é".repeat(400);
        let clipped = clip(long);
        assert!(clipped.len() <= 300 + "…".len() && clipped.ends_with('…'), "{}", clipped.len());
    }

    #[tokio::test]
    async fn a_user_file_keeps_its_journal_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("user.db");
        let mode =
            |p: &Path| -> String { rusqlite::Connection::open(p).unwrap().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap() };
        rusqlite::Connection::open(&path).unwrap().execute_batch("CREATE TABLE dbsweep_kv (x TEXT)").unwrap();
        assert_eq!(mode(&path), "delete");
        // Refused: the file is not switched to WAL.
        let target = open_at(&path);
        assert!(matches!(target.prepare(&[kv::shared_def()]).await, Err(Error::NotOwned { .. })));
        drop(target);
        assert_eq!(mode(&path), "delete");
        // Accepted: WAL while dbsweep works, the original mode again after cleanup.
        rusqlite::Connection::open(&path).unwrap().execute_batch("DROP TABLE dbsweep_kv").unwrap();
        let target = open_at(&path);
        target.prepare(&[kv::shared_def()]).await.unwrap();
        assert_eq!(mode(&path), "wal");
        target.cleanup().await.unwrap();
        drop(target);
        assert_eq!(mode(&path), "delete");
    }

    #[test]
    fn synchronous_can_be_chosen_and_is_validated() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = OpenContext::new(dir.path().to_path_buf());
        let full = Sqlite::open("t", &TargetUrl::parse("sqlite:?synchronous=full").unwrap(), &ctx).unwrap();
        assert_eq!(full.info().settings["synchronous"], "full");
        assert_eq!(full.info().settings["durability"], "fsync at every commit");
        let bad = Sqlite::open("t", &TargetUrl::parse("sqlite:?synchronous=sometimes").unwrap(), &ctx);
        assert_eq!(bad.err().unwrap().exit_code(), 2);
    }

    #[tokio::test]
    async fn decimals_and_dates_round_trip_exactly() {
        use crate::base::table::Column;
        let dir = tempfile::tempdir().unwrap();
        let target = open_at(&dir.path().join("types.db"));
        let def = Arc::new(TableDef {
            name: "typed".into(),
            columns: vec![
                Column { name: "k".into(), ty: ColumnType::Int },
                Column { name: "price".into(), ty: ColumnType::Decimal },
                Column { name: "day".into(), ty: ColumnType::Date },
            ],
            indexed: vec![0],
        });
        target.prepare(std::slice::from_ref(&def)).await.unwrap();
        let rows = vec![
            vec![Value::Int(1), Value::Decimal(Decimal(1234)), Value::Date(Date(8035))],
            vec![Value::Int(2), Value::Decimal(Decimal(99_999_999)), Value::Date(Date(10_591))],
        ];
        target.load(&def, Box::new(rows.into_iter())).await.unwrap();
        let mut conn = target.connect().await.unwrap();
        let max = |of| Op::Range { table: 0, column: 0, lo: 0, hi: 9, agg: RangeAgg::Max { column: of } };
        assert_eq!(conn.execute(&max(1)).await.unwrap().answer, Some(Answer::Scalar(Value::Decimal(Decimal(99_999_999)))));
        assert_eq!(conn.execute(&max(2)).await.unwrap().answer, Some(Answer::Scalar(Value::Date(Date(10_591)))));
    }

    #[tokio::test]
    async fn failed_batch_rolls_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let target = open_at(&dir.path().join("b.db"));
        let def = kv::shared_def();
        target.prepare(std::slice::from_ref(&def)).await.unwrap();
        let g = kv::KvGen::new(1, 100, 8);
        let mut conn = target.connect().await.unwrap();
        conn.execute(&Op::Insert { table: 0, row: g.row(5) }).await.unwrap();
        // The batch's third insert collides with key 5: none of the batch may stay.
        let batch: Vec<Op> = [3, 4, 5, 6].iter().map(|k| Op::Insert { table: 0, row: g.row(*k) }).collect();
        assert!(conn.execute_batch(&batch).await.is_err());
        assert_eq!(target.count_rows(&def).await.unwrap(), 1);
        // The connection is usable again afterwards.
        assert_eq!(conn.execute(&Op::Get { table: 0, key: 5 }).await.unwrap().rows, 1);
    }

    #[tokio::test]
    async fn throwaway_file_is_removed_by_cleanup() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = OpenContext::new(dir.path().join("scratch"));
        let target = Sqlite::open("t", &TargetUrl::parse("sqlite:").unwrap(), &ctx).unwrap();
        target.prepare(&[kv::shared_def()]).await.unwrap();
        assert!(target.path.exists());
        target.cleanup().await.unwrap();
        assert!(!target.path.exists());
        assert_eq!(std::fs::read_dir(&ctx.scratch_dir).unwrap().count(), 0);
    }
}
