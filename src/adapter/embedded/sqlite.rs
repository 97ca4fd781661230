//! SQLite adapter (rusqlite, bundled SQLite): the embedded row store.
//!
//! `sqlite:` uses a throwaway file in the run's scratch directory; `sqlite:/path/file.db`
//! uses the user's file. dbsweep's tables are `dbsweep_<table>`, each registered in the
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
//! Statements are the `sqlite` dialect's; this module is SQLite's `Engine` (binding and
//! reading values) and its target (file, settings, bulk load). Must not time anything.

use super::session::{Engine, binding_calls};
use super::target::{DatabaseFile, EmbeddedFile, EmbeddedSql, Requests, in_transaction, load_each_row, sql_target_info};
use super::{Embedded, clip};
use crate::adapter::declaration::{Declaration, Needs, UrlOptions};
use crate::adapter::sql::dialect::{Dialect, SqlTable};
use crate::adapter::sql::dialects::SQLITE;
use crate::adapter::sql::statement::Statement;
use crate::adapter::{EngineMemory, OpenContext, TargetUrl};
use crate::base::durability::Durability;
use crate::base::op::OpError;
use crate::base::table::{ColumnType, Date, Decimal, Row, RowSource, TableDef, Value};
use crate::error::{Error, Result};
use rusqlite::params_from_iter;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long a connection waits for another connection's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);
/// Prepared statements kept per connection (multi-gets add one per batch size).
const STATEMENT_CACHE: usize = 256;

pub const SYSTEM: Declaration = Declaration {
    system: "sqlite",
    url: "sqlite:[PATH]",
    description: "SQLite, embedded row store (WAL, synchronous=NORMAL)",
    needs: Needs::Library,
    schemes: &["sqlite"],
    options: UrlOptions::Only(&["synchronous"]),
    several_hosts: false,
    capabilities: crate::adapter::sql::CAPABILITIES,
    open: Some(|name, url, ctx| Ok(Arc::new(Sqlite::open(name, url, ctx)?))),
};

pub struct Sqlite {
    file: EmbeddedFile<SqliteEngine>,
    /// The journal mode a user's file had before dbsweep switched it to WAL, restored by
    /// `cleanup`; `None` when there is nothing to restore.
    original_journal: Option<String>,
    /// `PRAGMA synchronous` for every connection: `NORMAL` unless the URL says otherwise.
    synchronous: &'static str,
}

