//! The saved result model: everything `report.json` holds, from which every other output
//! is rendered. Versioned: `FORMAT_VERSION` changes when a field changes meaning.
//!
//! Owns the shape of results. Must not compute measurements or render formats.

use crate::adapter::TargetInfo;
use crate::base::measurement::{LatencySummary, RunMeasurement};
use crate::base::op::OpKind;
use crate::workload::experiment::Point;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A run's estimated and real duration (`Report::timing`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Timing {
    /// The estimate from each system's typical costs, in seconds.
    pub estimated_fixed_secs: f64,
    /// The estimate from the costs the calibration sample measured (`--calibrate`);
    /// absent when none ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_calibrated_secs: Option<f64>,
    /// The seconds the calibration sample took (before the run, not in `real_secs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_secs: Option<f64>,
    /// The run's wall time from its start to its last point, in seconds (cleanup excluded).
    pub real_secs: f64,
    /// `--budget` in seconds, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_secs: Option<f64>,
    pub per_target: Vec<TargetTiming>,
}

/// One target's estimated and real duration: loading its data and its points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetTiming {
    pub target: String,
    pub estimated_fixed_secs: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_calibrated_secs: Option<f64>,
    /// Seconds its initial load took.
    pub load_secs: f64,
    /// Seconds of its load and of its points, each point from the end of the one before.
    pub real_secs: f64,
}

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
    /// The JSON Schema this file follows and how its histograms are encoded. Absent in
    /// reports of older dbsweeps (until re-rendered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaRef>,
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
    /// The plan's hash (`plan::shard::plan_hash`): run directories of one plan share it,
    /// and only those can be merged. Absent in reports of older dbsweeps.
    #[serde(default)]
    pub plan_hash: Option<String>,
    /// The shard this run directory holds (`run --shard I/N`); `None`: the whole plan.
    #[serde(default)]
    pub shard: Option<crate::base::shard::Shard>,
    /// The run directories `dbsweep merge` joined into this one; empty for a run.
    #[serde(default)]
    pub merged_from: Vec<MergedPart>,
    /// The worker processes that sent this run's ops (`run --workers N`), worker 0 (the
    /// coordinator) first; empty when one process sent them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerRecord>,
    /// Each time `run --resume` continued this run directory, in order; empty for a run
    /// that went through at once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<Resumption>,
    /// A paper study's run: each finding of the paper (`src/plan/studies/<study>.paper.toml`)
    /// beside dbsweep's counterpart, with a verdict. Derived from the points each time
    /// report.json is written (`report::write_all`); absent for other studies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_verdicts: Option<super::paper::PaperVerdicts>,
    /// The plan's own targets as resolved, before spawned servers joined and a shard kept
    /// only its own: `plan` with these as its `targets` is what `plan_hash` hashes, so
    /// `dbsweep merge` can check the saved plan against its hash. Absent in reports of
    /// older dbsweeps and in merged reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_targets: Option<serde_json::Value>,
    /// How long the run was estimated to take (from typical costs, and from the costs
    /// `--calibrate` measured) and how long it took, overall and per target. Absent in
    /// reports of older dbsweeps and in merged reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
    /// Shows that this file is as the run wrote it (`report::seal`); absent in reports of
    /// older dbsweeps and in merged reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<Seal>,
}

/// What shows that a run's report.json holds what the run wrote: computed over its
/// contents (`report::seal` says which) at every save. `dbsweep merge` refuses a shard
/// whose seal does not match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "algorithm", rename_all = "snake_case")]
pub enum Seal {
    /// SHA-256 of the contents, as 64 hex digits: catches any edit, but anyone can compute
    /// it again after editing.
    Sha256 { digest: String },
    /// HMAC-SHA-256 of the contents with the worker token (`DBSWEEP_WORKER_TOKEN` or
    /// `DBSWEEP_WORKER_TOKEN_FILE`), as 64 hex digits: only holders of the token can make it.
    HmacSha256 { tag: String },
}

/// One `run --resume` of a run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Resumption {
    /// When the resumed run started.
    pub at: String,
    /// Its command line (passwords removed).
    pub command: Vec<String>,
    /// Why the run it continued had stopped.
    pub previous_reason: Option<String>,
    /// The point results it kept as they were (the completed points before the first
    /// incomplete one).
    pub kept_points: usize,
    /// The first point it measured again, as "experiment · point" (None: none yet, or
    /// every point was kept).
    pub from_point: Option<String>,
}

