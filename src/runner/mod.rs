//! Executes a plan: opens and prepares every target, loads data, runs every experiment
//! point on every target (warm-up + measured runs), flags results, and saves the report
//! after each point so a later failure or Ctrl-C loses nothing.
//!
//! Owns ordering (points outer, targets inner, so drift hits all systems alike), the
//! NO-DB ceiling comparison, answer comparison, and cleanup. Must not format output; the
//! report module does.

pub mod calibrate;
pub mod cancel;
mod cleanup;
pub mod client;
mod connections;
mod forecast;
mod lifecycle;
pub mod memory;
pub mod merge;
mod monitor;
pub mod progress;
pub mod resume;
pub mod server_processes;
pub mod settle;
pub mod stopping;
mod summary;
mod targets;
mod verify;
pub mod workers;
mod writing;

use crate::adapter::lease::{Holder, Leases};
use crate::adapter::registry;
use crate::adapter::{OpenContext, Target};
use crate::base::measurement::{HostLoad, RunMeasurement};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::report;
use crate::report::model::{Flag, PointResult, PointStatus, Report, Unavailable};
use crate::workload::experiment::{Experiment, ExperimentOp, OpStream, Point, Rate};
pub use cancel::{Cancel, StopCause};
use cleanup::{remove_leftovers, remove_workload_inserts};
use client::RunJob;
use forecast::{Forecast, Planned, PointOnTarget};
use progress::Progress;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
pub use summary::CLIENT_BOUND_SHARE;
use summary::{References, convergence_flag, flag_against_reference, flag_point, summarize_and_flag};
use targets::{Setup, prepare_and_load, release_targets, reload};
use writing::{export, finish, new_report, out_path, save, save_before_cleanup};

/// How the run is hosted: where it writes, how it is stopped, what it shows.
pub struct RunContext {
    /// The command line, passwords removed.
    pub command: Vec<String>,
    /// Set by Ctrl-C, SIGTERM or a lost lease; the runner stops at the next op, saves
    /// what it has and reports the cause.
    pub cancel: Cancel,
    /// What the run is doing and what stopping it would still clean up (for the message
    /// of the first signal); the runner keeps it current.
    pub activity: stopping::Activity,
    pub show_progress: bool,
    /// Default parent of run directories when the plan names none.
    pub runs_root: PathBuf,
    /// Systems the study names that cannot run here, with the reason.
    pub unavailable: Vec<Unavailable>,
    /// Leave dbsweep's tables and keys in place after the run (for inspection).
    pub keep_data: bool,
    /// Wait for each spawned server (`TargetSpec::server`) to go quiet after a load before
    /// measuring it (not after the calibration sample's small loads).
    pub settle_after_load: bool,
    /// This run, as its leases name it (workers work under the coordinator's).
    pub holder: Holder,
    /// With `--workers`: the coordinator that shares each run out to the workers.
    pub workers: Option<Arc<workers::coordinator::Coordinator>>,
    /// Called once the leases are taken, before any target is prepared or loaded (the
    /// command line prints the duration estimate there; the runner prints nothing).
    pub on_leases_taken: Option<Box<dyn Fn() + Send + Sync>>,
    /// The worker token from the environment, if any: the report is signed with it (an
    /// HMAC seal) rather than digested (`report::seal`).
    pub report_token: Option<crate::base::secret::Token>,
}

/// Everything the steps of a run share and none of them changes.
pub(super) struct Shared<'a> {
    pub plan: &'a Plan,
    pub ctx: &'a RunContext,
    pub targets: &'a [Arc<dyn Target>],
    pub dataset: &'a Dataset,
    pub out_dir: &'a Path,
    /// When `--budget` is spent: no point starts after it, no request that would end
    /// after it.
    pub budget_end: Option<Instant>,
}

/// What the measuring steps add to as they go.
struct Sweep {
    report: Report,
    progress: Progress,
    /// Targets skipped from now on, with the reason.
    failed_targets: BTreeMap<String, String>,
    references: References,
    /// `run --resume`: the saved points still to be matched.
    resume: Option<resume::Resume>,
}

