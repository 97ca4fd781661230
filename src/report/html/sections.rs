//! One experiment's section of the page: its figures (lines, bars, small multiples, each with
//! its table folded beside it), the legend and the answers table.
//!
//! Owns how a planned figure (`figures::FigureSpec`) becomes SVG and HTML; must not choose
//! which figures a report gets (`figures` does).

use super::*;

pub(super) fn legend(out: &mut String, colors: &Colors, targets: &[String]) {
    out.push_str("<div class=\"legend\">");
    for t in targets {
        let _ = write!(out, "<span><span class=\"sw\" style=\"background:{}\"></span>{}</span>", css(colors.of(t)), esc(t));
    }
    out.push_str("</div>\n");
}

/// Targets (in colour order) that have any of these points.
pub(super) fn targets_of(colors: &Colors, points: &[&PointResult]) -> Vec<String> {
    colors.0.iter().filter(|(n, _)| points.iter().any(|p| &p.target == n)).map(|(n, _)| n.clone()).collect()
}

pub(super) fn open_figure(out: &mut String, f: &FigureSpec) {
    let kind = match &f.kind {
        FigureKind::Throughput { .. } => "throughput",
        FigureKind::TimeVsRecords { .. } => "time",
        FigureKind::ThroughputBars => "throughput-bars",
        FigureKind::QueryDurations => "query-durations",
        FigureKind::ThroughputAtRecords { .. } => "throughput",
        FigureKind::YcsbWorkloads { .. } => "ycsb-workloads",
        FigureKind::YcsbOpThroughput { .. } => "ycsb-op-throughput",
        FigureKind::YcsbOpLatency { .. } => "ycsb-op-latency",
        FigureKind::Percentiles { .. } => "percentiles",
        FigureKind::ResponsePercentiles { .. } => "response-percentiles",
        FigureKind::LatencyVsThroughput { .. } => "latency-throughput",
        FigureKind::LifecycleTime => "lifecycle-time",
        FigureKind::MemoryPerRecord => "memory-per-record",
    };
    // Small multiples carry one save link per chart instead; more than two span the page's
    // width (more charts per row).
    let multiples = match &f.kind {
        FigureKind::Percentiles { points } | FigureKind::ResponsePercentiles { points } => points.len(),
        FigureKind::LatencyVsThroughput { groups } => groups.len(),
        _ => 1,
    };
    let save = if multiples > 1 { String::new() } else { save_link(&f.id, &f.id) };
    let _ = write!(
        out,
        "<figure id=\"{}\"{} data-figure=\"{}\" data-kind=\"{kind}\">\n<figcaption>{save}{}</figcaption>\n",
        esc(&f.id),
        if multiples > 2 { " class=\"wide\"" } else { "" },
        esc(&f.id),
        esc(&f.title)
    );
}

/// A link that saves the SVG of its chart (the enclosing `.multiple`, else the figure) as
/// `name.svg`.
pub(super) fn save_link(figure_id: &str, name: &str) -> String {
    format!(
        "<a class=\"save\" href=\"#{}\" data-name=\"{}.svg\" title=\"save this chart as an SVG file\">save SVG</a>",
        esc(figure_id),
        esc(name)
    )
}

/// Small multiples shown before the rest fold away (a sweep of many points stays a few
/// screens tall).
pub(super) const SHOWN_MULTIPLES: usize = 8;

/// A grid of small charts (each already a `.multiple`): the first `SHOWN_MULTIPLES`, the
/// rest folded under them.
pub(super) fn small_multiples(out: &mut String, cells: &[String]) {
    out.push_str("<div class=\"multiples\">\n");
    for cell in cells.iter().take(SHOWN_MULTIPLES) {
        out.push_str(cell);
    }
    out.push_str("</div>\n");
    if cells.len() > SHOWN_MULTIPLES {
        let _ = write!(
            out,
            "<details class=\"data more\"><summary>{} more charts</summary>\n<div class=\"multiples\">\n",
            cells.len() - SHOWN_MULTIPLES
        );
        for cell in &cells[SHOWN_MULTIPLES..] {
            out.push_str(cell);
        }
        out.push_str("</div></details>\n");
    }
}

pub(super) fn chart_or_error(out: &mut String, svg: Result<String, String>) {
    match svg {
        Ok(svg) => out.push_str(&svg),
        Err(e) => {
            let _ = write!(out, "<p class=\"flag err\">{}</p>", esc(&e));
        }
    }
    out.push('\n');
}

