//! Inline SVG charts drawn with `plotters` (SVG backend only): line charts with error
//! bars on linear, logarithmic or percentile axes, and grouped bar charts.
//!
//! plotters is used with `default-features = false` and only `svg_backend`, `line_series`,
//! `point_series` and `errorbar`: the SVG backend writes text as `<text>` elements (no font
//! files, no font-kit, the viewer's system fonts), and the bitmap, chrono and image
//! features would only add build time. Log and percentile axes are drawn as transformed
//! linear axes with our own key points, so every chart has the same coordinate type and
//! ticks fall on the values the study used (clients 1 2 4 8, batch 1 10 100 1000).
//!
//! Owns drawing only: it gets finished numbers and must not look at the model.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use std::fmt::Write as _;
use std::ops::Range;

/// A linear coordinate whose key points (ticks and grid lines) are exactly ours.
#[derive(Debug, Clone)]
struct Ticks {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Ticks {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = if self.hi > self.lo { (v - self.lo) / (self.hi - self.lo) } else { 0.5 };
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() { Vec::new() } else { self.ticks.clone() }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

pub const WIDTH: u32 = 640;
pub const HEIGHT: u32 = 360;
/// One chart of a row of small multiples (same axes in each).
const SMALL: (u32, u32) = (440, 300);
/// More distinct x values than this get evenly spaced ticks instead of one per value.
const MAX_VALUE_TICKS: usize = 12;

/// One plotted value with its spread (already in the axis's unit).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
    /// Drawn hollow and not joined by the line (batch size 1 sent unbatched).
    pub hollow: bool,
    /// Drawn with a red ring: a flag qualifies this number.
    pub flagged: bool,
    /// The mark's tooltip (an SVG `<title>`: target, point, value with unit, spread); none
    /// when empty.
    pub tip: String,
}

#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub color: RGBColor,
    pub points: Vec<Pt>,
    /// Dashed line (dash length, gap, in pixels) to tell apart series of one colour; `None`
    /// is solid.
    pub dash: Option<(u32, u32)>,
    /// x values of void points (errors or missing rows): no value, so the line breaks
    /// there and a red × on the x axis marks the gap.
    pub voids: Vec<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log,
    /// x = -log10(1 - q): 0 = 0 %, 1 = 90 %, 2 = 99 %, 3 = 99.9 % (HdrHistogram's plots).
    Percentile,
}

/// A finished axis: range and key points in transformed coordinates.
#[derive(Debug, Clone)]
pub struct Axis {
    pub scale: Scale,
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    /// Unit suffix for labels ("", " ms", ...), applied after scaling.
    pub label: String,
}

fn t(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Log => v.max(1e-12).log10(),
        Scale::Linear | Scale::Percentile => v,
    }
}

/// Short number: 1.2k, 35k, 1.2M, 0.25.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = if x.abs() >= 100.0 || x == x.trunc() {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 0.1 {
        format!("{x:.2}")
    } else {
        // Two significant digits however small (0.001, 0.00025).
        let decimals = ((-x.abs().log10()).ceil() as usize + 1).min(12);
        format!("{x:.decimals$}")
    };
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    format!("{s}{suffix}")
}

