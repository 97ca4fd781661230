//! Generated data: table definitions and the rows of each dataset.
//!
//! Owns what rows exist before a run and what any key's row looks like. Rows are streamed,
//! never materialized whole. Must not know about backends or timing.

pub mod kv;
pub mod table;

use crate::adapter::RowSource;
use serde::{Deserialize, Serialize};
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
    kv: kv::KvGen,
}

impl Dataset {
    pub fn new(spec: &DataSpec, seed: u64) -> Self {
        match spec {
            DataSpec::Kv { rows, payload_bytes } => Dataset {
                tables: vec![kv::shared_def()],
                spec: spec.clone(),
                kv: kv::KvGen::new(seed, *rows, *payload_bytes),
            },
        }
    }

    /// Number of rows preloaded into `table` before experiments run.
    pub fn initial_rows(&self, _table: TableId) -> u64 {
        match self.spec {
            DataSpec::Kv { rows, .. } => rows,
        }
    }

    /// The row stored under `key` (preloaded or to be inserted).
    pub fn row(&self, _table: TableId, key: i64) -> Row {
        self.kv.row(key)
    }

    /// Rows for the keys in `keys`, streamed.
    pub fn rows(&self, table: TableId, keys: std::ops::Range<i64>) -> RowSource {
        let this = self.clone();
        Box::new(keys.map(move |k| this.row(table, k)))
    }

    /// The value of indexed column `column` in the row under `key` (for reference answers).
    pub fn kv_gen(&self) -> &kv::KvGen {
        &self.kv
    }
}