/// Runs a plan, or continues the run `resume` names (its directory is the plan's `out`);
/// returns the report and the directory it was written to.
pub async fn execute(plan: &Plan, ctx: &RunContext, resume: Option<resume::Resume>) -> Result<(Report, PathBuf)> {
    let started = SystemTime::now();
    let began = Instant::now();
    // The calibration sample came out of the budget already.
    let budget_end = plan.budget_secs.map(|secs| {
        let calibration = plan.costs.as_ref().map_or(0.0, |c| c.calibration_secs);
        began + Duration::from_secs_f64((secs - calibration).max(0.0))
    });
    // Claimed first, so a second run with the same --out refuses at once.
    let mut run_dir = match resume {
        Some(_) => report::RunDir::reopen(&out_path(plan, ctx, started))?,
        None => report::RunDir::claim(&out_path(plan, ctx, started))?,
    };
    let out_dir = run_dir.path().to_path_buf();
    let scratch = crate::base::scratch::create(&std::env::temp_dir(), "dbsweep-scratch-")
        .map_err(|e| Error::runtime(format!("cannot create a scratch directory: {e}")))?;
    let holder = ctx.holder.clone();
    let open_ctx = OpenContext {
        scratch_dir: scratch.path().to_path_buf(),
        namespace: plan.namespace.clone(),
        holder: holder.clone(),
        durability: plan.durability,
        request_timeout: std::time::Duration::from_secs_f64(plan.timeout_secs),
    };
    let targets: Vec<Arc<dyn Target>> = plan.targets.iter().map(|t| registry::open(&t.name, &t.url, &open_ctx)).collect::<Result<_>>()?;
    if ctx.workers.is_some() {
        workers::check_targets(&targets)?;
    }
    // A server without room for the busiest point's connections refuses the run here,
    // before the leases: nothing on it is touched, and the claimed directory goes again.
    connections::check_connection_room(plan, &targets).await?;
    let dataset = Dataset::new(&plan.data, plan.seed);

    // One run at a time per namespace: the leases come before anything is touched, and a
    // run that finds one held refuses here.
    let leases = Arc::new(Leases::acquire_all(&targets, &holder).await?);
    let renewal = {
        let cancel = ctx.cancel.clone();
        leases.keep_renewed(move |lost| cancel.stop(StopCause::Failure(format!("{lost}; stopped without touching its data again"))))
    };
    if let Some(announce) = &ctx.on_leases_taken {
        announce();
    }
    // Made after the announcement, so that nothing prints over its spinner.
    let mut progress = Progress::new(ctx.show_progress);

    // Prepare and load every target before writing anything: bad input and unreachable
    // servers fail here and leave nothing behind. Ctrl-C or SIGTERM ends the setup at once.
    let mut setup = Setup::default();
    let setups: Vec<Arc<crate::base::custom::CustomOp>> =
        plan.experiments.iter().filter_map(|e| e.custom.as_ref()?.setup.as_deref().cloned()).map(Arc::new).collect();
    let set_up = tokio::select! {
        result = prepare_and_load(plan, &targets, (&dataset, &setups), &mut progress, &mut setup, ctx) => result,
        () = ctx.cancel.stopped() => Ok(()),
    };
    let mut report = new_report(plan, ctx, &targets, started);
    for (name, settling) in &setup.settled {
        if let Some(target) = report.targets.iter_mut().find(|t| &t.name == name) {
            target.settings.insert("settle_after_load".into(), settling.describe());
        }
        report.warnings.extend(targets::still_busy(name, settling));
    }
    if let Some(resume) = &resume {
        report = resume.start_report(report, &ctx.command);
    }
    report.warnings.extend(leases.notes.iter().cloned());
    if ctx.cancel.is_stopped() {
        progress.finish();
        run_dir.keep();
        save_before_cleanup(&out_dir, &mut report, Some(&ctx.cancel.reason()), ctx);
        report.warnings.extend(release_targets(plan, &setup.prepared, &leases, renewal, ctx.keep_data, ctx).await);
        drop(scratch);
        return finish(report, Some(ctx.cancel.reason()), ctx, &out_dir);
    }
    if let Err(e) = set_up {
        release_targets(plan, &setup.prepared, &leases, renewal, false, ctx).await;
        return Err(e);
    }
    run_dir.keep();
    let mut stop_reason: Option<String> = (!save(&out_dir, &mut report, ctx)).then(|| ctx.cancel.reason());

    let shared = Shared { plan, ctx, targets: &targets, dataset: &dataset, out_dir: &out_dir, budget_end };
    let streams: Vec<Arc<OpStream>> =
        crate::workload::experiment::streams(&plan.experiments, &dataset, plan.seed).into_iter().map(Arc::new).collect();
    match plan.duration_secs() {
        Some(secs) => progress.start_timed(Duration::from_secs_f64(secs), forecast(&shared, &streams)),
        None => progress.start(forecast(&shared, &streams)),
    }
    let mut sweep = Sweep { report, progress, failed_targets: BTreeMap::new(), references: References::default(), resume };
    if stop_reason.is_none() {
        stop_reason = measure_experiments(&shared, &streams, &mut sweep).await;
    }
    if stop_reason.is_none() {
        stop_reason = run_lifecycle_phases(&shared, &streams, &mut sweep).await?;
    }
    if stop_reason.is_none()
        && let Some(resume) = &mut sweep.resume
    {
        resume.finish(&mut sweep.report);
    }
    let Sweep { mut report, mut progress, .. } = sweep;
    progress.finish();
    report.timing = Some(timing(plan, &setup.loaded, &progress.took_by_target(), began.elapsed().as_secs_f64()));

    if !save_before_cleanup(&out_dir, &mut report, stop_reason.as_deref(), ctx) && stop_reason.is_none() {
        stop_reason = Some(ctx.cancel.reason());
    }
    report.warnings.extend(release_targets(plan, &targets, &leases, renewal, ctx.keep_data, ctx).await);
    // The scratch directory goes before the last write: on a full disk that frees room.
    drop(scratch);
    finish(report, stop_reason, ctx, &out_dir)
}

