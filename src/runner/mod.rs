//! Executes a plan: opens and prepares every target, loads data, runs every experiment
//! point on every target (warm-up + measured runs), flags results, and saves the report
//! after each point so a later failure or Ctrl-C loses nothing.
//!
//! Owns ordering (points outer, targets inner, so drift hits all systems alike), the
//! NO-DB ceiling comparison, answer comparison, and cleanup. Must not format output; the
//! report module does.

pub mod cancel;
pub mod client;
mod lifecycle;
pub mod memory;
pub mod merge;
pub mod progress;
pub mod stopping;
mod verify;

use crate::adapter::lease::{Holder, Leases};
use crate::adapter::registry;
use crate::adapter::{OpenContext, Target};
use crate::base::measurement::RunMeasurement;
use crate::base::op::{Answer, OpKind, QueryId};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::report::model::{Flag, PointResult, PointStatus, PointSummary, Report, Unavailable};
use crate::report::{self, environment};
use crate::stats::{median, merge_summaries};
use crate::workload::experiment::{ExperimentOp, OpStream};
pub use cancel::{Cancel, StopCause};
use client::RunJob;
use progress::Progress;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// A result is flagged client-bound when it reaches this share of the NO-DB ceiling: the
/// client then spends at least a quarter of each op's time in its own machinery.
pub const CLIENT_BOUND_SHARE: f64 = 0.25;

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
    /// Settings to record per target name beyond what the adapter reports (e.g. how a
    /// spawned server was started).
    pub extra_settings: BTreeMap<String, BTreeMap<String, String>>,
    /// The process (and process-group) id of each spawned server, by target name: its
    /// resident memory is read from /proc in studies that measure memory.
    pub server_pids: BTreeMap<String, u32>,
}

