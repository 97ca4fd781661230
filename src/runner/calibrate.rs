//! `--calibrate`: before a long run, a short timed sample of every (target, experiment)
//! of the plan — a few hundred ops at a few points of each, a few sizes of a sizes sweep —
//! over a small copy of the data, run by the runner itself (the same adapters, loads and
//! request paths as the run) into a scratch directory; the measured costs per request and
//! per key (`plan::cost`) then estimate every point of the real run.
//!
//! The sample is a run of its own: it prepares its own tables and keys in the plan's
//! namespace under the plan's leases, and removes them again before the real run begins,
//! so it touches nothing it did not create. Embedded MonetDB is left out of it: the
//! library runs one database per process and does not give back all of its client slots
//! when a database closes, so a sample in the same process makes the run's later
//! connections fail ("Failed to initialize client"); its estimate stays the typical one.
//! Must not print anything.

use super::{RunContext, execute};
use crate::base::op::OpKind;
use crate::data::{DataSpec, RecordCounts};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::plan::cost::{self, Cost, CostModel, Sample};
use crate::workload::experiment::{Experiment, Point};
use std::collections::BTreeMap;
use std::time::Instant;

/// The most rows the sample's data has: enough for realistic lookups, seconds to load.
const SAMPLE_ROWS: u64 = 10_000;
/// The sample's TPC-H scale factor at most.
const SAMPLE_SCALE: f64 = 0.01;
/// The ops of one sample run at most, and the requests it sends at least.
const SAMPLE_OPS: u64 = 300;
const SAMPLE_REQUESTS: u64 = 20;
/// What one sample run may take at the family's typical costs, so a slow point gets
/// fewer ops.
const SAMPLE_RUN_SECS: f64 = 0.25;
/// A sizes sweep is sampled at its sizes up to this many ops.
const SAMPLE_MAX_SIZE: u64 = 2_000;

/// Runs the sample of `plan` (whose spawned servers, if any, are up and among its
/// targets) and returns the costs it measured, with the seconds it took.
pub async fn calibrate(plan: &Plan, ctx: &RunContext) -> Result<CostModel> {
    let began = Instant::now();
    let scratch = crate::base::scratch::create(&std::env::temp_dir(), "dbsweep-scratch-calibration-")
        .map_err(|e| Error::runtime(format!("cannot create a scratch directory for the calibration: {e}")))?;
    let (sample, origins) = sample_plan(plan, scratch.path().join("sample"));
    let sample_ctx = RunContext {
        command: ctx.command.clone(),
        cancel: ctx.cancel.clone(),
        activity: ctx.activity.clone(),
        show_progress: false,
        runs_root: scratch.path().to_path_buf(),
        unavailable: Vec::new(),
        keep_data: false,
        extra_settings: BTreeMap::new(),
        // No settling after the sample's small loads.
        server_pids: BTreeMap::new(),
        holder: ctx.holder.clone(),
        workers: None,
        on_leases_taken: None,
        report_token: None,
    };
    let (report, _) = execute(&sample, &sample_ctx, None).await?;
    if ctx.cancel.is_stopped() {
        return Err(ctx.cancel.cause().cloned().unwrap_or(super::StopCause::CtrlC).into_error(None));
    }
    let dataset = crate::data::Dataset::new(&sample.data, sample.seed);
    let rows: u64 = (0..dataset.tables.len()).map(|t| dataset.initial_rows(t)).sum();
    let mut samples: BTreeMap<(String, usize), (Vec<Sample>, f64)> = BTreeMap::new();
    for point in &report.points {
        let Some(index) = sample.experiments.iter().position(|e| e.name == point.experiment) else { continue };
        let experiment = &sample.experiments[index];
        let entry = samples.entry((point.target.clone(), origins[index])).or_default();
        for run in point.runs.iter().filter(|r| r.complete && r.failed_ops == 0 && r.ops > 0) {
            let work = cost::work(experiment, &point.point, run.ops, rows);
            entry.0.push(Sample { work, secs: run.seconds });
            entry.1 = run.service.values().map(|l| l.max_us).fold(entry.1, f64::max);
        }
    }
    let costs: BTreeMap<(String, usize), Cost> =
        samples.into_iter().filter_map(|(key, (samples, slowest))| Some((key, Cost::fit(&samples, slowest)?))).collect();
    let load_us_per_row = report
        .timing
        .iter()
        .flat_map(|t| &t.per_target)
        .filter(|_| rows > 0)
        .map(|t| (t.target.clone(), t.load_secs * 1e6 / rows as f64))
        .collect();
    drop(scratch);
    Ok(CostModel { costs, load_us_per_row, calibration_secs: began.elapsed().as_secs_f64(), point_overhead_secs: point_overhead(&report) })
}

