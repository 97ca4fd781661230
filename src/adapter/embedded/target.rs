//! What the embedded SQL targets share outside a session: the database file (a throwaway
//! one in the run's scratch directory, or the user's), the connection `prepare`, `load`,
//! `count_rows` and `cleanup` use, the prepared tables, and dbsweep's ownership of its
//! tables in a file that may hold other data: tables `dbsweep_<table>`, each registered in
//! the marker table `dbsweep_owner`; `prepare` replaces only registered tables and refuses
//! with `NotOwned` a same-named table that is not registered; `cleanup` drops what is
//! registered (or the whole throwaway file). A user's file is leased to one run at a time
//! (`lease::FileLease` on `<file>.dbsweep-lock`, taken when the target opens, released
//! after the engine has closed the file): a second run on the same file is refused.
//!
//! An engine's target is an `EmbeddedSql` (its file, how a client connects, its bulk-load
//! path and memory figure); `Embedded` makes it a `Target`. Must not time anything.

use super::OWNER_TABLE;
use super::session::{EmbeddedSession, Engine};
use crate::adapter::lease::FileLease;
use crate::adapter::sql::connection::SqlConnection;
use crate::adapter::sql::dialect::{Dialect, SqlTable, Storage};
use crate::adapter::{Connection, ConnectionRoom, EngineMemory, Execution, OpenContext, Target, TargetInfo, TargetUrl};
use crate::base::op::OpError;
use crate::base::table::{ColumnType, RowSource, TableDef, Value};
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Where an embedded engine keeps its data.
pub struct DatabaseFile {
    pub path: PathBuf,
    /// The throwaway directory holding the file when the URL names none; dropped last.
    pub scratch: Option<tempfile::TempDir>,
    /// The lease on a user's file; hold it until the engine has closed the file.
    pub lease: Option<FileLease>,
}

impl DatabaseFile {
    /// The URL's file, leased to this run (target `name`) or refused while another run holds
    /// it; or `file_name` in a new throwaway directory of the run's scratch directory.
    pub fn of(name: &str, url: &TargetUrl, ctx: &OpenContext, system: &str, file_name: &str) -> Result<Self> {
        Ok(match url.file_path() {
            Some(path) => {
                let lease = FileLease::acquire(name, &path, &ctx.holder)?;
                DatabaseFile { path, scratch: None, lease: Some(lease) }
            }
            None => {
                let dir = throwaway_dir(ctx, system)?;
                DatabaseFile { path: dir.path().join(file_name), scratch: Some(dir), lease: None }
            }
        })
    }

    pub fn is_throwaway(&self) -> bool {
        self.scratch.is_some()
    }

    /// The `file` setting (`throwaway` or the user's path), and `lease` when a gone run's
    /// lock on the file was taken over.
    pub fn settings(&self) -> Vec<(String, String)> {
        let file = if self.is_throwaway() { "throwaway".to_string() } else { self.path.display().to_string() };
        let took_over = self.lease.as_ref().and_then(|l| l.took_over.clone());
        std::iter::once(("file".to_string(), file)).chain(took_over.map(|note| ("lease".to_string(), note))).collect()
    }
}

/// A directory for a throwaway database file under the run's scratch directory.
pub fn throwaway_dir(ctx: &OpenContext, system: &str) -> Result<tempfile::TempDir> {
    std::fs::create_dir_all(&ctx.scratch_dir)
        .and_then(|_| tempfile::Builder::new().prefix(&format!("{system}-")).tempdir_in(&ctx.scratch_dir))
        .map_err(|e| Error::runtime(format!("cannot create a {system} scratch directory in {}: {e}", ctx.scratch_dir.display())))
}

/// How an embedded SQL target sends each kind of request, as its report states it.
pub struct Requests {
    pub bulk_load: &'static str,
    pub echo: &'static str,
    pub insert: &'static str,
    pub insert_batch: &'static str,
    pub multi_get: String,
}

