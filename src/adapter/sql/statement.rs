//! The one key of every SQL statement cache (`Statement`) and its text in a dialect.
//!
//! Must not hold statement texts itself (`SqlTable::text` and `tpch` write them) or
//! prepare anything.

use super::dialect::{Dialect, SqlTable};
use super::tpch;
use crate::base::op::{OpError, QueryId, RangeAgg};
use crate::base::table::TableId;

/// A statement an SQL adapter prepares. Sizes that change the text are part of the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Statement {
    /// `SELECT 1`.
    Echo,
    /// `rows` rows from consecutive parameters; `rows: 0` = one array parameter per
    /// stored column (any number of rows).
    Insert {
        table: TableId,
        rows: usize,
    },
    Get {
        table: TableId,
    },
    /// `keys` key parameters; `keys: 0` = one array parameter.
    GetMany {
        table: TableId,
        keys: usize,
    },
    Delete {
        table: TableId,
    },
    /// As `GetMany`.
    DeleteMany {
        table: TableId,
        keys: usize,
    },
    /// Sets `column` to parameter 1 in the row whose key is parameter 2.
    Update {
        table: TableId,
        column: usize,
    },
    /// The rows from the key in parameter 1 on, in key order; `limit: None` = the length is
    /// parameter 2, else written into the text.
    Scan {
        table: TableId,
        limit: Option<u64>,
    },
    /// Over rows with parameter 1 <= `column` <= parameter 2.
    Range {
        table: TableId,
        column: usize,
        agg: RangeAgg,
    },
    FetchAll {
        table: TableId,
    },
    Query(QueryId),
}

impl Statement {
    /// The table the statement works on (`None` for echo and analytic queries).
    pub fn table(self) -> Option<TableId> {
        match self {
            Statement::Echo | Statement::Query(_) => None,
            Statement::Insert { table, .. }
            | Statement::Get { table }
            | Statement::GetMany { table, .. }
            | Statement::Delete { table }
            | Statement::DeleteMany { table, .. }
            | Statement::Update { table, .. }
            | Statement::Scan { table, .. }
            | Statement::Range { table, .. }
            | Statement::FetchAll { table } => Some(table),
        }
    }

    /// The statement's text in `dialect` over the prepared `tables` (by `TableId`).
    pub fn text(self, dialect: &dyn Dialect, tables: &[SqlTable]) -> Result<String, OpError> {
        match self {
            Statement::Echo => Ok("SELECT 1".into()),
            Statement::Query(query) => query_text(query, dialect, tables),
            _ => {
                let id = self.table().expect("a table statement");
                let table = tables.get(id).ok_or_else(|| OpError::client(format!("no table #{id} was prepared")))?;
                Ok(table.text(dialect, self))
            }
        }
    }
}

/// The text of an analytic query over the prepared tables, or which TPC-H table it lacks.
pub fn query_text(query: QueryId, dialect: &dyn Dialect, tables: &[SqlTable]) -> Result<String, OpError> {
    let mut missing = None;
    let mut names = |name: &str| match tables.iter().find(|t| t.def.name == name) {
        Some(t) => t.name.clone(),
        None => {
            missing.get_or_insert_with(|| name.to_string());
            name.to_string()
        }
    };
    let text = tpch::sql(query, dialect, &mut names);
    match missing {
        None => Ok(text),
        Some(name) => Err(OpError::client(format!("{query:?} needs the TPC-H table {name}, which this run did not prepare"))),
    }
}