/// Long reading guides that figures of one kind share: in full the first time on the page,
/// folded under a one-line summary after that.
#[derive(Default)]
pub(super) struct Guides(Vec<&'static str>);

impl Guides {
    pub(super) fn write(&mut self, out: &mut String, guide: &'static str) {
        if self.0.contains(&guide) {
            let _ = writeln!(
                out,
                "<details class=\"guide\"><summary>how to read this chart</summary><p class=\"note\">{}</p></details>",
                esc(guide)
            );
        } else {
            self.0.push(guide);
            let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(guide));
        }
    }
}

pub(super) fn figure(out: &mut String, r: &Report, colors: &Colors, f: &FigureSpec, guides: &mut Guides) {
    open_figure(out, f);
    match &f.kind {
        FigureKind::Throughput { x, log_x } => throughput(out, r, colors, &f.experiments[0], *x, *log_x, None),
        FigureKind::ThroughputAtRecords { records } => throughput(out, r, colors, &f.experiments[0], XAxis::Clients, false, Some(*records)),
        FigureKind::TimeVsRecords { log_x } => time_vs_records(out, r, colors, &f.experiments[0], *log_x),
        FigureKind::ThroughputBars => throughput_bars(out, r, colors, &f.experiments[0]),
        FigureKind::QueryDurations => query_durations(out, r, colors, &f.experiments),
        FigureKind::YcsbWorkloads { clients, records } => ycsb::workloads(out, r, colors, &f.experiments, *clients, *records),
        FigureKind::YcsbOpThroughput { records } => ycsb::op_lines(out, r, colors, &f.experiments[0], *records, ycsb::Measure::Throughput),
        FigureKind::YcsbOpLatency { records } => ycsb::op_lines(out, r, colors, &f.experiments[0], *records, ycsb::Measure::Latency),
        FigureKind::Percentiles { points } => latency::percentiles(out, r, colors, f, points, latency::Timing::Service, guides),
        FigureKind::ResponsePercentiles { points } => latency::percentiles(out, r, colors, f, points, latency::Timing::Response, guides),
        FigureKind::LatencyVsThroughput { groups } => rates::latency_vs_throughput(out, r, colors, f, groups, guides),
        FigureKind::LifecycleTime => lifecycle_time(out, r, colors, &f.experiments[0]),
        FigureKind::MemoryPerRecord => memory_per_record(out, r, colors, &f.experiments[0]),
    }
    out.push_str("</figure>\n");
}

/// Opens a figure's data table, folded under the chart: the chart says it at a glance,
/// the table gives every number.
pub(super) fn table_open(out: &mut String, rows: usize) {
    let _ = write!(
        out,
        "<details class=\"data\"><summary>data ({rows} row{})</summary>\n<div class=\"scroll\"><table>\n",
        if rows == 1 { "" } else { "s" }
    );
}

/// Closes what `table_open` opened.
pub(super) fn table_close(out: &mut String) {
    out.push_str("</table></div></details>\n");
}

/// One line per target through its `points`: `value` (median, min, max) at `x`, drawn
/// `hollow` (not joined) where asked; void points have no value and mark a gap.
pub(super) fn line_series(
    colors: &Colors,
    targets: &[String],
    points: &[&PointResult],
    x: &dyn Fn(&PointResult) -> f64,
    value: &ValueOf,
    hollow: &dyn Fn(&PointResult) -> bool,
    tip: &Tip,
) -> Vec<Series> {
    targets
        .iter()
        .map(|t| {
            let mine: Vec<&PointResult> = points.iter().copied().filter(|p| &p.target == t).collect();
            Series {
                name: t.clone(),
                color: colors.of(t),
                points: mine
                    .iter()
                    .filter_map(|p| {
                        let (y, lo, hi) = value(p)?;
                        Some(Pt { x: x(p), y, lo, hi, hollow: hollow(p), flagged: is_flagged(p), tip: tip.of(p, &point_desc(p)) })
                    })
                    .collect(),
                voids: mine.iter().filter(|p| p.is_void()).map(|p| x(p)).collect(),
                dash: None,
            }
        })
        .collect()
}

