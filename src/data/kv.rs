//! The `kv` table: integer keys with a secondary group column, a float and a text payload.
//!
//! Every row is a pure function of (seed, key), so a row can be regenerated anywhere
//! (loaders, insert ops, tests) without storing it. Must not decide which keys are used.

use crate::base::rng::Stream;
use crate::base::table::{Column, ColumnType, Row, TableDef, Value};
use std::sync::Arc;

/// Column positions in the `kv` table.
pub const KEY: usize = 0;
pub const GROUP: usize = 1;
pub const VALUE: usize = 2;
pub const PAYLOAD: usize = 3;

/// Stream id of row contents.
const ROW_STREAM: u64 = 0x6b76;

pub fn table_def() -> TableDef {
    TableDef {
        name: "kv".into(),
        columns: vec![
            Column { name: "k".into(), ty: ColumnType::Int },
            Column { name: "grp".into(), ty: ColumnType::Int },
            Column { name: "val".into(), ty: ColumnType::Float },
            Column { name: "payload".into(), ty: ColumnType::Text },
        ],
        indexed: vec![GROUP],
    }
}

/// Generates `kv` rows.
#[derive(Debug, Clone, Copy)]
pub struct KvGen {
    stream: Stream,
    /// Number of distinct `grp` values: about ten rows per group.
    pub groups: u64,
    pub payload_bytes: usize,
}

impl KvGen {
    pub fn new(seed: u64, rows: u64, payload_bytes: usize) -> Self {
        KvGen { stream: Stream::new(seed, ROW_STREAM), groups: (rows / 10).max(1), payload_bytes }
    }

    pub fn group_of(&self, key: i64) -> i64 {
        self.stream.below(key as u64, 0, self.groups) as i64
    }

    pub fn row(&self, key: i64) -> Row {
        let k = key as u64;
        let val = (self.stream.below(k, 1, 1_000_000) as f64) / 100.0;
        vec![
            Value::Int(key),
            Value::Int(self.group_of(key)),
            Value::Float(val),
            Value::Text(payload(self.stream.u64(k, 2), self.payload_bytes).into()),
        ]
    }
}

/// A printable ASCII payload of `len` bytes derived from `bits`.
pub(crate) fn payload(mut bits: u64, len: usize) -> String {
    const ALPHABET: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
    let mut s = String::with_capacity(len);
    for i in 0..len {
        if i % 10 == 0 {
            bits = crate::base::rng::mix(bits, i as u64);
        }
        s.push(ALPHABET[(bits & 63) as usize] as char);
        bits >>= 6;
    }
    s
}

/// The `kv` table definition shared by a dataset.
pub fn shared_def() -> Arc<TableDef> {
    Arc::new(table_def())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_pure_functions_of_seed_and_key() {
        let g = KvGen::new(1, 1000, 20);
        assert_eq!(g.row(5), KvGen::new(1, 1000, 20).row(5));
        assert_ne!(g.row(5), KvGen::new(2, 1000, 20).row(5));
        let Value::Text(p) = &g.row(5)[PAYLOAD] else { panic!() };
        assert_eq!(p.len(), 20);
        assert!((0..1000).all(|k| (0..100).contains(&g.group_of(k))));
    }
}