/// Runs a plan; returns the report and the directory it was written to.
pub async fn execute(plan: &Plan, ctx: &RunContext) -> Result<(Report, PathBuf)> {
    let started = SystemTime::now();
    let shard = plan.shard.as_ref().map(|w| format!("-shard{}of{}", w.shard.index, w.shard.count)).unwrap_or_default();
    let out_path = plan.out.clone().unwrap_or_else(|| ctx.runs_root.join(format!("{}{shard}-{}", plan.study, environment::stamp(started))));
    // Claimed first, so a second run with the same --out refuses at once.
    let mut run_dir = report::RunDir::claim(&out_path)?;
    let out_dir = run_dir.path().to_path_buf();

    let scratch = tempfile::Builder::new()
        .prefix("dbsweep-scratch-")
        .tempdir()
        .map_err(|e| Error::runtime(format!("cannot create a scratch directory: {e}")))?;
    let holder = Holder::this_process();
    let open_ctx = OpenContext { scratch_dir: scratch.path().to_path_buf(), namespace: plan.namespace.clone(), holder: holder.clone() };
    let targets: Vec<Arc<dyn Target>> = plan.targets.iter().map(|t| registry::open(&t.name, &t.url, &open_ctx)).collect::<Result<_>>()?;
    let dataset = Dataset::new(&plan.data, plan.seed);
    let mut progress = Progress::new(ctx.show_progress);

    // One run at a time per namespace: the leases come before anything is touched, and a
    // run that finds one held refuses here.
    let leases = Arc::new(Leases::acquire_all(&targets, &holder).await?);
    let renewal = {
        let cancel = ctx.cancel.clone();
        leases.keep_renewed(move |lost| cancel.stop(StopCause::Failure(format!("{lost}; stopped without touching its data again"))))
    };

    // Prepare and load every target before writing anything: bad input and unreachable
    // servers fail here and leave nothing behind. Ctrl-C or SIGTERM ends the setup at once.
    let mut prepared: Vec<Arc<dyn Target>> = Vec::new();
    let setup = tokio::select! {
        result = prepare_and_load(&targets, &dataset, &mut progress, &mut prepared, ctx) => result,
        () = ctx.cancel.stopped() => Ok(()),
    };
    let mut report = new_report(plan, ctx, &targets, started);
    report.warnings.extend(leases.notes.iter().cloned());
    if ctx.cancel.is_stopped() {
        progress.finish();
        report.warnings.extend(release_targets(&prepared, &leases, renewal, ctx.keep_data, ctx).await);
        drop(scratch);
        run_dir.keep();
        return finish(report, Some(ctx.cancel.reason()), ctx, &out_dir);
    }
    if let Err(e) = setup {
        release_targets(&prepared, &leases, renewal, false, ctx).await;
        return Err(e);
    }
    run_dir.keep();
    let mut stop_reason: Option<String> = (!save(&out_dir, &report, &ctx.cancel)).then(|| ctx.cancel.reason());

    let streams: Vec<Arc<OpStream>> =
        crate::workload::experiment::streams(&plan.experiments, &dataset, plan.seed).into_iter().map(Arc::new).collect();
    let total_ops: u64 = plan
        .experiments
        .iter()
        .zip(&streams)
        .enumerate()
        .map(|(ei, (e, stream))| {
            let per_run: u64 = e.points.iter().map(|p| stream.ops_at(p)).sum();
            let targets = targets.iter().filter(|t| plan.runs_unit(&t.info().name, ei)).count();
            per_run * (e.warmup + e.runs) as u64 * targets as u64
        })
        .sum();
    progress.start(total_ops);
    let mut failed_targets: BTreeMap<String, String> = BTreeMap::new();
    let mut references = References::default();

    // YCSB record counts: each is loaded on its own and every experiment runs its points at
    // that count on it; points without a count (the echo floor) run on the first data.
    let rounds: Vec<Option<u64>> = match plan.data.record_counts() {
        counts if counts.len() > 1 => counts.into_iter().map(Some).collect(),
        counts => vec![counts.first().copied()],
    };
    let schedule = rounds.iter().enumerate().flat_map(|(ri, _)| (0..plan.experiments.len()).map(move |ei| (ri, ei)));
    let mut round_streams = streams.clone();
    let mut current_round = 0;
    'experiments: for (ri, ei) in schedule {
        let experiment = &plan.experiments[ei];
        if stop_reason.is_some() {
            break;
        }
        if experiment.lifecycle {
            continue;
        }
        if ri != current_round {
            current_round = ri;
            if ctx.cancel.is_stopped() {
                stop_reason = Some(ctx.cancel.reason());
                break;
            }
            let records = rounds[ri].unwrap_or(0);
            let data = Dataset::new(&plan.data.with_records(records), plan.seed);
            reload(&targets, &data, &mut failed_targets, &mut progress, &mut report.warnings, ctx).await;
            round_streams = plan
                .experiments
                .iter()
                .enumerate()
                .map(|(i, e)| Arc::new(OpStream::new(e, i, &data, plan.seed, e.warmup + e.runs)))
                .collect();
        }
        let stream = &round_streams[ei];
        let in_round = |p: &crate::workload::experiment::Point| match p.param {
            _ if rounds.len() == 1 => true,
            None => ri == 0,
            n => n == rounds[ri],
        };
        let total_runs = experiment.warmup + experiment.runs;
        let precision = plan.precision_of(experiment);
        let stop_rule = precision.map(|p| client::StopRule { precision: p.target, max_time: Duration::from_secs_f64(p.max_time_secs) });
        // The echo floor is always a closed-loop measurement of the bare round trip.
        let point_rate = if experiment.name == crate::plan::FLOOR_EXPERIMENT { None } else { plan.rate };
        for (pi, point) in experiment.points.iter().enumerate() {
            if !in_round(point) {
                continue;
            }
            let mut results = Vec::new();
            for target in targets.iter().filter(|t| plan.runs_unit(&t.info().name, ei)) {
                let info = target.info();
                let base = PointResult {
                    experiment: experiment.name.clone(),
                    op: experiment.op.kind(),
                    target: info.name.clone(),
                    system: info.system.clone(),
                    point: *point,
                    rate: point_rate,
                    status: PointStatus::Measured,
                    runs: Vec::new(),
                    summary: None,
                    flags: Vec::new(),
                };
                if let Some(why) = failed_targets.get(&info.name) {
                    results.push(PointResult {
                        status: PointStatus::Incomplete { reason: format!("skipped: {why}") },
                        flags: vec![Flag::Incomplete],
                        ..base
                    });
                    continue;
                }
                if !info.capabilities.meets(&experiment.op.needs(stream.workload())) {
                    let what = match experiment.op.query() {
                        Some(q) => format!("{q:?}"),
                        None => experiment.op.kind().to_string(),
                    };
                    results.push(PointResult {
                        status: PointStatus::NotSupported { reason: format!("{} does not support {what}", info.system) },
                        flags: vec![Flag::NotSupported],
                        ..base
                    });
                    continue;
                }
                step(&progress, ctx, format!("measuring {} · {} · c={} b={}", experiment.name, info.name, point.clients, point.batch));
                let mut runs: Vec<RunMeasurement> = Vec::new();
                let mut failure = None;
                for run in 0..total_runs {
                    if let Some(keys) = stream.rows_to_preload(pi, run) {
                        let table = &dataset.tables[stream.table()];
                        if let Err(e) =
                            target.load(table, stopping::until_stopped(dataset.new_rows(stream.table(), keys), ctx.cancel.flag())).await
                        {
                            failure = Some(format!("loading rows for run {run} failed: {e}"));
                            break;
                        }
                    }
                    let job = Arc::new(RunJob {
                        target: target.clone(),
                        stream: stream.clone(),
                        point: *point,
                        point_index: pi,
                        run,
                        warmup: run < experiment.warmup,
                        ops: stream.ops_at(point),
                        timeout: Duration::from_secs_f64(plan.timeout_secs),
                        cancel: ctx.cancel.flag(),
                        progress: progress.counter(),
                        rate: point_rate,
                        time_limit: experiment.time_limit_secs.map(Duration::from_secs_f64),
                        check_rows: info.system != "nodb",
                        stop: stop_rule,
                    });
                    let planned_ops = job.ops;
                    let m = client::run_once(job).await;
                    if experiment.op == ExperimentOp::Insert && info.system != "nodb" {
                        // Later experiments (index ranges, analytic queries) expect the
                        // generated data: remove what this run inserted, untimed. A run
                        // stopped early inserted the keys of its first ops only.
                        let mut keys = stream.inserted_keys(point, pi, run);
                        keys.truncate(m.ops as usize);
                        if let Err(e) = remove_keys(target.as_ref(), stream.table(), &keys, Some(m.rows)).await {
                            report.warnings.push(format!("{} / {}: inserted rows left in place: {e}", experiment.name, info.name));
                        }
                    }
                    if experiment.op == ExperimentOp::Delete && info.system != "nodb" && m.ops < planned_ops && m.complete {
                        // A delete run stopped early left rows of its preloaded keys: remove
                        // them, untimed, so later experiments see the generated data.
                        let left: Vec<i64> = (m.ops..planned_ops)
                            .filter_map(|seq| match stream.op(point, pi, run, seq) {
                                crate::base::op::Op::Delete { key, .. } => Some(key),
                                _ => None,
                            })
                            .collect();
                        if let Err(e) = remove_keys(target.as_ref(), stream.table(), &left, None).await {
                            report.warnings.push(format!("{} / {}: preloaded rows left in place: {e}", experiment.name, info.name));
                        }
                    }
                    let complete = m.complete;
                    runs.push(m);
                    if !complete {
                        failure = Some(if ctx.cancel.is_stopped() {
                            "interrupted".to_string()
                        } else {
                            let last = runs.last().and_then(|r| r.error_samples.first().cloned()).unwrap_or_default();
                            format!("run {run} stopped early: {last}")
                        });
                        break;
                    }
                }
                let mut result = PointResult { runs, ..base };
                if let Some(reason) = failure {
                    result.status = PointStatus::Incomplete { reason: reason.clone() };
                    result.flags.push(Flag::Incomplete);
                    if ctx.cancel.is_stopped() {
                        stop_reason = Some(ctx.cancel.reason());
                    } else {
                        report.warnings.push(format!("{} / {}: {reason}", experiment.name, info.name));
                        // A target whose connections failed is not retried for every
                        // remaining point; its later points are marked skipped.
                        let lost =
                            result.runs.last().is_some_and(|r| r.errors.contains_key("connection") || r.errors.contains_key("timeout"));
                        if lost {
                            failed_targets.insert(info.name.clone(), format!("{} failed during {}", info.name, experiment.name));
                        }
                    }
                }
                result.summary = summarize(&result);
                result.flags.extend(void_flags(&result.runs));
                result.flags.extend(retry_flag(&result.runs));
                result.flags.extend(precision.and_then(|p| convergence_flag(&result, p.target)));
                results.push(result);
                if stop_reason.is_some() {
                    break;
                }
            }
            flag_point(&mut results);
            if let Some(q) = experiment.op.query()
                && let Some(reference) = references.answer(&plan.data, q)
            {
                flag_against_reference(&mut results, reference);
            }
            report.points.extend(results);
            if !save(&out_dir, &report, &ctx.cancel) {
                stop_reason = Some(ctx.cancel.reason());
            }
            if stop_reason.is_some() {
                break 'experiments;
            }
        }
        if experiment.op == ExperimentOp::Ycsb {
            remove_workload_inserts(&targets, &failed_targets, experiment, stream, &in_round, &mut report.warnings).await;
        }
    }
    if stop_reason.is_none() {
        let phases: Vec<lifecycle::Phase> = plan
            .experiments
            .iter()
            .zip(&streams)
            .filter(|(e, _)| e.lifecycle)
            .map(|(experiment, stream)| lifecycle::Phase { experiment, stream: stream.clone() })
            .collect();
        let shared = lifecycle::Shared { plan, ctx, targets: &targets, dataset: &dataset, out_dir: &out_dir };
        stop_reason = lifecycle::run(&shared, &phases, &mut report, &mut progress, &mut failed_targets).await?;
    }
    progress.finish();

    report.warnings.extend(release_targets(&targets, &leases, renewal, ctx.keep_data, ctx).await);
    // The scratch directory goes before the last write: on a full disk that frees room.
    drop(scratch);
    finish(report, stop_reason, ctx, &out_dir)
}