/// Throughput vs `x`; `records`: only the points at this YCSB record count (vs clients).
pub(super) fn throughput(out: &mut String, r: &Report, colors: &Colors, experiment: &str, x: XAxis, log_x: bool, records: Option<u64>) {
    let all = points_of(r, experiment);
    let batch_clients = all.iter().find(|p| p.point.batched && p.point.param.is_none()).map(|p| p.point.clients);
    let points: Vec<&PointResult> = all
        .into_iter()
        .filter(|p| match x {
            XAxis::Clients => !p.point.batched && p.point.param == records,
            XAxis::Batch => p.point.param.is_none() && (p.point.batched || (p.point.batch == 1 && Some(p.point.clients) == batch_clients)),
            XAxis::Width | XAxis::Records => p.point.param.is_some(),
        })
        .collect();
    let targets = targets_of(colors, &points);
    let tip = Tip { value: &ops_spread, fmt: &ops_text };
    let hollow = |p: &PointResult| x == XAxis::Batch && !p.point.batched;
    let series = line_series(colors, &targets, &points, &|p| x.value(&p.point), &ops_error_bar, &hollow, &tip);
    let xs: Vec<f64> = points.iter().map(|p| x.value(&p.point)).collect();
    let ys: Vec<f64> = series.iter().flat_map(|s| s.points.iter().flat_map(|p| [p.lo, p.hi, p.y])).collect();
    let y_scale = if figures::wants_log(&ys) { Scale::Log } else { Scale::Linear };
    let x_axis = Axis::at(if log_x { Scale::Log } else { Scale::Linear }, &xs);
    let y_desc = if x == XAxis::Batch { "ops/s (= rows/s for one-row ops)" } else { "ops/s" };
    legend(out, colors, &targets);
    chart_or_error(out, chart::lines(&x_axis, &Axis::values(y_scale, &ys, ""), x.label(), y_desc, &series));
    let mut note = String::from("Median of the measured runs; bars: min–max.");
    if x == XAxis::Batch {
        note.push_str(" Hollow marker at 1: one op per request, unbatched (batching has a cost).");
    }
    if y_scale == Scale::Log {
        note.push_str(" Logarithmic y axis.");
    }
    let _ = writeln!(out, "<p class=\"note\">{note}</p>");
    throughput_table(out, colors, &points);
}

pub(super) fn throughput_table(out: &mut String, colors: &Colors, points: &[&PointResult]) {
    table_open(out, points.len());
    // Requests/s differ from ops/s only for batches.
    let batches = points.iter().any(|p| p.point.batch > 1);
    // At a fixed rate the response time (from each op's intended start) and the late ops
    // are what a user waits and what the schedule missed; service time alone hides a queue.
    let fixed_rate = points.iter().any(|p| p.point.rate.is_some());
    // The value columns after target, point and flags.
    let columns = 7 + usize::from(batches) + if fixed_rate { 3 } else { 0 };
    let _ = writeln!(
        out,
        "<tr><th>target</th><th>point</th><th>flags</th><th>ops/s (median)</th><th>min–max</th><th>rows/s</th>{}<th>p50</th><th>p99</th><th>max</th>{}<th>±95% CI</th></tr>",
        if batches { "<th>requests/s</th>" } else { "" },
        if fixed_rate { "<th>response p50</th><th>response p99</th><th>late ops</th>" } else { "" }
    );
    let mut sorted: Vec<&&PointResult> = points.iter().collect();
    sorted.sort_by_key(|p| {
        (colors.0.iter().position(|(n, _)| *n == p.target), p.point.batched, p.point.clients, p.point.batch, p.point.param)
    });
    for p in sorted {
        let _ = write!(
            out,
            "<tr><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"point\">{}</td>",
            css(colors.of(&p.target)),
            esc(&p.target),
            esc(&point_desc(p))
        );
        let _ = write!(out, "<td>{}</td>", flags_html(p));
        match &p.summary {
            _ if p.is_void() => out.push_str(&void_cells(columns)),
            Some(s) => {
                let req: Vec<f64> = measured(p).iter().filter_map(|r| r.requests_per_sec()).collect();
                let lat = s.latency.as_ref();
                let requests = if batches {
                    format!("<td class=\"num\">{}</td>", spread(&req).map(|(m, _, _)| chart::short(m)).unwrap_or_default())
                } else {
                    String::new()
                };
                let response = if fixed_rate {
                    let resp = s.response_latency.as_ref();
                    let (late, ops) = measured(p).iter().fold((0, 0), |(late, all), r| (late + r.late_ops, all + r.ops));
                    format!(
                        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                        resp.map(|l| micros(l.p50_us)).unwrap_or_default(),
                        resp.map(|l| micros(l.p99_us)).unwrap_or_default(),
                        if p.point.rate.is_some() { format!("{late} of {ops}") } else { String::new() }
                    )
                } else {
                    String::new()
                };
                let _ = write!(
                    out,
                    "<td class=\"num\">{}</td><td class=\"num\">{} – {}</td><td class=\"num\">{}</td>{requests}<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>{response}<td class=\"num\">{}</td>",
                    s.median_ops_per_sec.map(chart::short).unwrap_or_default(),
                    s.min_ops_per_sec.map(chart::short).unwrap_or_default(),
                    s.max_ops_per_sec.map(chart::short).unwrap_or_default(),
                    s.median_rows_per_sec.map(chart::short).unwrap_or_default(),
                    lat.map(|l| micros(l.p50_us)).unwrap_or_default(),
                    lat.map(|l| micros(l.p99_us)).unwrap_or_default(),
                    lat.map(|l| micros(l.max_us)).unwrap_or_default(),
                    precision_text(s.precision),
                );
            }
            None => {
                let _ = write!(out, "<td colspan=\"{columns}\"></td>");
            }
        }
        out.push_str("</tr>\n");
    }
    table_close(out);
}

