//! The saved result model: everything `report.json` holds, from which every other output
//! is rendered. Versioned: `FORMAT_VERSION` changes when a field changes meaning.
//!
//! Owns the shape of results. Must not compute measurements or render formats.

use crate::adapter::TargetInfo;
use crate::base::measurement::{LatencySummary, RunMeasurement};
use crate::base::op::OpKind;
use crate::workload::experiment::Point;
use serde::{Deserialize, Serialize};

/// 2: `ops` counts every op sent and throughput counts only `ok_ops`; `failed_ops`,
/// `short_ops` and `missing_rows` were added; a point with errors or missing rows is void
/// (no throughput in its summary); `errors` counts failed requests in every run, warm-up
/// included.
pub const FORMAT_VERSION: u32 = 2;

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

impl Report {
    /// Brings a report saved by an older dbsweep to this format, so it re-renders with
    /// today's rules: a format-1 point whose runs had errors loses its throughput.
    pub fn upgrade(&mut self) {
        if self.format_version >= 2 {
            return;
        }
        for p in &mut self.points {
            p.runs.iter_mut().for_each(RunMeasurement::upgrade_from_v1);
            if let Some(s) = p.summary.as_mut() {
                s.errors = p.runs.iter().map(RunMeasurement::error_count).sum();
                s.failed_ops = p.runs.iter().map(|r| r.failed_ops).sum();
                if p.runs.iter().any(RunMeasurement::is_void) {
                    (s.median_ops_per_sec, s.min_ops_per_sec, s.max_ops_per_sec, s.median_rows_per_sec) = (None, None, None, None);
                }
            }
            let (count, failed_ops) = (p.runs.iter().map(RunMeasurement::error_count).sum(), p.runs.iter().map(|r| r.failed_ops).sum());
            p.flags.retain(|f| !matches!(f, Flag::Errors { .. }));
            if count > 0 {
                p.flags.push(Flag::Errors { count, failed_ops });
            }
        }
        self.format_version = FORMAT_VERSION;
    }
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

impl PointResult {
    /// True when the point's timing is void (errors or missing rows): renderers show the
    /// flag instead of a throughput, and never plot or rank it as a valid value.
    pub fn is_void(&self) -> bool {
        self.flags.iter().any(Flag::voids) || self.summary.as_ref().is_some_and(PointSummary::is_void)
    }
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
    /// Median ok ops/s of the measured runs; `None` when the point is void (a request
    /// failed or came back short in any run, warm-up included): it has no throughput.
    pub median_ops_per_sec: Option<f64>,
    pub min_ops_per_sec: Option<f64>,
    pub max_ops_per_sec: Option<f64>,
    pub median_rows_per_sec: Option<f64>,
    /// Service latency of the experiment's op kind (ok requests only), merged over the
    /// measured runs.
    pub latency: Option<LatencySummary>,
    /// Fixed-rate runs: response latency from the intended start, merged.
    #[serde(default)]
    pub response_latency: Option<LatencySummary>,
    /// Per-row latency for batches: merged request latency divided by batch size.
    pub per_row_p50_us: Option<f64>,
    /// This target's median throughput as a share of NO-DB's at the same point.
    pub client_share: Option<f64>,
    /// Failed requests in all runs of the point, warm-up included.
    pub errors: u64,
    /// Ops of those failed requests.
    #[serde(default)]
    pub failed_ops: u64,
    /// Rows missing from short requests in all runs of the point, warm-up included.
    #[serde(default)]
    pub missing_rows: u64,
    /// Studies that measure memory: the change per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySummary>,
}

impl PointSummary {
    /// True when the point has no valid throughput (see `median_ops_per_sec`).
    pub fn is_void(&self) -> bool {
        self.median_ops_per_sec.is_none()
    }
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
    /// Requests failed (in any run, warm-up included): the point is void, it has no
    /// throughput.
    Errors {
        /// Failed requests.
        count: u64,
        /// Their ops.
        #[serde(default)]
        failed_ops: u64,
    },
    /// Requests returned or affected fewer rows than the plan expects (in any run, warm-up
    /// included): the point is void, it has no throughput.
    MissingRows {
        count: u64,
    },
    /// A run did not finish.
    Incomplete,
    NotSupported,
}

impl Flag {
    /// True for the flags that void a point's timing: it is not plotted or ranked.
    pub fn voids(&self) -> bool {
        matches!(self, Flag::Errors { .. } | Flag::MissingRows { .. })
    }

    pub fn short(&self) -> &'static str {
        match self {
            Flag::ClientBound { .. } => "client_bound",
            Flag::AnswerMismatch { .. } => "answer_mismatch",
            Flag::Errors { .. } => "errors",
            Flag::MissingRows { .. } => "missing_rows",
            Flag::Incomplete => "incomplete",
            Flag::NotSupported => "not_supported",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_1_report_with_errors_loses_its_throughput() {
        let mut r: Report = serde_json::from_str(include_str!("../../tests/golden/report.json")).unwrap();
        r.format_version = 1;
        let i = r.points.iter().position(|p| p.summary.is_some() && p.runs.len() > 1).unwrap();
        for run in &mut r.points[i].runs {
            (run.ok_ops, run.failed_ops) = (0, 0);
        }
        r.points[i].runs[1].errors.insert("server".into(), 3);
        let clean = r.points.iter().position(|p| p.summary.is_some() && p.runs.len() > 1 && p.target != r.points[i].target).unwrap();
        r.upgrade();
        assert_eq!(r.format_version, FORMAT_VERSION);
        let p = &r.points[i];
        assert_eq!(p.runs[1].failed_ops, 3);
        assert_eq!(p.runs[1].ok_ops, p.runs[1].ops - 3);
        assert_eq!(p.runs[0].ok_ops, p.runs[0].ops);
        assert!(p.summary.as_ref().unwrap().median_ops_per_sec.is_none() && p.is_void());
        assert!(p.flags.contains(&Flag::Errors { count: 3, failed_ops: 3 }));
        assert!(!r.points[clean].is_void());
    }
}
