//! The console's warnings section: the flags that qualify results (client-bound, wide
//! spread, not converged, missed rate, retried) and the run's own saved warnings, grouped by
//! kind with their counts and worst cases, so ten targets give a few lines, not one per
//! point. Must not decide flags (the model does) or print.

use super::push_wrapped;
use crate::report::format::point_label;
use crate::report::model::{Flag, PointResult, Report};
use std::fmt::Write as _;

/// How many of a warning group's cases are named.
const WORST_NAMED: usize = 3;

/// One kind of warning and the points it concerns, worst first: how bad each case is
/// (for ordering) and how it reads ("92 % of NO-DB").
struct FlagGroup<'a> {
    kind: &'static str,
    cases: Vec<(f64, &'a PointResult, String)>,
}

/// "sqlite get c=4": where a warning's case is.
pub(super) fn case_label(p: &PointResult) -> String {
    format!("{} {} {}", p.target, p.experiment, point_label(&p.point, p.op))
}

/// The flags that qualify results without voiding them, one group per kind with its
/// cases worst first.
fn flag_groups(report: &Report) -> Vec<FlagGroup<'_>> {
    let mut groups: Vec<FlagGroup> = [
        "client-bound (near the NO-DB ceiling: the client may be the limit)",
        "spread too wide to rank (runs' min-max range over ±10 % of the median, overlapping another target's)",
        "not converged (a run hit its cap before the precision asked)",
        "could not keep the rate",
        "retried after conflicts (latency includes the retries)",
    ]
    .into_iter()
    .map(|kind| FlagGroup { kind, cases: Vec::new() })
    .collect();
    for p in &report.points {
        for f in &p.flags {
            let (group, badness, text) = match f {
                Flag::ClientBound { share } => (0, *share, format!("{:.0} % of NO-DB", share * 100.0)),
                Flag::WideSpread { spread, .. } => (1, *spread, format!("±{:.0} %", spread * 100.0)),
                Flag::NotConverged { asked, reached } => {
                    let reached_text = reached.map_or("unknown".to_string(), |r| format!("±{:.1} %", r * 100.0));
                    (2, reached.unwrap_or(f64::INFINITY), format!("{reached_text} of ±{:.1} %", asked * 100.0))
                }
                Flag::MissedRate { late_ops, ops, .. } => {
                    let late = *late_ops as f64 / (*ops).max(1) as f64;
                    (3, late, format!("{:.0} % of ops late", late * 100.0))
                }
                Flag::Retried { count } => (4, *count as f64, format!("{count} retr{}", if *count == 1 { "y" } else { "ies" })),
                _ => continue,
            };
            groups[group].cases.push((badness, p, text));
        }
    }
    groups.retain(|g| !g.cases.is_empty());
    for g in &mut groups {
        g.cases.sort_by(|a, b| b.0.total_cmp(&a.0));
    }
    groups
}

/// The host's load average around the runs of `points`: " (load average 0.4-3.9 on 2
/// cores)", or nothing when it was not read.
fn load_range(points: &[&PointResult], cores: usize) -> String {
    let loads: Vec<f64> = points.iter().flat_map(|p| &p.runs).filter_map(|r| r.load).flat_map(|l| [l.before, l.after]).collect();
    match (loads.iter().copied().reduce(f64::min), loads.iter().copied().reduce(f64::max)) {
        (Some(lo), Some(hi)) => format!("; load average {lo:.1}-{hi:.1} on {cores} cores"),
        _ => String::new(),
    }
}

/// A saved warning's subject and message: "get c=8 / duckdb" (or "duckdb") and what
/// happened, when it names one ("SUBJECT / TARGET: message", "TARGET: message"); else no
/// subject.
fn subject_and_message(warning: &str) -> (Option<&str>, &str) {
    match warning.split_once(": ") {
        Some((subject, message)) if subject.contains(" / ") || !subject.contains(' ') => (Some(subject), message),
        _ => (None, warning),
    }
}

/// A warning's kind: its message with every number made `#`, so the same warning about
/// other points, targets or counts groups together.
fn warning_kind(message: &str) -> String {
    let mut kind = String::new();
    for c in message.chars() {
        if c.is_ascii_digit() {
            if !kind.ends_with('#') {
                kind.push('#');
            }
        } else if !(c == '.' && kind.ends_with('#')) {
            kind.push(c);
        }
    }
    kind
}

/// The warnings, grouped by kind with their counts and worst cases: the flags that
/// qualify results (client-bound, wide spread, ...) and the run's own warnings (a saved
/// warning per point or target becomes one line per kind, the first in full).
pub(super) fn warnings(out: &mut String, report: &Report, width: usize) {
    let groups = flag_groups(report);
    // The wide-spread flags' own warnings are the flag group's cases.
    let spread_warning = |w: &str| {
        report.points.iter().any(|p| {
            p.flags.iter().any(|f| matches!(f, Flag::WideSpread { .. }))
                && w.starts_with(&format!("{} {} / {}: runs spread ", p.experiment, point_label(&p.point, p.op), p.target))
        })
    };
    let mut kinds: Vec<(String, Vec<&str>)> = Vec::new();
    for w in report.warnings.iter().filter(|w| !spread_warning(w)) {
        let kind = warning_kind(subject_and_message(w).1);
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, all)) => all.push(w),
            None => kinds.push((kind, vec![w])),
        }
    }
    if groups.is_empty() && kinds.is_empty() {
        return;
    }
    out.push_str("\nwarnings:\n");
    for g in &groups {
        let points: Vec<&PointResult> = g.cases.iter().map(|(_, p, _)| *p).collect();
        let worst: Vec<String> = g.cases.iter().take(WORST_NAMED).map(|(_, p, text)| format!("{} ({text})", case_label(p))).collect();
        let count = g.cases.len();
        let mut line = format!("  {}: {count} point{}", g.kind, if count == 1 { "" } else { "s" });
        let _ = write!(line, ", {} {}", if count == 1 { "at" } else { "worst" }, worst.join(", "));
        if g.kind.starts_with("spread") {
            let _ = write!(line, "{}; rerun on a quieter machine or with more --runs", load_range(&points, report.environment.cores));
        }
        push_wrapped(out, &line, width);
    }
    for (_, all) in &kinds {
        let mut line = format!("  {}", all[0]);
        if all.len() > 1 {
            let others: Vec<&str> = all[1..].iter().map(|w| subject_and_message(w).0.unwrap_or(w)).collect();
            let named = others.len().min(WORST_NAMED);
            let _ = write!(line, " (and {} more like it: {}", others.len(), others[..named].join(", "));
            if others.len() > named {
                let _ = write!(line, ", …");
            }
            line.push(')');
        }
        push_wrapped(out, &line, width);
    }
}