/// One worker process of a run with `--workers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkerRecord {
    /// 0 is the coordinator, which also loads the data and cleans up.
    pub index: usize,
    pub host: String,
    pub pid: u32,
    pub dbsweep_version: String,
    /// The worker's wall clock minus the coordinator's, measured by the coordinator over
    /// one round trip when the worker joined (0 for the coordinator itself).
    pub clock_offset_ms: f64,
    /// Half that round trip: how far off the offset can be.
    pub clock_uncertainty_ms: f64,
    /// Ops this worker sent over the whole run, and their share of all workers' ops.
    pub ops: u64,
    pub share: f64,
}

/// One run directory that `dbsweep merge` joined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MergedPart {
    /// The directory as given to `dbsweep merge`.
    pub dir: String,
    pub shard: Option<crate::base::shard::Shard>,
    /// Its command line (passwords removed).
    pub command: Vec<String>,
    pub hostname: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub complete: bool,
    pub incomplete_reason: Option<String>,
    /// How many point results it contributed.
    pub points: usize,
}

/// Names the schema of a report, for readers that find the file without dbsweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SchemaRef {
    /// The JSON Schema of report.json, in dbsweep's source tree (generated from this model).
    pub path: String,
    /// The report format it describes (`format_version`).
    pub version: u32,
    /// How the histograms in this file (`histogram`, `intervals.histograms`) are encoded.
    pub histograms: String,
}

impl SchemaRef {
    pub const PATH: &str = "docs/report.schema.json";
    pub const HISTOGRAMS: &str = "HdrHistogram V2 format compressed with deflate, base64 (standard alphabet); values are latencies in nanoseconds (1 ns to 1 hour, 3 significant digits), counts are requests; the *_us figures beside them are microseconds";

    /// The schema of reports this dbsweep writes.
    pub fn current() -> SchemaRef {
        SchemaRef { path: Self::PATH.into(), version: FORMAT_VERSION, histograms: Self::HISTOGRAMS.into() }
    }
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
        self.schema = Some(SchemaRef::current());
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
    /// The point, with its fixed rate (total ops/s; `null` for closed-loop runs).
    #[serde(flatten)]
    pub point: Point,
    pub status: PointStatus,
    /// Warm-up and measured runs, in order.
    pub runs: Vec<RunMeasurement>,
    pub summary: Option<PointSummary>,
    pub flags: Vec<Flag>,
    /// The files with this point's latency distributions (`report::exports`); absent when
    /// none were written (no measured run, or `--hlog-interval 0` for the interval logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exports: Option<PointExports>,
}

/// A point's latency files, as paths relative to the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointExports {
    /// Percentile distribution of the service time of every measured run together
    /// (`.hgrm`, HdrHistogram's `outputPercentileDistribution` text), values in
    /// microseconds.
    pub hgrm: String,
    /// One HdrHistogram interval log (`.hlog`) per measured run, in run order: the service
    /// time over the run, one histogram per `--hlog-interval`, values in nanoseconds.
    pub hlog: Vec<String>,
}

impl PointResult {
    /// True when the point's timing is void (errors or missing rows): renderers show the
    /// flag instead of a throughput, and never plot or rank it as a valid value.
    pub fn is_void(&self) -> bool {
        self.flags.iter().any(Flag::voids) || self.summary.as_ref().is_some_and(PointSummary::is_void)
    }

    /// The fixed rate asked, in total ops/s; `None` for a closed loop.
    pub fn rate(&self) -> Option<f64> {
        self.point.rate.map(crate::workload::experiment::Rate::ops_per_sec)
    }

    /// The measured runs (warm-up excluded).
    pub fn measured_runs(&self) -> Vec<&RunMeasurement> {
        self.runs.iter().filter(|r| !r.warmup).collect()
    }

    /// Wall seconds of the measured runs as (median, min, max); `None` when void. The
    /// one time statistic of a run: the console and report.html both print it.
    pub fn run_seconds(&self) -> Option<Spread> {
        if self.is_void() {
            return None;
        }
        Spread::of(&self.measured_runs().iter().map(|r| r.seconds).collect::<Vec<_>>())
    }

    /// Seconds per op (per key, per query) of the measured runs as (median, min, max).
    pub fn seconds_per_op(&self) -> Option<Spread> {
        if self.is_void() {
            return None;
        }
        Spread::of(&self.measured_runs().iter().filter(|r| r.ops > 0).map(|r| r.seconds / r.ops as f64).collect::<Vec<_>>())
    }
}