pub(super) fn point_desc(p: &PointResult) -> String {
    let mut s = format!("{} client{}", p.point.clients, if p.point.clients == 1 { "" } else { "s" });
    if p.point.batched {
        let _ = write!(s, ", batch {}", p.point.batch);
    } else if p.point.batch == 1 && p.point.param.is_none() {
        s.push_str(", unbatched");
    }
    if let Some(v) = p.point.param {
        let what = if matches!(p.op, OpKind::RangeRows | OpKind::RangeCount | OpKind::RangeMax | OpKind::Scan) { "width" } else { "N" };
        let _ = write!(s, ", {what} {v}");
    }
    if let Some(rate) = p.rate() {
        let _ = write!(s, ", {} ops/s target", chart::short(rate));
    }
    s
}

pub(super) fn time_vs_records(out: &mut String, r: &Report, colors: &Colors, experiment: &str, log_x: bool) {
    let points: Vec<&PointResult> = points_of(r, experiment).into_iter().filter(|p| p.point.param.is_some()).collect();
    let targets = targets_of(colors, &points);
    let max = points.iter().filter_map(|p| run_seconds(p)).map(|(_, _, hi)| hi).fold(0.0, f64::max);
    let (div, unit) = secs_unit(max);
    let per_run = move |p: &PointResult| run_seconds(p).map(|(m, lo, hi)| (m / div, lo / div, hi / div));
    let tip = Tip { value: &run_seconds, fmt: &|v| format!("{} per run", fmt_secs(v)) };
    let series = line_series(colors, &targets, &points, &|p| p.point.param.unwrap_or(0) as f64, &per_run, &|_| false, &tip);
    let xs: Vec<f64> = points.iter().filter_map(|p| p.point.param.map(|v| v as f64)).collect();
    let ys: Vec<f64> = series.iter().flat_map(|s| s.points.iter().flat_map(|p| [p.lo, p.hi, p.y])).collect();
    legend(out, colors, &targets);
    chart_or_error(
        out,
        chart::lines(
            &Axis::at(if log_x { Scale::Log } else { Scale::Linear }, &xs),
            &Axis::values(Scale::Linear, &ys, ""),
            XAxis::Records.label(),
            &format!("time per run ({unit})"),
            &series,
        ),
    );
    let _ = writeln!(out, "<p class=\"note\">Wall time of one measured run (median; bars: min–max).</p>");
    table_open(out, points.len());
    out.push_str("<tr><th>target</th><th>N</th><th>flags</th><th>time per run (median)</th><th>min–max</th><th>requests per run</th><th>rows per run</th><th>p50</th><th>p99</th></tr>\n");
    for t in &targets {
        for p in points.iter().filter(|p| &p.target == t) {
            let _ = write!(
                out,
                "<tr><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td class=\"num\">{}</td>",
                css(colors.of(t)),
                esc(t),
                p.point.param.unwrap_or(0)
            );
            let _ = write!(out, "<td>{}</td>", flags_html(p));
            match run_seconds(p) {
                _ if p.is_void() => out.push_str(&void_cells(6)),
                Some((m, lo, hi)) => {
                    let runs = measured(p);
                    let lat = p.summary.as_ref().and_then(|s| s.latency.as_ref());
                    let _ = write!(
                        out,
                        "<td class=\"num\">{}</td><td class=\"num\">{} – {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                        fmt_secs(m),
                        fmt_secs(lo),
                        fmt_secs(hi),
                        runs.first().map(|r| r.requests).unwrap_or(0),
                        runs.first().map(|r| r.rows).unwrap_or(0),
                        lat.map(|l| micros(l.p50_us)).unwrap_or_default(),
                        lat.map(|l| micros(l.p99_us)).unwrap_or_default(),
                    );
                }
                None => out.push_str("<td colspan=\"6\"></td>"),
            }
            out.push_str("</tr>\n");
        }
    }
    table_close(out);
}