impl Requests {
    fn settings(self) -> [(String, String); 5] {
        [
            ("bulk_load".into(), self.bulk_load.into()),
            ("echo".into(), self.echo.into()),
            ("request.insert".into(), self.insert.into()),
            ("request.insert_batch".into(), self.insert_batch.into()),
            ("request.multi_get".into(), self.multi_get),
        ]
    }
}

/// The description of an embedded SQL target: every op, the embedded queries, batches in
/// one transaction, secondary indexes; `settings` gains `file` (and `lease`) and the
/// dialect's `decimal` and `date` storage.
pub fn sql_target_info(
    name: &str,
    url: &TargetUrl,
    dialect: &dyn Dialect,
    version: String,
    file: &DatabaseFile,
    requests: Requests,
    mut settings: BTreeMap<String, String>,
) -> TargetInfo {
    settings.extend(file.settings());
    settings.extend(requests.settings());
    let (decimal, date) = match dialect.storage() {
        Storage::Integers => ("INTEGER hundredths".to_string(), "INTEGER days since 1970-01-01".to_string()),
        _ => (dialect.spelling().types.decimal.to_string(), dialect.spelling().types.date.to_string()),
    };
    settings.insert("decimal".into(), decimal);
    settings.insert("date".into(), date);
    settings.insert("batch".into(), "one transaction per batch".into());
    TargetInfo {
        name: name.to_string(),
        system: dialect.name().to_string(),
        url: url.redacted(),
        execution: Execution::Blocking,
        capabilities: crate::adapter::sql::CAPABILITIES.to_capabilities(),
        version,
        settings,
    }
}

/// What the embedded SQL targets keep alike.
pub struct EmbeddedFile<E> {
    pub info: TargetInfo,
    pub dialect: &'static dyn Dialect,
    pub path: PathBuf,
    /// The connection `prepare`, `load`, `count_rows` and `cleanup` use (clients may be
    /// opened from it); `None` after cleanup.
    admin: Mutex<Option<E>>,
    /// Tables by `TableId`, as given to `prepare`.
    tables: Mutex<Vec<Arc<TableDef>>>,
    scratch: Mutex<Option<tempfile::TempDir>>,
    /// The lease on a user's file; declared last, so it is dropped after the connection.
    _lease: Option<FileLease>,
}

impl<E: Engine> EmbeddedFile<E> {
    pub fn new(info: TargetInfo, dialect: &'static dyn Dialect, file: DatabaseFile, admin: E) -> Self {
        EmbeddedFile {
            info,
            dialect,
            path: file.path,
            admin: Mutex::new(Some(admin)),
            tables: Mutex::new(Vec::new()),
            scratch: Mutex::new(file.scratch),
            _lease: file.lease,
        }
    }

    /// Runs `f` on the admin connection.
    pub fn with_admin<T>(&self, f: impl FnOnce(&mut E) -> Result<T>) -> Result<T> {
        let mut guard = self.admin.lock().unwrap();
        f(guard.as_mut().ok_or_else(|| Error::runtime(format!("{}: target already cleaned up", self.info.system)))?)
    }

    fn sql_tables(&self) -> Arc<Vec<SqlTable>> {
        Arc::new(self.tables.lock().unwrap().iter().map(|def| SqlTable::new(self.dialect, def.clone())).collect())
    }
}

/// What an embedded SQL engine's target does its own way. Everything else of `Target` is
/// `Embedded`'s, once.
pub trait EmbeddedSql: Send + Sync {
    type Engine: Engine + 'static;

    fn file(&self) -> &EmbeddedFile<Self::Engine>;

    /// A client's own connection to the file (`admin` is the target's).
    fn client(&self, admin: &mut Self::Engine) -> Result<Self::Engine>;

    /// Bulk-loads rows into a prepared table by the library's fastest path.
    fn load(&self, admin: &mut Self::Engine, def: &TableDef, rows: RowSource) -> Result<u64>;

    /// The engine's own memory (or storage) figure for dbsweep's data.
    fn engine_memory(&self, admin: &mut Self::Engine) -> Result<EngineMemory>;

    /// Runs once nothing foreign was found, before the tables are created (outside a
    /// transaction).
    fn before_create(&self, _admin: &mut Self::Engine) -> Result<()> {
        Ok(())
    }

