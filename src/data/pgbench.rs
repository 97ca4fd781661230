//! pgbench's tables, as `pgbench -i -s SCALE` creates them: `pgbench_branches` (one per
//! scale unit), `pgbench_tellers` (ten per branch), `pgbench_accounts` (100,000 per scale
//! unit) and `pgbench_history` (empty).
//!
//! Owns their shape and rows. dbsweep's types: every number a `BIGINT`, the fillers text
//! (accounts' blank, as pgbench loads them; branches' and tellers' NULL), `mtime` text
//! (dbsweep has no timestamp type; a script's `CURRENT_TIMESTAMP` is stored as its text).
//! Scales below 1 are allowed: `round(100000 * scale)` accounts, at least one branch.
//! `pgbench_history` has no primary key, as in pgbench (its column 0 repeats). Must not
//! know a system.

use crate::base::table::{Column, ColumnType, Row, TableDef, TableId, Value};
use std::sync::Arc;

/// The tables, in the order of the data set (and of `TableId`).
pub const TABLES: [&str; 4] = ["pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"];

/// Accounts per scale unit.
pub const ACCOUNTS_PER_SCALE: f64 = 100_000.0;
const TELLERS_PER_BRANCH: u64 = 10;
/// pgbench's `char(84)` account filler, loaded blank.
const ACCOUNT_FILLER: usize = 84;

/// True for a table created without a primary key (pgbench's history).
pub fn keyless(table: &TableDef) -> bool {
    table.name == TABLES[3]
}

pub fn table_defs() -> Vec<TableDef> {
    let table = |name: &str, columns: &[(&str, ColumnType)]| TableDef {
        name: name.into(),
        columns: columns.iter().map(|(n, ty)| Column { name: (*n).into(), ty: *ty }).collect(),
        indexed: vec![],
    };
    use ColumnType::{Int, Text};
    vec![
        table(TABLES[0], &[("aid", Int), ("bid", Int), ("abalance", Int), ("filler", Text)]),
        table(TABLES[1], &[("bid", Int), ("bbalance", Int), ("filler", Text)]),
        table(TABLES[2], &[("tid", Int), ("bid", Int), ("tbalance", Int), ("filler", Text)]),
        table(TABLES[3], &[("tid", Int), ("bid", Int), ("aid", Int), ("delta", Int), ("mtime", Text), ("filler", Text)]),
    ]
}

/// The rows of pgbench's tables at one scale.
#[derive(Debug, Clone)]
pub struct PgbenchGen {
    pub scale: f64,
    filler: Arc<str>,
}

impl PgbenchGen {
    pub fn new(scale: f64) -> Self {
        PgbenchGen { scale, filler: " ".repeat(ACCOUNT_FILLER).into() }
    }

    pub fn accounts(&self) -> u64 {
        (ACCOUNTS_PER_SCALE * self.scale).round() as u64
    }

    pub fn branches(&self) -> u64 {
        (self.scale.round() as u64).max(1)
    }

    /// Rows loaded into `table`.
    pub fn rows(&self, table: TableId) -> u64 {
        match table {
            0 => self.accounts(),
            1 => self.branches(),
            2 => self.branches() * TELLERS_PER_BRANCH,
            _ => 0,
        }
    }

    /// Keys run from 1, as pgbench's.
    pub fn key_at(&self, index: u64) -> i64 {
        index as i64 + 1
    }

    /// The row with key `key` of `table` (history: a row of teller `key`).
    pub fn row(&self, table: TableId, key: i64) -> Row {
        let branch_of_account = ((key - 1) / ACCOUNTS_PER_SCALE as i64 + 1).min(self.branches() as i64);
        match table {
            0 => vec![Value::Int(key), Value::Int(branch_of_account), Value::Int(0), Value::Text(self.filler.clone())],
            1 => vec![Value::Int(key), Value::Int(0), Value::Null],
            2 => vec![Value::Int(key), Value::Int((key - 1) / TELLERS_PER_BRANCH as i64 + 1), Value::Int(0), Value::Null],
            _ => vec![Value::Int(key), Value::Int(1), Value::Int(1), Value::Int(0), Value::Text("".into()), Value::Null],
        }
    }

    pub fn stream(&self, table: TableId) -> crate::base::table::RowSource {
        let this = self.clone();
        Box::new((0..self.rows(table)).map(move |i| this.row(table, this.key_at(i))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_size_the_tables_as_pgbench_does() {
        let one = PgbenchGen::new(1.0);
        assert_eq!((one.rows(0), one.rows(1), one.rows(2), one.rows(3)), (100_000, 1, 10, 0));
        let small = PgbenchGen::new(0.01);
        assert_eq!((small.rows(0), small.rows(1), small.rows(2)), (1000, 1, 10));
        let three = PgbenchGen::new(3.0);
        assert_eq!(three.row(0, 200_001)[1], Value::Int(3));
        assert_eq!(three.row(2, 30)[1], Value::Int(3));
        let keys: Vec<i64> = small.stream(1).map(|r| r[0].as_int().unwrap()).collect();
        assert_eq!(keys, [1]);
        assert!(keyless(&table_defs()[3]) && !keyless(&table_defs()[0]));
    }
}
