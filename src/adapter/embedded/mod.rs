//! The engines that run inside dbsweep's process: SQLite, DuckDB (SQL) and redb
//! (key-value). Their calls block, so each client gets its own OS thread
//! (`Execution::Blocking`).
//!
//! An embedded SQL engine is a dialect (`sql::dialects`) plus an `Engine`: the few blocking
//! calls of its library (run a statement, read rows as dbsweep values, bind dbsweep values).
//! Everything else is shared here: the session (`EmbeddedSession`, the `Executor` of
//! `sql::SqlConnection`), the throwaway file, and dbsweep's ownership of its tables in a
//! file that may hold other data: tables `dbsweep_<table>`, each registered in the marker
//! table `dbsweep_owner`; `prepare` replaces only registered tables and refuses with
//! `NotOwned` a same-named table that is not registered; `cleanup` drops what is
//! registered. Must not time anything.

pub mod duckdb;
pub mod redb;
pub mod sqlite;

use crate::adapter::OpenContext;
use crate::adapter::sql::connection::{Executor, StatementCache};
use crate::adapter::sql::dialect::{Dialect, SqlTable};
use crate::adapter::sql::plan::{Answered, Args, Reply, Step};
use crate::adapter::sql::statement::Statement;
use crate::base::op::{OpError, QueryId};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use crate::data::tpch_queries::answer_columns;
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Arc;

/// The analytic queries the embedded SQL engines run.
pub const QUERIES: [QueryId; 4] = [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14];
/// The marker table listing the tables dbsweep created.
pub const OWNER_TABLE: &str = "dbsweep_owner";

/// The blocking calls of an embedded SQL engine's library, on one connection. Statements
/// are prepared and cached by the library, keyed by their text.
pub trait Engine: Send {
    /// Runs a statement that returns rows; each row's first `types.len()` columns are
    /// decoded into those types and handed to `row`. Returns the number of rows.
    fn query(&mut self, sql: &str, params: &[Value], types: &[ColumnType], row: &mut dyn FnMut(Row)) -> Result<u64, OpError>;

    /// Runs a statement that changes rows; returns how many.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, OpError>;

    /// Runs statements without parameters or results (transaction control, DDL).
    fn batch(&mut self, sql: &str) -> Result<(), OpError>;

    /// The statement that opens a transaction that will (or will not) write.
    fn begin(&self, writes: bool) -> &'static str;

    /// True when the file holds a table of this name.
    fn table_exists(&mut self, name: &str) -> Result<bool, OpError>;
}

/// `Engine::query`, `execute` and `batch` over a connection of a rusqlite-style binding
/// (rusqlite; duckdb-rs follows its API): one implementation over each binding's types.
/// The caller has `Bind` (a `ToSql` of `&Value`), `decode` (a cell as a `ColumnType`) and
/// `op_error` in scope, and the connection in field `0`.
macro_rules! binding_calls {
    ($binding:ident) => {
        fn query(&mut self, sql: &str, params: &[Value], types: &[ColumnType], row: &mut dyn FnMut(Row)) -> Result<u64, OpError> {
            let mut stmt = self.0.prepare_cached(sql).map_err(op_error)?;
            let mut rows = stmt.query($binding::params_from_iter(params.iter().map(Bind))).map_err(op_error)?;
            let mut n = 0;
            while let Some(r) = rows.next().map_err(op_error)? {
                row(types.iter().enumerate().map(|(i, ty)| decode(r.get_ref(i).map_err(op_error)?, *ty)).collect::<Result<Row, _>>()?);
                n += 1;
            }
            Ok(n)
        }

        fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, OpError> {
            let mut stmt = self.0.prepare_cached(sql).map_err(op_error)?;
            stmt.execute($binding::params_from_iter(params.iter().map(Bind))).map(|n| n as u64).map_err(op_error)
        }

        fn batch(&mut self, sql: &str) -> Result<(), OpError> {
            self.0.execute_batch(sql).map_err(op_error)
        }
    };
}
use binding_calls;

/// A client session of an embedded SQL engine.
pub struct EmbeddedSession<E> {
    engine: E,
    statements: StatementCache<Arc<str>>,
}

impl<E: Engine> EmbeddedSession<E> {
    pub fn new(engine: E, dialect: &'static dyn Dialect, tables: Arc<Vec<SqlTable>>) -> Self {
        EmbeddedSession { engine, statements: StatementCache::new(dialect, tables) }
    }

    /// The parameters of a step as dbsweep values (the engine binds them natively).
    fn values(&self, step: &Step<'_>) -> Result<Vec<Value>, OpError> {
        let column_type = |column: usize| -> Result<ColumnType, OpError> {
            let table = self.statements.table(step.statement.table().unwrap_or_default())?;
            Ok(table.def.columns[column].ty)
        };
        Ok(match &step.args {
            Args::None => vec![],
            Args::Key(key) => vec![Value::Int(*key)],
            // The array form of the embedded engines is one list literal.
            Args::Keys(keys) if matches!(step.statement, Statement::GetMany { keys: 0, .. } | Statement::DeleteMany { keys: 0, .. }) => {
                vec![Value::Text(list_literal(keys).into())]
            }
            Args::Keys(keys) => keys.iter().map(|k| Value::Int(*k)).collect(),
            Args::Rows(rows) => rows.iter().flat_map(|row| row.iter().cloned()).collect(),
            Args::Update { value, key, .. } => vec![(*value).clone(), Value::Int(*key)],
            Args::Scan { start, count } => std::iter::once(*start).chain(*count).map(Value::Int).collect(),
            Args::Range { column, lo, hi } => {
                let ty = column_type(*column)?;
                vec![bound(ty, *lo)?, bound(ty, *hi)?]
            }
        })
    }
}

