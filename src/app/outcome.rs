//! How a finished run or merge ends: its exit status (exit 1 naming why a report is
//! incomplete, which points are void or answered wrongly) and the lines naming the points
//! that fell short of their precision. Must not print: its callers do.

use crate::error::{Error, Result};
use crate::report;

/// The exit status of a finished report: an error (exit 1) naming why it is incomplete
/// and which points are void.
pub(super) fn finish(report: &report::model::Report) -> Result<()> {
    let mut failures = Vec::new();
    if !report.complete {
        failures.push(format!("run incomplete: {}", report.incomplete_reason.as_deref().unwrap_or_default()));
    }
    if let Some(voided) = voided_points(report) {
        failures.push(voided);
    }
    if let Some(wrong) = wrong_answers(report) {
        failures.push(wrong);
    }
    if !failures.is_empty() {
        return Err(Error::runtime(failures.join("; ")));
    }
    Ok(())
}

/// Names the void points of a run (errors or missing rows), the first few in full.
fn voided_points(report: &report::model::Report) -> Option<String> {
    named_points(
        report,
        report::model::PointResult::is_void,
        "void (failed requests, missing rows or a worker's result that did not fit its share; no throughput published, results saved and flagged)",
    )
}

/// Names the points whose answers differ from the reference or the other systems'.
fn wrong_answers(report: &report::model::Report) -> Option<String> {
    named_points(
        report,
        |p| p.flags.iter().any(|f| matches!(f, report::model::Flag::AnswerMismatch { .. })),
        "answered wrongly (ANSWER MISMATCH: results saved and flagged)",
    )
}

/// "N points WHAT: the first few in full" for the points `select` picks; `None` for none.
fn named_points(report: &report::model::Report, select: fn(&report::model::PointResult) -> bool, what: &str) -> Option<String> {
    const NAMED: usize = 5;
    let named: Vec<String> = report
        .points
        .iter()
        .filter(|p| select(p))
        .map(|p| format!("{} / {} / {}", p.experiment, p.target, report::format::point_label(&p.point, p.op)))
        .collect();
    if named.is_empty() {
        return None;
    }
    let more = if named.len() > NAMED { format!(" and {} more", named.len() - NAMED) } else { String::new() };
    Some(format!(
        "{} point{} {what}: {}{more}",
        named.len(),
        if named.len() == 1 { "" } else { "s" },
        named[..named.len().min(NAMED)].join(", ")
    ))
}

/// Names the points that fell short of their precision (`--precision`, `--budget`) and
/// by how much, the first few in full, and those a `--budget` left unrun.
pub(super) fn short_of_precision(report: &report::model::Report) -> Option<String> {
    const NAMED: usize = 5;
    let mut short = Vec::new();
    for p in &report.points {
        for flag in &p.flags {
            if let report::model::Flag::NotConverged { asked, reached } = flag {
                let reached = reached.map_or("too short to tell".to_string(), |r| format!("±{:.1}%", r * 100.0));
                let label = format!("{} / {} / {}", p.experiment, p.target, report::format::point_label(&p.point, p.op));
                short.push(format!("{label} reached {reached} of ±{:.1}%", asked * 100.0));
            }
        }
    }
    let unrun = report
        .points
        .iter()
        .filter(|p| matches!(&p.status, report::model::PointStatus::Incomplete { reason } if reason.contains("--budget")))
        .count();
    let mut lines = Vec::new();
    if !short.is_empty() {
        let more = if short.len() > NAMED { format!(" and {} more (see report.json)", short.len() - NAMED) } else { String::new() };
        lines.push(format!("{} points fell short of their precision: {}{more}", short.len(), short[..short.len().min(NAMED)].join(", ")));
    }
    if unrun > 0 {
        lines.push(format!("{unrun} points were not run: the --budget was spent"));
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::model::{Flag, Report};

    fn golden() -> Report {
        serde_json::from_str(include_str!("../../tests/golden/report.json")).unwrap()
    }

    #[test]
    fn a_wrong_answer_fails_the_run_and_names_the_point() {
        let mut report = golden();
        assert!(finish(&report).is_ok(), "the golden run is clean");
        report.points[5].flags.push(Flag::AnswerMismatch { detail: "differs".into() });
        let err = finish(&report).unwrap_err();
        assert_eq!(err.exit_code(), 1);
        let p = &report.points[5];
        let text = err.to_string();
        assert!(text.starts_with("1 point answered wrongly (ANSWER MISMATCH"), "{text}");
        assert!(text.contains(&format!("{} / {}", p.experiment, p.target)), "{text}");
    }
}