/// The run's estimated and real duration, overall and per target: `loaded` the seconds
/// of each target's initial load, `took` of its points, `real_secs` the whole run's.
fn timing(plan: &Plan, loaded: &BTreeMap<String, f64>, took: &BTreeMap<String, f64>, real_secs: f64) -> report::model::Timing {
    let fixed = crate::plan::estimate::estimate_fixed(plan);
    let calibrated = plan.costs.as_ref().map(|_| crate::plan::estimate::estimate(plan));
    let per_target = fixed
        .per_target
        .iter()
        .map(|(target, secs)| {
            let load_secs = loaded.get(target).copied().unwrap_or(0.0);
            report::model::TargetTiming {
                target: target.clone(),
                estimated_fixed_secs: *secs,
                estimated_calibrated_secs: calibrated
                    .as_ref()
                    .and_then(|c| c.per_target.iter().find(|(t, _)| t == target).map(|(_, s)| *s)),
                load_secs,
                real_secs: load_secs + took.get(target).copied().unwrap_or(0.0),
            }
        })
        .collect();
    report::model::Timing {
        estimated_fixed_secs: fixed.total(),
        estimated_calibrated_secs: calibrated.map(|c| c.total()),
        calibration_secs: plan.costs.as_ref().map(|c| c.calibration_secs),
        real_secs,
        budget_secs: plan.budget_secs,
        per_target,
    }
}

/// Every point on every target this process runs, with its up-front estimate and its work
/// in the progress counter's unit (ops, or milliseconds of time-based runs), warm-up runs
/// included.
fn forecast(shared: &Shared<'_>, streams: &[Arc<OpStream>]) -> Forecast {
    let plan = shared.plan;
    let per_run_ms = plan.duration_secs().map_or(0, |secs| progress::per_run_ms(Duration::from_secs_f64(secs)));
    let data_rows: u64 = (0..shared.dataset.tables.len()).map(|t| shared.dataset.initial_rows(t)).sum();
    let mut planned = Vec::new();
    for (ei, (e, stream)) in plan.experiments.iter().zip(streams).enumerate() {
        let runs = u64::from(e.warmup + e.runs);
        for (pi, point) in e.points.iter().enumerate() {
            for target in shared.targets.iter().map(|t| t.info().name.clone()).filter(|name| plan.runs_unit(name, ei)) {
                let family = plan.targets.iter().find(|t| t.name == target).map_or("", |t| t.url.scheme());
                let per_run_work = if e.duration_secs.is_some() { per_run_ms } else { stream.ops_at(point) };
                let at = crate::plan::estimate::RunOf { target: &target, family, index: ei, experiment: e, stream, point, data_rows };
                let overhead = plan.costs.as_ref().map_or(0.0, |c| c.point_overhead_secs);
                planned.push(Planned {
                    estimate_secs: runs as f64 * crate::plan::estimate::one_run_secs(plan, &at) + overhead,
                    work: per_run_work * runs,
                    at: PointOnTarget { target, experiment: ei, point: pi },
                });
            }
        }
    }
    Forecast::new(planned)
}

