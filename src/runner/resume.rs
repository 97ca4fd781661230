//! `run --resume DIR`: whether this run may continue the one saved in DIR (same dbsweep,
//! same plan by hash, same shard; it did not complete), and, point by point as the run
//! reaches them, which saved results it keeps: the completed points before the first
//! incomplete one, exactly as they were saved. The run measures everything from that point
//! on again, on servers started again and data loaded again.
//!
//! Must not measure, print or write files.

use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::report::model::{PointResult, PointStatus, Report, Resumption};
use crate::workload::experiment::Point;
use std::path::Path;

/// The run being continued and how far its saved points have been matched.
pub struct Resume {
    previous: Report,
    /// The saved points confirmed as kept so far (a prefix of `previous.points`).
    kept: usize,
    /// The first point measured again was found: nothing more is kept.
    done: bool,
}

/// One saved result the run expects at its place: experiment, target and point.
pub(super) struct Expected<'a> {
    pub experiment: &'a str,
    pub target: &'a str,
    pub point: Point,
}

impl Resume {
    /// Reads the run saved in `dir` and checks that `plan` may continue it; a usage error
    /// (exit 2, nothing written) names what differs and what to do instead.
    pub fn open(dir: &Path, plan: &Plan) -> Result<Resume> {
        let shown = dir.display();
        let previous = crate::report::load(dir)?;
        if previous.complete {
            return Err(Error::usage(format!("{shown} holds a complete run: nothing to resume (start a new run with another --out)")));
        }
        let this = env!("CARGO_PKG_VERSION");
        let this_revision = option_env!("DBSWEEP_GIT_REVISION");
        let revision_differs = matches!((previous.git_revision.as_deref(), this_revision), (Some(a), Some(b)) if a != b);
        if previous.dbsweep_version != this || revision_differs {
            return Err(Error::usage(format!(
                "{shown} was written by dbsweep {}{}, this is {this}{}: resume it with that dbsweep, or start a new run",
                previous.dbsweep_version,
                previous.git_revision.as_deref().map(|g| format!(" (git {g})")).unwrap_or_default(),
                this_revision.map(|g| format!(" (git {g})")).unwrap_or_default()
            )));
        }
        if previous.plan_hash.as_deref() != Some(plan.hash.as_str()) {
            return Err(Error::usage(format!(
                "the plan differs from the one {shown} ran (plan {} there, {} here): resume with the same study, options, targets and --spawn, or start a new run",
                previous.plan_hash.as_deref().unwrap_or("not recorded"),
                plan.hash
            )));
        }
        let shard = plan.shard.as_ref().map(|w| w.shard);
        if previous.shard != shard {
            let name = |s: Option<crate::base::shard::Shard>| s.map(|s| format!("shard {s}")).unwrap_or_else(|| "the whole plan".into());
            return Err(Error::usage(format!(
                "{shown} ran {}, this run {}: resume with the same --shard",
                name(previous.shard),
                name(shard)
            )));
        }
        Ok(Resume { previous, kept: 0, done: false })
    }

    /// The run's report as the resumed run starts it: every saved point still in place
    /// (so a stop before the first point loses nothing), its original start and command,
    /// and this resumption recorded. `fresh` is the report this run would start with.
    pub(super) fn start_report(&self, fresh: Report, command: &[String]) -> Report {
        let mut report = fresh;
        report.started_at = self.previous.started_at.clone();
        report.command = self.previous.command.clone();
        report.points = self.previous.points.clone();
        for w in &self.previous.warnings {
            if !report.warnings.contains(w) {
                report.warnings.push(w.clone());
            }
        }
        report.resumed = self.previous.resumed.clone();
        report.resumed.push(Resumption {
            at: crate::report::environment::now_rfc3339(),
            command: command.to_vec(),
            previous_reason: self.previous.incomplete_reason.clone(),
            kept_points: 0,
            from_point: None,
        });
        report
    }

    /// The run reached a point whose results are `expected`, in order. If the saved run
    /// completed exactly those, they stay in `report` and this returns true (skip the
    /// point); otherwise every saved point from here on is dropped from `report`, this
    /// point (`label`) is where the resumed run continues, and this returns false.
    pub(super) fn keeps(&mut self, expected: &[Expected<'_>], label: &str, report: &mut Report) -> bool {
        if self.done {
            return false;
        }
        let saved = self.previous.points.get(self.kept..self.kept + expected.len());
        let completed = saved.is_some_and(|saved| saved.iter().zip(expected).all(|(s, e)| completed_as_expected(s, e)));
        if completed {
            self.kept += expected.len();
            self.note(report, None);
            return true;
        }
        self.done = true;
        report.points.truncate(self.kept);
        self.note(report, Some(label));
        false
    }

    /// The run measured every point: saved points beyond the plan's (none for the same
    /// plan) are not kept.
    pub(super) fn finish(&mut self, report: &mut Report) {
        if !self.done {
            self.done = true;
            report.points.truncate(self.kept);
        }
    }

    fn note(&self, report: &mut Report, from_point: Option<&str>) {
        if let Some(this) = report.resumed.last_mut() {
            this.kept_points = self.kept;
            if let Some(label) = from_point {
                this.from_point = Some(label.to_string());
            }
        }
    }
}

/// A saved result is kept when it is the one expected and finished (measured, or not
/// supported); an incomplete or skipped one is measured again.
fn completed_as_expected(saved: &PointResult, expected: &Expected<'_>) -> bool {
    saved.experiment == expected.experiment
        && saved.target == expected.target
        && saved.point == expected.point
        && !matches!(saved.status, PointStatus::Incomplete { .. })
}
