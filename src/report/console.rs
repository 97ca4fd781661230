//! The console exporter: one compact table per experiment, targets side by side, with the
//! median throughput, its spread over the measured runs, p99 latency and flag marks.
//! Must not compute statistics; it formats the model.

use super::model::{Flag, PointResult, PointStatus, Report};
use crate::workload::op::OpKind;
use std::fmt::Write as _;

/// Human-friendly rate: 950, 12.3k, 4.56M.
pub fn rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Human-friendly microseconds: 850ns, 12µs, 3.4ms, 1.2s.
pub fn micros(us: f64) -> String {
    if us < 1.0 {
        format!("{:.0}ns", us * 1000.0)
    } else if us < 1000.0 {
        format!("{us:.0}µs")
    } else if us < 1e6 {
        format!("{:.1}ms", us / 1000.0)
    } else {
        format!("{:.1}s", us / 1e6)
    }
}

fn point_label(p: &PointResult) -> String {
    let mut label = format!("c={}", p.point.clients);
    if p.point.batched {
        let _ = write!(label, " b={}", p.point.batch);
    }
    if let Some(v) = p.point.param {
        let name = if matches!(p.op, OpKind::RangeRows | OpKind::RangeCount | OpKind::RangeMax) { "w" } else { "n" };
        let _ = write!(label, " {name}={v}");
    }
    label
}

fn cell(p: &PointResult) -> String {
    match (&p.status, &p.summary) {
        (PointStatus::NotSupported { .. }, _) => "n/a".into(),
        (_, Some(s)) => {
            let spread =
                if s.median_ops_per_sec > 0.0 { 100.0 * (s.max_ops_per_sec - s.min_ops_per_sec) / s.median_ops_per_sec / 2.0 } else { 0.0 };
            // Analytic queries read as durations, the way the studies report them.
            let mut text = match (&p.op, &s.latency) {
                (OpKind::Query, Some(l)) => format!("{} per query (mean of {} runs)", micros(l.mean_us), s.measured_runs),
                _ => format!("{}/s ±{spread:.0}%", rate(s.median_ops_per_sec)),
            };
            if let (false, Some(l)) = (p.op == OpKind::Query, &s.latency) {
                let _ = write!(text, " p99 {}", micros(l.p99_us));
            }
            for f in &p.flags {
                text.push_str(match f {
                    Flag::ClientBound { .. } => " [client-bound]",
                    Flag::AnswerMismatch { .. } => " [WRONG ANSWER]",
                    Flag::Errors { .. } => " [errors]",
                    Flag::Incomplete => " [incomplete]",
                    Flag::NotSupported => "",
                });
            }
            text
        }
        _ => "incomplete".into(),
    }
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let targets: Vec<&str> = report.targets.iter().map(|t| t.name.as_str()).collect();
    let mut experiments: Vec<&str> = Vec::new();
    for p in &report.points {
        if !experiments.contains(&p.experiment.as_str()) {
            experiments.push(&p.experiment);
        }
    }
    for exp in experiments {
        let points: Vec<&PointResult> = report.points.iter().filter(|p| p.experiment == exp).collect();
        let mut labels: Vec<String> = Vec::new();
        for p in &points {
            let l = point_label(p);
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
        let mut rows: Vec<Vec<String>> = vec![std::iter::once("point".to_string()).chain(targets.iter().map(|t| t.to_string())).collect()];
        for label in &labels {
            let mut row = vec![label.clone()];
            for t in &targets {
                row.push(points.iter().find(|p| p.target == *t && point_label(p) == *label).map(|p| cell(p)).unwrap_or_default());
            }
            rows.push(row);
        }
        let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
        let op = points.first().map(|p| p.op.name()).unwrap_or_default();
        let _ = writeln!(out, "\n{exp} ({op}; median of measured runs, ± half the min-max spread)");
        for row in rows {
            let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
            let _ = writeln!(out, "  {}", line.join("  ").trim_end());
        }
    }
    if !report.unavailable.is_empty() {
        let _ = writeln!(out, "\nnot available here:");
        for u in &report.unavailable {
            let _ = writeln!(out, "  {}: {}", u.system, u.reason);
        }
    }
    for w in &report.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if !report.complete {
        let _ = writeln!(out, "\nINCOMPLETE: {}", report.incomplete_reason.as_deref().unwrap_or("stopped early"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_naturally() {
        assert_eq!(rate(950.0), "950");
        assert_eq!(rate(12_345.0), "12.3k");
        assert_eq!(rate(4_560_000.0), "4.56M");
        assert_eq!(micros(0.25), "250ns");
        assert_eq!(micros(12.0), "12µs");
        assert_eq!(micros(3400.0), "3.4ms");
    }
}
