//! The tidy CSV exporter: one row per target x experiment x point x measured run (a YCSB
//! workload's run: an `OVERALL` row and one row per operation type, as YCSB reports it), for
//! pandas and spreadsheets. Rendered only from the saved model, so `dbsweep report DIR`
//! reproduces it byte for byte. Must not compute anything the model does not hold.

use super::model::{PointStatus, Report};
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
    "p50_us",
    "p90_us",
    "p99_us",
    "p999_us",
    "max_us",
    "errors",
    "client_cpu_pct",
    "client_share",
    "rate",
    "resp_p50_us",
    "resp_p99_us",
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

/// One CSV row of a measured run.
struct RunLine {
    op: &'static str,
    ops: u64,
    latency: Option<LatencySummary>,
    response: Option<LatencySummary>,
    /// The whole run (requests, rows and errors are known); false for one operation type of
    /// a YCSB workload, whose successful ops are its own requests.
    whole_run: bool,
}

/// The rows of one measured run: one, or for a YCSB workload (a mixed point) YCSB's report
/// — an `OVERALL` row for the whole run, then one row per operation type under YCSB's name
/// (`READ`, `UPDATE`, ...) with its own count, throughput and latency.
fn run_lines(op: OpKind, r: &RunMeasurement) -> Vec<RunLine> {
    if op != OpKind::Mixed {
        let (latency, response) = (r.service.get(&op).cloned(), r.response.get(&op).cloned());
        return vec![RunLine { op: op.name(), ops: r.ops, latency, response, whole_run: true }];
    }
    let overall = RunLine {
        op: "OVERALL",
        ops: r.ops,
        latency: merge_summaries(r.service.values()),
        response: merge_summaries(r.response.values()),
        whole_run: true,
    };
    let kinds = OpKind::YCSB.into_iter().filter_map(|k| Some((k, r.service.get(&k)?, k.ycsb_name()?)));
    std::iter::once(overall)
        .chain(kinds.map(|(k, l, name)| RunLine {
            op: name,
            ops: l.count,
            latency: Some(l.clone()),
            response: r.response.get(&k).cloned(),
            whole_run: false,
        }))
        .collect()
}

/// Quotes a field when it holds a separator, quote or newline (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

pub fn render(report: &Report) -> String {
    let mut out = COLUMNS.join(",");
    out.push('\n');
    for p in &report.points {
        let flags = p.flags.iter().map(|f| f.short()).collect::<Vec<_>>().join(";");
        let share = p.summary.as_ref().and_then(|s| s.client_share).map(|s| format!("{s:.4}")).unwrap_or_default();
        let head = [
            field(&report.study),
            field(&p.experiment),
            p.op.name().to_string(),
            field(&p.target),
            field(&p.system),
            p.point.clients.to_string(),
            p.point.batch.to_string(),
            p.point.batched.to_string(),
            p.point.param.map(|v| v.to_string()).unwrap_or_default(),
        ];
        let rate = p.rate().map(|r| format!("{r}")).unwrap_or_default();
        let measured: Vec<_> = p.runs.iter().filter(|r| !r.warmup).collect();
        if measured.is_empty() {
            let complete = !matches!(p.status, PointStatus::Incomplete { .. });
            let mut row: Vec<String> = head.to_vec();
            row.extend(std::iter::repeat_n(String::new(), 14));
            row.extend([share.clone(), rate.clone(), String::new(), String::new(), String::new(), field(&flags), complete.to_string()]);
            row.extend(std::iter::repeat_n(String::new(), 11));
            out.push_str(&row.join(","));
            out.push('\n');
            continue;
        }
        for (i, r) in measured.iter().enumerate() {
            for line in run_lines(p.op, r) {
                let us = |f: fn(&LatencySummary) -> f64| line.latency.as_ref().map(|l| format!("{:.1}", f(l))).unwrap_or_default();
                let cpu_pct = if r.seconds > 0.0 { format!("{:.1}", 100.0 * r.client_cpu_seconds / r.seconds) } else { String::new() };
                // A void point publishes no throughput, in any of its rows.
                let void = p.is_void();
                let per_sec = |v: Option<f64>| v.filter(|_| !void).map(|v| format!("{v:.1}")).unwrap_or_default();
                let ops_per_sec = match line.whole_run {
                    true => per_sec(r.ops_per_sec()),
                    false => per_sec(r.ops_per_sec().map(|_| line.ops as f64 / r.seconds)),
                };
                let whole_run = |v: String| if line.whole_run { v } else { String::new() };
                let mut row: Vec<String> = head.to_vec();
                row[2] = line.op.to_string();
                row.extend([
                    (i + 1).to_string(),
                    line.ops.to_string(),
                    if line.whole_run { r.requests } else { line.ops }.to_string(),
                    whole_run(r.rows.to_string()),
                    format!("{:.6}", r.seconds),
                    ops_per_sec,
                    whole_run(per_sec(r.rows_per_sec())),
                    us(|l| l.p50_us),
                    us(|l| l.p90_us),
                    us(|l| l.p99_us),
                    us(|l| l.p999_us),
                    us(|l| l.max_us),
                    whole_run(r.error_count().to_string()),
                    cpu_pct,
                    share.clone(),
                    rate.clone(),
                    line.response.as_ref().map(|l| format!("{:.1}", l.p50_us)).unwrap_or_default(),
                    line.response.as_ref().map(|l| format!("{:.1}", l.p99_us)).unwrap_or_default(),
                    if p.point.rate.is_some() { r.late_ops.to_string() } else { String::new() },
                    field(&flags),
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
                row.extend([r.ok_ops, r.failed_ops, r.short_ops, r.missing_rows, r.retries].map(|n| whole_run(n.to_string())));
                // The relative half-width of the run's 95 % confidence interval of throughput.
                row.push(whole_run(r.precision.map(|p| format!("{p:.4}")).unwrap_or_default()));
                // The host's 1-minute load average around the run.
                row.extend([r.load.map(|l| l.before), r.load.map(|l| l.after)].map(|v| v.map(|v| format!("{v:.2}")).unwrap_or_default()));
                out.push_str(&row.join(","));
                out.push('\n');
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
}
