//! The `pairs` table: one integer key and one value, no secondary index — the plain
//! key-value pair of the insert-find study (a `BIGINT` value, the paper's
//! `(t_key BIGINT PRIMARY KEY, t_value BIGINT)`) and the in-memory study (a text value).
//!
//! Owns the table's shape, the value of each key (a pure function of seed and key) and the
//! key order of the preloaded rows: `sequential` (`0..rows`) or `shuffled` (`1..=rows` in
//! the Fisher-Yates order of [`super::keys::shuffled`], what `dbsweep gen keys` writes).
//! Must not decide which keys an experiment touches.

use crate::base::rng::Stream;
use crate::base::table::{Column, ColumnType, Row, TableDef, Value};
use serde::{Deserialize, Serialize};

/// The type of the value column.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairValue {
    /// `value_bytes` printable characters (`TEXT`).
    #[default]
    Text,
    /// A 64-bit integer in `0..INT_VALUES` (`BIGINT`).
    Int,
}

/// The keys of the preloaded rows, and the order they are loaded in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyOrder {
    /// Keys `0..rows`, in order.
    #[default]
    Sequential,
    /// Keys `1..=rows` in Fisher-Yates order from the seed (`dbsweep gen keys`).
    Shuffled,
}

/// Integer values are drawn from `0..INT_VALUES`.
pub const INT_VALUES: u64 = 1_000_000;

/// Stream id of pair values (shared with the `kv` table's rows, as before the value
/// column had a type, so text values are unchanged).
const VALUE_STREAM: u64 = 0x6b76;

/// A `pairs` table named `name`: columns `k` (the key) and `v` (the value).
pub fn table_def(name: &str, value: PairValue) -> TableDef {
    let ty = match value {
        PairValue::Text => ColumnType::Text,
        PairValue::Int => ColumnType::Int,
    };
    TableDef {
        name: name.into(),
        columns: vec![Column { name: "k".into(), ty: ColumnType::Int }, Column { name: "v".into(), ty }],
        indexed: vec![],
    }
}

/// Generates the value of each key.
#[derive(Debug, Clone, Copy)]
pub struct PairGen {
    stream: Stream,
    pub value: PairValue,
    pub value_bytes: usize,
}

impl PairGen {
    pub fn new(seed: u64, value: PairValue, value_bytes: usize) -> Self {
        PairGen { stream: Stream::new(seed, VALUE_STREAM), value, value_bytes }
    }

    /// The value stored under `key`.
    pub fn value(&self, key: i64) -> Value {
        match self.value {
            PairValue::Text => Value::Text(super::kv::payload(self.stream.u64(key as u64, 3), self.value_bytes).into()),
            PairValue::Int => Value::Int(self.stream.below(key as u64, 4, INT_VALUES) as i64),
        }
    }

    pub fn row(&self, key: i64) -> Row {
        vec![Value::Int(key), self.value(key)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_pure_functions_of_seed_and_key_and_have_the_column_type() {
        let ints = PairGen::new(0, PairValue::Int, 0);
        assert_eq!(ints.row(7), PairGen::new(0, PairValue::Int, 0).row(7));
        assert_ne!(ints.row(7), PairGen::new(1, PairValue::Int, 0).row(7));
        assert!((1..1000).all(|k| matches!(ints.value(k), Value::Int(v) if (0..INT_VALUES as i64).contains(&v))));
        let Value::Text(t) = PairGen::new(0, PairValue::Text, 12).value(7) else { panic!("text value") };
        assert_eq!(t.len(), 12);
        assert_eq!(table_def("pairs", PairValue::Int).columns[1].ty, ColumnType::Int);
        assert!(table_def("pairs", PairValue::Text).indexed.is_empty());
    }
}
