//! The saved result model: everything `report.json` holds, from which every other output
//! is rendered. Versioned: `FORMAT_VERSION` changes when a field changes meaning.
//!
//! Owns the shape of results. Must not compute measurements or render formats.

use crate::adapter::TargetInfo;
use crate::workload::experiment::Point;
use crate::workload::op::OpKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const FORMAT_VERSION: u32 = 1;

/// One run directory's contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Report {
    /// Always "dbsweep-report".
    pub format: String,
    pub format_version: u32,
    pub dbsweep_version: String,
    pub git_revision: Option<String>,
    /// The command line, with passwords removed.
    pub command: Vec<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// False when the run was interrupted or a target failed; the results so far are kept.
    pub complete: bool,
    pub incomplete_reason: Option<String>,
    /// The validated plan that ran (URLs without passwords).
    pub plan: serde_json::Value,
    pub study: String,
    pub seed: u64,
    pub environment: Environment,
    pub targets: Vec<TargetInfo>,
    /// Systems the study names that cannot run here, with the reason.
    pub unavailable: Vec<Unavailable>,
    pub points: Vec<PointResult>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unavailable {
    pub system: String,
    pub reason: String,
}

/// Where the run happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Environment {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub cpu_model: String,
    pub cores: usize,
    pub memory_bytes: u64,
}

/// The outcome of one target at one point of one experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointResult {
    pub experiment: String,
    pub op: OpKind,
    pub target: String,
    pub system: String,
    #[serde(flatten)]
    pub point: Point,
    /// Total ops/s of a fixed-rate (open-loop) run; `None` for closed-loop runs.
    #[serde(default)]
    pub rate: Option<f64>,
    pub status: PointStatus,
    /// Warm-up and measured runs, in order.
    pub runs: Vec<RunMeasurement>,
    pub summary: Option<PointSummary>,
    pub flags: Vec<Flag>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PointStatus {
    Measured,
    /// The target cannot do this op; nothing was run.
    NotSupported {
        reason: String,
    },
    /// The point did not finish (interrupted, or the target failed).
    Incomplete {
        reason: String,
    },
}

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
    pub sample_answer: Option<crate::workload::op::Answer>,
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

/// Median memory change over the measured runs of a point; per row = the change divided
/// by the rows the run wrote, deleted or returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemorySummary {
    pub engine_source: Option<String>,
    pub engine_delta_bytes: Option<f64>,
    pub server_delta_bytes: Option<f64>,
    pub client_delta_bytes: f64,
    pub engine_bytes_per_row: Option<f64>,
    pub server_bytes_per_row: Option<f64>,
    /// Engine and server memory after the run (median), for the absolute table.
    pub engine_after_bytes: Option<f64>,
    pub server_after_bytes: Option<f64>,
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

/// Median and spread over the measured runs of a point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointSummary {
    pub measured_runs: usize,
    pub median_ops_per_sec: f64,
    pub min_ops_per_sec: f64,
    pub max_ops_per_sec: f64,
    pub median_rows_per_sec: f64,
    /// Service latency of the experiment's op kind, merged over the measured runs.
    pub latency: Option<LatencySummary>,
    /// Fixed-rate runs: response latency from the intended start, merged.
    #[serde(default)]
    pub response_latency: Option<LatencySummary>,
    /// Per-row latency for batches: merged request latency divided by batch size.
    pub per_row_p50_us: Option<f64>,
    /// This target's median throughput as a share of NO-DB's at the same point.
    pub client_share: Option<f64>,
    pub errors: u64,
    /// Studies that measure memory: the change per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySummary>,
    /// A YCSB workload (a mixed point): each operation type's own throughput and latency,
    /// as YCSB reports them per operation type.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_kind: BTreeMap<OpKind, KindSummary>,
}

/// One operation type of a mixed point over its measured runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KindSummary {
    /// Ops of this type completed per second of the run: median, min and max over the runs.
    pub median_ops_per_sec: f64,
    pub min_ops_per_sec: f64,
    pub max_ops_per_sec: f64,
    /// Service latency of this type, merged over the measured runs.
    pub latency: LatencySummary,
}

/// A qualification shown next to the number it qualifies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "flag", rename_all = "snake_case")]
pub enum Flag {
    /// Throughput is within reach of the NO-DB ceiling: the client may be the bottleneck.
    ClientBound {
        share: f64,
    },
    /// Answers differ from the other systems' for the same ops: the timing is void.
    AnswerMismatch {
        detail: String,
    },
    /// Some ops failed.
    Errors {
        count: u64,
    },
    /// A run did not finish.
    Incomplete,
    NotSupported,
}

impl Flag {
    pub fn short(&self) -> &'static str {
        match self {
            Flag::ClientBound { .. } => "client_bound",
            Flag::AnswerMismatch { .. } => "answer_mismatch",
            Flag::Errors { .. } => "errors",
            Flag::Incomplete => "incomplete",
            Flag::NotSupported => "not_supported",
        }
    }
}