/// Prepares every target and loads its initial rows; `prepared` collects the targets that
/// need cleaning up. A stop request ends a load early (its row stream dries up), so even an
/// engine whose load blocks its thread returns promptly.
async fn prepare_and_load(
    targets: &[Arc<dyn Target>],
    dataset: &Dataset,
    progress: &mut Progress,
    prepared: &mut Vec<Arc<dyn Target>>,
    ctx: &RunContext,
) -> Result<()> {
    step(progress, ctx, "generating the data".into());
    // Off the async threads, so a stop request is answered while it runs.
    let warm = dataset.clone();
    tokio::task::spawn_blocking(move || warm.warm_up()).await.map_err(|e| Error::runtime(format!("generating the data failed: {e}")))?;
    for t in targets {
        let name = &t.info().name;
        step(progress, ctx, format!("preparing {name}"));
        t.prepare(&dataset.tables).await?;
        if t.info().system != "nodb" {
            ctx.activity.holds_data(name);
        }
        prepared.push(t.clone());
        for (id, table) in dataset.tables.iter().enumerate() {
            step(progress, ctx, format!("loading {} into {name}", table.name));
            let n = dataset.initial_rows(id);
            let rows = stopping::until_stopped(dataset.initial(id), ctx.cancel.flag());
            let loaded = t.load(table, rows).await.map_err(|e| lost_while_loading(t.as_ref(), &table.name, e))?;
            if ctx.cancel.is_stopped() {
                return Ok(());
            }
            if loaded != n {
                return Err(Error::runtime(format!("{name}: loaded {loaded} of {n} rows into {}", table.name)));
            }
        }
    }
    Ok(())
}

