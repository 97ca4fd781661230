//! Generated data: table definitions and the rows of each dataset.
//!
//! Owns what rows exist before a run, what key the i-th preloaded row has, what a row for a
//! new key looks like, and the value domain of indexed columns. Rows are streamed, never
//! materialized whole. Must not know about backends or timing.

pub mod kv;
pub mod table;

use crate::adapter::RowSource;
use serde::{Deserialize, Serialize};
use std::ops::RangeInclusive;
use std::sync::Arc;
use table::{Row, TableDef, TableId};

/// Which data a study uses, as written in a spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DataSpec {
    /// One `kv` table with `rows` preloaded keys `0..rows`.
    Kv {
        rows: u64,
        #[serde(default = "default_payload_bytes")]
        payload_bytes: usize,
    },
}

fn default_payload_bytes() -> usize {
    100
}

/// The tables of a run and a generator for their rows.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub tables: Vec<Arc<TableDef>>,
    pub spec: DataSpec,
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    Kv { rows: u64, generator: kv::KvGen },
}

impl Dataset {
    pub fn new(spec: &DataSpec, seed: u64) -> Self {
        match spec {
            DataSpec::Kv { rows, payload_bytes } => Dataset {
                tables: vec![kv::shared_def()],
                spec: spec.clone(),
                source: Source::Kv { rows: *rows, generator: kv::KvGen::new(seed, *rows, *payload_bytes) },
            },
        }
    }

    pub fn table_id(&self, name: &str) -> Option<TableId> {
        self.tables.iter().position(|t| t.name == name)
    }

    /// Number of rows preloaded into `table` before experiments run.
    pub fn initial_rows(&self, _table: TableId) -> u64 {
        match &self.source {
            Source::Kv { rows, .. } => *rows,
        }
    }

    /// The primary key of the `index`-th preloaded row (`index < initial_rows`).
    pub fn key_at(&self, _table: TableId, index: u64) -> i64 {
        match &self.source {
            Source::Kv { .. } => index as i64,
        }
    }

    /// All preloaded rows of `table`, streamed in key order.
    pub fn initial(&self, table: TableId) -> RowSource {
        let n = self.initial_rows(table) as i64;
        self.new_rows(table, 0..n)
    }

    /// A row for `key`, which lies outside the preloaded keys (for inserts).
    pub fn new_row(&self, _table: TableId, key: i64) -> Row {
        match &self.source {
            Source::Kv { generator, .. } => generator.row(key),
        }
    }

    /// Rows for the keys in `keys`, streamed (rows that a delete run needs to exist).
    pub fn new_rows(&self, table: TableId, keys: std::ops::Range<i64>) -> RowSource {
        let this = self.clone();
        Box::new(keys.map(move |k| this.new_row(table, k)))
    }

    /// The values an indexed column takes in the preloaded rows, for range queries.
    pub fn column_domain(&self, _table: TableId, _column: usize) -> RangeInclusive<i64> {
        match &self.source {
            Source::Kv { generator, .. } => 0..=generator.groups as i64 - 1,
        }
    }
}