/// The YCSB record counts a run loads one after the other; a single `None` when the data
/// has at most one.
fn record_count_rounds(plan: &Plan) -> Vec<Option<u64>> {
    match plan.data.record_counts() {
        counts if counts.len() > 1 => counts.into_iter().map(Some).collect(),
        counts => vec![counts.first().copied()],
    }
}

/// Whether a run measures `point` of a measured (not lifecycle) experiment at all: with
/// several record counts (`counts`) a point runs only at its own (`Round::includes`), and
/// points without one at the first.
pub(super) fn measured_in_some_round(point: &Point, counts: &[u64]) -> bool {
    counts.len() <= 1 || point.param.is_none_or(|n| counts.contains(&n))
}

/// One record count's round of experiments.
struct Round<'a> {
    index: usize,
    counts: &'a [Option<u64>],
}

impl Round<'_> {
    /// Whether a point runs in this round: with several record counts a point runs at its
    /// own count, and points without one (the echo floor) on the first data.
    fn includes(&self, point: &Point) -> bool {
        match point.param {
            _ if self.counts.len() == 1 => true,
            None => self.index == 0,
            n => n == self.counts[self.index],
        }
    }
}

/// Every measured (not lifecycle) experiment, record count by record count: each count is
/// loaded on its own and every experiment runs its points at that count on it. Returns the
/// reason to stop the whole run, if any.
async fn measure_experiments(shared: &Shared<'_>, streams: &[Arc<OpStream>], sweep: &mut Sweep) -> Option<String> {
    let plan = shared.plan;
    let counts = record_count_rounds(plan);
    let measured: Vec<usize> = (0..plan.experiments.len()).filter(|&ei| !plan.experiments[ei].lifecycle).collect();
    if measured.is_empty() {
        return None;
    }
    let mut round_streams = streams.to_vec();
    for index in 0..counts.len() {
        if index > 0 {
            if shared.ctx.cancel.is_stopped() {
                return Some(shared.ctx.cancel.reason());
            }
            round_streams = load_record_count(shared, counts[index].unwrap_or(0), sweep).await;
        }
        let round = Round { index, counts: &counts };
        for &ei in &measured {
            if let Some(reason) = measure_experiment(shared, ei, &round_streams[ei], &round, sweep).await {
                return Some(reason);
            }
        }
    }
    None
}

/// Replaces every target's data with `records` records and returns the experiments' op
/// streams over them.
async fn load_record_count(shared: &Shared<'_>, records: u64, sweep: &mut Sweep) -> Vec<Arc<OpStream>> {
    let plan = shared.plan;
    let data = Dataset::new(&plan.data.with_records(records), plan.seed);
    reload(plan, shared.targets, &data, &mut sweep.failed_targets, &mut sweep.progress, &mut sweep.report.warnings, shared.ctx).await;
    plan.experiments
        .iter()
        .enumerate()
        .map(|(i, e)| Arc::new(OpStream::new(e, i, &data, plan.seed, e.warmup + e.runs).with_range_counts()))
        .collect()
}

/// One experiment's points of this round, each on every target, saved after each point;
/// a YCSB workload's inserts are removed afterwards. Returns the reason to stop the whole
/// run, if any.
async fn measure_experiment(
    shared: &Shared<'_>,
    ei: usize,
    stream: &Arc<OpStream>,
    round: &Round<'_>,
    sweep: &mut Sweep,
) -> Option<String> {
    let experiment = &shared.plan.experiments[ei];
    for (point_index, point) in experiment.points.iter().enumerate() {
        if !round.includes(point) {
            continue;
        }
        let unit = PointUnit { shared, round: round.index, experiment_index: ei, experiment, stream, point: *point, point_index };
        if let Some(reason) = measure_point(&unit, sweep).await {
            return Some(reason);
        }
    }
    if experiment.op == ExperimentOp::Ycsb {
        let in_round = |p: &Point| round.includes(p);
        remove_workload_inserts(shared.targets, &sweep.failed_targets, experiment, stream, &in_round, &mut sweep.report.warnings).await;
    }
    None
}