/// A load failing with `Unreachable` after `prepare` reached the server: the server went
/// away mid-run, a run failure (exit 1) rather than a URL to fix (exit 2).
fn lost_while_loading(target: &dyn Target, table: &str, e: Error) -> Error {
    match e {
        Error::Unreachable { detail, .. } => Error::runtime(format!(
            "{}: the server went away while loading {table} (it had answered while preparing): {detail}",
            target.info().name
        )),
        other => other,
    }
}

/// The report as it starts: plan, environment and targets, no points yet.
fn new_report(plan: &Plan, ctx: &RunContext, targets: &[Arc<dyn Target>], started: SystemTime) -> Report {
    Report {
        format: "dbsweep-report".into(),
        format_version: report::model::FORMAT_VERSION,
        dbsweep_version: env!("CARGO_PKG_VERSION").into(),
        git_revision: option_env!("DBSWEEP_GIT_REVISION").map(str::to_string),
        command: ctx.command.clone(),
        started_at: environment::rfc3339(started),
        finished_at: None,
        complete: false,
        incomplete_reason: Some("running".into()),
        plan: plan.to_json(),
        study: plan.study.clone(),
        seed: plan.seed,
        environment: environment::probe(),
        targets: targets
            .iter()
            .map(|t| {
                let mut info = t.info().clone();
                if let Some(extra) = ctx.extra_settings.get(&info.name) {
                    info.settings.extend(extra.clone());
                }
                info
            })
            .collect(),
        unavailable: ctx.unavailable.clone(),
        points: Vec::new(),
        warnings: plan.warnings.clone(),
        plan_hash: Some(plan.hash.clone()),
        shard: plan.shard.as_ref().map(|w| w.shard),
        merged_from: Vec::new(),
    }
}

/// Writes the finished report (complete, or why not) and turns an early stop into the
/// error of its cause: Ctrl-C (exit 130), SIGTERM (143), a failure such as a full disk (1).
fn finish(mut report: Report, stop_reason: Option<String>, ctx: &RunContext, out_dir: &Path) -> Result<(Report, PathBuf)> {
    let failed_points = report.points.iter().any(|p| matches!(p.status, PointStatus::Incomplete { .. }));
    report.finished_at = Some(environment::now_rfc3339());
    report.complete = stop_reason.is_none() && !failed_points;
    report.incomplete_reason = match (&stop_reason, failed_points) {
        (Some(r), _) => Some(r.clone()),
        (None, true) => Some("some points did not finish; see warnings".into()),
        (None, false) => None,
    };
    if let Err(e) = report::write_all(out_dir, &report) {
        // Most likely a full disk: make room by removing the two files that are rendered
        // from report.json, and finish report.json itself.
        let _ = std::fs::remove_file(out_dir.join(report::RESULTS_CSV));
        let _ = std::fs::remove_file(out_dir.join(report::REPORT_HTML));
        let reason = report.incomplete_reason.take().unwrap_or_else(|| "finished".into());
        report.incomplete_reason = Some(format!(
            "{reason}; then {e}: {} and {} were removed to make room (`dbsweep report {}` renders them again)",
            report::RESULTS_CSV,
            report::REPORT_HTML,
            out_dir.display()
        ));
        report.complete = false;
        // Compact, to need as little room as possible; `dbsweep report` reads it alike.
        let json = serde_json::to_vec(&report).map_err(|e| Error::runtime(format!("cannot encode report: {e}")))?;
        report::write_atomic(&out_dir.join(report::REPORT_JSON), &json)?;
        return Err(Error::runtime(format!("{e}; report.json in {} says what was measured", out_dir.display())));
    }
    if stop_reason.is_some() {
        return Err(ctx.cancel.cause().cloned().unwrap_or(StopCause::CtrlC).into_error(Some(out_dir)));
    }
    Ok((report, out_dir.to_path_buf()))
}

/// Saves the report after a point; a failed write (a full disk) stops the run like a
/// signal would, so it still ends with cleanup and a finished report where possible.
fn save(out_dir: &Path, report: &Report, cancel: &Cancel) -> bool {
    match report::write_all(out_dir, report) {
        Ok(()) => true,
        Err(e) => {
            cancel.stop(StopCause::Failure(e.to_string()));
            false
        }
    }
}

/// Ends this run's use of its targets: stops renewing the leases, removes what the run
/// created (unless `keep_data`) wherever its lease is still its own, and gives the leases
/// back. After a stop request the spawned servers' data is not removed: they are killed
/// with their directories, data and all. Returns warnings for the report.
async fn release_targets(
    targets: &[Arc<dyn Target>],
    leases: &Leases,
    renewal: tokio::task::JoinHandle<()>,
    keep_data: bool,
    ctx: &RunContext,
) -> Vec<String> {
    renewal.abort();
    let _ = renewal.await;
    // A last renewal tells whether another run took a namespace over meanwhile.
    let mut warnings = leases.renew_all().await;
    let stopping = ctx.cancel.is_stopped();
    for t in targets {
        let name = &t.info().name;
        if keep_data || (stopping && ctx.server_pids.contains_key(name)) {
            ctx.activity.data_released(name);
            continue;
        }
        if !leases.still_ours(t) {
            warnings.push(format!("{name}: not cleaned up: another dbsweep run holds its namespace now"));
        } else {
            ctx.activity.doing(format!("removing dbsweep's data from {name}"));
            if let Err(e) = t.cleanup().await {
                tracing::warn!("cleanup of {name} failed: {e}");
            }
        }
        ctx.activity.data_released(name);
    }
    ctx.activity.doing("giving back the run's leases");
    leases.release_all().await;
    warnings
}