impl Sqlite {
    pub fn open(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Embedded<Self>> {
        let file = DatabaseFile::of(name, url, ctx, "sqlite", "dbsweep.sqlite")?;
        let path = &file.path;
        let synchronous = match url.param("synchronous").map(|v| v.to_ascii_uppercase()).as_deref() {
            None => synchronous_for(ctx.durability),
            Some("NORMAL") => "NORMAL",
            Some("FULL") => "FULL",
            Some("EXTRA") => "EXTRA",
            Some("OFF") => "OFF",
            Some(other) => {
                return Err(Error::usage(format!("target '{name}': synchronous must be off, normal, full or extra, got '{other}'")));
            }
        };
        let admin = open_connection(path, synchronous).map_err(|e| {
            Error::usage(format!("target '{name}': cannot open SQLite file {}: {e}; check the path in the URL", path.display()))
        })?;
        let journal_mode: String = admin
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(|e| Error::usage(format!("target '{name}': {} is not a usable SQLite file: {e}", path.display())))?;
        // A user's file is switched to WAL only once `prepare` has found nothing foreign in
        // it, and switched back by `cleanup`; a throwaway file is switched now.
        let original_journal = journal_mode.to_lowercase();
        if file.is_throwaway() {
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
        let settings = BTreeMap::from([
            ("journal_mode".to_string(), "wal".to_string()),
            ("synchronous".to_string(), level.to_string()),
            ("busy_timeout_ms".to_string(), BUSY_TIMEOUT.as_millis().to_string()),
            ("durability".to_string(), durability("wal", level)),
            ("indexes".to_string(), "B-tree on secondary columns; key is the rowid".to_string()),
        ]);
        let requests = Requests {
            bulk_load: "one prepared single-row INSERT per row, all in one transaction (BEGIN IMMEDIATE … COMMIT)",
            echo: "SELECT 1 through a cached prepared statement",
            insert: "INSERT INTO <table> VALUES (?, …), a cached prepared statement",
            insert_batch: "one transaction (BEGIN IMMEDIATE … COMMIT) of single-row prepared INSERTs",
            multi_get: format!(
                "SELECT … WHERE <key> IN (?, …) of bound keys, {} per statement, in one read transaction",
                SQLITE.max_keys()
            ),
        };
        let info = sql_target_info(name, url, &SQLITE, rusqlite::version().to_string(), &file, requests, settings);
        let original_journal = (!file.is_throwaway() && original_journal != "wal").then_some(original_journal);
        Ok(Embedded(Sqlite { file: EmbeddedFile::new(info, &SQLITE, file, SqliteEngine(admin)), original_journal, synchronous }))
    }
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

/// `PRAGMA synchronous` for a durability asked by the study (`--durability`); without one,
/// NORMAL (WAL synced at checkpoints).
fn synchronous_for(durability: Option<Durability>) -> &'static str {
    match durability {
        Some(Durability::None) => "OFF",
        None | Some(Durability::Periodic) => "NORMAL",
        Some(Durability::Commit) => "FULL",
    }
}

/// What a commit survives, for the report.
fn durability(journal_mode: &str, synchronous: &str) -> String {
    match (journal_mode.to_lowercase().as_str(), synchronous) {
        ("wal", "normal") => Durability::Periodic.describe(
            "no fsync per commit, the WAL is synced at checkpoints (synchronous=NORMAL): survives a process crash, not an OS crash",
        ),
        (_, "full" | "extra") => Durability::Commit.describe(&format!("fsync at every commit (synchronous={synchronous})")),
        (_, "off") => Durability::None.describe("never synced (synchronous=OFF): a crash of the OS may lose or corrupt data"),
        (mode, level) => format!("journal_mode={mode}, synchronous={level}"),
    }
}

impl EmbeddedSql for Sqlite {
    type Engine = SqliteEngine;

    fn file(&self) -> &EmbeddedFile<SqliteEngine> {
        &self.file
    }

    /// Every client opens its own connection on the file.
    fn client(&self, _admin: &mut SqliteEngine) -> Result<SqliteEngine> {
        Ok(SqliteEngine(open_connection(&self.file.path, self.synchronous).map_err(runtime)?))
    }

    /// One transaction of single-row inserts through one prepared statement.
    fn load(&self, admin: &mut SqliteEngine, table: &TableDef, rows: RowSource) -> Result<u64> {
        let insert = SqlTable::new(&SQLITE, Arc::new(table.clone())).text(&SQLITE, Statement::Insert { table: 0, rows: 1 });
        in_transaction(admin, &SQLITE, |engine| {
            let mut insert = engine.0.prepare(&insert).map_err(runtime)?;
            load_each_row(rows, |row| insert.execute(params_from_iter(row.iter().map(Bind))).map(drop).map_err(runtime))
        })
    }

    /// The database's pages in use (`(page_count − freelist_count) × page_size`): SQLite
    /// keeps the data in its file and a bounded page cache, so this is the storage the data
    /// takes (free pages left by dropped tables are not counted).
    fn engine_memory(&self, admin: &mut SqliteEngine) -> Result<EngineMemory> {
        let sql = "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()";
        let bytes = admin.0.query_row(sql, [], |r| r.get::<_, i64>(0)).map_err(runtime)?;
        Ok(EngineMemory { bytes: bytes as u64, source: "pages in use × page_size (database file)".into() })
    }

    /// The journal mode cannot change inside a transaction: WAL now, checked again inside.
    fn before_create(&self, admin: &mut SqliteEngine) -> Result<()> {
        switch_to_wal(&admin.0).map_err(|e| Error::runtime(format!("sqlite: {e}")))
    }

    /// A user's file gets its journal mode back.
    fn after_drop(&self, admin: &mut SqliteEngine) -> Result<()> {
        if let Some(mode) = &self.original_journal {
            let now: String = admin.0.query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get(0)).map_err(runtime)?;
            if !now.eq_ignore_ascii_case(mode) {
                return Err(Error::runtime(format!(
                    "sqlite: could not restore journal_mode={mode} (still {now}); is another program using the file?"
                )));
            }
        }
        Ok(())
    }
}

/// SQLite's calls on one `rusqlite::Connection`.
pub struct SqliteEngine(rusqlite::Connection);

impl Engine for SqliteEngine {
    binding_calls!(rusqlite);