fn nice_step(range: f64, target: f64) -> f64 {
    let raw = (range / target).max(1e-12);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

impl Axis {
    /// A value axis from 0 (linear) or from the smallest value (log) to a bit above the
    /// largest.
    pub fn values(scale: Scale, values: &[f64], label: &str) -> Axis {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite() && (scale != Scale::Log || *v > 0.0)).collect();
        let max = finite.iter().copied().fold(f64::MIN, f64::max);
        let min = finite.iter().copied().fold(f64::MAX, f64::min);
        match scale {
            Scale::Log => {
                let (lo, hi) =
                    if finite.is_empty() { (0.0, 1.0) } else { (min.log10().floor(), max.log10().ceil().max(min.log10().floor() + 1.0)) };
                let mut ticks = Vec::new();
                let decades = (hi - lo) as i32;
                for d in lo as i32..=hi as i32 {
                    ticks.push(d as f64);
                    if decades <= 2 && d < hi as i32 {
                        ticks.push(d as f64 + 2f64.log10());
                        ticks.push(d as f64 + 5f64.log10());
                    }
                }
                Axis { scale, lo, hi, ticks, label: label.into() }
            }
            _ => {
                let max = if finite.is_empty() || max <= 0.0 { 1.0 } else { max * 1.08 };
                let min = if finite.is_empty() { 0.0 } else { min.min(0.0) };
                let step = nice_step(max - min, 6.0);
                let lo = (min / step).floor() * step;
                let hi = (max / step).ceil() * step;
                let ticks = (0..=((hi - lo) / step).round() as i64).map(|i| lo + i as f64 * step).collect();
                Axis { scale, lo, hi, ticks, label: label.into() }
            }
        }
    }

    /// An x axis whose ticks are exactly the given (distinct) values.
    pub fn at(scale: Scale, xs: &[f64]) -> Axis {
        let mut tx: Vec<f64> = xs.iter().copied().filter(|v| scale != Scale::Log || *v > 0.0).map(|v| t(scale, v)).collect();
        tx.sort_by(f64::total_cmp);
        tx.dedup();
        let (lo, hi) = match (tx.first(), tx.last()) {
            (Some(a), Some(b)) if b > a => (*a, *b),
            (Some(a), _) => (*a - 1.0, *a + 1.0),
            _ => (0.0, 1.0),
        };
        let pad = (hi - lo) * 0.05;
        if tx.len() > MAX_VALUE_TICKS {
            // A dense sweep (e.g. N = 100, 200, ... 100000): nice ticks over its range.
            let raw: Vec<f64> = xs.iter().copied().filter(|v| scale != Scale::Log || *v > 0.0).collect();
            let nice = Axis::values(scale, &raw, "");
            let ticks = nice.ticks.into_iter().filter(|t| *t >= lo - pad && *t <= hi + pad).collect();
            return Axis { scale, lo: lo - pad, hi: hi + pad, ticks, label: String::new() };
        }
        Axis { scale, lo: lo - pad, hi: hi + pad, ticks: tx, label: String::new() }
    }

    /// The percentile axis from 0 % to `max_x` nines.
    pub fn percentiles(max_x: f64) -> Axis {
        let hi = max_x.ceil().max(1.0);
        Axis { scale: Scale::Percentile, lo: 0.0, hi, ticks: (0..=hi as i64).map(|v| v as f64).collect(), label: String::new() }
    }

    fn coord(&self) -> Ticks {
        Ticks { lo: self.lo, hi: self.hi, ticks: self.ticks.clone() }
    }

    fn fmt(&self, v: f64) -> String {
        match self.scale {
            Scale::Linear => format!("{}{}", short(v), self.label),
            Scale::Log => format!("{}{}", short(10f64.powf(v)), self.label),
            Scale::Percentile => {
                let q = 100.0 * (1.0 - 10f64.powf(-v));
                let s = format!("{q:.6}");
                format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
            }
        }
    }
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("chart: {e:?}")
}

/// An invisible hover target over a drawn mark (pixel coordinates) with its tooltip.
#[derive(Debug, Clone, PartialEq)]
enum HoverMark {
    Dot { at: (i32, i32), tip: String },
    Bar { corner: (i32, i32), other: (i32, i32), tip: String },
}

/// Adds the marks' tooltips as a last layer of transparent shapes, each with an SVG
/// `<title>`: a browser shows it on hover without any script or network.
fn with_tooltips(mut svg: String, marks: &[HoverMark]) -> String {
    if marks.is_empty() {
        return svg;
    }
    let mut layer = String::from("<g class=\"tips\" fill=\"#000\" fill-opacity=\"0\">\n");
    for mark in marks {
        let _ = match mark {
            HoverMark::Dot { at: (x, y), tip } => {
                writeln!(layer, "<circle cx=\"{x}\" cy=\"{y}\" r=\"8\"><title>{}</title></circle>", super::esc(tip))
            }
            HoverMark::Bar { corner: (x0, y0), other: (x1, y1), tip } => writeln!(
                layer,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
                x0.min(x1),
                y0.min(y1),
                (x1 - x0).abs().max(2),
                (y1 - y0).abs().max(2),
                super::esc(tip)
            ),
        };
    }
    layer.push_str("</g>\n");
    if let Some(end) = svg.rfind("</svg>") {
        svg.insert_str(end, &layer);
    }
    svg
}

/// Lines with markers and min..max error bars, one per series.
pub fn lines(x: &Axis, y: &Axis, x_desc: &str, y_desc: &str, series: &[Series]) -> Result<String, String> {
    draw_lines(x, y, x_desc, y_desc, series, true, (WIDTH, HEIGHT))
}

/// Lines without markers (dense curves such as latency by percentile).
pub fn curves(x: &Axis, y: &Axis, x_desc: &str, y_desc: &str, series: &[Series]) -> Result<String, String> {
    draw_lines(x, y, x_desc, y_desc, series, false, (WIDTH, HEIGHT))
}

