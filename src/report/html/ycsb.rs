//! The YCSB figures of report.html: the overview of every workload's throughput per record
//! count, and the paper's figures — each operation type's throughput (and service time)
//! against threads at one record count, one line per (target, operation type), named as
//! YCSB names them (READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE).
//!
//! Draws from the saved model only (each point's per-operation-type summary), like the rest
//! of the page; must not compute statistics.

use super::chart::{self, Axis, Pt, Scale, Series};
use super::figures::{self, points_of};
use super::{
    Colors, Tip, chart_or_error, css, esc, flags_html, grouped_bars, is_flagged, ops_error_bar, ops_spread, ops_text, table_close,
    table_open, targets_of, value_table,
};
use crate::base::measurement::LatencySummary;
use crate::base::op::OpKind;
use crate::report::format::micros;
use crate::report::model::{PointResult, Report};
use std::fmt::Write as _;

/// What an operation-type figure plots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Measure {
    Throughput,
    Latency,
}

/// Every workload's throughput at `clients` threads and one record count, one bar per target.
pub(super) fn workloads(out: &mut String, r: &Report, colors: &Colors, experiments: &[String], clients: usize, records: Option<u64>) {
    let groups: Vec<(String, Vec<&PointResult>)> = experiments
        .iter()
        .map(|e| (e.clone(), points_of(r, e).into_iter().filter(|p| p.point.clients == clients && p.point.param == records).collect()))
        .collect();
    grouped_bars(out, colors, &groups, "ops/s", &ops_error_bar, false, &Tip { value: &ops_spread, fmt: &ops_text });
    value_table(out, colors, "workload", &groups, "ops/s", &ops_spread, &chart::short);
}

/// One operation type of one point: its summary over the measured runs.
struct KindAtPoint {
    kind: OpKind,
    latency: LatencySummary,
    /// Median, min and max ops/s; `None` for a void point (errors, missing rows).
    rate: Option<(f64, f64, f64)>,
}

fn per_kind(p: &PointResult) -> Vec<KindAtPoint> {
    let by_kind = p.summary.as_ref().map(|s| &s.by_kind);
    OpKind::YCSB
        .into_iter()
        .filter_map(|kind| {
            let k = by_kind?.get(&kind)?;
            let rate = match (k.median_ops_per_sec, k.min_ops_per_sec, k.max_ops_per_sec) {
                (Some(m), Some(lo), Some(hi)) if !p.is_void() => Some((m, lo, hi)),
                _ => None,
            };
            Some(KindAtPoint { kind, latency: k.latency.clone(), rate })
        })
        .collect()
}

/// Dash pattern per operation type, so a target's lines (one colour) tell apart.
fn dash(kind: OpKind) -> Option<(u32, u32)> {
    match kind {
        OpKind::Get => None,
        OpKind::Update => Some((10, 5)),
        OpKind::Insert => Some((3, 4)),
        OpKind::Scan => Some((16, 6)),
        _ => Some((6, 2)),
    }
}

fn kind_name(kind: OpKind) -> &'static str {
    kind.ycsb_name().unwrap_or(kind.name())
}

/// A legend of (target, operation type) lines: the target's colour, the type's dash.
fn op_legend(out: &mut String, colors: &Colors, series: &[(String, OpKind)]) {
    out.push_str("<div class=\"legend\">");
    for (target, kind) in series {
        let dasharray = dash(*kind).map(|(d, g)| format!(" stroke-dasharray=\"{d} {g}\"")).unwrap_or_default();
        let _ = write!(
            out,
            "<span><svg width=\"30\" height=\"10\" aria-hidden=\"true\"><line x1=\"0\" y1=\"5\" x2=\"30\" y2=\"5\" stroke=\"{}\" stroke-width=\"2\"{dasharray}/></svg> {} {}</span>",
            css(colors.of(target)),
            esc(target),
            kind_name(*kind)
        );
    }
    out.push_str("</div>\n");
}