/// One point of one experiment, as every target runs it.
struct PointUnit<'a> {
    shared: &'a Shared<'a>,
    /// The record count's round it runs in.
    round: usize,
    experiment_index: usize,
    experiment: &'a Experiment,
    stream: &'a Arc<OpStream>,
    point: Point,
    point_index: usize,
}

impl PointUnit<'_> {
    /// This point on `target`, as the progress forecast counts it.
    fn on(&self, target: &Arc<dyn Target>) -> PointOnTarget {
        PointOnTarget { target: target.info().name.clone(), experiment: self.experiment_index, point: self.point_index }
    }
}

/// Runs one point on every target of this process, flags the results against each other
/// and the reference answer, and saves the report. Returns the reason to stop the whole
/// run, if any.
async fn measure_point(unit: &PointUnit<'_>, sweep: &mut Sweep) -> Option<String> {
    let shared = unit.shared;
    let targets: Vec<&Arc<dyn Target>> =
        shared.targets.iter().filter(|t| shared.plan.runs_unit(&t.info().name, unit.experiment_index)).collect();
    if kept_from_resumed_run(unit, &targets, sweep) {
        return None;
    }
    let mut stop_reason = None;
    let mut results = Vec::new();
    for target in targets {
        let (result, stop) = measure_target(unit, target, sweep).await;
        results.push(result);
        if stop.is_some() {
            stop_reason = stop;
            break;
        }
    }
    flag_point(&mut results);
    if let Some(q) = unit.experiment.op.query()
        && let Some(reference) = sweep.references.answer(&shared.plan.data, q)
    {
        flag_against_reference(&mut results, reference);
    }
    sweep.progress.landed(&results, false);
    if !export(shared.out_dir, &mut results, &shared.ctx.cancel) {
        stop_reason = Some(shared.ctx.cancel.reason());
    }
    sweep.report.points.extend(results);
    if let Some(coordinator) = &shared.ctx.workers {
        sweep.report.warnings.extend(coordinator.take_warnings());
        sweep.report.workers = coordinator.records();
    }
    if !save(shared.out_dir, &mut sweep.report, shared.ctx) {
        stop_reason = Some(shared.ctx.cancel.reason());
    }
    stop_reason
}

/// Under `run --resume`: whether the resumed run completed this point on every target (its
/// results stay as saved and it is not measured again).
fn kept_from_resumed_run(unit: &PointUnit<'_>, targets: &[&Arc<dyn Target>], sweep: &mut Sweep) -> bool {
    let Some(resume) = &mut sweep.resume else { return false };
    let experiment = unit.experiment;
    let expected: Vec<resume::Expected> =
        targets.iter().map(|t| resume::Expected { experiment: &experiment.name, target: &t.info().name, point: unit.point }).collect();
    let label = format!("{} · {}", experiment.name, report::format::point_words(&unit.point, experiment.op.kind()));
    if !resume.keeps(&expected, &label, &mut sweep.report) {
        return false;
    }
    let kept: Vec<PointOnTarget> = targets.iter().map(|t| unit.on(t)).collect();
    sweep.progress.kept(&kept);
    true
}