/// `lines` in the size of one of several small multiples.
pub fn small_lines(x: &Axis, y: &Axis, x_desc: &str, y_desc: &str, series: &[Series]) -> Result<String, String> {
    draw_lines(x, y, x_desc, y_desc, series, true, SMALL)
}

/// `curves` in the size of one of several small multiples.
pub fn small_curves(x: &Axis, y: &Axis, x_desc: &str, y_desc: &str, series: &[Series]) -> Result<String, String> {
    draw_lines(x, y, x_desc, y_desc, series, false, SMALL)
}

fn draw_lines(
    x: &Axis,
    y: &Axis,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    markers: bool,
    size: (u32, u32),
) -> Result<String, String> {
    let mut svg = String::new();
    let mut marks = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .margin_right(34)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x.coord(), y.coord())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|v| x.fmt(*v))
            .y_label_formatter(&|v| y.fmt(*v))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .bold_line_style(RGBColor(225, 225, 225))
            .draw()
            .map_err(err)?;
        let clamp = |v: f64| v.clamp(y.lo, y.hi);
        let void_y = y.lo + 0.03 * (y.hi - y.lo);
        for s in series {
            let tp = |p: &Pt| (t(x.scale, p.x), clamp(t(y.scale, p.y)));
            for segment in segments(&s.points, &s.voids) {
                let segment = segment.into_iter().map(tp);
                match s.dash {
                    Some((dash, gap)) => {
                        chart.draw_series(DashedLineSeries::new(segment, dash, gap, s.color.stroke_width(2))).map_err(err)?
                    }
                    None => chart.draw_series(LineSeries::new(segment, s.color.stroke_width(2))).map_err(err)?,
                };
            }
            chart.draw_series(s.voids.iter().map(|vx| Cross::new((t(x.scale, *vx), void_y), 6, RED.stroke_width(2)))).map_err(err)?;
            for vx in &s.voids {
                let tip = format!("{}: void at {x_desc} {} (no timing: see the flags in the table)", s.name, x.fmt(t(x.scale, *vx)));
                marks.push(HoverMark::Dot { at: chart.backend_coord(&(t(x.scale, *vx), void_y)), tip });
            }
            marks.extend(
                s.points
                    .iter()
                    .filter(|p| !p.tip.is_empty())
                    .map(|p| HoverMark::Dot { at: chart.backend_coord(&tp(p)), tip: p.tip.clone() }),
            );
            if !markers {
                continue;
            }
            chart
                .draw_series(s.points.iter().filter(|p| p.hi > p.lo).map(|p| {
                    let (px, _) = tp(p);
                    ErrorBar::new_vertical(
                        px,
                        clamp(t(y.scale, p.lo)),
                        clamp(t(y.scale, p.y)),
                        clamp(t(y.scale, p.hi)),
                        s.color.stroke_width(1),
                        8,
                    )
                }))
                .map_err(err)?;
            // Dense sweeps (hundreds of N values) read better as lines; hollow markers stay.
            let dense = s.points.len() > 60;
            chart
                .draw_series(s.points.iter().filter(|p| !dense || p.hollow).map(|p| {
                    let style = if p.hollow { s.color.stroke_width(2) } else { s.color.filled() };
                    Circle::new(tp(p), 4, style)
                }))
                .map_err(err)?;
            chart.draw_series(s.points.iter().filter(|p| p.flagged).map(|p| Circle::new(tp(p), 8, RED.stroke_width(2)))).map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(with_tooltips(svg, &marks))
}

/// The joined (not hollow) points in x order, split wherever a void point lies between two
/// of them: a line never bridges a result that is void.
fn segments<'a>(points: &'a [Pt], voids: &[f64]) -> Vec<Vec<&'a Pt>> {
    let mut joined: Vec<&Pt> = points.iter().filter(|p| !p.hollow).collect();
    joined.sort_by(|a, b| a.x.total_cmp(&b.x));
    let mut out: Vec<Vec<&Pt>> = Vec::new();
    for p in joined {
        match out.last_mut() {
            Some(seg) if !voids.iter().any(|v| *v > seg[seg.len() - 1].x && *v < p.x) => seg.push(p),
            _ => out.push(vec![p]),
        }
    }
    out
}

/// One bar series: a value (with spread) per group, `None` where there is no result.
#[derive(Debug, Clone)]
pub struct BarSeries {
    pub name: String,
    pub color: RGBColor,
    pub values: Vec<Option<Pt>>,
    /// Groups where this series' point is void (errors or missing rows): no bar, a red ×
    /// at its foot instead.
    pub voids: Vec<usize>,
}