/// Throughput or service time of each operation type vs threads at one record count.
pub(super) fn op_lines(out: &mut String, r: &Report, colors: &Colors, experiment: &str, records: Option<u64>, measure: Measure) {
    let mut points: Vec<&PointResult> =
        points_of(r, experiment).into_iter().filter(|p| !p.point.batched && p.point.param == records).collect();
    points.sort_by_key(|p| p.point.clients);
    let stats: Vec<(&PointResult, Vec<KindAtPoint>)> = points.iter().map(|p| (*p, per_kind(p))).collect();
    let mut series = Vec::new();
    let mut names = Vec::new();
    for target in targets_of(colors, &points) {
        for kind in OpKind::YCSB {
            let mine: Vec<(&PointResult, &KindAtPoint)> = stats
                .iter()
                .filter(|(p, _)| p.target == target)
                .filter_map(|(p, kinds)| Some((*p, kinds.iter().find(|k| k.kind == kind)?)))
                .collect();
            // A void point has no value: the line breaks there and a red × marks it.
            let pts: Vec<Pt> = mine
                .iter()
                .filter_map(|(p, k)| {
                    let (y, lo, hi) = match measure {
                        Measure::Throughput => k.rate?,
                        Measure::Latency => k.rate.map(|_| (k.latency.p50_us, k.latency.p50_us, k.latency.p99_us))?,
                    };
                    let at = format!(
                        "{} {}, {} thread{}",
                        target,
                        kind_name(kind),
                        p.point.clients,
                        if p.point.clients == 1 { "" } else { "s" }
                    );
                    let tip = match measure {
                        Measure::Throughput => format!(
                            "{at}\n{} ops/s: median of the measured runs, min–max {} – {}",
                            chart::short(y),
                            chart::short(lo),
                            chart::short(hi)
                        ),
                        Measure::Latency => format!("{at}\nservice time p50 {}, p99 {} ({} ops)", micros(y), micros(hi), k.latency.count),
                    };
                    Some(Pt { x: p.point.clients as f64, y, lo, hi, hollow: false, flagged: is_flagged(p), tip })
                })
                .collect();
            let voids: Vec<f64> = mine.iter().filter(|(_, k)| k.rate.is_none()).map(|(p, _)| p.point.clients as f64).collect();
            if !mine.is_empty() {
                names.push((target.clone(), kind));
                let name = format!("{target} {}", kind_name(kind));
                series.push(Series { name, color: colors.of(&target), points: pts, voids, dash: dash(kind) });
            }
        }
    }
    let xs: Vec<f64> = points.iter().map(|p| p.point.clients as f64).collect();
    let ys: Vec<f64> = series.iter().flat_map(|s| s.points.iter().flat_map(|p| [p.lo, p.hi, p.y])).collect();
    let y_scale = if figures::wants_log(&ys) && ys.iter().all(|v| *v > 0.0) { Scale::Log } else { Scale::Linear };
    let y_desc = match measure {
        Measure::Throughput => "ops/s of the operation type",
        Measure::Latency => "service time p50 (µs)",
    };
    op_legend(out, colors, &names);
    chart_or_error(out, chart::lines(&Axis::at(Scale::Linear, &xs), &Axis::values(y_scale, &ys, ""), "threads (clients)", y_desc, &series));
    let mut note = match measure {
        Measure::Throughput => {
            "Operations of each type completed per second of the run (median of the measured runs; bars: min–max), as YCSB reports per operation type. Line style: the operation type; colour: the target.".to_string()
        }
        Measure::Latency => {
            "p50 service time of each operation type, merged over the measured runs; bars up to p99. Line style: the operation type; colour: the target.".to_string()
        }
    };
    if y_scale == Scale::Log {
        note.push_str(" Logarithmic y axis.");
    }
    let _ = writeln!(out, "<p class=\"note\">{note}</p>");
    op_table(out, colors, &stats);
}

fn op_table(out: &mut String, colors: &Colors, stats: &[(&PointResult, Vec<KindAtPoint>)]) {
    table_open(out, stats.iter().map(|(_, k)| k.len()).sum());
    out.push_str("<tr><th>operation</th><th>target</th><th>threads</th><th>flags</th><th>ops/s (median)</th><th>min–max</th><th>count</th><th>mean</th><th>p50</th><th>p99</th><th>max</th></tr>\n");
    for kind in OpKind::YCSB {
        for (p, kinds) in stats {
            let Some(k) = kinds.iter().find(|k| k.kind == kind) else { continue };
            let l = &k.latency;
            let (rate, spread) = match k.rate {
                Some((m, lo, hi)) => (chart::short(m), format!("{} – {}", chart::short(lo), chart::short(hi))),
                None => ("VOID".to_string(), String::new()),
            };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{rate}</td><td class=\"num\">{spread}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                kind_name(kind),
                css(colors.of(&p.target)),
                esc(&p.target),
                p.point.clients,
                flags_html(p),
                l.count,
                micros(l.mean_us),
                micros(l.p50_us),
                micros(l.p99_us),
                micros(l.max_us),
            );
        }
    }
    table_close(out);
}
