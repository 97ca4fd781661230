//! Side-by-side comparison of saved runs (`dbsweep compare A B [C...]`): per experiment,
//! target and point, each run's median throughput and its ratio to the first run, marked
//! when the runs' min-max spreads overlap (the difference is then not significant).
//! Renders text only from saved reports; must not run anything.

use super::console::rate;
use super::model::{PointResult, Report};
use std::fmt::Write as _;

/// A point's identity across runs.
fn key(p: &PointResult) -> (String, String, usize, usize, bool, Option<u64>) {
    (p.experiment.clone(), p.target.clone(), p.point.clients, p.point.batch, p.point.batched, p.point.param)
}

fn label(p: &PointResult) -> String {
    let mut s = format!("c={}", p.point.clients);
    if p.point.batched {
        let _ = write!(s, " b={}", p.point.batch);
    }
    if let Some(v) = p.point.param {
        let _ = write!(s, " p={v}");
    }
    s
}

/// The (median, min, max) throughput of a point; `None` when it has none (void or not
/// measured).
fn throughput(p: &PointResult) -> Option<(f64, f64, f64)> {
    let s = p.summary.as_ref()?;
    Some((s.median_ops_per_sec?, s.min_ops_per_sec?, s.max_ops_per_sec?))
}

/// True when the two runs' min-max throughput ranges overlap.
fn overlaps(a: (f64, f64, f64), b: (f64, f64, f64)) -> bool {
    a.1 <= b.2 && b.1 <= a.2
}

/// A point without a throughput: void (errors, missing rows) or not measured.
fn no_throughput(p: &PointResult) -> String {
    if p.is_void() { "VOID (errors or missing rows)".into() } else { "no result".into() }
}

pub fn render(names: &[String], reports: &[Report]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "baseline: {} ({}, {})", names[0], reports[0].study, reports[0].started_at);
    for (name, r) in names.iter().zip(reports).skip(1) {
        let _ = writeln!(out, "compared: {name} ({}, {})", r.study, r.started_at);
    }
    let _ = writeln!(out, "ratio = run / baseline median ops/s; '~' = min-max spreads overlap: not a significant difference\n");
    let mut rows: Vec<Vec<String>> = vec![
        ["experiment", "target", "point"]
            .iter()
            .map(|s| s.to_string())
            .chain(names.iter().enumerate().map(|(i, n)| if i == 0 { format!("{n} ops/s") } else { format!("{n} (ratio)") }))
            .collect(),
    ];
    for base in &reports[0].points {
        if base.summary.is_none() {
            continue;
        }
        let b = throughput(base);
        let mut row = vec![
            base.experiment.clone(),
            base.target.clone(),
            label(base),
            match b {
                Some((median, _, _)) => format!("{}/s", rate(median)),
                None => no_throughput(base),
            },
        ];
        for other in &reports[1..] {
            let cell = match other.points.iter().find(|p| key(p) == key(base)) {
                Some(p) => match (b, throughput(p)) {
                    (Some(b), Some(s)) if b.0 > 0.0 => {
                        let ratio = s.0 / b.0;
                        format!("{}/s ({ratio:.2}x{})", rate(s.0), if overlaps(b, s) { " ~" } else { "" })
                    }
                    (_, Some(s)) => format!("{}/s", rate(s.0)),
                    (_, None) => no_throughput(p),
                },
                None => "-".into(),
            };
            row.push(cell);
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for row in rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}