/// The seconds of the sample's run that neither its loads nor its runs account for, per
/// point and target it measured.
fn point_overhead(report: &crate::report::model::Report) -> f64 {
    let Some(timing) = &report.timing else { return 0.0 };
    let loads: f64 = timing.per_target.iter().map(|t| t.load_secs).sum();
    let runs: f64 = report.points.iter().flat_map(|p| &p.runs).map(|r| r.seconds).sum();
    let points = report.points.iter().filter(|p| !p.runs.is_empty()).count();
    if points == 0 { 0.0 } else { ((timing.real_secs - loads - runs) / points as f64).max(0.0) }
}

/// The sample's plan: the plan's targets and experiments over a small copy of its data,
/// one experiment per sampled point (a few hundred ops, one run, no warm-up, closed loop,
/// no stopping rule), written to `out`; and the plan's index of each sample experiment.
/// Lifecycle experiments are not sampled (their estimate stays the typical one).
pub fn sample_plan(plan: &Plan, out: std::path::PathBuf) -> (Plan, Vec<usize>) {
    let mut sample = plan.clone();
    sample.out = Some(out);
    sample.shard = None;
    sample.precision = None;
    sample.budget_secs = None;
    sample.calibrated_cap_secs = None;
    sample.costs = None;
    sample.hlog_interval = None;
    sample.lifecycle = false;
    sample.warnings = Vec::new();
    sample.data = small_copy(&plan.data);
    sample.targets.retain(|t| !in_process_only_once(t.url.scheme()));
    let mut experiments = Vec::new();
    let mut origins = Vec::new();
    for (index, e) in plan.experiments.iter().enumerate().filter(|(_, e)| !e.lifecycle) {
        for (k, point) in sampled_points(e).into_iter().enumerate() {
            let point = Point { rate: None, ..point };
            let ops = if e.sized { e.ops } else { sample_ops(plan, e, &point) };
            experiments.push(Experiment {
                name: format!("{}#{k}", e.name),
                duration_secs: None,
                runs: 1,
                warmup: 0,
                ops,
                points: vec![point],
                ..e.clone()
            });
            origins.push(index);
        }
    }
    sample.experiments = experiments;
    (sample, origins)
}

/// Systems that cannot be opened again in the same process after the sample: embedded
/// MonetDB (see the module's doc).
fn in_process_only_once(scheme: &str) -> bool {
    scheme == "monetdb"
}

/// The plan's data, at most `SAMPLE_ROWS` rows (TPC-H at most `SAMPLE_SCALE`).
fn small_copy(data: &DataSpec) -> DataSpec {
    let mut data = data.clone();
    match &mut data {
        DataSpec::Kv { rows, .. } | DataSpec::Pairs { rows, .. } => *rows = (*rows).min(SAMPLE_ROWS),
        DataSpec::Tpch { scale } => *scale = scale.min(SAMPLE_SCALE),
        DataSpec::Ycsb { recordcount, .. } => *recordcount = RecordCounts::One(recordcount.first().min(SAMPLE_ROWS)),
        // pgbench's scripts draw branches from 1..=scale: a smaller scale would refuse them.
        DataSpec::Pgbench { .. } => {}
    }
    data
}

/// The points of `e` the sample times: of a sizes sweep its smallest sizes (up to
/// `SAMPLE_MAX_SIZE`, three spread over them); else the points with the fewest and the
/// most keys per request (and the most clients), so both costs come apart.
fn sampled_points(e: &Experiment) -> Vec<Point> {
    let mut points = e.points.clone();
    if e.sized {
        points.sort_by_key(|p| p.param.unwrap_or(0));
        let small: Vec<Point> = points.iter().copied().filter(|p| p.param.unwrap_or(0) <= SAMPLE_MAX_SIZE).collect();
        let pool = if small.is_empty() { points[..1].to_vec() } else { small };
        let mut picked = vec![pool[0], pool[pool.len() / 2], pool[pool.len() - 1]];
        picked.dedup();
        return picked;
    }
    let keys = |p: &Point| {
        let per_request = if p.batched { p.batch.max(1) as u64 } else { 1 };
        let width = match e.op.kind() {
            OpKind::RangeRows | OpKind::RangeCount | OpKind::RangeMax | OpKind::Scan => p.param.unwrap_or(1),
            _ => 1,
        };
        (per_request * width, p.clients)
    };
    points.sort_by_key(keys);
    let mut picked = vec![points[0], points[points.len() - 1]];
    picked.dedup();
    picked
}

