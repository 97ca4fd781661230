//! Lifecycle studies (the in-memory study): for each record count N and each target,
//! every run starts from an empty table and runs the study's experiments in order — write
//! all N pairs, read keys, delete keys, fetch everything — with memory read before and
//! after each phase, so each phase's memory cost is its own delta.
//!
//! Owns the phase order, the table reset between runs, the memory readings and the row
//! checks that tie the phases together (N written, N − deleted fetched). Must not time
//! anything itself (the client loop does) or format output.

use super::Shared;
use super::client::{self, RunJob};
use super::forecast::PointOnTarget;
use super::memory;
use super::progress::Progress;
use super::resume::{Expected, Resume};
use super::summary::{flag_point, summarize_and_flag};
use crate::adapter::Target;
use crate::base::measurement::{HostLoad, RunMeasurement};
use crate::error::Result;
use crate::report::model::{Flag, PointResult, PointStatus, Report};
use crate::workload::experiment::{Experiment, ExperimentOp, OpStream};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// One phase: its experiment and op stream.
pub(super) struct Phase<'a> {
    /// Its experiment's index in the plan.
    pub index: usize,
    pub experiment: &'a Experiment,
    pub stream: Arc<OpStream>,
}

/// Runs every record count of a lifecycle study. Returns the reason to stop the whole run
/// (Ctrl-C, SIGTERM, ...), if any; failed targets are recorded in `failed_targets` and skipped after.
pub(super) async fn run(
    shared: &Shared<'_>,
    phases: &[Phase<'_>],
    report: &mut Report,
    progress: &mut Progress,
    failed_targets: &mut BTreeMap<String, String>,
    resume: &mut Option<Resume>,
) -> Result<Option<String>> {
    let Some(first) = phases.first() else { return Ok(None) };
    let total_runs = first.experiment.warmup + first.experiment.runs;
    let in_shard = |t: &&Arc<dyn Target>| shared.plan.shard.as_ref().is_none_or(|w| w.runs_lifecycle(&t.info().name));
    let targets: Vec<&Arc<dyn Target>> = shared.targets.iter().filter(in_shard).collect();
    for (pi, point) in first.experiment.points.iter().enumerate() {
        let records = point.param.unwrap_or(0);
        // Every phase at this record count on `target`, as the progress forecast counts them.
        let on = |target: &Arc<dyn Target>| -> Vec<PointOnTarget> {
            phases.iter().map(|p| PointOnTarget { target: target.info().name.clone(), experiment: p.index, point: pi }).collect()
        };
        if let Some(resume) = resume {
            // Saved in phase order, each phase on every target.
            let expected: Vec<Expected> = phases
                .iter()
                .flat_map(|p| {
                    targets.iter().map(|t| Expected {
                        experiment: &p.experiment.name,
                        target: &t.info().name,
                        point: p.experiment.points[pi],
                    })
                })
                .collect();
            if resume.keeps(&expected, &format!("lifecycle · N {records}"), report) {
                progress.kept(&targets.iter().flat_map(|t| on(t)).collect::<Vec<_>>());
                continue;
            }
        }
        let mut results: Vec<Vec<PointResult>> = phases.iter().map(|_| Vec::new()).collect();
        let mut stop_reason = None;
        for &target in &targets {
            let info = target.info();
            let bases: Vec<PointResult> = phases
                .iter()
                .map(|p| PointResult {
                    experiment: p.experiment.name.clone(),
                    op: p.experiment.op.kind(),
                    target: info.name.clone(),
                    system: info.system.clone(),
                    point: p.experiment.points[pi],
                    status: PointStatus::Measured,
                    runs: Vec::new(),
                    summary: None,
                    flags: Vec::new(),
                    exports: None,
                })
                .collect();
            if let Some(why) = failed_targets.get(&info.name) {
                progress.skipped(&on(target));
                for (slot, base) in results.iter_mut().zip(bases) {
                    slot.push(PointResult {
                        status: PointStatus::Incomplete { reason: format!("skipped: {why}") },
                        flags: vec![Flag::Incomplete],
                        ..base
                    });
                }
                continue;
            }
            progress.began(&on(target));
            let outcome = run_target(shared, phases, target, pi, records, total_runs, progress).await;
            progress.ended(&on(target));
            for ((slot, mut base), phase) in results.iter_mut().zip(bases).zip(&outcome.phases) {
                base.runs = phase.runs.clone();
                if !phase.supported {
                    base.status = PointStatus::NotSupported { reason: format!("{} does not support {}", info.system, base.op) };
                    base.flags.push(Flag::NotSupported);
                } else if let Some(reason) = &outcome.failure
                    && (phase.runs.len() < total_runs as usize || phase.runs.iter().any(|r| !r.complete))
                {
                    base.status = PointStatus::Incomplete { reason: reason.clone() };
                    base.flags.push(Flag::Incomplete);
                }
                for detail in &phase.mismatches {
                    base.flags.push(Flag::AnswerMismatch { detail: detail.clone() });
                }
                summarize_and_flag(&mut base);
                slot.push(base);
            }
            if let Some(reason) = outcome.failure {
                if shared.ctx.cancel.is_stopped() {
                    stop_reason = Some(shared.ctx.cancel.reason());
                    break;
                }
                report.warnings.push(format!("{} / N={records}: {reason}", info.name));
                if outcome.lost {
                    failed_targets.insert(info.name.clone(), format!("{} failed during the N={records} lifecycle", info.name));
                }
            }
        }
        let mut exported = true;
        for mut phase_results in results {
            flag_point(&mut phase_results);
            progress.landed(&phase_results, true);
            exported &= super::writing::export(shared.out_dir, &mut phase_results, &shared.ctx.cancel);
            report.points.extend(phase_results);
        }
        if !super::writing::save(shared.out_dir, report, shared.ctx) || !exported {
            return Ok(Some(shared.ctx.cancel.reason()));
        }
        if stop_reason.is_some() {
            return Ok(stop_reason);
        }
    }
    Ok(None)
}

/// What one target did at one record count, per phase.
struct TargetOutcome {
    phases: Vec<PhaseOutcome>,
    /// Why the target stopped early, if it did.
    failure: Option<String>,
    /// The target's connection is gone: skip it from now on.
    lost: bool,
}

#[derive(Default, Clone)]
struct PhaseOutcome {
    supported: bool,
    runs: Vec<RunMeasurement>,
    /// Row checks that failed (written ≠ N, fetched ≠ N − deleted).
    mismatches: Vec<String>,
}

async fn run_target(
    shared: &Shared<'_>,
    phases: &[Phase<'_>],
    target: &Arc<dyn Target>,
    point_index: usize,
    records: u64,
    total_runs: u32,
    progress: &mut Progress,
) -> TargetOutcome {
    let info = target.info();
    let server_pid = shared.plan.spawned_server(&info.name).map(|s| s.pid);
    let mut out = TargetOutcome {
        phases: phases
            .iter()
            .map(|p| PhaseOutcome { supported: info.capabilities.meets(&p.experiment.op.needs(None)), ..Default::default() })
            .collect(),
        failure: None,
        lost: false,
    };
    let checks_rows = info.system != "nodb";
    for run in 0..total_runs {
        let warmup = run < phases[0].experiment.warmup;
        super::step(progress, shared.ctx, format!("N={records} · {} · run {} · reset", info.name, run + 1));
        // An empty table for every run: prepare drops and recreates only dbsweep's own.
        if let Err(e) = target.prepare(&shared.dataset.tables).await {
            out.failure = Some(format!("resetting the table before run {run} failed: {e}"));
            out.lost = true;
            return out;
        }
        let (mut before, _) = memory::read(target.as_ref(), server_pid).await;
        let mut written = None;
        let mut deleted = 0;
        for (phase, state) in phases.iter().zip(out.phases.iter_mut()) {
            if !state.supported {
                continue;
            }
            let experiment = phase.experiment;
            let point = experiment.points[point_index];
            super::step(progress, shared.ctx, format!("measuring N={records} · {} · {} · run {}", info.name, experiment.name, run + 1));
            let job = Arc::new(RunJob {
                target: target.clone(),
                stream: phase.stream.clone(),
                point,
                point_index,
                run,
                warmup,
                seqs: 0..phase.stream.ops_at(&point),
                clients: point.clients,
                timeout: Duration::from_secs_f64(shared.plan.timeout_secs),
                cancel: shared.ctx.cancel.flag(),
                progress: progress.counter(),
                rate: None,
                time_limit: None,
                check_rows: checks_rows,
                stop: None,
                intervals: shared.plan.hlog_interval.filter(|_| !warmup),
                cold_call: true,
                budget: None,
                min_run: None,
            });
            let load_before = HostLoad::now();
            let mut m = client::run_once(job).await;
            m.load = HostLoad::since(load_before);
            let (after, source) = memory::read(target.as_ref(), server_pid).await;
            m.memory = Some(memory::measurement(before, after.clone(), source));
            before = after;
            if checks_rows && m.complete {
                match experiment.op {
                    ExperimentOp::Insert => {
                        written = Some(m.rows);
                        if m.rows != records {
                            state.mismatches.push(format!("run {run}: {} of {records} pairs written", m.rows));
                        }
                    }
                    ExperimentOp::Delete => deleted += m.rows,
                    ExperimentOp::FetchAll => {
                        let expected = written.unwrap_or(records).saturating_sub(deleted);
                        if m.rows != expected {
                            state.mismatches.push(format!("run {run}: fetched {} rows, {expected} stored", m.rows));
                        }
                    }
                    _ => {}
                }
            }
            let complete = m.complete;
            let lost = m.errors.contains_key("connection") || m.errors.contains_key("timeout");
            let sample = m.error_samples.first().cloned().unwrap_or_default();
            state.runs.push(m);
            if !complete {
                out.failure = Some(if shared.ctx.cancel.is_stopped() {
                    "interrupted".to_string()
                } else {
                    format!("{} run {run} stopped early: {sample}", experiment.name)
                });
                out.lost = lost;
                return out;
            }
        }
    }
    out
}