    /// Runs once dbsweep's tables are dropped from a user's file.
    fn after_drop(&self, _admin: &mut Self::Engine) -> Result<()> {
        Ok(())
    }

    /// How many more connections the engine accepts in this process (`admin` holds one
    /// for the whole run); `None` when it has no limit of its own.
    fn connection_room(&self, _admin: &mut Self::Engine) -> Result<Option<ConnectionRoom>> {
        Ok(None)
    }
}

/// The `Target` of an embedded SQL engine.
pub struct Embedded<S>(pub S);

#[async_trait]
impl<S: EmbeddedSql> Target for Embedded<S> {
    fn info(&self) -> &TargetInfo {
        &self.0.file().info
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let file = self.0.file();
        let (dialect, target, path) = (file.dialect, &file.info.name, file.path.display().to_string());
        file.with_admin(|engine| {
            // Every table is checked before anything changes, so a refusal leaves the file as it was.
            refuse_foreign(engine, dialect, tables, target, &path)?;
            self.0.before_create(engine)?;
            in_transaction(engine, dialect, |engine| create_tables(engine, dialect, tables, target, &path))
        })?;
        *file.tables.lock().unwrap() = tables.to_vec();
        Ok(())
    }

    async fn load(&self, def: &TableDef, rows: RowSource) -> Result<u64> {
        self.0.file().with_admin(|engine| self.0.load(engine, def, rows))
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let file = self.0.file();
        let engine = file.with_admin(|admin| self.0.client(admin))?;
        let tables = file.sql_tables();
        Ok(Box::new(SqlConnection::new(file.dialect, tables.clone(), EmbeddedSession::new(engine, file.dialect, tables))))
    }

    async fn count_rows(&self, def: &TableDef) -> Result<u64> {
        let file = self.0.file();
        file.with_admin(|engine| count_rows(engine, file.dialect, def))
    }

    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        self.0.file().with_admin(|engine| self.0.engine_memory(engine)).map(Some)
    }

    async fn connection_room(&self) -> Result<Option<ConnectionRoom>> {
        self.0.file().with_admin(|engine| self.0.connection_room(engine))
    }

    async fn cleanup(&self) -> Result<()> {
        let file = self.0.file();
        let Some(mut engine) = file.admin.lock().unwrap().take() else {
            return Ok(());
        };
        if let Some(dir) = file.scratch.lock().unwrap().take() {
            drop(engine);
            let system = &file.info.system;
            return dir.close().map_err(|e| Error::runtime(format!("{system}: cannot remove the throwaway file: {e}")));
        }
        in_transaction(&mut engine, file.dialect, |engine| drop_tables(engine, file.dialect))?;
        self.0.after_drop(&mut engine)
    }
}

/// The tables the marker table lists.
pub fn owned_tables(engine: &mut dyn Engine) -> Result<Vec<String>, OpError> {
    if !engine.table_exists(OWNER_TABLE)? {
        return Ok(Vec::new());
    }
    let mut owned = Vec::new();
    engine.query(&format!("SELECT tbl FROM {OWNER_TABLE}"), &[], &[ColumnType::Text], &mut |row| {
        if let Some(Value::Text(name)) = row.into_iter().next() {
            owned.push(name.to_string());
        }
    })?;
    Ok(owned)
}

/// `NotOwned` when a table named like one of dbsweep's exists but is not registered.
pub fn refuse_foreign(engine: &mut dyn Engine, dialect: &dyn Dialect, tables: &[Arc<TableDef>], target: &str, file: &str) -> Result<()> {
    let owned = owned_tables(engine).map_err(runtime(dialect))?;
    for t in tables {
        let name = dialect.bare_name(&t.name);
        if engine.table_exists(&name).map_err(runtime(dialect))? && !owned.contains(&name) {
            return Err(Error::not_owned(
                target,
                format!("table {name} in {file} was not created by dbsweep; rename or drop it, or use another file"),
            ));
        }
    }
    Ok(())
}