/// Deletes `keys` in batches, untimed, so every experiment leaves the data as it found it.
/// With `inserted`, the run's count of inserted rows: every one must be found again, which
/// checks that they were stored.
async fn remove_keys(target: &dyn Target, table: crate::base::table::TableId, keys: &[i64], inserted: Option<u64>) -> Result<()> {
    if !target.info().capabilities.supports_kind(OpKind::Delete) {
        return Err(Error::runtime(format!("{} cannot delete", target.info().system)));
    }
    let mut conn = target.connect().await?;
    let mut deleted = 0;
    for chunk in keys.chunks(500) {
        let ops: Vec<crate::base::op::Op> = chunk.iter().map(|&key| crate::base::op::Op::Delete { table, key }).collect();
        deleted += conn.execute_batch(&ops).await.map_err(|e| Error::runtime(e.to_string()))?.rows;
    }
    match inserted {
        Some(n) if n != deleted => Err(Error::runtime(format!("{n} rows reported inserted, {deleted} found stored"))),
        _ => Ok(()),
    }
}

/// After a YCSB workload with inserts ran its points at one record count: removes the
/// records it inserted from every target, so the next workload reads exactly the loaded
/// records (YCSB's advice: reload between workloads that insert).
async fn remove_workload_inserts(
    targets: &[Arc<dyn Target>],
    failed_targets: &BTreeMap<String, String>,
    experiment: &crate::workload::experiment::Experiment,
    stream: &OpStream,
    in_round: &dyn Fn(&crate::workload::experiment::Point) -> bool,
    warnings: &mut Vec<String>,
) {
    let mut keys = Vec::new();
    for (pi, point) in experiment.points.iter().enumerate().filter(|(_, p)| in_round(p)) {
        for run in 0..experiment.warmup + experiment.runs {
            keys.extend(stream.inserted_keys(point, pi, run));
        }
    }
    if keys.is_empty() {
        return;
    }
    for t in targets.iter().filter(|t| t.info().system != "nodb" && !failed_targets.contains_key(&t.info().name)) {
        if let Err(e) = remove_keys(t.as_ref(), stream.table(), &keys, None).await {
            warnings.push(format!("{} / {}: records the workload inserted were left in place: {e}", experiment.name, t.info().name));
        }
    }
}

/// Replaces every target's data with `dataset` (the next YCSB record count): its tables
/// are dropped and recreated by `prepare` and loaded again. A target that fails is skipped
/// from then on.
async fn reload(
    targets: &[Arc<dyn Target>],
    dataset: &Dataset,
    failed_targets: &mut BTreeMap<String, String>,
    progress: &mut Progress,
    warnings: &mut Vec<String>,
    ctx: &RunContext,
) {
    for t in targets {
        let name = t.info().name.clone();
        if failed_targets.contains_key(&name) || ctx.cancel.is_stopped() {
            continue;
        }
        let result = async {
            t.prepare(&dataset.tables).await?;
            for (id, table) in dataset.tables.iter().enumerate() {
                let n = dataset.initial_rows(id);
                step(progress, ctx, format!("loading {n} records of {} into {name}", table.name));
                let loaded = t.load(table, stopping::until_stopped(dataset.initial(id), ctx.cancel.flag())).await?;
                if ctx.cancel.is_stopped() {
                    return Ok(());
                }
                if loaded != n {
                    return Err(Error::runtime(format!("loaded {loaded} of {n} rows into {}", table.name)));
                }
            }
            Ok::<(), Error>(())
        }
        .await;
        if let Err(e) = result {
            warnings.push(format!("{name}: loading the next record count failed: {e}"));
            failed_targets.insert(name.clone(), format!("{name} could not load the next record count"));
        }
    }
}

/// Exact reference answers of analytic queries, computed once per run from the generator.
#[derive(Default)]
struct References {
    answers: BTreeMap<String, Answer>,
}

impl References {
    fn answer(&mut self, data: &crate::data::DataSpec, query: QueryId) -> Option<&Answer> {
        let crate::data::DataSpec::Tpch { scale } = data else { return None };
        let key = format!("{query:?}");
        if !self.answers.contains_key(&key) {
            self.answers.insert(key.clone(), crate::data::tpch_reference::answer(query, *scale));
        }
        self.answers.get(&key)
    }
}

/// A query answer that differs from the exact reference voids that timing.
fn flag_against_reference(results: &mut [PointResult], reference: &Answer) {
    for r in results.iter_mut() {
        let wrong = r.runs.iter().filter(|m| !m.warmup).filter_map(|m| m.sample_answer.as_ref()).any(|a| !a.agrees_with(reference));
        if wrong {
            r.flags.push(Flag::AnswerMismatch { detail: "differs from the exact TPC-H reference answer".into() });
        }
    }
}