/// One group of bars per label, one bar per target; `value` gives a point's bar.
pub(super) fn grouped_bars(
    out: &mut String,
    colors: &Colors,
    groups: &[(String, Vec<&PointResult>)],
    y_desc: &str,
    value: &ValueOf,
    unit_secs: bool,
    tip: &Tip,
) {
    let all: Vec<&PointResult> = groups.iter().flat_map(|(_, ps)| ps.iter().copied()).collect();
    let targets = targets_of(colors, &all);
    let max = all.iter().filter_map(|p| value(p)).map(|(_, _, hi)| hi).fold(0.0, f64::max);
    let (div, unit) = if unit_secs { secs_unit(max) } else { (1.0, "") };
    let series: Vec<BarSeries> = targets
        .iter()
        .map(|t| BarSeries {
            name: t.clone(),
            color: colors.of(t),
            values: groups
                .iter()
                .map(|(g, ps)| {
                    let p = ps.iter().find(|p| &p.target == t)?;
                    let (m, lo, hi) = value(p)?;
                    let tip = tip.of(p, &format!("{g}, {}", point_desc(p)));
                    Some(Pt { x: 0.0, y: m / div, lo: lo / div, hi: hi / div, hollow: false, flagged: is_flagged(p), tip })
                })
                .collect(),
            voids: groups
                .iter()
                .enumerate()
                .filter(|(_, (_, ps))| ps.iter().any(|p| &p.target == t && p.is_void()))
                .map(|(i, _)| i)
                .collect(),
        })
        .collect();
    let ys: Vec<f64> = series.iter().flat_map(|s| s.values.iter().flatten().flat_map(|p| [p.lo, p.hi, p.y])).collect();
    let scale = if figures::wants_log(&ys) && ys.iter().all(|v| *v > 0.0) { Scale::Log } else { Scale::Linear };
    let labels: Vec<String> = groups.iter().map(|(g, _)| g.clone()).collect();
    let y_desc = if unit_secs { format!("{y_desc} ({unit})") } else { y_desc.to_string() };
    legend(out, colors, &targets);
    chart_or_error(out, chart::bars(&labels, &Axis::values(scale, &ys, ""), &y_desc, &series));
    if scale == Scale::Log {
        out.push_str("<p class=\"note\">Logarithmic y axis.</p>\n");
    }
}

pub(super) fn value_table(
    out: &mut String,
    colors: &Colors,
    group_name: &str,
    groups: &[(String, Vec<&PointResult>)],
    what: &str,
    value: &ValueOf,
    fmt: &dyn Fn(f64) -> String,
) {
    table_open(out, groups.iter().map(|(_, ps)| ps.len()).sum());
    let _ = writeln!(
        out,
        "<tr><th>{}</th><th>target</th><th>flags</th><th>{} (median)</th><th>min–max</th><th>p50</th><th>p99</th><th>±95% CI</th></tr>",
        esc(group_name),
        esc(what)
    );
    for (g, ps) in groups {
        for p in ps {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td>",
                esc(g),
                css(colors.of(&p.target)),
                esc(&p.target)
            );
            let _ = write!(out, "<td>{}</td>", flags_html(p));
            match value(p) {
                _ if p.is_void() => out.push_str(&void_cells(5)),
                Some((m, lo, hi)) => {
                    let lat = p.summary.as_ref().and_then(|s| s.latency.as_ref());
                    let _ = write!(
                        out,
                        "<td class=\"num\">{}</td><td class=\"num\">{} – {}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
                        fmt(m),
                        fmt(lo),
                        fmt(hi),
                        lat.map(|l| micros(l.p50_us)).unwrap_or_default(),
                        lat.map(|l| micros(l.p99_us)).unwrap_or_default(),
                        precision_text(p.summary.as_ref().and_then(|s| s.precision))
                    );
                }
                None => out.push_str("<td colspan=\"5\"></td>"),
            }
            out.push_str("</tr>\n");
        }
    }
    table_close(out);
}