/// Inside an open transaction: checks ownership, then (re)creates dbsweep's tables and
/// registers them in the marker table.
pub fn create_tables(engine: &mut dyn Engine, dialect: &dyn Dialect, tables: &[Arc<TableDef>], target: &str, file: &str) -> Result<()> {
    refuse_foreign(engine, dialect, tables, target, file)?;
    let text = dialect.sql_type(ColumnType::Text, true);
    engine
        .batch(&format!("CREATE TABLE IF NOT EXISTS {OWNER_TABLE} (tbl {text} PRIMARY KEY, created_by {text} NOT NULL)"))
        .map_err(runtime(dialect))?;
    for def in tables {
        let table = SqlTable::new(dialect, def.clone());
        engine.batch(&table.drop()).map_err(runtime(dialect))?;
        for statement in table.create(dialect) {
            engine.batch(&statement).map_err(runtime(dialect))?;
        }
        // Delete, then insert: every engine's SQL (MonetDB has no INSERT OR REPLACE).
        let name = Value::Text(dialect.bare_name(&def.name).into());
        let unregister = format!("DELETE FROM {OWNER_TABLE} WHERE tbl = {}", dialect.param(1, ColumnType::Text));
        engine.execute(&unregister, std::slice::from_ref(&name)).map_err(runtime(dialect))?;
        let register = format!(
            "INSERT INTO {OWNER_TABLE} (tbl, created_by) VALUES ({}, {})",
            dialect.param(1, ColumnType::Text),
            dialect.param(2, ColumnType::Text)
        );
        let creator = concat!("dbsweep ", env!("CARGO_PKG_VERSION"));
        engine.execute(&register, &[name, Value::Text(creator.into())]).map_err(runtime(dialect))?;
    }
    Ok(())
}

/// Inside an open transaction: drops every registered table and the marker table.
pub fn drop_tables(engine: &mut dyn Engine, dialect: &dyn Dialect) -> Result<()> {
    for name in owned_tables(engine).map_err(runtime(dialect))? {
        engine.batch(&format!("DROP TABLE IF EXISTS {}", dialect.quote(&name))).map_err(runtime(dialect))?;
    }
    engine.batch(&format!("DROP TABLE IF EXISTS {OWNER_TABLE}")).map_err(runtime(dialect))
}

/// Hands every row of a bulk load to `load_row`, stopping at the first error; the number
/// of rows loaded.
pub fn load_each_row(rows: RowSource, mut load_row: impl FnMut(&[Value]) -> Result<()>) -> Result<u64> {
    let mut n = 0;
    for row in rows {
        load_row(&row)?;
        n += 1;
    }
    Ok(n)
}

/// Runs `body` in one transaction of `engine`, rolled back if it fails.
pub fn in_transaction<E: Engine + ?Sized, T>(engine: &mut E, dialect: &dyn Dialect, body: impl FnOnce(&mut E) -> Result<T>) -> Result<T> {
    let begin = engine.begin(true);
    engine.batch(begin).map_err(runtime(dialect))?;
    match body(engine) {
        Ok(value) => match engine.batch("COMMIT") {
            Ok(()) => Ok(value),
            Err(e) => {
                let _ = engine.batch("ROLLBACK");
                Err(runtime(dialect)(e))
            }
        },
        Err(e) => {
            let _ = engine.batch("ROLLBACK");
            Err(e)
        }
    }
}

/// `COUNT(*)` of dbsweep's table for `def`.
pub fn count_rows(engine: &mut dyn Engine, dialect: &dyn Dialect, def: &TableDef) -> Result<u64> {
    let count = format!("SELECT COUNT(*) FROM {}", dialect.table_name(&dialect.bare_name(&def.name)));
    let mut n = 0;
    engine
        .query(&count, &[], &[ColumnType::Int], &mut |row| {
            if let Some(Value::Int(v)) = row.first() {
                n = *v as u64;
            }
        })
        .map_err(runtime(dialect))?;
    Ok(n)
}

/// An engine error as a runtime error naming the engine.
fn runtime(dialect: &dyn Dialect) -> impl Fn(OpError) -> Error + '_ {
    move |e| Error::runtime(format!("{}: {}", dialect.name(), e.message))
}
