//! The run's report on disk: where it goes, what it holds before the first point, the
//! save after each point and the last write that finishes it (or says why it is not
//! complete). Must not measure or flag anything.

use super::{Cancel, RunContext, StopCause};
use crate::adapter::{Target, TargetInfo};
use crate::base::durability::{self, Durability};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::report::model::{PointResult, PointStatus, Report};
use crate::report::{self, environment};
use crate::servers::SpawnedServer;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// The run's directory: `--out`, or a new one under the runs root named by study, shard
/// and start time.
pub(super) fn out_path(plan: &Plan, ctx: &RunContext, started: SystemTime) -> PathBuf {
    let shard = plan.shard.as_ref().map(|w| format!("-shard{}of{}", w.shard.index, w.shard.count)).unwrap_or_default();
    plan.out.clone().unwrap_or_else(|| ctx.runs_root.join(format!("{}{shard}-{}", plan.study, environment::stamp(started))))
}

/// The report as it starts: plan, environment and targets, no points yet.
pub(super) fn new_report(plan: &Plan, ctx: &RunContext, targets: &[Arc<dyn Target>], started: SystemTime) -> Report {
    let mut report = Report {
        format: "dbsweep-report".into(),
        format_version: report::model::FORMAT_VERSION,
        schema: Some(report::model::SchemaRef::current()),
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
                if let Some(server) = plan.spawned_server(&info.name) {
                    for (key, value) in spawned_settings(server) {
                        if !reported_by_adapter(&info, &key, &value) {
                            info.settings.insert(key, value);
                        }
                    }
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
        workers: Vec::new(),
        resumed: Vec::new(),
        planned_targets: Some(plan.planned_targets.clone()),
        seal: None,
        paper_verdicts: None,
        timing: None,
    };
    if let Some(asked) = plan.durability {
        let lines = durability_warnings(asked, &report.targets);
        report.warnings.extend(lines);
    }
    report
}

/// One line per database target whose durability is not the level the study asked for:
/// a system without that level, or a server dbsweep did not start (never reconfigured).
fn durability_warnings(asked: Durability, targets: &[TargetInfo]) -> Vec<String> {
    let mut out = Vec::new();
    for t in targets.iter().filter(|t| t.system != "nodb") {
        let stated = t.settings.get(durability::SETTING).or_else(|| t.settings.get("server.durability"));
        let spawned = t.settings.get("server.spawned").is_some_and(|v| v == "true");
        let why = if spawned {
            format!("{} offers no {asked} level here", t.system)
        } else {
            format!("{} offers no {asked} level, or it is a server dbsweep did not start and never reconfigures", t.system)
        };
        match stated.map(|s| (s, Durability::of_setting(s))) {
            Some((_, Some(level))) if level == asked => {}
            Some((text, Some(_))) => out.push(format!("{}: durability is {text}, not the study's {asked} ({why})", t.name)),
            _ => out.push(format!("{}: durability unknown ({} does not report it), the study asked for {asked}", t.name, t.system)),
        }
    }
    out
}

/// Seals and writes the finished report (complete, or why not) and turns an early stop into the
/// error of its cause: Ctrl-C (exit 130), SIGTERM (143), a failure such as a full disk (1).
pub(super) fn finish(mut report: Report, stop_reason: Option<String>, ctx: &RunContext, out_dir: &Path) -> Result<(Report, PathBuf)> {
    let failed_points = report.points.iter().any(|p| matches!(p.status, PointStatus::Incomplete { .. }));
    report.finished_at = Some(environment::now_rfc3339());
    report.complete = stop_reason.is_none() && !failed_points;
    report.incomplete_reason = match (&stop_reason, failed_points) {
        (Some(r), _) => Some(r.clone()),
        (None, true) => Some("some points did not finish; see warnings".into()),
        (None, false) => None,
    };
    report::seal::seal(&mut report, ctx.report_token.as_ref());
    if let Err(e) = report::write_all(out_dir, &report) {
        // Most likely a full disk: make room by removing the files that are rendered from
        // report.json, and finish report.json itself.
        let _ = std::fs::remove_file(out_dir.join(report::RESULTS_CSV));
        let _ = std::fs::remove_file(out_dir.join(report::RESULTS_OPS_CSV));
        let _ = std::fs::remove_file(out_dir.join(report::REPORT_HTML));
        let reason = report.incomplete_reason.take().unwrap_or_else(|| "finished".into());
        report.incomplete_reason = Some(format!(
            "{reason}; then {e}: {}, {} and {} were removed to make room (`dbsweep report {}` renders them again)",
            report::RESULTS_CSV,
            report::RESULTS_OPS_CSV,
            report::REPORT_HTML,
            out_dir.display()
        ));
        report.complete = false;
        report::seal::seal(&mut report, ctx.report_token.as_ref());
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

/// What report.json says while the run removes its data from the targets, so that a run
/// stopped there (a second Ctrl-C, a kill) does not stay "running".
pub const CLEANUP_INTERRUPTED: &str = "interrupted during cleanup";

/// Saves the report as it stands before the cleanup, saying that the cleanup was under way
/// (after `stop_reason`, why the run stopped, if it did); the last write replaces it once
/// the cleanup ends. False when the write failed (the run then stops, as in `save`).
pub(super) fn save_before_cleanup(out_dir: &Path, report: &mut Report, stop_reason: Option<&str>, ctx: &RunContext) -> bool {
    report.complete = false;
    report.incomplete_reason = Some(match stop_reason {
        None => CLEANUP_INTERRUPTED.to_string(),
        Some(why) => format!("{why}, then {CLEANUP_INTERRUPTED}"),
    });
    save(out_dir, report, ctx)
}

/// Seals and saves the report after a point; a failed write (a full disk) stops the run
/// like a signal would, so it still ends with cleanup and a finished report where possible.
pub(super) fn save(out_dir: &Path, report: &mut Report, ctx: &RunContext) -> bool {
    report::seal::seal(report, ctx.report_token.as_ref());
    match report::write_all(out_dir, report) {
        Ok(()) => true,
        Err(e) => {
            ctx.cancel.stop(StopCause::Failure(e.to_string()));
            false
        }
    }
}

/// Writes the latency files of new points (`report::exports`) and lists them in the points;
/// a failed write (a full disk) stops the run as in `save`.
pub(super) fn export(out_dir: &Path, points: &mut [PointResult], cancel: &Cancel) -> bool {
    for point in points {
        match report::exports::write_point(out_dir, point) {
            Ok(files) => point.exports = files,
            Err(e) => {
                cancel.stop(StopCause::Failure(e.to_string()));
                return false;
            }
        }
    }
    true
}

/// What the report records of the server a target runs on, beside the adapter's own
/// settings: that dbsweep spawned it, its version and how it was started (`server.*`).
fn spawned_settings(server: &SpawnedServer) -> BTreeMap<String, String> {
    let mut settings: BTreeMap<String, String> = server.settings.iter().map(|(k, v)| (format!("server.{k}"), v.clone())).collect();
    settings.insert("server.spawned".into(), "true".into());
    settings.insert("server.version".into(), server.version.clone());
    settings
}

/// True when a spawned server's `server.KEY` setting is one the adapter already read from
/// the server itself (`KEY`, `_` and `-` alike; or the version): the report shows it once.
fn reported_by_adapter(info: &crate::adapter::TargetInfo, key: &str, value: &str) -> bool {
    let Some(name) = key.strip_prefix("server.") else { return false };
    let same = |k: &String| k.replace('_', "-") == name.replace('_', "-");
    info.settings.keys().any(same) || (name == "version" && info.version == value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::{Capabilities, Execution, TargetInfo};

    fn target(name: &str, system: &str, settings: &[(&str, &str)]) -> TargetInfo {
        TargetInfo {
            name: name.into(),
            system: system.into(),
            url: String::new(),
            execution: Execution::Async,
            capabilities: Capabilities { ops: vec![], queries: vec![], native_batch: true, secondary_indexes: false, statements: None },
            version: String::new(),
            settings: settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    #[test]
    fn targets_at_another_durability_than_asked_are_warned_about() {
        let targets = [
            target("nodb", "nodb", &[]),
            target("s", "sqlite", &[("durability", "commit: fsync at every commit (synchronous=full)")]),
            target("d", "duckdb", &[("durability", "commit: WAL synced at each commit")]),
            target("r", "redis", &[("server.durability", "none: no persistence"), ("server.spawned", "true")]),
            target("m", "mock", &[]),
        ];
        assert_eq!(
            durability_warnings(Durability::Commit, &targets),
            vec![
                "r: durability is none: no persistence, not the study's commit (redis offers no commit level here)".to_string(),
                "m: durability unknown (mock does not report it), the study asked for commit".to_string(),
            ]
        );
        let none = durability_warnings(Durability::None, &targets);
        assert_eq!(none.len(), 3, "{none:?}");
        assert!(none[0].starts_with("s: durability is commit: fsync at every commit (synchronous=full), not the study's none (sqlite offers no none level, or it is a server"));
    }

    #[test]
    fn a_spawned_servers_setting_the_adapter_read_is_shown_once() {
        let info = TargetInfo {
            name: "redis".into(),
            system: "redis".into(),
            url: "redis://127.0.0.1:1".into(),
            execution: Execution::Async,
            capabilities: Capabilities { ops: vec![], queries: vec![], native_batch: true, secondary_indexes: false, statements: None },
            version: "7.0.15".into(),
            settings: [("appendonly", "no"), ("maxmemory-policy", "noeviction")].map(|(k, v)| (k.to_string(), v.to_string())).into(),
        };
        assert!(reported_by_adapter(&info, "server.appendonly", "no"));
        assert!(reported_by_adapter(&info, "server.maxmemory_policy", "noeviction"), "'_' and '-' alike");
        assert!(reported_by_adapter(&info, "server.version", "7.0.15"));
        assert!(!reported_by_adapter(&info, "server.spawned", "true"), "only the spawner knows it");
        assert!(!reported_by_adapter(&info, "server.version", "7.2.0"), "a different version is shown");
        assert!(!reported_by_adapter(&info, "appendonly", "no"), "only server.* keys are the spawner's");
    }
}
