//! MonetDB adapter: MonetDBe, the embedded build of the MonetDB column store (11.41,
//! Jul2021), in-process (the paper ran the `mserver5` server). This module is the target;
//! `engine` runs statements for the shared embedded SQL session; `ffi`, `connection` and
//! `values` are the binding to libmonetdbe (the adapter's only `unsafe`, with the library's
//! rules in `ffi`).
//!
//! `monetdb:` uses a throwaway database directory in the run's scratch directory;
//! `monetdb:/path` the user's database directory. MonetDBe runs one database per process,
//! so a run has at most one monetdb target. A MonetDB client belongs to the thread that
//! opened it: `connect` opens one per client on the client's own thread
//! (`Execution::Blocking`), and the target's admin connection (prepare, load, counts,
//! memory, cleanup) also keeps the database open between runs. dbsweep's tables are
//! `dbsweep_<table>`, registered in the marker table `dbsweep_owner` (the embedded
//! engines' shared ownership rules).
//!
//! Tables get a named `PRIMARY KEY` and a `CREATE INDEX` on each indexed column (MonetDB
//! takes indexes as hints and builds hash and imprint indexes itself). Bulk loads use
//! `monetdbe_append`, which in 11.41 refuses tables with key constraints: the key is
//! dropped, the rows appended, and the key added back (which checks it), in one
//! transaction. Ops use prepared statements of the `monetdb` dialect; a batch is one
//! transaction, and so is a read-modify-write. MonetDB's transactions are optimistic: a
//! transaction that wrote what a concurrent one wrote first fails at commit with
//! "concurrency conflicts" and is rolled back. That error is `ErrorClass::Conflict`: the
//! SQL session runs the whole op or batch again and reports the retries; one that keeps
//! conflicting fails and counts as an error, never as done.
//! Types: Int `BIGINT`, Float `DOUBLE`, Decimal `DECIMAL(15,2)`, Text `VARCHAR`, Date `DATE`.
//! Must not time anything.

pub mod connection;
mod engine;
mod ffi;
pub mod values;

pub use self::engine::MonetDbEngine;

use self::connection::{Connection, Location, MonetError, Options};
use self::values::{AppendColumn, AppendDate};
use super::Embedded;
use super::session::Engine;
use super::target::{DatabaseFile, EmbeddedFile, EmbeddedSql, Requests, in_transaction, sql_target_info};
use crate::adapter::declaration::{Declaration, Needs, UrlOptions};
use crate::adapter::sql::dialect::Dialect;
use crate::adapter::sql::dialects::{MONETDB, MONETDB_MAX_KEYS};
use crate::adapter::{ConnectionRoom, EngineMemory, OpenContext, TargetUrl};
use crate::base::durability::Durability;
use crate::base::table::{ColumnType, Row, RowSource, TableDef, Value};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::sync::Arc;

/// MonetDB's schema for dbsweep's tables (MonetDBe's user works in `sys`).
const SCHEMA: &str = "sys";
/// Rows appended per `monetdbe_append` call (columns are built in memory first).
const APPEND_CHUNK: usize = 100_000;

pub const SYSTEM: Declaration = Declaration {
    system: "monetdb",
    url: "monetdb:[PATH]",
    description: "MonetDB 11.41 embedded (MonetDBe, prebuilt libmonetdbe), column store; a database directory, one per process",
    needs: Needs::Library,
    schemes: &["monetdb"],
    options: UrlOptions::Only(&[]),
    several_hosts: false,
    // Its engine reads no result of a user's script yet (`Engine::query_any`).
    capabilities: crate::adapter::declaration::CapabilitySet {
        ops: crate::adapter::sql::CAPABILITIES.ops.without(crate::base::op::OpKind::Script).without(crate::base::op::OpKind::Custom),
        statements: None,
        ..crate::adapter::sql::CAPABILITIES
    },
    open: Some(|name, url, ctx| Ok(Arc::new(MonetDb::open(name, url, ctx)?))),
};

pub struct MonetDb {
    /// The admin connection also keeps the database open between runs (MonetDB shuts it
    /// down with its last connection).
    file: EmbeddedFile<MonetDbEngine>,
}

fn runtime(e: MonetError) -> Error {
    Error::runtime(format!("monetdb: {e}"))
}

