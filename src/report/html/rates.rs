//! The rate-sweep figure of report.html (the "hockey stick"): for points that differ only
//! in their fixed rate, response time p50 and p99 against the throughput each target
//! achieved, one chart per group, and a data table with the rate asked, the throughput
//! achieved, response and service percentiles and late ops at every rate.
//!
//! Draws from the saved model only; must not compute statistics beyond what the point
//! summaries hold.

use super::chart::{self, Axis, Pt, Scale, Series};
use super::figures::{FigureSpec, points_of};
use super::{
    Colors, Guides, chart_or_error, css, esc, flags_html, legend, save_link, small_multiples, table_close, table_open, targets_of,
    void_cells,
};
use crate::base::op::OpKind;
use crate::report::format::{micros, point_words as point_label, rate, rate_text};
use crate::report::model::{Flag, PointResult, Report};
use crate::workload::experiment::Point;
use std::fmt::Write as _;

/// The two response percentiles drawn, with their dash (p50 dashed, p99 solid).
const PERCENTILES: [(&str, Option<(u32, u32)>); 2] = [("p99", None), ("p50", Some((6, 4)))];

/// The points of `group`: same clients, batch and parameter, any rate; ascending rate.
fn in_group<'a>(points: &[&'a PointResult], group: &Point) -> Vec<&'a PointResult> {
    let mut mine: Vec<&PointResult> =
        points.iter().copied().filter(|p| p.point.rate.is_some() && Point { rate: None, ..p.point } == *group).collect();
    mine.sort_by(|a, b| a.rate().partial_cmp(&b.rate()).unwrap_or(std::cmp::Ordering::Equal));
    mine
}

fn missed(p: &PointResult) -> bool {
    p.flags.iter().any(|f| matches!(f, Flag::MissedRate { .. }))
}

/// One line per (target, percentile): response time at the throughput achieved; a void
/// point has neither and marks its asked rate on the x axis.
fn group_series(colors: &Colors, targets: &[String], points: &[&PointResult], op: OpKind) -> Vec<Series> {
    let mut series = Vec::new();
    for target in targets {
        let mine: Vec<&&PointResult> = points.iter().filter(|p| &p.target == target).collect();
        if mine.is_empty() {
            continue;
        }
        let voids: Vec<f64> = mine.iter().filter(|p| p.is_void()).filter_map(|p| p.rate()).collect();
        for (name, dash) in PERCENTILES {
            let pts = mine
                .iter()
                .filter(|p| !p.is_void())
                .filter_map(|p| {
                    let s = p.summary.as_ref()?;
                    let (achieved, l) = (s.median_ops_per_sec?, s.response_latency.as_ref()?);
                    let y = if name == "p99" { l.p99_us } else { l.p50_us };
                    let tip = format!(
                        "{target} · {}\nasked {} ops/s, achieved {} ops/s\nresponse {name} {}{}",
                        point_label(&p.point, op),
                        rate_text(p.rate()?),
                        rate(achieved),
                        micros(y),
                        if missed(p) { "\ncould not keep the rate" } else { "" }
                    );
                    Some(Pt { x: achieved, y, lo: y, hi: y, flagged: missed(p), tip, ..Pt::default() })
                })
                .collect();
            series.push(Series { name: format!("{target} {name}"), color: colors.of(target), dash, points: pts, voids: voids.clone() });
        }
    }
    series
}

/// The figure: one chart per group (small multiples on shared axes when several), the
/// reading guide, then the table.
/// How to read the hockey stick, once per page.
const HOCKEY_STICK_GUIDE: &str = "Each point is one fixed rate: its x is the median throughput the target achieved, its y the response time from each op's intended start (solid p99, dashed p50; logarithmic). While a target keeps up, the line runs flat and to the right; where it bends up (the hockey stick) the target falls behind the schedule and requests queue. A red ring marks a rate the target could not keep; a red × on the x axis a rate with no valid timing.";