/// Grouped bars: one group per label, one bar per series, min..max whiskers.
pub fn bars(groups: &[String], y: &Axis, y_desc: &str, series: &[BarSeries]) -> Result<String, String> {
    let mut svg = String::new();
    let mut marks = Vec::new();
    let n = groups.len().max(1) as f64;
    let width = WIDTH.max(120 * groups.len().min(12) as u32);
    {
        let root = SVGBackend::with_string(&mut svg, (width, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let ticks: Vec<f64> = (0..groups.len()).map(|i| i as f64 + 0.5).collect();
        let mut chart = ChartBuilder::on(&root)
            .margin(14)
            .margin_right(34)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(Ticks { lo: 0.0, hi: n, ticks }, y.coord())
            .map_err(err)?;
        chart
            .configure_mesh()
            .y_desc(y_desc)
            .x_label_formatter(&|v| groups.get(v.floor().max(0.0) as usize).cloned().unwrap_or_default())
            .y_label_formatter(&|v| y.fmt(*v))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 16))
            .bold_line_style(RGBColor(225, 225, 225))
            .disable_x_mesh()
            .draw()
            .map_err(err)?;
        let k = series.len().max(1) as f64;
        let bar = 0.8 / k;
        let base = if y.scale == Scale::Log { y.lo } else { 0f64.clamp(y.lo, y.hi) };
        let clamp = |v: f64| t(y.scale, v).clamp(y.lo, y.hi);
        for (si, s) in series.iter().enumerate() {
            let void_y = y.lo + 0.03 * (y.hi - y.lo);
            let void_at = |gi: usize| (gi as f64 + 0.1 + (si as f64 + 0.45) * bar, void_y);
            chart.draw_series(s.voids.iter().map(|gi| Cross::new(void_at(*gi), 6, RED.stroke_width(2)))).map_err(err)?;
            for gi in &s.voids {
                let group = groups.get(*gi).map(String::as_str).unwrap_or_default();
                let tip = format!("{}, {group}: void (no timing: see the flags in the table)", s.name);
                marks.push(HoverMark::Dot { at: chart.backend_coord(&void_at(*gi)), tip });
            }
            for (gi, v) in s.values.iter().enumerate() {
                let Some(v) = v else { continue };
                let x0 = gi as f64 + 0.1 + si as f64 * bar;
                let style = if v.hollow { s.color.stroke_width(2) } else { s.color.filled() };
                let (corner, other) = ((x0, base), (x0 + bar * 0.9, clamp(v.y)));
                chart.draw_series(std::iter::once(Rectangle::new([corner, other], style))).map_err(err)?;
                if !v.tip.is_empty() {
                    marks.push(HoverMark::Bar {
                        corner: chart.backend_coord(&corner),
                        other: chart.backend_coord(&other),
                        tip: v.tip.clone(),
                    });
                }
                let xm = x0 + bar * 0.45;
                if v.hi > v.lo {
                    chart
                        .draw_series(std::iter::once(ErrorBar::new_vertical(
                            xm,
                            clamp(v.lo),
                            clamp(v.y),
                            clamp(v.hi),
                            BLACK.stroke_width(1),
                            6,
                        )))
                        .map_err(err)?;
                }
                if v.flagged {
                    chart.draw_series(std::iter::once(Circle::new((xm, clamp(v.y)), 6, RED.stroke_width(2)))).map_err(err)?;
                }
            }
        }
        root.present().map_err(err)?;
    }
    Ok(with_tooltips(svg, &marks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axes_tick_at_decades_and_percentile_labels_count_nines() {
        let a = Axis::values(Scale::Log, &[3.0, 4000.0], "");
        assert_eq!((a.lo, a.hi), (0.0, 4.0));
        assert!(a.ticks.contains(&2.0) && a.fmt(2.0) == "100", "{:?}", a.ticks);
        let p = Axis::percentiles(3.0);
        assert_eq!(p.fmt(0.0), "0%");
        assert_eq!(p.fmt(1.0), "90%");
        assert_eq!(p.fmt(3.0), "99.9%");
    }

    #[test]
    fn x_ticks_are_the_values_used() {
        let a = Axis::at(Scale::Log, &[1.0, 10.0, 100.0, 10.0]);
        assert_eq!(a.ticks, vec![0.0, 1.0, 2.0]);
        assert_eq!(a.fmt(2.0), "100");
        let dense: Vec<f64> = (1..=1000).map(|i| i as f64 * 100.0).collect();
        let d = Axis::at(Scale::Linear, &dense);
        assert!(d.ticks.len() <= 12 && d.ticks.len() >= 3, "{:?}", d.ticks);
        assert!(d.ticks.iter().all(|t| *t >= d.lo && *t <= d.hi));
        assert_eq!(short(1234.0), "1.23k");
        assert_eq!(short(35000.0), "35k");
        assert_eq!(short(0.5), "0.5");
        assert_eq!(short(0.0001), "0.0001");
        assert_eq!(short(0.00025), "0.00025");
        assert_eq!(short(0.0), "0");
    }

    #[test]
    fn lines_break_at_void_points() {
        let pt = |x: f64| Pt { x, y: 1.0, lo: 1.0, hi: 1.0, ..Pt::default() };
        let points = [pt(8.0), pt(1.0), pt(2.0), Pt { hollow: true, ..pt(3.0) }];
        let xs = |segs: Vec<Vec<&Pt>>| segs.iter().map(|s| s.iter().map(|p| p.x).collect::<Vec<_>>()).collect::<Vec<_>>();
        assert_eq!(xs(segments(&points, &[])), vec![vec![1.0, 2.0, 8.0]]);
        assert_eq!(xs(segments(&points, &[4.0])), vec![vec![1.0, 2.0], vec![8.0]]);
        let svg = lines(
            &Axis::at(Scale::Linear, &[1.0, 8.0]),
            &Axis::values(Scale::Linear, &[1.0], ""),
            "clients",
            "ops/s",
            &[Series { name: "a".into(), color: RGBColor(1, 2, 3), points: points.to_vec(), voids: vec![4.0], dash: None }],
        )
        .unwrap();
        assert!(svg.contains("#FF0000") || svg.contains("#ff0000"), "the void point is marked in red");
    }

    #[test]
    fn charts_are_svg_with_one_path_per_series() {
        let s = |name: &str, c| Series {
            name: name.into(),
            color: c,
            voids: vec![],
            points: vec![
                Pt {
                    x: 1.0, y: 10.0, lo: 9.0, hi: 11.0, tip: format!("{name} · 1 client\n10 ops/s (min–max 9 – 11)"), ..Pt::default()
                },
                Pt { x: 4.0, y: 30.0, lo: 30.0, hi: 30.0, flagged: true, ..Pt::default() },
            ],
            dash: None,
        };
        let svg = lines(
            &Axis::at(Scale::Linear, &[1.0, 4.0]),
            &Axis::values(Scale::Linear, &[11.0, 30.0], ""),
            "clients",
            "ops/s",
            &[s("a", RGBColor(1, 2, 3)), s("b", RGBColor(4, 5, 6))],
        )
        .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.contains("#010203") && svg.contains("#040506"), "both series' colours are drawn");
        assert!(svg.contains("\nclients\n</text>"), "axis description drawn");
        // One tooltip per mark that has one, over the drawn marker, inside the SVG.
        let tips: Vec<&str> = svg.match_indices("<title>").map(|(i, _)| &svg[..i]).collect();
        assert_eq!(tips.len(), 2, "one tooltip for each series' tipped point");
        assert!(svg.contains("<title>a · 1 client\n10 ops/s (min–max 9 – 11)</title>"), "{svg}");
        let hover = &tips[0][tips[0].rfind("<circle").unwrap()..];
        let at = &hover[..hover.find(" r=").unwrap()];
        assert!(svg.matches(&format!("{at} r=\"4\"")).count() >= 1, "the hover target {at} sits on a drawn marker");
        assert!(svg.rfind("</g>").unwrap() < svg.rfind("</svg>").unwrap());
    }

    #[test]
    fn bars_and_void_marks_get_tooltips() {
        let series = [BarSeries {
            name: "a".into(),
            color: RGBColor(1, 2, 3),
            values: vec![Some(Pt { y: 5.0, lo: 4.0, hi: 6.0, tip: "a · q1\n5 s".into(), ..Pt::default() }), None],
            voids: vec![1],
        }];
        let svg = bars(&["q1".into(), "q6 <x>".into()], &Axis::values(Scale::Linear, &[6.0], ""), "s", &series).unwrap();
        assert!(svg.contains("<title>a · q1\n5 s</title></rect>"), "{svg}");
        assert!(svg.contains("<title>a, q6 &lt;x&gt;: void (no timing: see the flags in the table)</title></circle>"), "{svg}");
    }
}