/// A range bound (the column's integer representation) as a value of the column's type.
fn bound(ty: ColumnType, v: i64) -> Result<Value, OpError> {
    Ok(match ty {
        ColumnType::Date => Value::Date(Date(i32::try_from(v).map_err(|_| OpError::client(format!("date bound {v} out of range")))?)),
        ColumnType::Decimal => Value::Decimal(Decimal(v)),
        ColumnType::Float => Value::Float(v as f64),
        ColumnType::Int => Value::Int(v),
        ColumnType::Text => return Err(OpError::client("no integer range over a text column")),
    })
}

/// `[1,2,3]`.
fn list_literal(keys: &[i64]) -> String {
    let mut list = String::with_capacity(keys.len() * 8 + 2);
    list.push('[');
    for (i, key) in keys.iter().enumerate() {
        if i > 0 {
            list.push(',');
        }
        let _ = write!(list, "{key}");
    }
    list.push(']');
    list
}

#[async_trait]
impl<E: Engine> Executor for EmbeddedSession<E> {
    async fn run(&mut self, step: &Step<'_>) -> Result<Answered, OpError> {
        let (text, params) = (self.statements.cached_text(step.statement)?, self.values(step)?);
        let table_types = |this: &Self| -> Result<Vec<ColumnType>, OpError> {
            let table = this.statements.table(step.statement.table().unwrap_or_default())?;
            Ok(table.def.columns.iter().map(|c| c.ty).collect())
        };
        let mut first = None;
        let mut keep_first = |row: Row| {
            first.get_or_insert(row);
        };
        Ok(match step.reply {
            Reply::Affected | Reply::Inserted(_) => Answered::Rows(self.engine.execute(&text, &params)?),
            // Every row read whole into dbsweep values, as a client would, then dropped.
            Reply::Nothing => Answered::Rows(self.engine.query(&text, &params, &[ColumnType::Int], &mut |row| drop(black_box(row)))?),
            Reply::Rows | Reply::Streamed => {
                let types = table_types(self)?;
                Answered::Rows(self.engine.query(&text, &params, &types, &mut |row| drop(black_box(row)))?)
            }
            Reply::Count | Reply::Max(_) => {
                let ty = if let Reply::Max(ty) = step.reply { ty } else { ColumnType::Int };
                self.engine.query(&text, &params, &[ty], &mut keep_first)?;
                let row = first.ok_or_else(|| OpError::server("an aggregate returned no row"))?;
                Answered::Scalar(row.into_iter().next().unwrap_or(Value::Null))
            }
            Reply::Answer(query) => {
                let mut rows = Vec::new();
                self.engine.query(&text, &params, &answer_columns(query), &mut |row| rows.push(row))?;
                Answered::Table(rows)
            }
        })
    }

    async fn control(&mut self, sql: &str) -> Result<(), OpError> {
        self.engine.batch(sql)
    }

    fn begin_statement(&self, writes: bool) -> &'static str {
        self.engine.begin(writes)
    }

    /// A read-modify-write or a split key list is one transaction.
    fn atomic_ops(&self) -> bool {
        true
    }
}

/// A directory for a throwaway database file under the run's scratch directory.
pub fn throwaway_dir(ctx: &OpenContext, system: &str) -> Result<tempfile::TempDir> {
    std::fs::create_dir_all(&ctx.scratch_dir)
        .and_then(|_| tempfile::Builder::new().prefix(&format!("{system}-")).tempdir_in(&ctx.scratch_dir))
        .map_err(|e| Error::runtime(format!("cannot create a {system} scratch directory in {}: {e}", ctx.scratch_dir.display())))
}

/// Shortens an error message for the report: engines quote the whole statement, which for
/// a multi-get of thousands of keys is hundreds of kilobytes.
pub fn clip(mut message: String) -> String {
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
        let register = format!(
            "INSERT OR REPLACE INTO {OWNER_TABLE} (tbl, created_by) VALUES ({}, {})",
            dialect.param(1, ColumnType::Text),
            dialect.param(2, ColumnType::Text)
        );
        let creator = concat!("dbsweep ", env!("CARGO_PKG_VERSION"));
        engine
            .execute(&register, &[Value::Text(dialect.bare_name(&def.name).into()), Value::Text(creator.into())])
            .map_err(runtime(dialect))?;
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

/// The prepared tables of an embedded target, in one dialect.
pub fn sql_tables(dialect: &dyn Dialect, defs: &[Arc<TableDef>]) -> Arc<Vec<SqlTable>> {
    Arc::new(defs.iter().map(|def| SqlTable::new(dialect, def.clone())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_are_clipped_on_a_char_boundary() {
        assert_eq!(clip("short".into()), "short");
        let long = "é".repeat(400);
        let clipped = clip(long);
        assert!(clipped.len() <= 300 + "…".len() && clipped.ends_with('…'), "{}", clipped.len());
    }

    #[test]
    fn key_lists_become_list_literals_and_bounds_typed_values() {
        assert_eq!(list_literal(&[1, -2, 30]), "[1,-2,30]");
        assert_eq!(bound(ColumnType::Date, 5).unwrap(), Value::Date(Date(5)));
        assert_eq!(bound(ColumnType::Decimal, 5).unwrap(), Value::Decimal(Decimal(5)));
        assert!(bound(ColumnType::Text, 5).is_err());
    }
}