impl MonetDb {
    pub fn open(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Embedded<Self>> {
        if url.host().is_some_and(|h| !h.is_empty()) {
            return Err(Error::usage(format!(
                "target '{name}': monetdb: is MonetDB embedded (monetdb:/path/to/database-dir, or monetdb: for a throwaway one); \
                 dbsweep has no client for a MonetDB server at {}",
                url.redacted()
            )));
        }
        let file = DatabaseFile::of(name, url, ctx, "monetdb", "db")?;
        let admin = Connection::open(Location::Directory(file.path.clone()), Options::default()).map_err(|e| {
            Error::usage(format!(
                "target '{name}': cannot open the MonetDB database {}: {e}; check the path in the URL",
                file.path.display()
            ))
        })?;
        let mut admin = MonetDbEngine::new(admin);
        let mut env = |setting: &str| -> Result<String> {
            let mut value = String::new();
            let sql = "SELECT value FROM sys.env() WHERE name = ?";
            admin
                .query(sql, &[Value::Text(setting.into())], &[ColumnType::Text], &mut |row| {
                    if let Some(Value::Text(v)) = row.into_iter().next() {
                        value = v.to_string();
                    }
                })
                .map_err(|e| Error::runtime(e.message))?;
            Ok(value)
        };
        let settings = BTreeMap::from([
            ("engine".to_string(), "MonetDB 11.41 embedded (MonetDBe), in-process; the paper ran the mserver5 server".to_string()),
            ("revision".to_string(), env("revision")?),
            ("threads".to_string(), "every core (MonetDBe's default)".to_string()),
            ("memory_limit".to_string(), format!("{} bytes (gdk_mem_maxsize)", env("gdk_mem_maxsize")?)),
            ("optimizer".to_string(), env("sql_optimizer")?),
            ("durability".to_string(), Durability::Commit.describe("write-ahead log in the database directory, per commit (MonetDB's default)")),
            (
                "concurrency".to_string(),
                "optimistic: a statement, batch or read-modify-write aborted for a concurrent one (\"concurrency conflicts\") runs again as a whole, up to 100 times, its latency including the retries (reported as retries); then it is an error".to_string(),
            ),
            (
                "indexes".to_string(),
                "PRIMARY KEY; CREATE INDEX on each indexed column (a hint: MonetDB builds hash and imprint indexes itself)".to_string(),
            ),
            (
                "engine_memory".to_string(),
                "sys.storage(): the column, string heap, hash, imprint and order index bytes of dbsweep's tables; not counted: \
                 query work areas, caches, the write-ahead log and MonetDB's catalog (MonetDBe 11.41 shows no allocator \
                 statistics to SQL; sys.env() has only the limits gdk_mem_maxsize and gdk_vm_maxsize)"
                    .to_string(),
            ),
            ("library".to_string(), concat!(env!("DBSWEEP_MONETDBE_LIB_DIR"), "/libmonetdbe.so (PyPI wheel monetdbe 0.11)").to_string()),
        ]);
        let version = format!("11.41 (MonetDBe {})", connection::library_version());
        let requests = Requests {
            bulk_load: "monetdbe_append with the key constraint dropped and added back, in one transaction",
            echo: "SELECT 1 through a prepared statement",
            insert: "INSERT INTO <table> VALUES (?, …), a prepared statement",
            insert_batch: "multi-row INSERT … VALUES (…), (…) prepared statements in one transaction",
            multi_get: format!(
                "SELECT … WHERE <key> IN (?, …) of bound keys padded to a power of two, at most {MONETDB_MAX_KEYS} per statement"
            ),
        };
        let mut info = sql_target_info(name, url, &MONETDB, version, &file, requests, settings);
        // Its engine reads no result of a user's script yet (`Engine::query_any`).
        info.capabilities.ops.retain(|k| !matches!(k, crate::base::op::OpKind::Script | crate::base::op::OpKind::Custom));
        info.capabilities.statements = None;
        Ok(Embedded(MonetDb { file: EmbeddedFile::new(info, &MONETDB, file, admin) }))
    }
}

impl EmbeddedSql for MonetDb {
    type Engine = MonetDbEngine;

    fn file(&self) -> &EmbeddedFile<MonetDbEngine> {
        &self.file
    }

    /// A new MonetDB client, opened on the calling thread (the client's own): a MonetDB
    /// client serves only the thread that opened it.
    fn client(&self, admin: &mut MonetDbEngine) -> Result<MonetDbEngine> {
        admin.conn.database().connect().map(MonetDbEngine::new).map_err(runtime)
    }

    /// `monetdbe_append` in chunks, with the key constraint dropped and added back (which
    /// checks the keys), in one transaction.
    fn load(&self, admin: &mut MonetDbEngine, table: &TableDef, rows: RowSource) -> Result<u64> {
        let name = MONETDB.bare_name(&table.name);
        let quoted = MONETDB.table_name(&name);
        let key = MONETDB.quote(&MONETDB.primary_key_name(&name));
        let key_column = MONETDB.quote(&table.columns[0].name);
        let ddl = |engine: &mut MonetDbEngine, sql: String| engine.batch(&sql).map_err(|e| Error::runtime(e.message));
        // A keyless table (pgbench's history) has no constraint to drop.
        let keyed = !crate::data::pgbench::keyless(table);
        in_transaction(admin, &MONETDB, |engine| {
            if keyed {
                ddl(engine, format!("ALTER TABLE {quoted} DROP CONSTRAINT {key}"))?;
            }
            let mut n = 0;
            let mut rows = rows.peekable();
            while rows.peek().is_some() {
                let chunk: Vec<Row> = rows.by_ref().take(APPEND_CHUNK).collect();
                engine.conn.append(SCHEMA, &name, &append_columns(table, &chunk)?).map_err(runtime)?;
                n += chunk.len() as u64;
            }
            if keyed {
                ddl(engine, format!("ALTER TABLE {quoted} ADD CONSTRAINT {key} PRIMARY KEY ({key_column})"))?;
            }
            Ok(n)
        })
    }

