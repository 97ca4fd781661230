//! Which figures a report gets: from each experiment's op kind and point parameters, the
//! figures its study's paper had, with the same axes (throughput vs clients, vs batch size
//! and vs range width; time vs key count; analytic query durations; YCSB per workload and,
//! per record count, per operation type vs threads; the in-memory study's time and memory
//! per record count; latency percentiles at every client count).
//!
//! Owns the choice and the ids of figures. Must not draw, and must not compute numbers.

use crate::base::op::OpKind;
use crate::base::span;
use crate::report::format;
use crate::report::model::{PointResult, Report};
use crate::workload::experiment::Point;

/// The x axis of a throughput or time figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// Concurrent clients (threads), one op per request; linear.
    Clients,
    /// Ops per request, one client; logarithmic.
    Batch,
    /// Range width `hi - lo`; logarithmic.
    Width,
    /// Key or record count N (`param`); logarithmic when it spans two decades or more.
    Records,
}

impl XAxis {
    pub fn label(self) -> &'static str {
        match self {
            XAxis::Clients => "clients",
            XAxis::Batch => "batch size (ops per request)",
            XAxis::Width => "range width",
            XAxis::Records => "keys (N)",
        }
    }

    /// The point's value on this axis.
    pub fn value(self, p: &Point) -> f64 {
        match self {
            XAxis::Clients => p.clients as f64,
            XAxis::Batch => p.batch as f64,
            XAxis::Width | XAxis::Records => p.param.unwrap_or(0) as f64,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum FigureKind {
    /// Median ops/s (error bars min..max of the measured runs) vs `x`, one line per target.
    Throughput { x: XAxis, log_x: bool },
    /// Seconds per measured run vs N, one line per target (insert-find).
    TimeVsRecords { log_x: bool },
    /// One point per target: ops/s bars.
    ThroughputBars,
    /// Seconds per query: one group per query experiment, one bar per target.
    QueryDurations,
    /// Median ops/s vs clients (threads) at one YCSB record count, one line per target.
    ThroughputAtRecords { records: u64 },
    /// YCSB: ops/s per workload at one thread count and record count, one bar per target.
    YcsbWorkloads { clients: usize, records: Option<u64> },
    /// YCSB, as the paper's figures: ops/s of each operation type vs threads at one record
    /// count, one line per (target, operation type).
    YcsbOpThroughput { records: Option<u64> },
    /// YCSB: service time of each operation type vs threads at one record count, one line
    /// per (target, operation type).
    YcsbOpLatency { records: Option<u64> },
    /// Latency vs percentile from the merged histogram at each of these points (one small
    /// chart per client count when there are several), ascending clients.
    Percentiles { points: Vec<Point> },
    /// Fixed-rate points: response time (from each op's intended start) vs percentile at
    /// each of these points (one small chart per rate when there are several), ascending
    /// rate.
    ResponsePercentiles { points: Vec<Point> },
    /// A rate sweep (the "hockey stick"): response time p50 and p99 against the throughput
    /// achieved, one line per target and percentile; one chart per group of points that
    /// differ only in their rate (each group given by its point without a rate).
    LatencyVsThroughput { groups: Vec<Point> },
    /// Lifecycle studies: seconds per run per record count, one bar per target.
    LifecycleTime,
    /// Lifecycle studies: memory bytes per record per record count.
    MemoryPerRecord,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FigureSpec {
    /// Unique in the page; also the `data-figure` attribute.
    pub id: String,
    pub title: String,
    pub kind: FigureKind,
    /// The experiments drawn (one, except for overview figures).
    pub experiments: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub figures: Vec<FigureSpec>,
    /// Lifecycle studies: the time and memory tables go in this section.
    pub lifecycle_tables: bool,
}

/// An HTML id fragment: lowercase ASCII letters, digits and dashes.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

/// Experiments in the order their first point appears.
pub fn experiments(report: &Report) -> Vec<(String, OpKind)> {
    let mut out: Vec<(String, OpKind)> = Vec::new();
    for p in &report.points {
        if !out.iter().any(|(e, _)| *e == p.experiment) {
            out.push((p.experiment.clone(), p.op));
        }
    }
    out
}

pub fn points_of<'a>(report: &'a Report, experiment: &str) -> Vec<&'a PointResult> {
    report.points.iter().filter(|p| p.experiment == experiment).collect()
}

/// True when the report's data is YCSB's usertable: every point's `param` is its record
/// count, and experiments are drawn per record count against threads.
pub fn is_ycsb_data(report: &Report) -> bool {
    report.plan.get("data").and_then(|d| d.get("kind")).and_then(|k| k.as_str()) == Some("ycsb")
}

/// The record counts (`param`) of YCSB points, ascending; `None` for reports saved before
/// record counts were a sweep.
pub fn record_counts(points: &[&PointResult]) -> Vec<Option<u64>> {
    let mut v: Vec<Option<u64>> = points.iter().map(|p| p.point.param).collect();
    v.sort();
    v.dedup();
    v
}

/// ", 1,000 records" (nothing without a count).
pub fn records_suffix(records: Option<u64>) -> String {
    records.map(|n| format!(", {} records", span::count(n))).unwrap_or_default()
}

/// True when the report comes from a lifecycle study (in-memory): tables per record count.
pub fn is_lifecycle(report: &Report) -> bool {
    report.plan.get("lifecycle").and_then(|v| v.as_bool()).unwrap_or(false)
}

fn distinct(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// Log scale when the values span two decades or more.
pub fn wants_log(values: &[f64]) -> bool {
    let pos: Vec<f64> = values.iter().copied().filter(|v| *v > 0.0).collect();
    match (pos.iter().copied().reduce(f64::min), pos.iter().copied().reduce(f64::max)) {
        (Some(lo), Some(hi)) => hi / lo >= 100.0,
        _ => false,
    }
}

/// Fewer requests than this make no percentile plot (a one-request-per-run insert).
pub const MIN_PERCENTILE_SAMPLES: u64 = 20;

/// The point an experiment's percentile plot shows: the largest client count of the
/// one-op-per-request points, else the largest batch, else the largest parameter; only
/// points whose merged histogram has enough requests for percentiles.
pub fn representative_point(points: &[&PointResult]) -> Option<Point> {
    let with_latency =
        |p: &&&PointResult| p.summary.as_ref().and_then(|s| s.latency.as_ref()).is_some_and(|l| l.count >= MIN_PERCENTILE_SAMPLES);
    let measured: Vec<&&PointResult> = points.iter().filter(with_latency).collect();
    let unbatched = measured.iter().filter(|p| !p.point.batched && p.point.param.is_none()).max_by_key(|p| p.point.clients);
    let batched = measured.iter().filter(|p| p.point.batched && p.point.param.is_none()).max_by_key(|p| p.point.batch);
    let param = measured.iter().filter(|p| p.point.param.is_some()).max_by_key(|p| (p.point.param, p.point.clients));
    unbatched.or(batched).or(param).map(|p| p.point)
}

/// The points an experiment's percentile figure shows: the representative point and every
/// other client count of the same kind of point (same batching and parameter) whose
/// histogram has enough requests, ascending clients.
pub fn latency_points(points: &[&PointResult]) -> Vec<Point> {
    let Some(at) = representative_point(points) else { return Vec::new() };
    let enough = |p: &PointResult| p.summary.as_ref().and_then(|s| s.latency.as_ref()).is_some_and(|l| l.count >= MIN_PERCENTILE_SAMPLES);
    let mut out: Vec<Point> = points
        .iter()
        .filter(|p| {
            p.point.batched == at.batched && p.point.batch == at.batch && p.point.param == at.param && p.point.rate == at.rate && enough(p)
        })
        .map(|p| p.point)
        .collect();
    out.sort_by_key(|p| p.clients);
    out.dedup();
    out
}

/// "at 4 clients" for one point, "at 1, 2, 4 clients" (with the point's other settings)
/// for several.
fn latency_title(name: &str, points: &[Point], op: OpKind) -> String {
    match points {
        [one] => format!("{name}: latency by percentile at {}", format::point_words(one, op)),
        _ => {
            let clients: Vec<String> = points.iter().map(|p| p.clients.to_string()).collect();
            let last = Point { clients: points.last().map_or(1, |p| p.clients), ..points[0] };
            let rest = format::point_words(&last, op);
            let rest = rest.split_once(", ").map(|(_, r)| format!(", {r}")).unwrap_or_default();
            format!("{name}: latency by percentile at {} clients{rest}", clients.join(", "))
        }
    }
}

/// The figures of one experiment of a YCSB-data study, per record count: a workload's
/// throughput and latency per operation type vs threads (the paper's figures), other
/// experiments' throughput vs threads; then latency percentiles at the largest point.
fn ycsb_figures(name: &str, op: OpKind, points: &[&PointResult]) -> Vec<FigureSpec> {
    let id = slug(name);
    let mut figures = Vec::new();
    let mut add = |suffix: String, title: String, kind: FigureKind| {
        figures.push(FigureSpec { id: format!("fig-{id}-{suffix}"), title, kind, experiments: vec![name.to_string()] })
    };
    for records in record_counts(points) {
        let at = records_suffix(records);
        let n = records.map(|n| format!("n{n}-")).unwrap_or_default();
        match (op, records) {
            (OpKind::Mixed, _) => {
                let what = format!("{name}{at}: throughput per operation type vs threads");
                add(format!("{n}ops"), what, FigureKind::YcsbOpThroughput { records });
                add(
                    format!("{n}op-latency"),
                    format!("{name}{at}: latency per operation type vs threads"),
                    FigureKind::YcsbOpLatency { records },
                );
            }
            (_, Some(records)) => {
                add(format!("{n}clients"), format!("{name}{at}: throughput vs threads"), FigureKind::ThroughputAtRecords { records })
            }
            (_, None) => {
                add("clients".into(), format!("{name}: throughput vs threads"), FigureKind::Throughput { x: XAxis::Clients, log_x: false })
            }
        }
    }
    let at = latency_points(points);
    if let Some(first) = at.first() {
        let clients: Vec<String> = at.iter().map(|p| p.clients.to_string()).collect();
        let many = at.len() > 1 || first.clients > 1;
        let label = format!("{} thread{}{}", clients.join(", "), if many { "s" } else { "" }, records_suffix(first.param));
        add("latency".into(), format!("{name}: latency by percentile at {label}"), FigureKind::Percentiles { points: at });
    }
    figures
}

/// The groups of points that differ only in their fixed rate and were run at two rates or
/// more, each as its point without a rate, in plan order.
pub fn rate_groups(points: &[&PointResult]) -> Vec<Point> {
    let mut groups: Vec<(Point, Vec<f64>)> = Vec::new();
    for p in points {
        let Some(rate) = p.rate() else { continue };
        let base = Point { rate: None, ..p.point };
        match groups.iter_mut().find(|(g, _)| *g == base) {
            Some((_, rates)) if !rates.contains(&rate) => rates.push(rate),
            Some(_) => {}
            None => groups.push((base, vec![rate])),
        }
    }
    groups.into_iter().filter(|(_, rates)| rates.len() >= 2).map(|(g, _)| g).collect()
}

/// The points of a fixed-rate experiment's response-time figure: every rate run at the
/// representative point's clients, batch and parameter whose response histogram has
/// enough requests, ascending rate.
pub fn response_points(points: &[&PointResult]) -> Vec<Point> {
    let Some(at) = representative_point(points).filter(|p| p.rate.is_some()) else { return Vec::new() };
    let enough =
        |p: &PointResult| p.summary.as_ref().and_then(|s| s.response_latency.as_ref()).is_some_and(|l| l.count >= MIN_PERCENTILE_SAMPLES);
    let mut out: Vec<Point> = points
        .iter()
        .filter(|p| Point { rate: at.rate, ..p.point } == at && p.point.rate.is_some() && enough(p))
        .map(|p| p.point)
        .collect();
    out.sort_by(|a, b| a.rate.partial_cmp(&b.rate).unwrap_or(std::cmp::Ordering::Equal));
    out.dedup();
    out
}

/// A fixed-rate experiment's figures: the hockey stick when rates were swept (it replaces
/// throughput against clients or batch, which a fixed rate decides), response time and
/// service time by percentile.
fn rate_figures(name: &str, op: OpKind, points: &[&PointResult], groups: Vec<Point>) -> Vec<FigureSpec> {
    let id = slug(name);
    let mut figures = Vec::new();
    let mut add = |suffix: &str, title: String, kind: FigureKind| {
        figures.push(FigureSpec { id: format!("fig-{id}-{suffix}"), title, kind, experiments: vec![name.to_string()] })
    };
    if !groups.is_empty() {
        let at: Vec<String> = groups.iter().map(|g| format::point_words(g, op)).collect();
        add(
            "latency-throughput",
            format!("{name}: response time vs throughput at {}", at.join("; ")),
            FigureKind::LatencyVsThroughput { groups },
        );
    }
    let response = response_points(points);
    if let Some(first) = response.first() {
        let rates: Vec<String> = response.iter().filter_map(|p| p.rate).map(|r| format::rate_text(r.ops_per_sec())).collect();
        let rest = format::point_words(&Point { rate: None, ..*first }, op);
        add(
            "response",
            format!("{name}: response time by percentile at {} ops/s ({rest})", rates.join(", ")),
            FigureKind::ResponsePercentiles { points: response },
        );
    }
    let at = latency_points(points);
    if !at.is_empty() {
        add("latency", latency_title(name, &at, op), FigureKind::Percentiles { points: at });
    }
    figures
}

/// The figures of one experiment (not lifecycle, not query, which are grouped).
pub fn experiment_figures(name: &str, op: OpKind, points: &[&PointResult], ycsb_data: bool) -> Vec<FigureSpec> {
    let groups = rate_groups(points);
    if !groups.is_empty() {
        return rate_figures(name, op, points, groups);
    }
    if op == OpKind::Mixed || (ycsb_data && points.iter().all(|p| p.point.param.is_some())) {
        return ycsb_figures(name, op, points);
    }
    let id = slug(name);
    let mut figures = Vec::new();
    let mut add = |suffix: &str, title: String, kind: FigureKind| {
        figures.push(FigureSpec { id: format!("fig-{id}-{suffix}"), title, kind, experiments: vec![name.to_string()] })
    };
    let unbatched_clients = distinct(points.iter().filter(|p| !p.point.batched && p.point.param.is_none()).map(|p| p.point.clients as f64));
    let has_batched = points.iter().any(|p| p.point.batched && p.point.param.is_none());
    let params = distinct(points.iter().filter_map(|p| p.point.param.map(|v| v as f64)));
    if unbatched_clients.len() >= 2 {
        add("clients", format!("{name}: throughput vs clients"), FigureKind::Throughput { x: XAxis::Clients, log_x: false });
    }
    if has_batched {
        add("batch", format!("{name}: throughput vs batch size"), FigureKind::Throughput { x: XAxis::Batch, log_x: true });
    }
    if !params.is_empty() {
        if format::is_range(op) {
            add("width", format!("{name}: throughput vs range width"), FigureKind::Throughput { x: XAxis::Width, log_x: true });
        } else {
            add("time", format!("{name}: time per run vs keys"), FigureKind::TimeVsRecords { log_x: wants_log(&params) });
        }
    }
    let only_bars = unbatched_clients.len() < 2 && !has_batched && params.is_empty();
    if only_bars {
        add("bars", format!("{name}: throughput"), FigureKind::ThroughputBars);
    }
    if points.iter().any(|p| p.point.rate.is_some()) {
        figures.extend(rate_figures(name, op, points, Vec::new()));
        return figures;
    }
    let at = latency_points(points);
    if !at.is_empty() {
        add("latency", latency_title(name, &at, op), FigureKind::Percentiles { points: at });
    }
    figures
}

/// The sections of the report, in order.
/// Experiments of a lifecycle study that sweep record counts (every point has `param`);
/// others in the same study (echo-floor) get ordinary sections.
pub fn lifecycle_experiments(report: &Report) -> Vec<(String, OpKind)> {
    if !is_lifecycle(report) {
        return Vec::new();
    }
    experiments(report).into_iter().filter(|(name, _)| points_of(report, name).iter().all(|p| p.point.param.is_some())).collect()
}

fn lifecycle_sections(report: &Report, experiments: &[(String, OpKind)]) -> Vec<Section> {
    let mut sections = Vec::new();
    let mut figures = Vec::new();
    for (name, op) in experiments {
        let id = slug(name);
        figures.push(FigureSpec {
            id: format!("fig-{id}-time"),
            title: format!("{name}: {} by record count", if per_key(*op) { "time per key" } else { "time" }),
            kind: FigureKind::LifecycleTime,
            experiments: vec![name.clone()],
        });
        let has_memory = points_of(report, name).iter().any(|p| p.summary.as_ref().is_some_and(|s| s.memory.is_some()));
        if *op == OpKind::Insert && has_memory {
            figures.push(FigureSpec {
                id: format!("fig-{id}-memory"),
                title: format!("{name}: memory per record"),
                kind: FigureKind::MemoryPerRecord,
                experiments: vec![name.clone()],
            });
        }
    }
    sections.push(Section { id: "lifecycle".into(), title: "Time and memory per operation".into(), figures, lifecycle_tables: true });
    let mut latency = Vec::new();
    for (name, op) in experiments {
        let at = latency_points(&points_of(report, name));
        if !at.is_empty() {
            latency.push(FigureSpec {
                id: format!("fig-{}-latency", slug(name)),
                title: latency_title(name, &at, *op),
                kind: FigureKind::Percentiles { points: at },
                experiments: vec![name.clone()],
            });
        }
    }
    if !latency.is_empty() {
        sections.push(Section {
            id: "lifecycle-latency".into(),
            title: "Latency percentiles".into(),
            figures: latency,
            lifecycle_tables: false,
        });
    }
    sections
}

/// Lifecycle operations on single keys (read one, delete one): their time is per key, the
/// others' (write all, fetch all) is the whole operation.
pub fn per_key(op: OpKind) -> bool {
    matches!(op, OpKind::Get | OpKind::Delete | OpKind::Update)
}

/// The sections of the report, in order.
pub fn plan(report: &Report) -> Vec<Section> {
    let experiments = experiments(report);
    let lifecycle = lifecycle_experiments(report);
    let mut sections = Vec::new();
    let mut lifecycle_done = false;
    let mut queries_done = false;
    let mut ycsb_done = false;
    for (name, op) in &experiments {
        if lifecycle.iter().any(|(n, _)| n == name) {
            if !lifecycle_done {
                lifecycle_done = true;
                sections.extend(lifecycle_sections(report, &lifecycle));
            }
            continue;
        }
        if *op == OpKind::Query {
            if !queries_done {
                queries_done = true;
                let names: Vec<String> = experiments.iter().filter(|(_, o)| *o == OpKind::Query).map(|(n, _)| n.clone()).collect();
                let mut figures = vec![FigureSpec {
                    id: "fig-queries".into(),
                    title: "Analytic queries: time per query".into(),
                    kind: FigureKind::QueryDurations,
                    experiments: names.clone(),
                }];
                for q in &names {
                    let at = latency_points(&points_of(report, q));
                    if !at.is_empty() {
                        figures.push(FigureSpec {
                            id: format!("fig-{}-latency", slug(q)),
                            title: format!("{q}: latency by percentile"),
                            kind: FigureKind::Percentiles { points: at },
                            experiments: vec![q.clone()],
                        });
                    }
                }
                sections.push(Section { id: "queries".into(), title: "Analytic queries".into(), figures, lifecycle_tables: false });
            }
            continue;
        }
        if *op == OpKind::Mixed && !ycsb_done {
            ycsb_done = true;
            sections.push(ycsb_overview(report, &experiments));
        }
        let points = points_of(report, name);
        sections.push(Section {
            id: format!("exp-{}", slug(name)),
            title: name.clone(),
            figures: experiment_figures(name, *op, &points, is_ycsb_data(report)),
            lifecycle_tables: false,
        });
    }
    sections
}

/// The YCSB overview: per record count, every workload's throughput at the most threads,
/// one bar per target.
fn ycsb_overview(report: &Report, experiments: &[(String, OpKind)]) -> Section {
    let names: Vec<String> = experiments.iter().filter(|(_, o)| *o == OpKind::Mixed).map(|(n, _)| n.clone()).collect();
    let mixed: Vec<&PointResult> = report.points.iter().filter(|p| p.op == OpKind::Mixed).collect();
    let clients = mixed.iter().map(|p| p.point.clients).max().unwrap_or(1);
    let figures = record_counts(&mixed)
        .into_iter()
        .map(|records| FigureSpec {
            id: records.map(|n| format!("fig-ycsb-n{n}")).unwrap_or_else(|| "fig-ycsb".into()),
            title: format!(
                "YCSB: throughput per workload{}, {clients} thread{}",
                records_suffix(records),
                if clients == 1 { "" } else { "s" }
            ),
            kind: FigureKind::YcsbWorkloads { clients, records },
            experiments: names.clone(),
        })
        .collect();
    Section { id: "ycsb".into(), title: "YCSB workloads".into(), figures, lifecycle_tables: false }
}

/// Every figure id of the report, in page order (the browser test checks them).
pub fn figure_ids(report: &Report) -> Vec<String> {
    plan(report).into_iter().flat_map(|s| s.figures.into_iter().map(|f| f.id)).collect()
}

#[cfg(test)]
mod tests;
