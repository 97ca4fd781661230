//! The console exporter: one compact table per experiment, targets side by side, with the
//! median throughput, its spread over the measured runs, p99 latency and flag marks.
//! Must not compute statistics; it formats the model.

use super::model::{Flag, PointResult, PointStatus, Report};
use crate::base::op::OpKind;
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

/// Signed human-friendly bytes: +1.2MB, -340kB, +96B.
pub fn bytes(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "+" };
    let a = v.abs();
    if a >= 1e9 {
        format!("{sign}{:.2}GB", a / 1e9)
    } else if a >= 1e6 {
        format!("{sign}{:.1}MB", a / 1e6)
    } else if a >= 1e3 {
        format!("{sign}{:.0}kB", a / 1e3)
    } else {
        format!("{sign}{a:.0}B")
    }
}

/// `engine (per row) / server (per row) / client`, `-` where a figure is missing.
fn memory_cell(m: &super::model::MemorySummary) -> String {
    let with_row = |delta: Option<f64>, per_row: Option<f64>| match (delta, per_row) {
        (Some(d), Some(r)) => format!("{} ({r:.0}B)", bytes(d)),
        (Some(d), None) => bytes(d),
        _ => "-".into(),
    };
    format!(
        "{} / {} / {}",
        with_row(m.engine_delta_bytes, m.engine_bytes_per_row),
        with_row(m.server_delta_bytes, m.server_bytes_per_row),
        bytes(m.client_delta_bytes)
    )
}

/// A point's parameters in a few characters: `c=4 b=100 w=10`.
pub fn point_label(p: &PointResult) -> String {
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

/// A void point's cell: no number, only what voided it, loudly.
fn void_cell(p: &PointResult) -> String {
    let mut text = String::from("VOID");
    for f in &p.flags {
        match f {
            Flag::Errors { count, failed_ops } => {
                let _ = write!(text, " [ERRORS: {count} failed request{}, {failed_ops} ops]", if *count == 1 { "" } else { "s" });
            }
            Flag::MissingRows { count } => {
                let _ = write!(text, " [MISSING ROWS: {count}]");
            }
            Flag::AnswerMismatch { .. } => text.push_str(" [WRONG ANSWER]"),
            Flag::Incomplete => text.push_str(" [incomplete]"),
            Flag::ClientBound { .. } | Flag::NotSupported => {}
        }
    }
    text
}

/// Lifecycle studies report time, as the in-memory study did: the run's duration (median
/// over measured runs) and the time per op.
fn lifecycle_cell(p: &PointResult) -> String {
    let ops = p.runs.iter().find(|r| !r.warmup).map(|r| r.ops).unwrap_or(0);
    let median = p.summary.as_ref().and_then(|s| s.median_ops_per_sec);
    match (&p.status, median) {
        (PointStatus::NotSupported { .. }, _) => "n/a".into(),
        _ if p.is_void() => void_cell(p),
        (_, Some(median)) if median > 0.0 && ops > 0 => {
            let seconds = ops as f64 / median;
            let mut text = format!("{} ({}/op × {ops})", micros(seconds * 1e6), micros(seconds * 1e6 / ops as f64));
            for f in &p.flags {
                text.push_str(match f {
                    Flag::AnswerMismatch { .. } => " [WRONG ROWS]",
                    Flag::Incomplete => " [incomplete]",
                    _ => "",
                });
            }
            text
        }
        _ => "incomplete".into(),
    }
}

fn cell(p: &PointResult) -> String {
    match (&p.status, &p.summary) {
        (PointStatus::NotSupported { .. }, _) => "n/a".into(),
        _ if p.is_void() => void_cell(p),
        (_, Some(s)) => {
            let (median, lo, hi) =
                (s.median_ops_per_sec.unwrap_or(0.0), s.min_ops_per_sec.unwrap_or(0.0), s.max_ops_per_sec.unwrap_or(0.0));
            let spread = if median > 0.0 { 100.0 * (hi - lo) / median / 2.0 } else { 0.0 };
            // Analytic queries read as durations, the way the studies report them.
            let mut text = match (&p.op, &s.latency) {
                (OpKind::Query, Some(l)) => format!("{} per query (mean of {} runs)", micros(l.mean_us), s.measured_runs),
                _ => format!("{}/s ±{spread:.0}%", rate(median)),
            };
            if let (false, Some(l)) = (p.op == OpKind::Query, &s.latency) {
                let _ = write!(text, " p99 {}", micros(l.p99_us));
            }
            for f in &p.flags {
                text.push_str(match f {
                    Flag::ClientBound { .. } => " [client-bound]",
                    Flag::AnswerMismatch { .. } => " [WRONG ANSWER]",
                    Flag::Incomplete => " [incomplete]",
                    Flag::Errors { .. } | Flag::MissingRows { .. } | Flag::NotSupported => "",
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
    let lifecycle = report.plan.get("lifecycle").and_then(|v| v.as_bool()).unwrap_or(false);
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
                let point = points.iter().find(|p| p.target == *t && point_label(p) == *label);
                let lifecycle_point = lifecycle && point.is_some_and(|p| p.point.param.is_some());
                row.push(point.map(|p| if lifecycle_point { lifecycle_cell(p) } else { cell(p) }).unwrap_or_default());
            }
            rows.push(row);
        }
        let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
        let op = points.first().map(|p| p.op.name()).unwrap_or_default();
        let lifecycle_exp = lifecycle && points.iter().any(|p| p.point.param.is_some());
        if lifecycle_exp {
            let _ = writeln!(out, "\n{exp} ({op}; time of the run, median of measured runs, and per op)");
        } else {
            let _ = writeln!(out, "\n{exp} ({op}; median of measured runs, ± half the min-max spread)");
        }
        for row in rows {
            let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
            let _ = writeln!(out, "  {}", line.join("  ").trim_end());
        }
        if points.iter().any(|p| p.summary.as_ref().is_some_and(|s| s.memory.is_some())) {
            let mut rows: Vec<Vec<String>> =
                vec![std::iter::once("memory Δ".to_string()).chain(targets.iter().map(|t| t.to_string())).collect()];
            for label in &labels {
                let mut row = vec![label.clone()];
                for t in &targets {
                    let memory = points
                        .iter()
                        .find(|p| p.target == *t && point_label(p) == *label)
                        .and_then(|p| p.summary.as_ref())
                        .and_then(|s| s.memory.as_ref());
                    row.push(memory.map(memory_cell).unwrap_or_default());
                }
                rows.push(row);
            }
            let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
            let _ = writeln!(out, "  memory change per run: engine-reported / server process (PSS) / dbsweep client; per row in ()");
            for row in rows {
                let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
                let _ = writeln!(out, "  {}", line.join("  ").trim_end());
            }
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
    let voided = report.points.iter().filter(|p| p.is_void()).count();
    if voided > 0 {
        let _ = writeln!(
            out,
            "\nVOID: {voided} point{} had failed requests or missing rows; their timings are void and no throughput is published",
            if voided == 1 { "" } else { "s" }
        );
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
        assert_eq!(bytes(1_234_567.0), "+1.2MB");
        assert_eq!(bytes(-340_000.0), "-340kB");
        assert_eq!(bytes(96.0), "+96B");
    }
}