    /// The bytes of dbsweep's tables as MonetDB stores them (`sys.storage()`: columns,
    /// string heaps, hash, imprint and order indexes). MonetDBe 11.41 shows no allocator
    /// statistics to SQL (no `mem_usage`; `sys.env()` holds only the limits), so query
    /// work areas, caches, the log and the catalog are not in it (the `engine_memory`
    /// setting says so).
    fn engine_memory(&self, admin: &mut MonetDbEngine) -> Result<EngineMemory> {
        let sql = "SELECT CAST(COALESCE(SUM(columnsize + heapsize + hashes + imprints + orderidx), 0) AS BIGINT) \
                   FROM sys.storage() WHERE \"schema\" = 'sys' AND \"table\" LIKE 'dbsweep_%'";
        let mut bytes = 0u64;
        admin
            .query(sql, &[], &[ColumnType::Int], &mut |row| {
                if let Some(Value::Int(v)) = row.first() {
                    bytes = *v as u64;
                }
            })
            .map_err(|e| Error::runtime(e.message))?;
        Ok(EngineMemory { bytes, source: "sys.storage(): column, string heap and index bytes of dbsweep's tables".into() })
    }

    /// MonetDB serves at most `max_clients` sessions (64; MonetDBe has no option to raise
    /// it): beyond that a connection fails with "Failed to initialize client". The database
    /// is this process's alone, and before a run only the admin session is open.
    /// (`sys.sessions` would count them, but MonetDBe 11.41 crashes listing its sessions.)
    fn connection_room(&self, admin: &mut MonetDbEngine) -> Result<Option<ConnectionRoom>> {
        const OPEN_BEFORE_A_RUN: u64 = 1;
        let mut max = None;
        admin
            .query("SELECT CAST(value AS BIGINT) FROM sys.env() WHERE name = 'max_clients'", &[], &[ColumnType::Int], &mut |row| {
                if let Some(Value::Int(v)) = row.first() {
                    max = u64::try_from(*v).ok();
                }
            })
            .map_err(|e| Error::runtime(e.message))?;
        Ok(max.map(|max| ConnectionRoom {
            free: max.saturating_sub(OPEN_BEFORE_A_RUN),
            limit: format!("max_clients={max}, {OPEN_BEFORE_A_RUN} held by dbsweep itself"),
            setting: "max_clients, which MonetDBe does not let a program change",
        }))
    }
}

/// A chunk of rows as append columns of the table's storage types: which value each
/// column takes, and its nil.
fn append_columns(table: &TableDef, rows: &[Row]) -> Result<Vec<AppendColumn>> {
    let n = rows.len();
    let mut columns: Vec<AppendColumn> = (table.columns.iter())
        .map(|column| match column.ty {
            ColumnType::Int | ColumnType::Decimal => AppendColumn::Int64(Vec::with_capacity(n)),
            ColumnType::Float => AppendColumn::Double(Vec::with_capacity(n)),
            ColumnType::Text => AppendColumn::Text(Vec::with_capacity(n)),
            ColumnType::Date => AppendColumn::Date(Vec::with_capacity(n)),
        })
        .collect();
    let wrong = |c: usize, v: &Value| Error::runtime(format!("monetdb: column {} of {} got {v:?}", table.columns[c].name, table.name));
    for row in rows {
        for (c, column) in columns.iter_mut().enumerate() {
            match (column, row.get(c).unwrap_or(&Value::Null)) {
                (AppendColumn::Int64(out), Value::Int(i)) => out.push(*i),
                (AppendColumn::Int64(out), Value::Decimal(d)) => out.push(d.0),
                (AppendColumn::Int64(out), Value::Null) => out.push(i64::MIN),
                (AppendColumn::Double(out), Value::Float(f)) => out.push(*f),
                (AppendColumn::Double(out), Value::Int(i)) => out.push(*i as f64),
                (AppendColumn::Double(out), Value::Null) => out.push(f64::NAN),
                (AppendColumn::Text(out), v @ Value::Text(s)) => out.push(Some(CString::new(s.as_bytes()).map_err(|_| wrong(c, v))?)),
                (AppendColumn::Text(out), Value::Null) => out.push(None),
                (AppendColumn::Date(out), Value::Date(d)) => out.push(AppendDate::new(*d).map_err(runtime)?),
                (AppendColumn::Date(out), Value::Null) => out.push(AppendDate::NULL),
                (_, v) => return Err(wrong(c, v)),
            }
        }
    }
    Ok(columns)
}
