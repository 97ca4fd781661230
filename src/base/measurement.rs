//! The measured result of one run, as `report.json` saves it: counts, time, errors,
//! answers, latency summaries (with their HDR histograms) and memory readings.
//!
//! Owns the shape of a run's measurement, which `stats` fills and `report` saves. Must
//! not record, compute or render anything.

use crate::base::op::{Answer, OpKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One warm-up or measured run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunMeasurement {
    /// 0-based; warm-up runs come first.
    pub run: u32,
    pub warmup: bool,
    pub complete: bool,
    /// Ops executed (successful or not).
    pub ops: u64,
    pub requests: u64,
    /// Rows written, deleted, found or returned.
    pub rows: u64,
    pub seconds: f64,
    /// CPU time of the dbsweep process during the run (for embedded engines this includes
    /// the engine itself).
    pub client_cpu_seconds: f64,
    /// Failed ops by error class.
    pub errors: BTreeMap<String, u64>,
    pub error_samples: Vec<String>,
    /// Fixed-rate runs: ops that started more than 1 ms after their intended start (the
    /// schedule was missed; their response time includes the wait).
    #[serde(default)]
    pub late_ops: u64,
    /// Digest of the answers of COUNT/MAX/query ops, to compare systems.
    pub answer_digest: Option<String>,
    /// The first query result of the run, whole (query experiments only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_answer: Option<Answer>,
    /// Service time per request, by op kind.
    pub service: BTreeMap<OpKind, LatencySummary>,
    /// Response time from the intended start (fixed-rate runs), by op kind.
    pub response: BTreeMap<OpKind, LatencySummary>,
    /// Memory read just before and just after the run (studies that measure memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryMeasurement>,
}

/// Memory at one moment, read between runs (never while ops are timed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryReading {
    /// As the engine reports it (`Target::engine_memory`); `None` when it has no figure.
    pub engine_bytes: Option<u64>,
    /// Proportional set size (PSS) of the server's whole process group, from
    /// /proc/PID/smaps_rollup; only for servers dbsweep spawned.
    pub server_bytes: Option<u64>,
    /// Resident set size of the dbsweep process (the client side; for embedded engines
    /// it includes the engine).
    pub client_bytes: u64,
}

/// Memory before and after one run, and what the engine's figure means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryMeasurement {
    /// What `engine_bytes` is, e.g. `INFO memory used_memory`.
    pub engine_source: Option<String>,
    pub before: MemoryReading,
    pub after: MemoryReading,
}

impl MemoryMeasurement {
    pub fn engine_delta(&self) -> Option<i64> {
        Some(self.after.engine_bytes? as i64 - self.before.engine_bytes? as i64)
    }

    pub fn server_delta(&self) -> Option<i64> {
        Some(self.after.server_bytes? as i64 - self.before.server_bytes? as i64)
    }

    pub fn client_delta(&self) -> i64 {
        self.after.client_bytes as i64 - self.before.client_bytes as i64
    }
}

impl RunMeasurement {
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    pub fn ops_per_sec(&self) -> f64 {
        if self.seconds > 0.0 { self.ops as f64 / self.seconds } else { 0.0 }
    }

    pub fn rows_per_sec(&self) -> f64 {
        if self.seconds > 0.0 { self.rows as f64 / self.seconds } else { 0.0 }
    }

    pub fn requests_per_sec(&self) -> f64 {
        if self.seconds > 0.0 { self.requests as f64 / self.seconds } else { 0.0 }
    }
}

/// Latency of one op kind in one run (or merged over runs), in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// The HDR histogram (V2 + deflate, base64), so latencies can be merged later.
    pub histogram: String,
}
