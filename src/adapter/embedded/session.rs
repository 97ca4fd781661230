//! The client session of an embedded SQL engine: `Engine`, the few blocking calls of the
//! engine's library on one connection, and `EmbeddedSession`, the `Executor` of
//! `sql::SqlConnection` over it (statement texts cached per session, parameters as dbsweep
//! values the engine binds natively, every row read whole into dbsweep values).
//!
//! Must not create or drop tables (`target`) or time anything.

use crate::adapter::sql::connection::{Executor, StatementCache};
use crate::adapter::sql::dialect::{Dialect, SqlTable};
use crate::adapter::sql::plan::{Answered, Args, Reply, Step};
use crate::adapter::sql::statement::Statement;
use crate::base::op::OpError;
use crate::base::table::{ColumnType, Date, Decimal, Row, Value};
use crate::data::tpch_queries::answer_columns;
use async_trait::async_trait;
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Arc;

/// The blocking calls of an embedded SQL engine's library, on one connection. Statements
/// are prepared and cached by the library, keyed by their text.
pub trait Engine: Send {
    /// Runs a statement that returns rows; each row's first `types.len()` columns are
    /// decoded into those types and handed to `row`. Returns the number of rows.
    fn query(&mut self, sql: &str, params: &[Value], types: &[ColumnType], row: &mut dyn FnMut(Row)) -> Result<u64, OpError>;

    /// Runs a statement of a user's script that returns rows, each cell in the value its
    /// own type reads as (see `natural` in the engines' modules). Returns the number of rows.
    fn query_any(&mut self, sql: &str, row: &mut dyn FnMut(Row)) -> Result<u64, OpError> {
        let _ = (sql, row);
        Err(OpError::unsupported(crate::base::op::OpKind::Script, "this engine"))
    }

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
/// The caller has `Bind` (a `ToSql` of `&Value`), `decode` (a cell as a `ColumnType`),
/// `natural` (a cell as its own type reads) and `op_error` in scope, and the connection in
/// field `0`.
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

        fn query_any(&mut self, sql: &str, row: &mut dyn FnMut(Row)) -> Result<u64, OpError> {
            let mut stmt = self.0.prepare_cached(sql).map_err(op_error)?;
            let mut rows = stmt.query([]).map_err(op_error)?;
            let mut n = 0;
            while let Some(r) = rows.next().map_err(op_error)? {
                let columns = r.as_ref().column_count();
                row((0..columns).map(|i| r.get_ref(i).map(natural).map_err(op_error)).collect::<Result<Row, _>>()?);
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
pub(crate) use binding_calls;

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

    async fn run_text(&mut self, sql: &str, reads: bool) -> Result<Answered, OpError> {
        if !reads {
            return self.engine.execute(sql, &[]).map(Answered::Rows);
        }
        let mut rows = Vec::new();
        self.engine.query_any(sql, &mut |row| rows.push(row))?;
        Ok(Answered::Table(rows))
    }

    fn begin_statement(&self, writes: bool) -> &'static str {
        self.engine.begin(writes)
    }

    /// A read-modify-write or a split key list is one transaction.
    fn atomic_ops(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_lists_become_list_literals_and_bounds_typed_values() {
        assert_eq!(list_literal(&[1, -2, 30]), "[1,-2,30]");
        assert_eq!(bound(ColumnType::Date, 5).unwrap(), Value::Date(Date(5)));
        assert_eq!(bound(ColumnType::Decimal, 5).unwrap(), Value::Decimal(Decimal(5)));
        assert!(bound(ColumnType::Text, 5).is_err());
    }
}