/// One target at one point: skipped (it failed earlier), not supported, or measured run by
/// run. The second value is the reason to stop the whole run, when it was stopped meanwhile.
async fn measure_target(unit: &PointUnit<'_>, target: &Arc<dyn Target>, sweep: &mut Sweep) -> (PointResult, Option<String>) {
    let (experiment, ctx) = (unit.experiment, unit.shared.ctx);
    let info = target.info();
    let base = PointResult {
        experiment: experiment.name.clone(),
        op: experiment.op.kind(),
        target: info.name.clone(),
        system: info.system.clone(),
        point: unit.point,
        status: PointStatus::Measured,
        runs: Vec::new(),
        summary: None,
        flags: Vec::new(),
        exports: None,
    };
    let at = [unit.on(target)];
    if let Some(why) = sweep.failed_targets.get(&info.name) {
        sweep.progress.skipped(&at);
        let skipped =
            PointResult { status: PointStatus::Incomplete { reason: format!("skipped: {why}") }, flags: vec![Flag::Incomplete], ..base };
        return (skipped, None);
    }
    if let Some(end) = unit.shared.budget_end
        && Instant::now() >= end
    {
        sweep.progress.skipped(&at);
        let reason =
            format!("not run: the --budget of {} was spent", crate::plan::estimate::human(unit.shared.plan.budget_secs.unwrap_or(0.0)));
        return (PointResult { status: PointStatus::Incomplete { reason }, flags: vec![Flag::Incomplete], ..base }, None);
    }
    if !info.capabilities.meets(&experiment.needs()) {
        let what = match experiment.op.query() {
            Some(q) => format!("{q:?}"),
            None => experiment.op.kind().to_string(),
        };
        let reason = format!("{} does not support {what}", info.system);
        sweep.progress.skipped(&at);
        return (PointResult { status: PointStatus::NotSupported { reason }, flags: vec![Flag::NotSupported], ..base }, None);
    }
    step(&sweep.progress, ctx, format!("measuring {} · {} · c={} b={}", experiment.name, info.name, unit.point.clients, unit.point.batch));
    sweep.progress.began(&at);
    let (runs, failure) = measure_runs(unit, target, sweep).await;
    sweep.progress.ended(&at);
    let mut result = PointResult { runs, ..base };
    let mut stop_reason = None;
    if let Some(reason) = failure {
        result.status = PointStatus::Incomplete { reason: reason.clone() };
        result.flags.push(Flag::Incomplete);
        if ctx.cancel.is_stopped() {
            stop_reason = Some(ctx.cancel.reason());
        } else {
            report_failed_target(&result, &reason, sweep);
        }
    }
    summarize_and_flag(&mut result);
    if let Some(precision) = unit.shared.plan.precision_of(experiment) {
        result.flags.extend(convergence_flag(&result, precision.target));
    }
    (result, stop_reason)
}

/// A target's point that failed (not stopped): a warning, and a target whose connections
/// failed is not retried for every remaining point; its later points are marked skipped.
fn report_failed_target(result: &PointResult, reason: &str, sweep: &mut Sweep) {
    sweep.report.warnings.push(format!("{} / {}: {reason}", result.experiment, result.target));
    let lost = result.runs.last().is_some_and(|r| r.errors.contains_key("connection") || r.errors.contains_key("timeout"));
    if lost {
        sweep.failed_targets.insert(result.target.clone(), format!("{} failed during {}", result.target, result.experiment));
    }
}

