//! Unit tests of `report::html::figures`.

use super::*;
use crate::report::model::{PointStatus, PointSummary};

fn point(experiment: &str, op: OpKind, target: &str, clients: usize, batch: usize, batched: bool, param: Option<u64>) -> PointResult {
    PointResult {
        experiment: experiment.into(),
        op,
        target: target.into(),
        system: target.into(),
        point: Point { clients, batch, batched, param, rate: None },
        status: PointStatus::Measured,
        runs: vec![],
        summary: Some(PointSummary {
            measured_runs: 1,
            median_ops_per_sec: Some(1.0),
            min_ops_per_sec: Some(1.0),
            max_ops_per_sec: Some(1.0),
            median_rows_per_sec: Some(1.0),
            latency: None,
            response_latency: None,
            per_row_p50_us: None,
            client_share: None,
            errors: 0,
            failed_ops: 0,
            retries: 0,
            missing_rows: 0,
            memory: None,
            by_kind: Default::default(),
            precision: None,
        }),
        flags: vec![],
        exports: None,
    }
}

fn kinds(figs: &[FigureSpec]) -> Vec<FigureKind> {
    figs.iter().map(|f| f.kind.clone()).collect()
}

#[test]
fn clients_and_batch_sweeps_get_linear_clients_and_log_batch_axes() {
    let pts = [
        point("get", OpKind::Get, "a", 1, 1, false, None),
        point("get", OpKind::Get, "a", 4, 1, false, None),
        point("get", OpKind::Get, "a", 1, 10, true, None),
        point("get", OpKind::Get, "a", 1, 100, true, None),
    ];
    let refs: Vec<&PointResult> = pts.iter().collect();
    assert_eq!(
        kinds(&experiment_figures("get", OpKind::Get, &refs, false)),
        vec![FigureKind::Throughput { x: XAxis::Clients, log_x: false }, FigureKind::Throughput { x: XAxis::Batch, log_x: true }]
    );
}

#[test]
fn range_widths_get_a_log_width_axis_and_sizes_a_time_axis() {
    let range = [point("rc", OpKind::RangeCount, "a", 8, 1, false, Some(1)), point("rc", OpKind::RangeCount, "a", 8, 1, false, Some(1000))];
    let refs: Vec<&PointResult> = range.iter().collect();
    assert_eq!(
        kinds(&experiment_figures("rc", OpKind::RangeCount, &refs, false)),
        vec![FigureKind::Throughput { x: XAxis::Width, log_x: true }]
    );
    let sized =
        [point("ins", OpKind::Insert, "a", 1, 100, true, Some(100)), point("ins", OpKind::Insert, "a", 1, 10000, true, Some(10000))];
    let refs: Vec<&PointResult> = sized.iter().collect();
    assert_eq!(kinds(&experiment_figures("ins", OpKind::Insert, &refs, false)), vec![FigureKind::TimeVsRecords { log_x: true }]);
    let linear = [point("f", OpKind::MultiGet, "a", 1, 1, false, Some(100)), point("f", OpKind::MultiGet, "a", 1, 1, false, Some(500))];
    let refs: Vec<&PointResult> = linear.iter().collect();
    assert_eq!(kinds(&experiment_figures("f", OpKind::MultiGet, &refs, false)), vec![FigureKind::TimeVsRecords { log_x: false }]);
}