/// Median, min and max of a point's measured runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for no values. The median of an even count is the mean of the middle two.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let min = values.iter().copied().fold(f64::MAX, f64::min);
        let max = values.iter().copied().fold(f64::MIN, f64::max);
        Some(Spread { median: crate::stats::median(values), min, max })
    }

    pub fn tuple(self) -> (f64, f64, f64) {
        (self.median, self.min, self.max)
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

/// Median memory change over the measured runs of a point (one phase of a lifecycle
/// study: the paper's "memory per operation"); per row = the change divided by the rows
/// the run wrote, deleted or returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemorySummary {
    pub engine_source: Option<String>,
    pub engine_delta_bytes: Option<f64>,
    pub server_delta_bytes: Option<f64>,
    /// The benchmark client's (dbsweep's) resident memory change: the in-memory study's
    /// paper measured its Java client's heap change the same way.
    pub client_delta_bytes: f64,
    pub engine_bytes_per_row: Option<f64>,
    pub server_bytes_per_row: Option<f64>,
    /// Engine and server memory after the run (median), for the absolute table.
    pub engine_after_bytes: Option<f64>,
    pub server_after_bytes: Option<f64>,
    /// [min, max] of each change over the measured runs, for the noise rule
    /// (`MemorySummary::engine` and friends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_delta_range: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_delta_range: Option<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_delta_range: Option<[f64; 2]>,
}

/// The granularity of resident memory (one page): no smaller change is a measurement.
pub const PAGE_BYTES: f64 = 4096.0;

/// One memory change as the console and report.html print it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemoryDelta {
    /// No reading from this source.
    Missing,
    /// Not distinguishable from the noise of the readings; `floor` is the noise floor.
    BelowNoise { floor: f64 },
    /// A change in bytes (median over the measured runs).
    Bytes(f64),
}

impl MemoryDelta {
    /// The noise rule. A change is below the noise when its magnitude is not above the
    /// noise floor — the larger of one page and half the min–max spread of the measured
    /// runs' changes — or when the runs disagree in sign (a garbage collection gave memory
    /// back during one run and not another).
    pub fn classify(median: Option<f64>, range: Option<[f64; 2]>) -> MemoryDelta {
        let Some(median) = median else { return MemoryDelta::Missing };
        let [lo, hi] = range.unwrap_or([median, median]);
        let floor = PAGE_BYTES.max((hi - lo) / 2.0);
        if median.abs() <= floor || (lo < 0.0 && hi > 0.0) { MemoryDelta::BelowNoise { floor } } else { MemoryDelta::Bytes(median) }
    }
}

impl MemorySummary {
    pub fn engine(&self) -> MemoryDelta {
        MemoryDelta::classify(self.engine_delta_bytes, self.engine_delta_range)
    }

    pub fn server(&self) -> MemoryDelta {
        MemoryDelta::classify(self.server_delta_bytes, self.server_delta_range)
    }

    /// The paper's metric (the client's memory change).
    pub fn client(&self) -> MemoryDelta {
        MemoryDelta::classify(Some(self.client_delta_bytes), self.client_delta_range)
    }
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
    /// Times requests of the measured runs were run again after a conflict (their latency
    /// includes the retries); see `RunMeasurement::retries`.
    #[serde(default)]
    pub retries: u64,
    /// Studies that measure memory: the change per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySummary>,
    /// A YCSB workload (a mixed point): each operation type's own throughput and latency,
    /// as YCSB reports them per operation type.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_kind: BTreeMap<OpKind, KindSummary>,
    /// The widest relative half-width of the 95 % confidence interval of throughput among
    /// the measured runs (see `RunMeasurement::precision`); `None` when a run was too
    /// short to tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
}

