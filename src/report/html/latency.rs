//! The latency-percentile figures of report.html: service time (or, at a fixed rate,
//! response time from each op's intended start) against percentile from each point's
//! merged HDR histogram, one chart for one point or small multiples (one chart per client
//! count or rate, same axes) for several, and one data table with mean, p50, p90, p99,
//! p99.9 and max for every target at every point.
//!
//! Draws from the saved model only; must not compute statistics beyond reading quantiles
//! from the saved histograms.

use super::chart::{self, Axis, Pt, Scale, Series};
use super::figures::{FigureSpec, points_of};
use super::{
    Colors, Guides, chart_or_error, css, esc, flags_html, legend, point_desc, save_link, small_multiples, table_close, table_open,
    targets_of, void_cells,
};
use crate::base::measurement::LatencySummary;
use crate::report::format::{micros, point_words as point_label, rate_text};
use crate::report::model::{PointResult, Report};
use crate::workload::experiment::Point;
use std::fmt::Write as _;

/// Which of a point's latency histograms a figure draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// From sending a request to its answer.
    Service,
    /// Fixed-rate points: from the op's intended start (its slot in the schedule) to its
    /// answer, so time spent behind the schedule counts.
    Response,
}

impl Timing {
    fn of(self, p: &PointResult) -> Option<&LatencySummary> {
        let s = p.summary.as_ref()?;
        match self {
            Timing::Service => s.latency.as_ref(),
            Timing::Response => s.response_latency.as_ref(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Timing::Service => "service time",
            Timing::Response => "response time",
        }
    }
}

/// (percentile axis x, latency µs) points of a histogram, up to the nines its count
/// supports.
pub fn percentile_curve(l: &LatencySummary) -> Vec<(f64, f64)> {
    let Some(h) = l.decode() else { return Vec::new() };
    if h.is_empty() {
        return Vec::new();
    }
    let max_x = (h.len() as f64).log10().clamp(1.0, 6.0);
    let steps = (max_x * 20.0).ceil() as usize;
    (0..=steps)
        .map(|i| {
            let x = max_x * i as f64 / steps as f64;
            let q = 1.0 - 10f64.powf(-x);
            (x, h.value_at_quantile(q) as f64 / 1000.0)
        })
        .collect()
}

/// The curve's hover points: p50, p90, p99 and p99.9 where the request count supports
/// them, each with its value from the summary and the request count.
fn percentile_marks(l: &LatencySummary, head: &str, timing: Timing) -> Vec<Pt> {
    let supported = (l.count.max(1) as f64).log10();
    [(0.5, "p50", l.p50_us), (0.9, "p90", l.p90_us), (0.99, "p99", l.p99_us), (0.999, "p99.9", l.p999_us)]
        .into_iter()
        .map(|(q, name, us)| (-(1.0f64 - q).log10(), name, us))
        .filter(|(x, _, _)| *x <= supported.max(1.0) + 1e-9)
        .map(|(x, name, us)| Pt {
            x,
            y: us,
            lo: us,
            hi: us,
            tip: format!("{head}\n{name} {} {} (of {} requests)", timing.name(), micros(us), l.count),
            ..Pt::default()
        })
        .collect()
}

/// One curve per target with a histogram at this point (void points have none).
fn point_series(colors: &Colors, points: &[&PointResult], at: &Point, timing: Timing) -> Vec<Series> {
    let mut series = Vec::new();
    for p in points.iter().filter(|p| p.point == *at && !p.is_void()) {
        let Some(l) = timing.of(p) else { continue };
        let mut curve: Vec<Pt> = percentile_curve(l).into_iter().map(|(x, y)| Pt { x, y, lo: y, hi: y, ..Pt::default() }).collect();
        curve.extend(percentile_marks(l, &format!("{} · {}", p.target, point_label(at, p.op)), timing));
        curve.sort_by(|a, b| a.x.total_cmp(&b.x));
        series.push(Series { name: p.target.clone(), color: colors.of(&p.target), dash: None, points: curve, voids: Vec::new() });
    }
    series
}

/// The figure: one chart, or one small chart per point with shared axes, then the table.
/// How to read response times, once per page.
const RESPONSE_GUIDE: &str = "Response time counts the time an op spent waiting behind the schedule, so a system that falls behind shows it here (coordinated omission does not hide it); service time, from sending a request to its answer, does not.";

pub(super) fn percentiles(
    out: &mut String,
    r: &Report,
    colors: &Colors,
    f: &FigureSpec,
    at: &[Point],
    timing: Timing,
    guides: &mut Guides,
) {
    let points: Vec<&PointResult> = points_of(r, &f.experiments[0]).into_iter().filter(|p| at.contains(&p.point)).collect();
    let charts: Vec<(Point, Vec<Series>)> = at.iter().map(|a| (*a, point_series(colors, &points, a, timing))).collect();
    let y_desc = format!("{} (µs)", timing.name());
    let all = || charts.iter().flat_map(|(_, s)| s.iter()).flat_map(|s| s.points.iter());
    let max_x = all().map(|p| p.x).fold(1.0, f64::max);
    let ys: Vec<f64> = all().map(|p| p.y).filter(|v| *v > 0.0).collect();
    let (x_axis, y_axis) = (Axis::percentiles(max_x), Axis::values(Scale::Log, &ys, ""));
    legend(out, colors, &targets_of(colors, &points));
    let op = points.first().map(|p| p.op).unwrap_or(crate::base::op::OpKind::Echo);
    match charts.as_slice() {
        [(_, series)] => chart_or_error(out, chart::curves(&x_axis, &y_axis, "percentile", &y_desc, series)),
        _ => {
            let mut cells = Vec::new();
            for (a, series) in &charts {
                let rate = a.rate.map(|r| rate_text(r.ops_per_sec()));
                let name = format!("{}-c{}{}", f.id, a.clients, rate.as_ref().map(|r| format!("-r{r}")).unwrap_or_default());
                let mut cell = format!(
                    "<div class=\"multiple\" data-clients=\"{}\"{}><div class=\"multiple-head\">{}{}</div>\n",
                    a.clients,
                    rate.map(|r| format!(" data-rate=\"{r}\"")).unwrap_or_default(),
                    save_link(&f.id, &name),
                    esc(&point_label(a, op))
                );
                chart_or_error(&mut cell, chart::small_curves(&x_axis, &y_axis, "percentile", &y_desc, series));
                cell.push_str("</div>\n");
                cells.push(cell);
            }
            small_multiples(out, &cells);
        }
    }
    let labels: Vec<String> = at.iter().map(|a| point_label(a, op)).collect();
    let each = match (at.len() > 1, timing) {
        (false, _) => "",
        (true, Timing::Service) => "; one chart per client count, all on the same axes",
        (true, Timing::Response) => "; one chart per rate, all on the same axes",
    };
    let what = match timing {
        Timing::Service => "Service time per request (from sending it to its answer)",
        Timing::Response => "Response time per request (from the op's intended start in the fixed-rate schedule to its answer)",
    };
    let _ = writeln!(
        out,
        "<p class=\"note\">{what} at {} (merged HDR histogram of the measured runs){each}; logarithmic y axis; the x axis counts nines.</p>",
        esc(&labels.join("; "))
    );
    if timing == Timing::Response {
        guides.write(out, RESPONSE_GUIDE);
    }
    latency_table(out, colors, &points, at, timing);
}

/// Mean, p50, p90, p99, p99.9 and max of every target at every point, grouped by point.
fn latency_table(out: &mut String, colors: &Colors, points: &[&PointResult], at: &[Point], timing: Timing) {
    table_open(out, points.len());
    out.push_str("<tr><th>target</th><th>point</th><th>flags</th><th>requests</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>\n");
    let order = |p: &&PointResult| (at.iter().position(|a| *a == p.point), colors.0.iter().position(|(n, _)| *n == p.target));
    let mut sorted = points.to_vec();
    sorted.sort_by_key(order);
    for p in sorted {
        let _ = write!(
            out,
            "<tr><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"point\">{}</td><td>{}</td>",
            css(colors.of(&p.target)),
            esc(&p.target),
            esc(&point_desc(p)),
            flags_html(p)
        );
        match timing.of(p) {
            _ if p.is_void() => out.push_str(&void_cells(7)),
            Some(l) => {
                out.push_str(&format!("<td class=\"num\">{}</td>", l.count));
                for us in [l.mean_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us] {
                    let _ = write!(out, "<td class=\"num\">{}</td>", micros(us));
                }
            }
            None => out.push_str("<td colspan=\"7\"></td>"),
        }
        out.push_str("</tr>\n");
    }
    table_close(out);
}
