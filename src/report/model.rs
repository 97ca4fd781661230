//! The saved result model: everything `report.json` holds, from which every other output
//! is rendered. Versioned: `FORMAT_VERSION` changes when a field changes meaning.
//!
//! Owns the shape of results. Must not compute measurements or render formats.

use crate::adapter::TargetInfo;
use crate::base::measurement::{LatencySummary, RunMeasurement};
use crate::base::op::OpKind;
use crate::workload::experiment::Point;
use serde::{Deserialize, Serialize};

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