/// One operation type of a mixed point over its measured runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KindSummary {
    /// Ops of this type completed per second of the run: median, min and max over the runs;
    /// `None` when the point is void (as `PointSummary::median_ops_per_sec`).
    pub median_ops_per_sec: Option<f64>,
    pub min_ops_per_sec: Option<f64>,
    pub max_ops_per_sec: Option<f64>,
    /// Service latency of this type, merged over the measured runs.
    pub latency: LatencySummary,
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
    /// Requests of the measured runs were run again after the system aborted them for a
    /// concurrent one (optimistic concurrency); their latency includes the retries. Not
    /// void: every request finished.
    Retried {
        /// Retries in the measured runs.
        count: u64,
    },
    /// Under `--precision`: a measured run reached its cap (`--max-ops`, `--max-time`)
    /// before its throughput was known to the precision asked. Not void: the runs are
    /// complete, only less precise.
    NotConverged {
        /// The precision asked (relative half-width, 0.02: ±2 %).
        asked: f64,
        /// The widest the runs reached; `None` when a run was too short to tell.
        reached: Option<f64>,
    },
    /// With `--workers`: a worker's result did not fit the share of the run it was given
    /// (more ops than its share, other clients, another run, counts that do not add up):
    /// it was left out, and the point is void, it has no throughput.
    WorkerShare {
        /// What did not fit, per run.
        detail: String,
    },
    /// A run did not finish.
    Incomplete,
    NotSupported,
    /// A fixed-rate (`--rate`) point whose system could not keep the schedule: more than
    /// 5 % of its ops were reached over 2 ms after their intended start, or it completed
    /// under 95 % of the rate asked.
    /// Not void: its response times (from each op's intended start) say how far behind it
    /// fell. Replaces the client-bound test, which means nothing at a fixed rate.
    /// Older reports only (dbsweep no longer writes it): the runs' throughputs spread too
    /// widely to order this target against others at the same point (min-max range wider
    /// than ±10 % of the median, overlapping theirs). The findings now say, from every
    /// point of the report, where targets cannot be ranked. Not void.
    WideSpread {
        /// Half the min-max range of the measured runs' ops/s, relative to their median.
        spread: f64,
        /// The targets whose range this one overlaps.
        overlaps: Vec<String>,
    },
    MissedRate {
        /// Total ops/s asked.
        asked: f64,
        /// Median ok ops/s of the measured runs; `None` when the point is void.
        achieved: Option<f64>,
        /// Ops of the measured runs that started late, and all their ops.
        late_ops: u64,
        ops: u64,
    },
}

impl Flag {
    /// True for the flags that void a point's timing: it is not plotted or ranked.
    pub fn voids(&self) -> bool {
        matches!(self, Flag::Errors { .. } | Flag::MissingRows { .. } | Flag::WorkerShare { .. })
    }

    pub fn short(&self) -> &'static str {
        match self {
            Flag::ClientBound { .. } => "client_bound",
            Flag::AnswerMismatch { .. } => "answer_mismatch",
            Flag::Errors { .. } => "errors",
            Flag::MissingRows { .. } => "missing_rows",
            Flag::Retried { .. } => "retried",
            Flag::NotConverged { .. } => "not_converged",
            Flag::WorkerShare { .. } => "worker_share",
            Flag::Incomplete => "incomplete",
            Flag::NotSupported => "not_supported",
            Flag::MissedRate { .. } => "missed_rate",
            Flag::WideSpread { .. } => "wide_spread",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_changes_within_the_noise_floor_are_not_data() {
        let c = MemoryDelta::classify;
        assert_eq!(c(None, None), MemoryDelta::Missing);
        // One page or less is below the granularity of resident memory.
        assert_eq!(c(Some(4096.0), None), MemoryDelta::BelowNoise { floor: 4096.0 });
        assert_eq!(c(Some(-3000.0), Some([-3000.0, -3000.0])), MemoryDelta::BelowNoise { floor: 4096.0 });
        assert_eq!(c(Some(2e6), Some([1.9e6, 2.1e6])), MemoryDelta::Bytes(2e6));
        // H2 after writing 1,000 pairs: -7.6 MB in the median, runs from -9 MB to +2 MB: a
        // collection gave memory back in some runs, not a cost of the phase.
        assert_eq!(c(Some(-7.6e6), Some([-9e6, 2e6])), MemoryDelta::BelowNoise { floor: 5.5e6 });
        // Consistent drops larger than the spread are data (Redis frees deleted keys).
        assert_eq!(c(Some(-8e6), Some([-8.5e6, -7.5e6])), MemoryDelta::Bytes(-8e6));
        // A median inside half the spread is noise even with one sign.
        assert_eq!(c(Some(1e6), Some([0.1e6, 5e6])), MemoryDelta::BelowNoise { floor: 2.45e6 });
    }

    #[test]
    fn one_time_statistic_per_point() {
        let mut r: Report = serde_json::from_str(include_str!("../../tests/golden/report.json")).unwrap();
        let p = r.points.iter_mut().find(|p| p.summary.is_some() && !p.is_void()).unwrap();
        p.runs.retain(|r| !r.warmup);
        p.runs.truncate(2);
        (p.runs[0].seconds, p.runs[0].ops) = (0.1, 10);
        (p.runs[1].seconds, p.runs[1].ops) = (0.65, 10);
        // Two runs: the median is the mean of the two, in seconds (not ops / median ops/s).
        assert_eq!(p.run_seconds(), Some(Spread { median: 0.375, min: 0.1, max: 0.65 }));
        assert_eq!(p.seconds_per_op().unwrap().median, 0.0375);
    }

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