/// The warm-up and measured runs of one target at one point, each with the rows it needs
/// loaded first and its inserts removed after; stops at the first run that does not
/// finish. Returns the runs and, if one did not finish, why.
async fn measure_runs(unit: &PointUnit<'_>, target: &Arc<dyn Target>, sweep: &mut Sweep) -> (Vec<RunMeasurement>, Option<String>) {
    let (experiment, stream, ctx, dataset) = (unit.experiment, unit.stream, unit.shared.ctx, unit.shared.dataset);
    let info = target.info();
    let mut runs: Vec<RunMeasurement> = Vec::new();
    for run in 0..experiment.warmup + experiment.runs {
        if let Some(keys) = stream.rows_to_preload(unit.point_index, run) {
            let table = &dataset.tables[stream.table()];
            if let Err(e) = target.load(table, stopping::until_stopped(dataset.new_rows(stream.table(), keys), ctx.cancel.flag())).await {
                return (runs, Some(format!("loading rows for run {run} failed: {e}")));
            }
        }
        // Time-based runs show their time, not their ops (`Progress::start_timed`).
        let ops_done = if experiment.duration_secs.is_some() { Arc::default() } else { sweep.progress.counter() };
        let mut job = run_job(unit.shared.plan, experiment, target, stream, unit.point_index, run, ctx.cancel.flag(), ops_done);
        if let Some(end) = unit.shared.budget_end {
            let slowest = unit
                .shared
                .plan
                .costs
                .as_ref()
                .and_then(|c| c.cost(&info.name, unit.experiment_index))
                .map_or(0.0, |c| c.slowest_request_us);
            job.budget = Some(client::BudgetEnd {
                left: end.saturating_duration_since(Instant::now()),
                slowest_request: Duration::from_secs_f64(slowest / 1e6),
            });
        }
        let label = format!("{} / {} / c={} b={} run {run}", experiment.name, info.name, unit.point.clients, unit.point.batch);
        let id = workers::protocol::RunId {
            round: unit.round,
            experiment: unit.experiment_index,
            point: unit.point_index,
            target: info.name.clone(),
            run,
        };
        let planned_ops = job.seqs.end - job.seqs.start;
        let load_before = HostLoad::now();
        let time_based = experiment.duration_secs.is_some();
        if time_based {
            sweep.progress.run_started();
        }
        let mut m = workers::run(ctx.workers.as_deref(), id, &label, job).await;
        if time_based {
            sweep.progress.run_ended();
        }
        m.load = HostLoad::since(load_before);
        if info.system != "nodb"
            && let Err(warning) = remove_leftovers(unit, target.as_ref(), run, planned_ops, &m).await
        {
            sweep.report.warnings.push(format!("{} / {}: {warning}", experiment.name, info.name));
        }
        let complete = m.complete;
        runs.push(m);
        if !complete {
            let failure = if ctx.cancel.is_stopped() {
                "interrupted".to_string()
            } else {
                let last = runs.last().and_then(|r| r.error_samples.first().cloned()).unwrap_or_default();
                format!("run {run} stopped early: {last}")
            };
            return (runs, Some(failure));
        }
    }
    (runs, None)
}

/// Run `run` of point `point_index` of `experiment` on `target`: all of its clients and
/// ops (a worker takes its share of them); a time-based run (`--duration`) has more
/// sequence numbers than it can send and ends at its deadline.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_job(
    plan: &Plan,
    experiment: &Experiment,
    target: &Arc<dyn Target>,
    stream: &Arc<OpStream>,
    point_index: usize,
    run: u32,
    cancel: Arc<std::sync::atomic::AtomicBool>,
    progress: Arc<std::sync::atomic::AtomicU64>,
) -> RunJob {
    let point = experiment.points[point_index];
    RunJob {
        target: target.clone(),
        stream: stream.clone(),
        point,
        point_index,
        run,
        warmup: run < experiment.warmup,
        seqs: 0..stream.seqs_per_run(&point),
        clients: point.clients,
        timeout: Duration::from_secs_f64(plan.timeout_secs),
        cancel,
        progress,
        rate: point.rate.map(Rate::ops_per_sec),
        time_limit: experiment.duration_secs.or(experiment.time_limit_secs).map(Duration::from_secs_f64),
        min_run: experiment.min_run_secs.map(|secs| client::MinRun { ops: stream.ops_at(&point), lasting: Duration::from_secs_f64(secs) }),
        check_rows: target.info().system != "nodb",
        stop: plan
            .precision_of(experiment)
            .map(|p| monitor::StopRule { precision: p.target, max_time: Duration::from_secs_f64(p.max_time_secs) }),
        intervals: plan.hlog_interval.filter(|_| run >= experiment.warmup),
        cold_call: false,
        budget: None,
    }
}

/// The lifecycle experiments (the in-memory study's phases), after the measured ones.
async fn run_lifecycle_phases(shared: &Shared<'_>, streams: &[Arc<OpStream>], sweep: &mut Sweep) -> Result<Option<String>> {
    let phases: Vec<lifecycle::Phase> = shared
        .plan
        .experiments
        .iter()
        .zip(streams)
        .enumerate()
        .filter(|(_, (e, _))| e.lifecycle)
        .map(|(index, (experiment, stream))| lifecycle::Phase { index, experiment, stream: stream.clone() })
        .collect();
    lifecycle::run(shared, &phases, &mut sweep.report, &mut sweep.progress, &mut sweep.failed_targets, &mut sweep.resume).await
}

/// Shows a step on the progress line and records it for the message of a stop.
pub(super) fn step(progress: &Progress, ctx: &RunContext, what: String) {
    ctx.activity.doing(what.clone());
    progress.message(what);
}