#[test]
fn ycsb_gets_the_papers_figures_per_record_count() {
    let pts: Vec<PointResult> =
        [1000, 5000].into_iter().flat_map(|n| [1, 8].map(|c| point("workload-a", OpKind::Mixed, "a", c, 1, false, Some(n)))).collect();
    let refs: Vec<&PointResult> = pts.iter().collect();
    let figs = experiment_figures("workload-a", OpKind::Mixed, &refs, true);
    assert_eq!(
        kinds(&figs),
        vec![
            FigureKind::YcsbOpThroughput { records: Some(1000) },
            FigureKind::YcsbOpLatency { records: Some(1000) },
            FigureKind::YcsbOpThroughput { records: Some(5000) },
            FigureKind::YcsbOpLatency { records: Some(5000) },
        ]
    );
    assert_eq!(figs[2].id, "fig-workload-a-n5000-ops");
    assert_eq!(figs[2].title, "workload-a, 5,000 records: throughput per operation type vs threads");
    // The load experiment of a YCSB study: throughput vs threads per record count.
    let load: Vec<PointResult> = [1, 8].map(|c| point("load", OpKind::Insert, "a", c, 1, false, Some(10_000))).into();
    let refs: Vec<&PointResult> = load.iter().collect();
    assert_eq!(kinds(&experiment_figures("load", OpKind::Insert, &refs, true)), vec![FigureKind::ThroughputAtRecords { records: 10_000 }]);
}

fn report(points: Vec<PointResult>, lifecycle: bool) -> Report {
    let text = include_str!("../../../../tests/golden/report.json");
    let mut r: Report = serde_json::from_str(text).unwrap();
    r.points = points;
    r.plan = serde_json::json!({ "lifecycle": lifecycle });
    r
}

#[test]
fn queries_are_grouped_into_one_bar_figure_and_ycsb_gets_an_overview_per_record_count() {
    let r = report(
        vec![
            point("tpch-q1", OpKind::Query, "a", 1, 1, false, None),
            point("tpch-q6", OpKind::Query, "a", 1, 1, false, None),
            point("workload-a", OpKind::Mixed, "a", 1, 1, false, Some(1000)),
            point("workload-a", OpKind::Mixed, "a", 2, 1, false, Some(1000)),
            point("workload-a", OpKind::Mixed, "a", 2, 1, false, Some(5000)),
            point("workload-b", OpKind::Mixed, "a", 1, 1, false, Some(1000)),
        ],
        false,
    );
    let ids = figure_ids(&r);
    assert!(ids.contains(&"fig-queries".to_string()), "{ids:?}");
    assert!(ids.contains(&"fig-ycsb-n1000".to_string()) && ids.contains(&"fig-ycsb-n5000".to_string()), "{ids:?}");
    assert!(
        ids.contains(&"fig-workload-a-n5000-ops".to_string()) && ids.contains(&"fig-workload-b-n1000-op-latency".to_string()),
        "{ids:?}"
    );
    assert!(!ids.iter().any(|i| i.starts_with("fig-tpch-q1-bars")), "queries are not per-experiment bars: {ids:?}");
}

#[test]
fn lifecycle_studies_get_time_and_memory_figures() {
    let mut write = point("write-all", OpKind::Insert, "a", 1, 1, false, Some(1000));
    write.summary.as_mut().unwrap().memory = Some(crate::report::model::MemorySummary {
        engine_source: None,
        engine_delta_bytes: None,
        server_delta_bytes: None,
        client_delta_bytes: 1.0,
        engine_bytes_per_row: None,
        server_bytes_per_row: None,
        engine_after_bytes: None,
        server_after_bytes: None,
        engine_delta_range: None,
        server_delta_range: None,
        client_delta_range: None,
    });
    let floor = point("echo-floor", OpKind::Echo, "a", 1, 1, false, None);
    let r = report(vec![floor, write, point("fetch-all", OpKind::FetchAll, "a", 1, 1, false, Some(1000))], true);
    // The echo floor (no record counts) keeps an ordinary section.
    assert_eq!(figure_ids(&r), vec!["fig-echo-floor-bars", "fig-write-all-time", "fig-write-all-memory", "fig-fetch-all-time"]);
    let sections = plan(&r);
    assert!(!sections[0].lifecycle_tables && sections[1].lifecycle_tables);
    assert!(per_key(OpKind::Get) && per_key(OpKind::Delete) && !per_key(OpKind::Insert) && !per_key(OpKind::FetchAll));
}

/// A latency summary of `count` requests (the figures only look at the count).
fn latency_of(count: u64) -> crate::base::measurement::LatencySummary {
    crate::base::measurement::LatencySummary {
        count,
        mean_us: 1.0,
        p50_us: 1.0,
        p90_us: 1.0,
        p99_us: 1.0,
        p999_us: 1.0,
        max_us: 1.0,
        histogram: String::new(),
    }
}