/// (median, min, max) ops/s; `None` for a void point (it has no throughput).
pub(super) fn ops_spread(p: &PointResult) -> Option<(f64, f64, f64)> {
    let s = p.summary.as_ref()?;
    Some((s.median_ops_per_sec?, s.min_ops_per_sec?, s.max_ops_per_sec?))
}

/// A throughput chart's error bar: the min..max of the measured runs, widened to the
/// median's 95 % confidence interval (`PointSummary::precision`) where that is wider.
pub(super) fn ops_error_bar(p: &PointResult) -> Option<(f64, f64, f64)> {
    let (median, lo, hi) = ops_spread(p)?;
    let half = median * p.summary.as_ref().and_then(|s| s.precision).unwrap_or(0.0);
    Some((median, lo.min(median - half), hi.max(median + half)))
}

/// A table's `±95% CI` cell: the widest relative half-width among the measured runs.
pub(super) fn precision_text(precision: Option<f64>) -> String {
    precision.map(|p| format!("±{:.1}%", p * 100.0)).unwrap_or_default()
}

pub(super) fn throughput_bars(out: &mut String, r: &Report, colors: &Colors, experiment: &str) {
    let points = points_of(r, experiment);
    let groups: Vec<(String, Vec<&PointResult>)> = vec![(experiment.to_string(), points)];
    grouped_bars(out, colors, &groups, "ops/s", &ops_error_bar, false, &Tip { value: &ops_spread, fmt: &ops_text });
    value_table(out, colors, "experiment", &groups, "ops/s", &ops_spread, &chart::short);
}

pub(super) fn query_durations(out: &mut String, r: &Report, colors: &Colors, experiments: &[String]) {
    let groups: Vec<(String, Vec<&PointResult>)> = experiments.iter().map(|e| (e.clone(), points_of(r, e))).collect();
    let tip = Tip { value: &seconds_per_op, fmt: &|v| format!("{} per query", fmt_secs(v)) };
    grouped_bars(out, colors, &groups, "time per query", &seconds_per_op, true, &tip);
    out.push_str("<p class=\"note\">Wall time per query (median of the measured runs; bars: min–max). A query whose answer differs from the other systems' or from the exact TPC-H reference is flagged and its time is void; the answers table shows each answer and its check.</p>\n");
    value_table(out, colors, "query", &groups, "time per query", &seconds_per_op, &fmt_secs);
    answers_table(out, r, colors, &groups);
}

/// Each query's answer per target (row count, first row, digest) and the check's verdict:
/// a positive mark when it matches the TPC-H reference, the mismatch otherwise.
pub(super) fn answers_table(out: &mut String, r: &Report, colors: &Colors, groups: &[(String, Vec<&PointResult>)]) {
    let rows: Vec<(&str, &PointResult, crate::report::answers::ShownAnswer)> = groups
        .iter()
        .flat_map(|(g, ps)| ps.iter().filter_map(move |p| Some((g.as_str(), *p, crate::report::answers::of(r, p)?))))
        .collect();
    if rows.is_empty() {
        return;
    }
    let mismatches = rows.iter().filter(|(_, _, a)| matches!(a.verdict, crate::report::answers::Verdict::Mismatch(_))).count();
    let _ = write!(
        out,
        "<details class=\"data\"><summary>answers ({} checked{})</summary>\n<div class=\"scroll\"><table id=\"answers\"><tr><th>query</th><th>target</th><th>answer (first measured run)</th><th>check</th></tr>\n",
        rows.len(),
        if mismatches > 0 { format!(", <span class=\"flag loud\">{mismatches} MISMATCH</span>") } else { String::new() }
    );
    for (g, p, a) in rows {
        let check = match &a.verdict {
            crate::report::answers::Verdict::MatchesReference => format!("<span class=\"status-ok\">✓ {}</span>", esc(&a.verdict.text())),
            crate::report::answers::Verdict::Mismatch(_) => format!("<span class=\"flag loud\">{}</span>", esc(&a.verdict.text())),
            crate::report::answers::Verdict::NoReference => esc(&a.verdict.text()),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td><code>{}</code></td><td>{check}</td></tr>",
            esc(g),
            css(colors.of(&p.target)),
            esc(&p.target),
            esc(&a.compact)
        );
    }
    table_close(out);
}
