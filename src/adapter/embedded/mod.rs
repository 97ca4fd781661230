//! The engines that run inside dbsweep's process: SQLite, DuckDB, MonetDB (SQL) and redb
//! (key-value). Their calls block, so each client gets its own OS thread
//! (`Execution::Blocking`).
//!
//! An embedded SQL engine is a dialect (`sql::dialects`) plus, in a module of its own, the
//! few calls of its library: an `Engine` (run a statement, read rows as dbsweep values,
//! bind dbsweep values, open a transaction) and an `EmbeddedSql` (open the file, connect a
//! client, bulk-load, report memory). Everything else is shared: the session (`session`,
//! the `Executor` of `sql::SqlConnection`) and the target (`target`: the throwaway or
//! user's file, dbsweep's ownership of its tables in it, prepare, connect, count, cleanup).
//! Must not time anything.

pub mod duckdb;
pub mod monetdb;
pub mod redb;
pub mod session;
pub mod sqlite;
pub mod target;

pub use target::{DatabaseFile, Embedded, throwaway_dir};

use crate::base::op::QueryId;

/// The analytic queries the embedded SQL engines run.
pub const QUERIES: [QueryId; 4] = [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14];
/// The marker table listing the tables dbsweep created.
pub const OWNER_TABLE: &str = "dbsweep_owner";

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

/// A table of an integer key, a decimal and a date column, for the engines' type tests.
#[cfg(test)]
pub(crate) fn typed_table(indexed: Vec<usize>) -> std::sync::Arc<crate::base::table::TableDef> {
    use crate::base::table::{Column, ColumnType, TableDef};
    std::sync::Arc::new(TableDef {
        name: "typed".into(),
        columns: vec![
            Column { name: "k".into(), ty: ColumnType::Int },
            Column { name: "price".into(), ty: ColumnType::Decimal },
            Column { name: "day".into(), ty: ColumnType::Date },
        ],
        indexed,
    })
}

/// For the engines' type tests: `typed_table(indexed)` prepared on `target` with `rows`
/// loaded, and a connection to it.
#[cfg(test)]
pub(crate) async fn typed_rows_loaded(
    target: &dyn crate::adapter::Target,
    indexed: Vec<usize>,
    rows: Vec<Vec<crate::base::table::Value>>,
) -> Box<dyn crate::adapter::Connection> {
    let def = typed_table(indexed);
    target.prepare(std::slice::from_ref(&def)).await.unwrap();
    let n = rows.len() as u64;
    assert_eq!(target.load(&def, Box::new(rows.into_iter())).await.unwrap(), n);
    target.connect().await.unwrap()
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
}