/// Ops of one sample run at `point`: at least `SAMPLE_REQUESTS` requests, at most
/// `SAMPLE_OPS` ops unless a request holds more, and about `SAMPLE_RUN_SECS` at the
/// family's typical costs; never more than the experiment's own.
fn sample_ops(plan: &Plan, e: &Experiment, point: &Point) -> u64 {
    let per_request = if point.batched { point.batch.max(1) as u64 } else { 1 };
    let typical_op_secs = plan
        .target_families()
        .iter()
        .map(|(_, family)| {
            crate::plan::estimate::fixed_secs(family, &Experiment { points: vec![*point], runs: 1, warmup: 0, ops: 1, ..e.clone() }, 0.0)
        })
        .fold(0.0, f64::max);
    let by_time = if typical_op_secs > 0.0 { (SAMPLE_RUN_SECS / typical_op_secs) as u64 } else { SAMPLE_OPS };
    let least = SAMPLE_REQUESTS * per_request;
    by_time.clamp(least.min(SAMPLE_OPS.max(per_request)), SAMPLE_OPS.max(least)).min(e.ops).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{RunOptions, resolve};

    #[test]
    fn the_sample_is_small_one_run_per_point_and_maps_back_to_the_plan() {
        let plan = resolve(&RunOptions { study: Some("kv-vs-relational".into()), scale: Some(1.0), ..Default::default() }).unwrap();
        let (sample, origins) = sample_plan(&plan, "/nowhere".into());
        assert_eq!(sample.data, DataSpec::Tpch { scale: SAMPLE_SCALE });
        assert_eq!(sample.experiments.len(), origins.len());
        for (e, &origin) in sample.experiments.iter().zip(&origins) {
            let from = &plan.experiments[origin];
            assert!(e.name.starts_with(&format!("{}#", from.name)), "{} from {}", e.name, from.name);
            assert_eq!((e.runs, e.warmup, e.points.len()), (1, 0, 1));
            assert!(e.ops <= SAMPLE_OPS.max(e.points[0].batch as u64 * SAMPLE_REQUESTS) && e.ops <= from.ops, "{}: {}", e.name, e.ops);
            assert!(from.points.iter().any(|p| Point { rate: None, ..*p } == e.points[0]));
        }
        // Embedded MonetDB stays out of the sample (one database per process).
        let default = resolve(&RunOptions::default()).unwrap();
        let (sample_default, _) = sample_plan(&default, "/nowhere".into());
        let names: Vec<&str> = sample_default.targets.iter().map(|t| t.name.as_str()).collect();
        assert!(
            default.targets.iter().any(|t| t.name == "monetdb") && !names.contains(&"monetdb") && names.contains(&"duckdb"),
            "{names:?}"
        );
        // Every experiment is sampled, ranges at their narrowest and widest.
        assert!((0..plan.experiments.len()).all(|i| origins.contains(&i)));
        let ranges: Vec<u64> = sample.experiments.iter().filter(|e| e.op.is_range()).filter_map(|e| e.points[0].param).collect();
        assert!(ranges.contains(&ranges.iter().copied().min().unwrap()) && ranges.iter().max() > ranges.iter().min(), "{ranges:?}");
    }

    #[test]
    fn a_sizes_sweep_is_sampled_at_its_small_sizes() {
        let plan =
            resolve(&RunOptions { study: Some("insert-find".into()), sizes: Some("100:100000:100".into()), ..Default::default() }).unwrap();
        let (sample, _) = sample_plan(&plan, "/nowhere".into());
        let sizes: Vec<u64> = sample.experiments.iter().filter(|e| e.sized).filter_map(|e| e.points[0].param).collect();
        assert!(!sizes.is_empty() && sizes.iter().all(|&n| n <= SAMPLE_MAX_SIZE), "{sizes:?}");
        assert!(sizes.contains(&100) && sizes.contains(&SAMPLE_MAX_SIZE), "{sizes:?}");
    }
}