/// Shows a step on the progress line and records it for the message of a stop.
pub(super) fn step(progress: &Progress, ctx: &RunContext, what: String) {
    ctx.activity.doing(what.clone());
    progress.message(what);
}

/// Median and spread over the measured runs. A point with a failed or short request in
/// any run (warm-up included: it shows something broke) is void: no throughput.
fn summarize(result: &PointResult) -> Option<PointSummary> {
    let measured: Vec<&RunMeasurement> = result.runs.iter().filter(|r| !r.warmup && r.complete).collect();
    if measured.is_empty() {
        return None;
    }
    let void = result.runs.iter().any(RunMeasurement::is_void);
    let throughput: Vec<f64> = measured.iter().map(|r| r.ops_per_sec().unwrap_or(0.0)).collect();
    let rows: Vec<f64> = measured.iter().map(|r| r.rows_per_sec().unwrap_or(0.0)).collect();
    let valid = |v: f64| (!void).then_some(v);
    // A mixed (YCSB) point's latency merges every kind; per-kind latencies stay in the runs.
    let of_point = |m: &BTreeMap<OpKind, crate::base::measurement::LatencySummary>| -> Vec<crate::base::measurement::LatencySummary> {
        match result.op {
            OpKind::Mixed => m.values().cloned().collect(),
            kind => m.get(&kind).cloned().into_iter().collect(),
        }
    };
    let service: Vec<_> = measured.iter().flat_map(|r| of_point(&r.service)).collect();
    let response: Vec<_> = measured.iter().flat_map(|r| of_point(&r.response)).collect();
    let latency = merge_summaries(service.iter());
    let response_latency = merge_summaries(response.iter());
    let per_row_p50_us =
        (result.point.batched && result.point.batch > 1).then(|| latency.as_ref().map(|l| l.p50_us / result.point.batch as f64)).flatten();
    Some(PointSummary {
        measured_runs: measured.len(),
        median_ops_per_sec: valid(median(&throughput)),
        min_ops_per_sec: valid(throughput.iter().copied().fold(f64::INFINITY, f64::min)),
        max_ops_per_sec: valid(throughput.iter().copied().fold(0.0, f64::max)),
        median_rows_per_sec: valid(median(&rows)),
        latency,
        response_latency,
        per_row_p50_us,
        client_share: None,
        errors: result.runs.iter().map(RunMeasurement::error_count).sum(),
        failed_ops: result.runs.iter().map(|r| r.failed_ops).sum(),
        missing_rows: result.runs.iter().map(|r| r.missing_rows).sum(),
        retries: measured.iter().map(|r| r.retries).sum(),
        memory: memory::summarize(&measured),
        by_kind: if result.op == OpKind::Mixed { by_kind(&measured, void) } else { BTreeMap::new() },
        precision: measured.iter().map(|r| r.precision).try_fold(0.0, |widest: f64, p| p.map(|p| widest.max(p))),
    })
}

/// Per operation type of a mixed (YCSB) point: its ops per second of each run (median,
/// min, max; none for a void point) and its latency merged over the runs.
fn by_kind(measured: &[&RunMeasurement], void: bool) -> BTreeMap<OpKind, crate::report::model::KindSummary> {
    let kinds: std::collections::BTreeSet<OpKind> = measured.iter().flat_map(|r| r.service.keys().copied()).collect();
    kinds
        .into_iter()
        .filter_map(|kind| {
            let latency = merge_summaries(measured.iter().filter_map(|r| r.service.get(&kind)))?;
            let rates: Vec<f64> =
                measured.iter().map(|r| r.service.get(&kind).map_or(0, |l| l.count) as f64 / r.seconds.max(1e-12)).collect();
            let valid = |v: f64| (!void).then_some(v);
            let summary = crate::report::model::KindSummary {
                median_ops_per_sec: valid(median(&rates)),
                min_ops_per_sec: valid(rates.iter().copied().fold(f64::INFINITY, f64::min)),
                max_ops_per_sec: valid(rates.iter().copied().fold(0.0, f64::max)),
                latency,
            };
            Some((kind, summary))
        })
        .collect()
}

/// The flags that void a point: failed requests and missing rows in any of its runs,
/// warm-up included.
fn void_flags(runs: &[RunMeasurement]) -> Vec<Flag> {
    let count: u64 = runs.iter().map(RunMeasurement::error_count).sum();
    let failed_ops = runs.iter().map(|r| r.failed_ops).sum();
    let missing: u64 = runs.iter().map(|r| r.missing_rows).sum();
    let mut flags = Vec::new();
    if count > 0 {
        flags.push(Flag::Errors { count, failed_ops });
    }
    if missing > 0 {
        flags.push(Flag::MissingRows { count: missing });
    }
    flags
}

/// Under `--precision`: the flag of a measured point whose runs did not all reach the
/// precision asked before their caps.
fn convergence_flag(result: &PointResult, asked: f64) -> Option<Flag> {
    let summary = result.summary.as_ref()?;
    let reached = summary.precision;
    reached.is_none_or(|p| p > asked).then_some(Flag::NotConverged { asked, reached })
}

/// The flag of a point whose measured runs retried requests after conflicts (not void).
fn retry_flag(runs: &[RunMeasurement]) -> Option<Flag> {
    let count: u64 = runs.iter().filter(|r| !r.warmup).map(|r| r.retries).sum();
    (count > 0).then_some(Flag::Retried { count })
}

