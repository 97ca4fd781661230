//! The tidy CSV exporters, for pandas and spreadsheets:
//! - results.csv (`render`): one row per target × experiment × point × measured run, each
//!   the whole run, so a column such as `ops` sums to the run's totals with a plain
//!   `groupby`; a point without a measured run (not supported, stopped) has one row with
//!   zero counts and an empty `run`.
//! - results_ops.csv (`render_op_types`): the operation types of a YCSB workload's runs (a
//!   mixed point), one row per measured run and type with the type's own count,
//!   throughput and latency, as YCSB reports them per type; the run itself is its row
//!   in results.csv.
//!
//! Both name ops by dbsweep's op names (`get`, `update`, `insert`, `scan`,
//! `read_modify_write`; a YCSB workload's run is `mixed`), give latencies in integer
//! nanoseconds and counts as integers. Rendered only from the saved model, so `dbsweep
//! report DIR` reproduces them byte for byte. Must not compute anything the model does not
//! hold.

use super::model::{PointResult, PointStatus, Report};
use crate::base::measurement::{LatencySummary, RunMeasurement};
use crate::base::op::OpKind;
use crate::stats::merge_summaries;

pub const COLUMNS: &[&str] = &[
    "study",
    "experiment",
    "op",
    "target",
    "system",
    "clients",
    "batch",
    "batched",
    "param",
    "run",
    "ops",
    "requests",
    "rows",
    "seconds",
    "ops_per_sec",
    "rows_per_sec",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "errors",
    "client_cpu_pct",
    "client_share",
    "rate",
    "resp_p50_ns",
    "resp_p99_ns",
    "late_ops",
    "flags",
    "complete",
    "engine_mem_delta_bytes",
    "server_mem_delta_bytes",
    "client_mem_delta_bytes",
    "engine_mem_after_bytes",
    "server_mem_after_bytes",
    "ok_ops",
    "failed_ops",
    "short_ops",
    "missing_rows",
    "retries",
    "precision",
    "load_before",
    "load_after",
];

/// The columns of results_ops.csv: the point and run (as in results.csv, to join on),
/// then the operation type's own figures.
pub const OP_TYPE_COLUMNS: &[&str] = &[
    "study",
    "experiment",
    "target",
    "system",
    "clients",
    "batch",
    "batched",
    "param",
    "rate",
    "run",
    "op",
    "ok_ops",
    "seconds",
    "ops_per_sec",
    "p50_ns",
    "p90_ns",
    "p99_ns",
    "p999_ns",
    "max_ns",
    "resp_p50_ns",
    "resp_p99_ns",
    "complete",
];

/// Quotes a field when it holds a separator, quote or newline (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// A latency in whole nanoseconds; a nonzero one is never 0.
fn nanos(us: f64) -> String {
    let ns = (us * 1000.0).round() as u64;
    (if us > 0.0 { ns.max(1) } else { ns }).to_string()
}

/// A percentile (as `pick` chooses it) of `latency` in ns, empty without one.
fn latency_ns(latency: Option<&LatencySummary>, pick: fn(&LatencySummary) -> f64) -> String {
    latency.map(|l| nanos(pick(l))).unwrap_or_default()
}

/// A rate with one decimal, empty for a void point (which publishes no throughput).
fn per_sec(p: &PointResult, v: Option<f64>) -> String {
    v.filter(|_| !p.is_void()).map(|v| format!("{v:.1}")).unwrap_or_default()
}

/// Study, experiment, op, target, system and point columns of a point's rows.
fn point_columns(report: &Report, p: &PointResult) -> [String; 9] {
    [
        field(&report.study),
        field(&p.experiment),
        p.op.name().to_string(),
        field(&p.target),
        field(&p.system),
        p.point.clients.to_string(),
        p.point.batch.to_string(),
        p.point.batched.to_string(),
        p.point.param.map(|v| v.to_string()).unwrap_or_default(),
    ]
}

/// The service latency of a whole run: its op kind's, or for a mixed point every type's
/// merged.
fn run_latency(op: OpKind, r: &RunMeasurement) -> (Option<LatencySummary>, Option<LatencySummary>) {
    match op {
        OpKind::Mixed => (merge_summaries(r.service.values()), merge_summaries(r.response.values())),
        _ => (r.service.get(&op).cloned(), r.response.get(&op).cloned()),
    }
}

fn push_row(out: &mut String, row: &[String]) {
    out.push_str(&row.join(","));
    out.push('\n');
}