#[test]
fn latency_is_shown_at_every_client_count_with_enough_requests() {
    let with = |clients, count| {
        let mut p = point("get", OpKind::Get, "a", clients, 1, false, None);
        p.summary.as_mut().unwrap().latency = Some(latency_of(count));
        p
    };
    let pts = [with(4, 100), with(1, 100), with(2, 5), with(8, 100), point("get", OpKind::Get, "a", 1, 10, true, None)];
    let refs: Vec<&PointResult> = pts.iter().collect();
    let at = latency_points(&refs);
    assert_eq!(at.iter().map(|p| p.clients).collect::<Vec<_>>(), vec![1, 4, 8], "2 clients has too few requests");
    let figs = experiment_figures("get", OpKind::Get, &refs, false);
    let latency = figs.iter().find(|f| f.id == "fig-get-latency").unwrap();
    assert_eq!(latency.title, "get: latency by percentile at 1, 4, 8 clients");
    assert_eq!(latency.kind, FigureKind::Percentiles { points: at });
    let one = latency_points(&refs[..1]);
    assert_eq!(latency_title("get", &one, OpKind::Get), "get: latency by percentile at 4 clients");
}

#[test]
fn a_rate_sweep_gets_the_hockey_stick_and_response_time_per_rate_instead_of_throughput_vs_clients() {
    let at = |clients, rate: f64| {
        let mut p = point("get", OpKind::Get, "a", clients, 1, false, None);
        p.point.rate = crate::workload::experiment::Rate::new(rate);
        let s = p.summary.as_mut().unwrap();
        s.latency = Some(latency_of(100));
        s.response_latency = Some(latency_of(if rate == 300.0 { 5 } else { 100 }));
        p
    };
    let pts = [at(1, 100.0), at(1, 200.0), at(4, 100.0), at(4, 200.0), at(4, 300.0), at(2, 100.0)];
    let refs: Vec<&PointResult> = pts.iter().collect();
    let base = |clients| Point { clients, batch: 1, batched: false, param: None, rate: None };
    assert_eq!(rate_groups(&refs), vec![base(1), base(4)], "2 clients ran at one rate only: no line to draw");
    let figs = experiment_figures("get", OpKind::Get, &refs, false);
    let rates = |points: &[Point]| points.iter().map(|p| p.rate.unwrap().ops_per_sec()).collect::<Vec<_>>();
    assert_eq!(
        figs.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
        ["fig-get-latency-throughput", "fig-get-response", "fig-get-latency"]
    );
    assert_eq!(figs[0].kind, FigureKind::LatencyVsThroughput { groups: vec![base(1), base(4)] });
    let FigureKind::ResponsePercentiles { points } = &figs[1].kind else { panic!("{:?}", figs[1].kind) };
    assert_eq!((points[0].clients, rates(points)), (4, vec![100.0, 200.0]), "300 ops/s has too few requests for percentiles");
    assert_eq!(figs[1].title, "get: response time by percentile at 100, 200 ops/s (4 clients)");
    let FigureKind::Percentiles { points } = &figs[2].kind else { panic!("{:?}", figs[2].kind) };
    assert!(points.iter().all(|p| p.rate == crate::workload::experiment::Rate::new(300.0)), "service time at one rate: {points:?}");

    let one_rate = [at(1, 100.0), at(4, 100.0)];
    let refs: Vec<&PointResult> = one_rate.iter().collect();
    let ids: Vec<String> = experiment_figures("get", OpKind::Get, &refs, false).into_iter().map(|f| f.id).collect();
    assert_eq!(ids, ["fig-get-clients", "fig-get-response", "fig-get-latency"], "one rate: throughput vs clients stays");
}

#[test]
fn slugs_are_id_safe() {
    assert_eq!(slug("Range Count <lineitem>"), "range-count-lineitem");
    assert_eq!(slug("tpch-q1"), "tpch-q1");
}