/// Cross-target flags for one point: the share of the NO-DB ceiling, and answers that
/// disagree with the other systems' (or change between runs of the same system).
fn flag_point(results: &mut [PointResult]) {
    flag_client_bound(results);
    for r in results.iter_mut() {
        let seen = observed_answers(r);
        if seen.windows(2).any(|w| !w[0].agrees(&w[1])) {
            r.flags.push(Flag::AnswerMismatch { detail: "answers changed between runs of the same ops".into() });
        }
    }
    flag_differing_answers(results);
}

/// Each non-NO-DB result's share of the NO-DB ceiling at the same point; flagged
/// client-bound at `CLIENT_BOUND_SHARE` or more.
fn flag_client_bound(results: &mut [PointResult]) {
    let ceiling = results.iter().find(|r| r.system == "nodb").and_then(|r| r.summary.as_ref()).and_then(|s| s.median_ops_per_sec);
    for r in results.iter_mut().filter(|r| r.system != "nodb") {
        if let (Some(c), Some(s)) = (ceiling, r.summary.as_mut())
            && let Some(median) = s.median_ops_per_sec
            && c > 0.0
        {
            let share = median / c;
            s.client_share = Some(share);
            if share >= CLIENT_BOUND_SHARE {
                r.flags.push(Flag::ClientBound { share });
            }
        }
    }
}

/// How a mismatch across targets is described (`merge` recomputes exactly these).
const DIFFER_FROM: &str = "answers differ from ";

/// Answers: every measured run of a point executes the same ops, so answers must agree
/// across targets. Query results are compared whole with numeric tolerance; COUNT/MAX
/// answers by digest.
fn flag_differing_answers(results: &mut [PointResult]) {
    let answers: Vec<Vec<Observed>> = results.iter().map(observed_answers).collect();
    let firsts: Vec<Option<&Observed>> = answers.iter().map(|a| a.first()).collect();
    let present: Vec<&Observed> = firsts.iter().flatten().copied().collect();
    if present.len() < 2 {
        return;
    }
    let support = |o: &Observed| present.iter().filter(|p| p.agrees(o)).count();
    let best = present.iter().copied().max_by_key(|o| support(o)).expect("non-empty");
    let clear_majority = support(best) * 2 > present.len();
    let agreed_by: Vec<String> =
        results.iter().zip(&firsts).filter(|(_, o)| o.is_some_and(|o| o.agrees(best))).map(|(r, _)| r.target.clone()).collect();
    for (r, o) in results.iter_mut().zip(&firsts) {
        if let Some(o) = o
            && (!o.agrees(best) || !clear_majority)
        {
            r.flags.push(Flag::AnswerMismatch { detail: format!("{DIFFER_FROM}{}", agreed_by.join(", ")) });
        }
    }
}

/// The answers of a result's measured, complete, valid runs.
fn observed_answers(r: &PointResult) -> Vec<Observed> {
    r.runs.iter().filter(|m| !m.warmup && m.complete && !m.is_void()).filter_map(Observed::of).collect()
}

/// An answer a run produced, in the form it is compared in.
enum Observed {
    Digest(Digests),
    Whole(crate::base::op::Answer),
}

/// The answer digests of a run: of all its ops, and (under `--precision`) per block of
/// sequence numbers.
struct Digests {
    whole: String,
    ops: u64,
    blocks: Vec<String>,
}

impl Digests {
    /// Runs of the same ops agree when their digests do; runs that stopped after different
    /// numbers of ops (`--precision`) are compared over the blocks both completed.
    fn agrees(&self, other: &Digests) -> bool {
        if self.ops == other.ops || self.blocks.is_empty() || other.blocks.is_empty() {
            return self.whole == other.whole;
        }
        let done = self.ops.min(other.ops);
        let block = |blocks: &[String], k: usize| blocks.get(k).cloned().unwrap_or_else(|| format!("{:016x}", 0));
        (0..).take_while(|&k| crate::stats::answer_block_end(k) <= done).all(|k| block(&self.blocks, k) == block(&other.blocks, k))
    }
}

impl Observed {
    fn of(m: &RunMeasurement) -> Option<Observed> {
        match (&m.sample_answer, &m.answer_digest) {
            (Some(a), _) => Some(Observed::Whole(a.clone())),
            (None, Some(d)) => Some(Observed::Digest(Digests { whole: d.clone(), ops: m.ops, blocks: m.answer_blocks.clone() })),
            _ => None,
        }
    }