/// results.csv: one row per measured run of every point.
pub fn render(report: &Report) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for p in &report.points {
        let head = point_columns(report, p);
        let flags = field(&p.flags.iter().map(|f| f.short()).collect::<Vec<_>>().join(";"));
        let share = p.summary.as_ref().and_then(|s| s.client_share).map(|s| format!("{s:.4}")).unwrap_or_default();
        let rate = p.rate().map(|r| format!("{r}")).unwrap_or_default();
        let measured = p.measured_runs();
        if measured.is_empty() {
            // No run to show: zero counts, so the columns stay integers and sums unchanged.
            let complete = !matches!(p.status, PointStatus::Incomplete { .. });
            let mut row: Vec<String> = head.to_vec();
            row.extend([String::new(), "0".into(), "0".into(), "0".into()]);
            row.extend(std::iter::repeat_n(String::new(), 8));
            row.push("0".into());
            row.extend([String::new(), share, rate, String::new(), String::new(), String::new(), flags, complete.to_string()]);
            row.extend(std::iter::repeat_n(String::new(), 5));
            row.extend(std::iter::repeat_n("0".to_string(), 5));
            row.extend(std::iter::repeat_n(String::new(), 3));
            push_row(&mut out, &row);
            continue;
        }
        for (i, r) in measured.iter().enumerate() {
            let (latency, response) = run_latency(p.op, r);
            let cpu_pct = if r.seconds > 0.0 { format!("{:.1}", 100.0 * r.client_cpu_seconds / r.seconds) } else { String::new() };
            let mut row: Vec<String> = head.to_vec();
            row.extend([
                (i + 1).to_string(),
                r.ops.to_string(),
                r.requests.to_string(),
                r.rows.to_string(),
                format!("{:.6}", r.seconds),
                per_sec(p, r.ops_per_sec()),
                per_sec(p, r.rows_per_sec()),
                latency_ns(latency.as_ref(), |l| l.p50_us),
                latency_ns(latency.as_ref(), |l| l.p90_us),
                latency_ns(latency.as_ref(), |l| l.p99_us),
                latency_ns(latency.as_ref(), |l| l.p999_us),
                latency_ns(latency.as_ref(), |l| l.max_us),
                r.error_count().to_string(),
                cpu_pct,
                share.clone(),
                rate.clone(),
                latency_ns(response.as_ref(), |l| l.p50_us),
                latency_ns(response.as_ref(), |l| l.p99_us),
                if p.point.rate.is_some() { r.late_ops.to_string() } else { String::new() },
                flags.clone(),
                r.complete.to_string(),
            ]);
            let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
            match &r.memory {
                Some(m) => row.extend([
                    opt(m.engine_delta()),
                    opt(m.server_delta()),
                    m.client_delta().to_string(),
                    opt(m.after.engine_bytes.map(|b| b as i64)),
                    opt(m.after.server_bytes.map(|b| b as i64)),
                ]),
                None => row.extend(std::iter::repeat_n(String::new(), 5)),
            }
            row.extend([r.ok_ops, r.failed_ops, r.short_ops, r.missing_rows, r.retries].map(|n| n.to_string()));
            // The relative half-width of the run's 95 % confidence interval of throughput.
            row.push(r.precision.map(|p| format!("{p:.4}")).unwrap_or_default());
            // The host's 1-minute load average around the run.
            row.extend([r.load.map(|l| l.before), r.load.map(|l| l.after)].map(|v| v.map(|v| format!("{v:.2}")).unwrap_or_default()));
            push_row(&mut out, &row);
        }
    }
    out
}

/// results_ops.csv: one row per operation type of every measured run of a mixed point
/// (YCSB's per-type report), in YCSB's order of the types; only the header without one.
pub fn render_op_types(report: &Report) -> String {
    let mut out = OP_TYPE_COLUMNS.join(",");
    out.push('\n');
    for p in report.points.iter().filter(|p| p.op == OpKind::Mixed) {
        let [study, experiment, _, target, system, clients, batch, batched, param] = point_columns(report, p);
        let rate = p.rate().map(|r| format!("{r}")).unwrap_or_default();
        for (i, r) in p.measured_runs().iter().enumerate() {
            for kind in OpKind::YCSB {
                let Some(latency) = r.service.get(&kind) else { continue };
                let response = r.response.get(&kind);
                let ops_per_sec = (r.seconds > 0.0).then(|| latency.count as f64 / r.seconds);
                let row = [
                    study.clone(),
                    experiment.clone(),
                    target.clone(),
                    system.clone(),
                    clients.clone(),
                    batch.clone(),
                    batched.clone(),
                    param.clone(),
                    rate.clone(),
                    (i + 1).to_string(),
                    kind.name().to_string(),
                    latency.count.to_string(),
                    format!("{:.6}", r.seconds),
                    per_sec(p, ops_per_sec),
                    latency_ns(Some(latency), |l| l.p50_us),
                    latency_ns(Some(latency), |l| l.p90_us),
                    latency_ns(Some(latency), |l| l.p99_us),
                    latency_ns(Some(latency), |l| l.p999_us),
                    latency_ns(Some(latency), |l| l.max_us),
                    latency_ns(response, |l| l.p50_us),
                    latency_ns(response, |l| l.p99_us),
                    r.complete.to_string(),
                ];
                push_row(&mut out, &row);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_separators_are_quoted() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("plain"), "plain");
    }

    #[test]
    fn latencies_are_whole_nanoseconds_and_never_zero_when_nonzero() {
        assert_eq!(nanos(0.07), "70");
        assert_eq!(nanos(12.3456), "12346");
        assert_eq!(nanos(0.0004), "1", "a latency under half a nanosecond is not 0");
        assert_eq!(nanos(0.0), "0");
    }

    fn golden() -> Report {
        serde_json::from_str(include_str!("../../tests/golden/report.json")).unwrap()
    }

    #[test]
    fn every_row_has_every_column_and_integer_counts() {
        let mut report = golden();
        // A point without a measured run keeps its row, with zero counts.
        let i = report.points.iter().position(|p| p.summary.is_some()).unwrap();
        report.points[i].runs.retain(|r| r.warmup);
        report.points[i].status = PointStatus::NotSupported { reason: "no".into() };
        let csv = render(&report);
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header, COLUMNS);
        let column = |name: &str| COLUMNS.iter().position(|c| *c == name).unwrap();
        for line in lines {
            let cells: Vec<&str> = line.split(',').collect();
            assert_eq!(cells.len(), COLUMNS.len(), "{line}");
            for name in ["ops", "requests", "rows", "errors", "ok_ops", "failed_ops", "short_ops", "missing_rows", "retries"] {
                assert!(cells[column(name)].parse::<u64>().is_ok(), "{name} is not an integer in {line}");
            }
            assert_eq!(cells[column("op")], cells[column("op")].to_lowercase(), "{line}");
        }
    }
}
