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

/// True when the two runs' min-max throughput ranges overlap.
fn overlaps(a: &PointResult, b: &PointResult) -> bool {
    match (&a.summary, &b.summary) {
        (Some(x), Some(y)) => x.min_ops_per_sec <= y.max_ops_per_sec && y.min_ops_per_sec <= x.max_ops_per_sec,
        _ => false,
    }
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
        let Some(b) = &base.summary else { continue };
        let mut row = vec![base.experiment.clone(), base.target.clone(), label(base), format!("{}/s", rate(b.median_ops_per_sec))];
        for other in &reports[1..] {
            let cell = match other.points.iter().find(|p| key(p) == key(base)) {
                Some(p) => match &p.summary {
                    Some(s) if b.median_ops_per_sec > 0.0 => {
                        let ratio = s.median_ops_per_sec / b.median_ops_per_sec;
                        format!("{}/s ({ratio:.2}x{})", rate(s.median_ops_per_sec), if overlaps(base, p) { " ~" } else { "" })
                    }
                    _ => "no result".into(),
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