    fn agrees(&self, other: &Observed) -> bool {
        match (self, other) {
            (Observed::Digest(a), Observed::Digest(b)) => a.agrees(b),
            (Observed::Whole(a), Observed::Whole(b)) => a.agrees_with(b),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::op::OpKind;
    use crate::workload::experiment::Point;
    use std::collections::BTreeMap;

    fn result(target: &str, system: &str, ops_per_sec: f64, digests: &[&str]) -> PointResult {
        let runs = digests
            .iter()
            .enumerate()
            .map(|(i, d)| RunMeasurement {
                run: i as u32,
                warmup: false,
                complete: true,
                ops: ops_per_sec as u64,
                ok_ops: ops_per_sec as u64,
                failed_ops: 0,
                short_ops: 0,
                missing_rows: 0,
                requests: ops_per_sec as u64,
                rows: 0,
                retries: 0,
                seconds: 1.0,
                client_cpu_seconds: 0.0,
                errors: BTreeMap::new(),
                error_samples: vec![],
                late_ops: 0,
                sample_answer: None,
                answer_digest: (!d.is_empty()).then(|| d.to_string()),
                answer_blocks: vec![],
                precision: None,
                service: BTreeMap::new(),
                response: BTreeMap::new(),
                memory: None,
            })
            .collect();
        let mut r = PointResult {
            experiment: "e".into(),
            op: OpKind::RangeCount,
            target: target.into(),
            system: system.into(),
            point: Point { clients: 1, batch: 1, batched: false, param: None },
            rate: None,
            status: PointStatus::Measured,
            runs,
            summary: None,
            flags: vec![],
        };
        r.summary = summarize(&r);
        r
    }

    fn flags(r: &PointResult) -> Vec<&'static str> {
        r.flags.iter().map(|f| f.short()).collect()
    }

    #[test]
    fn near_the_ceiling_is_client_bound_far_below_is_not() {
        let mut results = vec![
            result("nodb", "nodb", 1_000_000.0, &["", ""]),
            result("fast", "x", 400_000.0, &["a", "a"]),
            result("slow", "y", 10_000.0, &["a", "a"]),
        ];
        flag_point(&mut results);
        assert_eq!(flags(&results[1]), ["client_bound"]);
        assert!(flags(&results[2]).is_empty());
        assert!((results[2].summary.as_ref().unwrap().client_share.unwrap() - 0.01).abs() < 1e-9);
    }

    #[test]
    fn an_error_or_a_missing_row_in_any_run_voids_the_point() {
        let clean = result("a", "x", 1000.0, &["d", "d"]);
        assert_eq!(clean.summary.as_ref().unwrap().median_ops_per_sec, Some(1000.0));
        assert!(void_flags(&clean.runs).is_empty() && !clean.is_void());
        // A warm-up run that failed shows that something broke: the point is void.
        let mut warm = clean.clone();
        let mut w = warm.runs[0].clone();
        w.warmup = true;
        w.errors.insert("server".into(), 2);
        (w.ok_ops, w.failed_ops) = (w.ops - 20, 20);
        warm.runs.insert(0, w);
        warm.summary = summarize(&warm);
        warm.flags = void_flags(&warm.runs);
        let s = warm.summary.as_ref().unwrap();
        assert_eq!((s.median_ops_per_sec, s.min_ops_per_sec, s.max_ops_per_sec, s.median_rows_per_sec), (None, None, None, None));
        assert_eq!((s.errors, s.failed_ops, s.measured_runs), (2, 20, 2));
        assert_eq!(warm.flags, vec![Flag::Errors { count: 2, failed_ops: 20 }]);
        assert!(warm.is_void());
        // Missing rows in a measured run do the same.
        let mut short = clean.clone();
        (short.runs[1].ok_ops, short.runs[1].short_ops, short.runs[1].missing_rows) = (990, 10, 4);
        short.summary = summarize(&short);
        short.flags = void_flags(&short.runs);
        assert_eq!(short.summary.as_ref().unwrap().missing_rows, 4);
        assert_eq!(short.flags, vec![Flag::MissingRows { count: 4 }]);
        assert!(short.is_void());
        // A void point is neither compared with the NO-DB ceiling nor ranked.
        let mut results = vec![result("nodb", "nodb", 1000.0, &["", ""]), short];
        flag_point(&mut results);
        assert!(results[1].summary.as_ref().unwrap().client_share.is_none());
        assert_eq!(flags(&results[1]), ["missing_rows"]);
    }

    #[test]
    fn runs_that_stopped_at_different_ops_compare_the_blocks_both_completed() {
        let digests =
            |ops: u64, blocks: &[&str]| Digests { whole: blocks.join("+"), ops, blocks: blocks.iter().map(|b| b.to_string()).collect() };
        // Blocks end at 64, 128, 256, 512: 300 ops complete the first three.
        let short = digests(300, &["a", "b", "c", "x"]);
        let long = digests(1000, &["a", "b", "c", "d", "e"]);
        assert!(short.agrees(&long) && long.agrees(&short));
        assert!(!digests(300, &["a", "z", "c", "x"]).agrees(&long), "a different answer in a shared block");
        // The same ops compare whole; without blocks (fixed ops) too.
        assert!(!digests(1000, &["a", "b", "c", "d", "f"]).agrees(&long));
        assert!(!Digests { whole: "w".into(), ops: 300, blocks: vec![] }.agrees(&long));
    }

    #[test]
    fn the_odd_answer_out_is_flagged() {
        let mut results = vec![
            result("a", "x", 1.0, &["d1", "d1"]),
            result("b", "y", 1.0, &["d1", "d1"]),
            result("c", "z", 1.0, &["d2", "d2"]),
            result("d", "w", 1.0, &["d1", "d3"]),
        ];
        flag_point(&mut results);
        assert!(flags(&results[0]).is_empty());
        assert!(flags(&results[1]).is_empty());
        assert_eq!(flags(&results[2]), ["answer_mismatch"]);
        assert_eq!(flags(&results[3]), ["answer_mismatch"], "answers changed between runs");
    }
}
