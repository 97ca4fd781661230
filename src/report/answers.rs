//! Verified answers: what a query point answered, in a compact form (row count, the first
//! row, a digest), and the verdict of the check the runner made — every query point on
//! TPC-H data is compared with the exact reference answer computed from the generator and
//! flagged when it differs. The console and report.html both show them.
//!
//! Reads the saved model only (`runs[].sample_answer` and the flags in report.json); must
//! not recompute a reference or judge answers itself.

use super::model::{Flag, PointResult, Report};
use crate::base::op::{Answer, OpKind};

/// The detail of the flag the runner puts on a query whose answer differs from the exact
/// TPC-H reference.
pub const REFERENCE_MISMATCH: &str = "differs from the exact TPC-H reference answer";

/// Longest first row shown before it is cut with "…".
const FIRST_ROW_CHARS: usize = 100;

/// What the check of a point's answer found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Checked against the exact TPC-H reference, and equal to it (numbers within a cent).
    MatchesReference,
    /// Flagged: the detail of the answer-mismatch flag.
    Mismatch(String),
    /// No reference for this data; answers are only compared across targets.
    NoReference,
}

impl Verdict {
    /// "matches the TPC-H reference", "MISMATCH: differs from …", "no reference".
    pub fn text(&self) -> String {
        match self {
            Verdict::MatchesReference => "matches the TPC-H reference".into(),
            Verdict::Mismatch(detail) => format!("MISMATCH: {detail}"),
            Verdict::NoReference => "no reference for this data".into(),
        }
    }
}

/// A point's answer as shown: compact text and the check's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownAnswer {
    pub compact: String,
    pub verdict: Verdict,
}

/// True when the run's data is TPC-H: the runner then checked every query's answer against
/// the exact reference.
pub fn has_reference(report: &Report) -> bool {
    report.plan.get("data").and_then(|d| d.get("kind")).and_then(|k| k.as_str()) == Some("tpch")
}

/// The answer of a query point (its first measured run's) and its verdict; `None` for
/// other ops, void points and points without a saved answer.
pub fn of(report: &Report, p: &PointResult) -> Option<ShownAnswer> {
    if p.op != OpKind::Query || p.is_void() {
        return None;
    }
    let answer = p.measured_runs().into_iter().find_map(|r| r.sample_answer.as_ref())?;
    let mismatch = p.flags.iter().find_map(|f| match f {
        Flag::AnswerMismatch { detail } => Some(detail.clone()),
        _ => None,
    });
    let verdict = match mismatch {
        Some(detail) => Verdict::Mismatch(detail),
        None if has_reference(report) => Verdict::MatchesReference,
        None => Verdict::NoReference,
    };
    Some(ShownAnswer { compact: compact(answer), verdict })
}

/// "4 rows; first: A | F | 37734107.00 | …; digest 3f2a…" or a scalar's value.
pub fn compact(answer: &Answer) -> String {
    match answer {
        Answer::Scalar(v) => v.to_string(),
        Answer::Table(rows) => {
            let mut text = format!("{} row{}", rows.len(), if rows.len() == 1 { "" } else { "s" });
            if let Some(first) = rows.first() {
                let row = first.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" | ");
                let row = if row.chars().count() > FIRST_ROW_CHARS {
                    format!("{}…", row.chars().take(FIRST_ROW_CHARS).collect::<String>())
                } else {
                    row
                };
                text.push_str(&format!("; first: {row}"));
            }
            format!("{text}; digest {:016x}", answer.fingerprint())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::{Decimal, Value};

    fn query_point(answer: Answer, flags: Vec<Flag>) -> (Report, PointResult) {
        let mut report: Report = serde_json::from_str(include_str!("../../tests/golden/report.json")).unwrap();
        report.plan = serde_json::json!({ "data": { "kind": "tpch", "scale": 0.01 } });
        let mut p = report.points.iter().find(|p| p.summary.is_some() && !p.is_void()).unwrap().clone();
        p.op = OpKind::Query;
        p.flags = flags;
        for r in p.runs.iter_mut() {
            r.sample_answer = Some(answer.clone());
        }
        (report, p)
    }

    #[test]
    fn a_checked_answer_shows_its_rows_first_values_and_the_reference_verdict() {
        let rows = vec![vec![Value::Text("A".into()), Value::Decimal(Decimal(3773410700))], vec![Value::Text("N".into()), Value::Int(7)]];
        let (report, p) = query_point(Answer::Table(rows.clone()), vec![]);
        let shown = of(&report, &p).unwrap();
        assert_eq!(shown.verdict, Verdict::MatchesReference);
        assert!(shown.compact.starts_with("2 rows; first: A | 37734107.00; digest "), "{}", shown.compact);
        let wrong = vec![Flag::AnswerMismatch { detail: REFERENCE_MISMATCH.into() }];
        let (report, p) = query_point(Answer::Table(rows), wrong);
        assert_eq!(of(&report, &p).unwrap().verdict.text(), format!("MISMATCH: {REFERENCE_MISMATCH}"));
        let mut other = report.clone();
        other.plan = serde_json::json!({ "data": { "kind": "kv" } });
        let (_, p) = query_point(Answer::Scalar(Value::Int(42)), vec![]);
        let shown = of(&other, &p).unwrap();
        assert_eq!((shown.compact.as_str(), shown.verdict), ("42", Verdict::NoReference));
        let mut not_query = p.clone();
        not_query.op = OpKind::Get;
        assert_eq!(of(&report, &not_query), None);
    }

    #[test]
    fn a_long_first_row_is_cut() {
        let long = Answer::Table(vec![vec![Value::Text("x".repeat(300).into())]]);
        let text = compact(&long);
        assert!(text.contains(&format!("first: {}…;", "x".repeat(FIRST_ROW_CHARS))), "{text}");
    }
}