pub(super) fn latency_vs_throughput(out: &mut String, r: &Report, colors: &Colors, f: &FigureSpec, groups: &[Point], guides: &mut Guides) {
    let all = points_of(r, &f.experiments[0]);
    let op = all.first().map(|p| p.op).unwrap_or(OpKind::Echo);
    let grouped: Vec<(Point, Vec<&PointResult>)> = groups.iter().map(|g| (*g, in_group(&all, g))).collect();
    let shown: Vec<&PointResult> = grouped.iter().flat_map(|(_, ps)| ps.iter().copied()).collect();
    let targets = targets_of(colors, &shown);
    let charts: Vec<(Point, Vec<Series>)> = grouped.iter().map(|(g, ps)| (*g, group_series(colors, &targets, ps, op))).collect();
    let marks = || charts.iter().flat_map(|(_, s)| s.iter()).flat_map(|s| s.points.iter());
    let xs: Vec<f64> = marks().map(|p| p.x).chain(shown.iter().filter_map(|p| p.rate())).collect();
    let ys: Vec<f64> = marks().map(|p| p.y).filter(|v| *v > 0.0).collect();
    let (x_axis, y_axis) = (Axis::values(Scale::Linear, &xs, ""), Axis::values(Scale::Log, &ys, ""));
    legend(out, colors, &targets);
    let (x_desc, y_desc) = ("throughput achieved (ops/s)", "response time (µs)");
    match charts.as_slice() {
        [(_, series)] => chart_or_error(out, chart::lines(&x_axis, &y_axis, x_desc, y_desc, series)),
        _ => {
            let cells: Vec<String> = charts
                .iter()
                .map(|(g, series)| {
                    let mut cell = format!(
                        "<div class=\"multiple\" data-clients=\"{}\"><div class=\"multiple-head\">{}{}</div>\n",
                        g.clients,
                        save_link(&f.id, &format!("{}-c{}-b{}", f.id, g.clients, g.batch)),
                        esc(&point_label(g, op))
                    );
                    chart_or_error(&mut cell, chart::small_lines(&x_axis, &y_axis, x_desc, y_desc, series));
                    cell.push_str("</div>\n");
                    cell
                })
                .collect();
            small_multiples(out, &cells);
        }
    }
    guides.write(out, HOCKEY_STICK_GUIDE);
    rate_table(out, colors, &grouped, op);
}

/// Every target at every rate of every group: asked, achieved, response p50/p99/p99.9,
/// service p99, late ops.
fn rate_table(out: &mut String, colors: &Colors, grouped: &[(Point, Vec<&PointResult>)], op: OpKind) {
    let rows: usize = grouped.iter().map(|(_, ps)| ps.len()).sum();
    table_open(out, rows);
    out.push_str("<tr><th>target</th><th>point</th><th>flags</th><th>asked ops/s</th><th>achieved ops/s</th><th>response p50</th><th>response p99</th><th>response p99.9</th><th>service p99</th><th>late ops</th></tr>\n");
    for (_, points) in grouped {
        let mut sorted = points.clone();
        sorted.sort_by_key(|p| colors.0.iter().position(|(n, _)| *n == p.target));
        for p in sorted {
            let _ = write!(
                out,
                "<tr><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"point\">{}</td><td>{}</td><td class=\"num\">{}</td>",
                css(colors.of(&p.target)),
                esc(&p.target),
                esc(&point_label(&Point { rate: None, ..p.point }, op)),
                flags_html(p),
                p.rate().map(rate_text).unwrap_or_default()
            );
            let summary = p.summary.as_ref();
            match (summary.and_then(|s| s.median_ops_per_sec), summary.and_then(|s| s.response_latency.as_ref())) {
                _ if p.is_void() => out.push_str(&void_cells(6)),
                (Some(achieved), Some(l)) => {
                    let service = summary.and_then(|s| s.latency.as_ref()).map(|l| micros(l.p99_us)).unwrap_or_default();
                    let (late, ops) = p.measured_runs().iter().fold((0, 0), |(late, all), m| (late + m.late_ops, all + m.ops));
                    let _ = write!(
                        out,
                        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{service}</td><td class=\"num\">{late} of {ops}</td>",
                        rate(achieved),
                        micros(l.p50_us),
                        micros(l.p99_us),
                        micros(l.p999_us)
                    );
                }
                _ => out.push_str("<td colspan=\"6\"></td>"),
            }
            out.push_str("</tr>\n");
        }
    }
    table_close(out);
}