    /// A reading transaction takes no lock until it reads; a writing one takes the write
    /// lock at once (no deadlock between two readers upgrading).
    fn begin(&self, writes: bool) -> &'static str {
        if writes { "BEGIN IMMEDIATE" } else { "BEGIN DEFERRED" }
    }

    fn table_exists(&mut self, name: &str) -> Result<bool, OpError> {
        let query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1";
        Ok(self.query(query, &[Value::Text(name.into())], &[], &mut drop)? > 0)
    }
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

/// A cell of a user's script's result as its own type reads (blobs as lowercase hex).
fn natural(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(v) => Value::Int(v),
        ValueRef::Real(v) => Value::Float(v),
        ValueRef::Text(s) => Value::Text(String::from_utf8_lossy(s).into()),
        ValueRef::Blob(b) => Value::Text(b.iter().map(|byte| format!("{byte:02x}")).collect::<String>().into()),
    }
}

fn op_error(e: rusqlite::Error) -> OpError {
    OpError::server(clip(format!("sqlite: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::Target;
    use crate::adapter::embedded::decimals_and_dates_round_trip;
    use crate::base::op::Op;
    use crate::data::kv;

    fn open_at(path: &Path) -> Embedded<Sqlite> {
        crate::adapter::embedded::open_at(Sqlite::open, "sqlite", path)
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
        let conn = open_connection(&target.0.file.path, target.0.synchronous).unwrap();
        assert_eq!(conn.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0)).unwrap(), "wal");
        assert_eq!(conn.query_row("PRAGMA synchronous", [], |r| r.get::<_, i64>(0)).unwrap(), 1);
        assert_eq!(conn.query_row("PRAGMA busy_timeout", [], |r| r.get::<_, i64>(0)).unwrap(), BUSY_TIMEOUT.as_millis() as i64);
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
        assert_eq!(full.info().settings["durability"], "commit: fsync at every commit (synchronous=full)");
        let bad = Sqlite::open("t", &TargetUrl::parse("sqlite:?synchronous=sometimes").unwrap(), &ctx);
        assert_eq!(bad.err().unwrap().exit_code(), 2);
    }

    #[tokio::test]
    async fn decimals_and_dates_round_trip_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let target = open_at(&dir.path().join("types.db"));
        decimals_and_dates_round_trip(&target).await;
        // Stored as INTEGER hundredths and days.
        let stored = open_connection(&target.0.file.path, target.0.synchronous)
            .unwrap()
            .query_row("SELECT group_concat(price || ' ' || day, ',') FROM (SELECT * FROM dbsweep_typed ORDER BY k)", [], |r| {
                r.get::<_, String>(0)
            })
            .unwrap();
        assert_eq!(stored, "1234 8035,-5 10591,99999999 9000");
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
        assert!(target.0.file.path.exists());
        target.cleanup().await.unwrap();
        assert!(!target.0.file.path.exists());
        assert_eq!(std::fs::read_dir(&ctx.scratch_dir).unwrap().count(), 0);
    }
}
