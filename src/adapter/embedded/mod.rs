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

/// The embedded engines' test targets: the engine's `open` on a file at `path`.
#[cfg(test)]
pub(crate) fn open_at<E>(
    open: fn(&str, &crate::adapter::TargetUrl, &crate::adapter::OpenContext) -> crate::error::Result<Embedded<E>>,
    scheme: &str,
    path: &std::path::Path,
) -> Embedded<E> {
    let url = crate::adapter::TargetUrl::parse(&format!("{scheme}:{}", path.display())).unwrap();
    open("t", &url, &crate::adapter::OpenContext::new(path.parent().unwrap().to_path_buf())).unwrap()
}

/// The engines' type test: a table of an integer key, a decimal and a date column (the
/// date column indexed) is loaded with two rows and given a third by an insert; a range
/// over the dates answers the exact `MAX` of the decimal column (hundredths) and of the
/// date column (days). Returns the connection for the engine's own checks of the stored
/// values.
#[cfg(test)]
pub(crate) async fn decimals_and_dates_round_trip(target: &dyn crate::adapter::Target) -> Box<dyn crate::adapter::Connection> {
    use crate::base::op::{Answer, Op, RangeAgg};
    use crate::base::table::{Date, Decimal, Value};
    let def = typed_table(vec![2]);
    target.prepare(std::slice::from_ref(&def)).await.unwrap();
    let rows = vec![
        vec![Value::Int(1), Value::Decimal(Decimal(1234)), Value::Date(Date(8035))],
        vec![Value::Int(2), Value::Decimal(Decimal(-5)), Value::Date(Date(10_591))],
    ];
    assert_eq!(target.load(&def, Box::new(rows.into_iter())).await.unwrap(), 2);
    let mut conn = target.connect().await.unwrap();
    let insert = Op::Insert { table: 0, row: vec![Value::Int(3), Value::Decimal(Decimal(99_999_999)), Value::Date(Date(9000))] };
    assert_eq!(conn.execute(&insert).await.unwrap().rows, 1);
    let max = Op::Range { table: 0, column: 2, lo: 8035, hi: 9000, agg: RangeAgg::Max { column: 1 } };
    assert_eq!(conn.execute(&max).await.unwrap().answer, Some(Answer::Scalar(Value::Decimal(Decimal(99_999_999)))));
    let max_day = Op::Range { table: 0, column: 2, lo: 0, hi: 20_000, agg: RangeAgg::Max { column: 2 } };
    assert_eq!(conn.execute(&max_day).await.unwrap().answer, Some(Answer::Scalar(Value::Date(Date(10_591)))));
    let min_price = Op::Range { table: 0, column: 2, lo: 10_000, hi: 20_000, agg: RangeAgg::Max { column: 1 } };
    assert_eq!(conn.execute(&min_price).await.unwrap().answer, Some(Answer::Scalar(Value::Decimal(Decimal(-5)))));
    conn
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
