//! The console exporter: one compact table per experiment, targets side by side, with the
//! median throughput, its spread over the measured runs, p99 latency and flag marks.
//! Must not compute statistics; it formats the model.

use super::answers::{self, ShownAnswer};
use super::model::{Flag, MemoryDelta, MemorySummary, PointResult, PointStatus, Report};
use super::summary::Findings;
use crate::base::op::OpKind;
use std::fmt::Write as _;

/// What the implicit echo-floor experiment measures and how to read other results against
/// it, in lines the console prints under its table (report.html prints them as a paragraph).
pub const ECHO_FLOOR_MEANING: [&str; 3] = [
    "echo-floor: each target's round trip with no database work (SELECT 1, ECHO, version; one client): the floor of client library, transport and request handling.",
    "Read other results against it: latency near the floor is mostly that round trip, the time above it is the database's work;",
    "one client cannot exceed the floor's ops/s without batching, so a target close to its floor is bound by the round trip, not by its engine.",
];

/// Each target's median-latency floor: "sqlite 40.0ns, redis 31.2µs" (void points left out).
pub fn floor_latencies(points: &[&PointResult]) -> String {
    points
        .iter()
        .filter(|p| !p.is_void())
        .filter_map(|p| Some(format!("{} {}", p.target, micros(p.summary.as_ref()?.latency.as_ref()?.p50_us))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A query experiment's answers under its table: each target's (first measured run's) answer
/// and whether it matches the TPC-H reference, as report.html shows them.
fn answers(out: &mut String, report: &Report, points: &[&PointResult]) {
    let shown: Vec<(&str, ShownAnswer)> = points.iter().filter_map(|p| Some((p.target.as_str(), answers::of(report, p)?))).collect();
    if shown.is_empty() {
        return;
    }
    let _ = writeln!(out, "  answers (first measured run):");
    for (target, a) in shown {
        let _ = writeln!(out, "    {target}: {} — {}", a.compact, a.verdict.text());
    }
}

/// Human-friendly rate: 950, 12.3k, 4.56M.
pub fn rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// "30 s", "500 ms", "2 min": the length of a time-based run (`--duration`).
pub fn run_length(secs: f64) -> String {
    let trimmed = |v: f64| format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_string();
    match secs {
        s if s < 1.0 => format!("{} ms", trimmed(s * 1000.0)),
        s if s >= 3600.0 && s % 3600.0 == 0.0 => format!("{} h", s / 3600.0),
        s if s >= 60.0 && s % 60.0 == 0.0 => format!("{} min", s / 60.0),
        s => format!("{} s", trimmed(s)),
    }
}

/// The run length of a saved plan ("30 s per run") when its runs lasted a duration.
pub fn time_based_runs(plan: &serde_json::Value) -> Option<String> {
    plan.get("duration_secs").and_then(|v| v.as_f64()).map(|secs| format!("{} per run", run_length(secs)))
}

/// Human-friendly microseconds with three significant digits at every scale: 850ns,
/// 1.23µs, 12.3µs, 3.40ms, 1.20s.
pub fn micros(us: f64) -> String {
    let (value, unit) = if us < 0.9995 {
        (us * 1000.0, "ns")
    } else if us < 999.5 {
        (us, "µs")
    } else if us < 999_500.0 {
        (us / 1000.0, "ms")
    } else {
        (us / 1e6, "s")
    };
    let digits = three_significant_decimals(value);
    format!("{value:.digits$}{unit}")
}

/// Decimals that give a value from 1 to 999 three significant digits (rounding included).
pub fn three_significant_decimals(value: f64) -> usize {
    if value >= 99.95 {
        0
    } else if value >= 9.995 {
        1
    } else {
        2
    }
}

pub fn memory_delta(d: MemoryDelta) -> String {
    match d {
        MemoryDelta::Missing => "-".into(),
        MemoryDelta::BelowNoise { .. } => "<noise".into(),
        MemoryDelta::Bytes(b) => format!("{:+.2}MiB", b / MIB),
    }
}

/// Bytes per MiB.
pub const MIB: f64 = 1024.0 * 1024.0;

/// `client / server / engine` change over the operation: the client's first, the
/// paper's metric.
fn memory_cell(m: &MemorySummary) -> String {
    format!("{} / {} / {}", memory_delta(m.client()), memory_delta(m.server()), memory_delta(m.engine()))
}

/// A point's parameters in a few characters: `c=4 b=100 w=10`.
pub fn point_label(p: &PointResult) -> String {
    let mut label = format!("c={}", p.point.clients);
    if p.point.batched {
        let _ = write!(label, " b={}", p.point.batch);
    }
    if let Some(v) = p.point.param {
        let name = if matches!(p.op, OpKind::RangeRows | OpKind::RangeCount | OpKind::RangeMax) { "w" } else { "n" };
        let _ = write!(label, " {name}={v}");
    }
    if let Some(rate) = p.rate() {
        let _ = write!(label, " r={}", rate_text(rate));
    }
    label
}

/// A fixed rate in ops/s as the user types it (`2000`, `2.5`), so labels match the flag.
pub fn rate_text(ops_per_sec: f64) -> String {
    if ops_per_sec.fract() == 0.0 { format!("{ops_per_sec:.0}") } else { format!("{ops_per_sec}") }
}

/// A void point's cell: no number, only what voided it, loudly.
fn void_cell(p: &PointResult) -> String {
    let mut text = String::from("VOID");
    for f in &p.flags {
        match f {
            Flag::Errors { count, failed_ops } => {
                let _ = write!(text, " [ERRORS: {count} failed request{}, {failed_ops} ops]", if *count == 1 { "" } else { "s" });
            }
            Flag::MissingRows { count } => {
                let _ = write!(text, " [MISSING ROWS: {count}]");
            }
            Flag::AnswerMismatch { .. } => text.push_str(" [WRONG ANSWER]"),
            Flag::Incomplete => text.push_str(" [incomplete]"),
            Flag::ClientBound { .. }
            | Flag::Retried { .. }
            | Flag::NotConverged { .. }
            | Flag::NotSupported
            | Flag::MissedRate { .. }
            | Flag::WideSpread { .. } => {}
        }
    }
    text
}

/// `[not converged: ±3.1% of ±2%]`: a run hit its cap before the precision asked.
fn not_converged(text: &mut String, asked: f64, reached: Option<f64>) {
    let reached = reached.map_or("unknown".to_string(), |r| format!("±{:.1}%", r * 100.0));
    let _ = write!(text, " [not converged: {reached} of ±{:.1}%]", asked * 100.0);
}

/// `[3 retries]`: requests run again after conflicts, inside the timing shown.
fn retried(text: &mut String, count: u64) {
    let _ = write!(text, " [{count} retr{}]", if count == 1 { "y" } else { "ies" });
}

/// Lifecycle studies report time, as the in-memory study did: the median wall time of
/// the measured runs and the median time per op, the same statistic report.html prints.
fn lifecycle_cell(p: &PointResult) -> String {
    let ops = p.measured_runs().first().map(|r| r.ops).unwrap_or(0);
    match (&p.status, p.run_seconds(), p.seconds_per_op()) {
        (PointStatus::NotSupported { .. }, _, _) => "n/a".into(),
        _ if p.is_void() => void_cell(p),
        (_, Some(run), Some(per_op)) if ops > 0 => {
            let mut text = format!("{} ({}/op × {ops})", micros(run.median * 1e6), micros(per_op.median * 1e6));
            for f in &p.flags {
                match f {
                    Flag::AnswerMismatch { .. } => text.push_str(" [WRONG ROWS]"),
                    Flag::Incomplete => text.push_str(" [incomplete]"),
                    Flag::Retried { count } => retried(&mut text, *count),
                    _ => {}
                }
            }
            text
        }
        _ => "incomplete".into(),
    }
}

/// "could not keep the rate: 30 % of ops late, 950/s of 1.0k/s", for the console, the
/// findings and report.html alike.
pub fn missed_rate(flag: &Flag) -> Option<String> {
    let Flag::MissedRate { asked, achieved, late_ops, ops } = flag else { return None };
    let late = 100.0 * *late_ops as f64 / (*ops).max(1) as f64;
    let done = achieved.map_or("void".to_string(), |a| format!("{}/s", rate(a)));
    Some(format!("could not keep the rate: {late:.0} % of ops late, {done} of {}/s", rate(*asked)))
}

fn cell(p: &PointResult) -> String {
    match (&p.status, &p.summary) {
        (PointStatus::NotSupported { .. }, _) => "n/a".into(),
        _ if p.is_void() => void_cell(p),
        (_, Some(s)) => {
            let (median, lo, hi) =
                (s.median_ops_per_sec.unwrap_or(0.0), s.min_ops_per_sec.unwrap_or(0.0), s.max_ops_per_sec.unwrap_or(0.0));
            let spread = if median > 0.0 { 100.0 * (hi - lo) / median / 2.0 } else { 0.0 };
            // Analytic queries read as durations, the way the studies report them.
            // The statistic is the one report.html shows: the median run's seconds per query.
            let mut text = match (&p.op, p.seconds_per_op()) {
                (OpKind::Query, Some(per_query)) => {
                    format!("{} per query (median of {} runs)", micros(per_query.median * 1e6), s.measured_runs)
                }
                _ => format!("{}/s ±{spread:.0}%", rate(median)),
            };
            if let (false, Some(l)) = (p.op == OpKind::Query, &s.latency) {
                let _ = write!(text, " p99 {}", micros(l.p99_us));
            }
            // At a fixed rate what a user waits is the response time, from each op's
            // intended start (service time hides a queue that builds up).
            if let (Some(_), Some(l)) = (p.point.rate, &s.response_latency) {
                let _ = write!(text, " response p99 {}", micros(l.p99_us));
            }
            for f in &p.flags {
                match f {
                    Flag::ClientBound { .. } => text.push_str(" [client-bound]"),
                    Flag::AnswerMismatch { .. } => text.push_str(" [WRONG ANSWER]"),
                    Flag::Incomplete => text.push_str(" [incomplete]"),
                    Flag::Retried { count } => retried(&mut text, *count),
                    Flag::NotConverged { asked, reached } => not_converged(&mut text, *asked, *reached),
                    Flag::MissedRate { .. } => {
                        let _ = write!(text, " [{}]", missed_rate(f).unwrap_or_default());
                    }
                    Flag::WideSpread { .. } => text.push_str(" [spread too wide to rank]"),
                    Flag::Errors { .. } | Flag::MissingRows { .. } | Flag::NotSupported => {}
                }
            }
            text
        }
        _ => "incomplete".into(),
    }
}

/// Rows as left-aligned columns, indented by two spaces.
pub fn write_table(out: &mut String, rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    for row in rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
}

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let targets: Vec<&str> = report.targets.iter().map(|t| t.name.as_str()).collect();
    let lifecycle = report.plan.get("lifecycle").and_then(|v| v.as_bool()).unwrap_or(false);
    let mut experiments: Vec<&str> = Vec::new();
    for p in &report.points {
        if !experiments.contains(&p.experiment.as_str()) {
            experiments.push(&p.experiment);
        }
    }
    for exp in experiments {
        let points: Vec<&PointResult> = report.points.iter().filter(|p| p.experiment == exp).collect();
        let mut labels: Vec<String> = Vec::new();
        for p in &points {
            let l = point_label(p);
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
        let mut rows: Vec<Vec<String>> = vec![std::iter::once("point".to_string()).chain(targets.iter().map(|t| t.to_string())).collect()];
        for label in &labels {
            let mut row = vec![label.clone()];
            for t in &targets {
                let point = points.iter().find(|p| p.target == *t && point_label(p) == *label);
                let lifecycle_point = lifecycle && point.is_some_and(|p| p.point.param.is_some());
                row.push(point.map(|p| if lifecycle_point { lifecycle_cell(p) } else { cell(p) }).unwrap_or_default());
            }
            rows.push(row);
        }
        let op = points.first().map(|p| p.op.name()).unwrap_or_default();
        let lifecycle_exp = lifecycle && points.iter().any(|p| p.point.param.is_some());
        if lifecycle_exp {
            let _ = writeln!(out, "\n{exp} ({op}; median wall time of the measured runs, and per op)");
        } else {
            let runs = match time_based_runs(&report.plan) {
                Some(length) => format!("measured runs of {}", length.trim_end_matches(" per run")),
                None => "measured runs".to_string(),
            };
            let _ = writeln!(out, "\n{exp} ({op}; median of {runs}, ± half the min-max spread)");
        }
        write_table(&mut out, &rows);
        answers(&mut out, report, &points);
        if exp == crate::plan::FLOOR_EXPERIMENT {
            for line in ECHO_FLOOR_MEANING {
                let _ = writeln!(out, "  {line}");
            }
            let _ = writeln!(out, "  floor (p50 per request): {}", floor_latencies(&points));
        }
        if points.iter().any(|p| p.summary.as_ref().is_some_and(|s| !s.by_kind.is_empty())) {
            let _ = writeln!(out, "  per operation type (YCSB's names): ops/s of the type, p99");
            let mut rows: Vec<Vec<String>> =
                vec![std::iter::once("point".to_string()).chain(targets.iter().map(|t| t.to_string())).collect()];
            for label in &labels {
                for kind in OpKind::YCSB {
                    let at = |t: &&str| {
                        let p = points.iter().find(|p| p.target == *t && point_label(p) == *label)?;
                        p.summary.as_ref()?.by_kind.get(&kind)
                    };
                    if !targets.iter().any(|t| at(t).is_some()) {
                        continue;
                    }
                    let mut row = vec![format!("{label} {}", kind.ycsb_name().unwrap_or(kind.name()))];
                    row.extend(targets.iter().map(|t| {
                        at(t)
                            .map(|k| match k.median_ops_per_sec {
                                Some(v) => format!("{}/s p99 {}", rate(v), micros(k.latency.p99_us)),
                                None => "VOID".into(),
                            })
                            .unwrap_or_default()
                    }));
                    rows.push(row);
                }
            }
            write_table(&mut out, &rows);
        }
        if points.iter().any(|p| p.summary.as_ref().is_some_and(|s| s.memory.is_some())) {
            let mut rows: Vec<Vec<String>> =
                vec![std::iter::once("memory Δ".to_string()).chain(targets.iter().map(|t| t.to_string())).collect()];
            for label in &labels {
                let mut row = vec![label.clone()];
                for t in &targets {
                    let memory = points
                        .iter()
                        .find(|p| p.target == *t && point_label(p) == *label)
                        .and_then(|p| p.summary.as_ref())
                        .and_then(|s| s.memory.as_ref());
                    row.push(memory.map(memory_cell).unwrap_or_default());
                }
                rows.push(row);
            }
            let _ = writeln!(
                out,
                "  memory change over the operation (median of the measured runs): client (the paper's metric) / server process (PSS) / engine-reported; <noise: within one page or half the runs' spread, or runs disagree in sign"
            );
            write_table(&mut out, &rows);
        }
    }
    findings(&mut out, &Findings::of(report));
    if !report.unavailable.is_empty() {
        let _ = writeln!(out, "\nnot available here:");
        for u in &report.unavailable {
            let _ = writeln!(out, "  {}: {}", u.system, u.reason);
        }
    }
    for w in &report.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let voided = report.points.iter().filter(|p| p.is_void()).count();
    if voided > 0 {
        let _ = writeln!(
            out,
            "\nVOID: {voided} point{} had failed requests or missing rows; their timings are void and no throughput is published",
            if voided == 1 { "" } else { "s" }
        );
    }
    for line in resumptions(report) {
        let _ = writeln!(out, "\n{line}");
    }
    if !report.complete {
        let _ = writeln!(out, "\nINCOMPLETE: {}", report.incomplete_reason.as_deref().unwrap_or("stopped early"));
    }
    out
}

/// The findings, after the tables: each experiment's headline and standings, then each
/// target's time relative to the fastest and its geometric mean across experiments.
fn findings(out: &mut String, findings: &Findings) {
    if findings.experiments.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nfindings (each experiment at the point most targets measured; 95 % intervals):");
    for e in &findings.experiments {
        let _ = writeln!(out, "  {} ({}): {}", e.experiment, e.point, e.sentence());
        let standings: Vec<String> = e
            .standings
            .iter()
            .map(|s| {
                let mut text = format!("{} {}", s.target, s.value());
                for c in &s.caveats {
                    let _ = write!(text, " [{c}]");
                }
                text
            })
            .collect();
        let _ = writeln!(out, "    {}", standings.join(" · "));
    }
    let mut rows = vec![std::iter::once("time vs fastest".to_string()).chain(findings.targets.iter().cloned()).collect::<Vec<_>>()];
    for e in &findings.experiments {
        let mut row = vec![e.experiment.clone()];
        row.extend(findings.targets.iter().map(|t| Findings::relative_text(e, t)));
        rows.push(row);
    }
    let mut overall = vec!["geometric mean".to_string()];
    overall.extend(findings.overall.iter().map(|o| o.text()));
    rows.push(overall);
    write_table(out, &rows);
    if let Some(note) = &findings.durability_note {
        let _ = writeln!(out, "  {note}");
    }
}

/// One line per `run --resume` of the run: when, from which point, what it kept.
pub fn resumptions(report: &Report) -> Vec<String> {
    report
        .resumed
        .iter()
        .map(|r| {
            let from =
                r.from_point.as_deref().map(|p| format!("measuring again from {p}")).unwrap_or_else(|| "no point measured again".into());
            let stopped = r.previous_reason.as_deref().map(|why| format!(" (it had stopped: {why})")).unwrap_or_default();
            format!("resumed at {}{stopped}, keeping {} saved point results, {from}", r.at, r.kept_points)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_lengths_read_in_their_unit() {
        let lengths: Vec<String> = [0.5, 2.0, 2.5, 30.0, 90.0, 120.0, 7200.0].into_iter().map(run_length).collect();
        assert_eq!(lengths, ["500 ms", "2 s", "2.5 s", "30 s", "90 s", "2 min", "2 h"]);
        assert_eq!(time_based_runs(&serde_json::json!({"duration_secs": 30.0})).as_deref(), Some("30 s per run"));
        assert_eq!(time_based_runs(&serde_json::json!({"rate": null})), None);
    }

    #[test]
    fn units_read_naturally() {
        assert_eq!(rate(950.0), "950");
        assert_eq!(rate(12_345.0), "12.3k");
        assert_eq!(rate(4_560_000.0), "4.56M");
        assert_eq!(micros(0.25), "250ns");
        assert_eq!(micros(12.0), "12.0µs");
        assert_eq!(micros(3400.0), "3.40ms");
        // Three significant digits at every scale, never "0.0 µs".
        for (us, text) in [(0.04, "40.0ns"), (1.234, "1.23µs"), (123.4, "123µs"), (999.7, "1.00ms"), (1.2e6, "1.20s")] {
            assert_eq!(micros(us), text, "{us} µs");
        }
        assert_eq!(memory_delta(MemoryDelta::Bytes(2.5 * MIB)), "+2.50MiB");
        assert_eq!(memory_delta(MemoryDelta::Bytes(-0.25 * MIB)), "-0.25MiB");
        assert_eq!(memory_delta(MemoryDelta::BelowNoise { floor: 4096.0 }), "<noise");
        assert_eq!(memory_delta(MemoryDelta::Missing), "-");
    }

    #[test]
    fn query_answers_are_listed_with_the_reference_verdict() {
        let r = crate::report::html::tests::tpch_fixture();
        let text = render(&r);
        let at = text.find("  answers (first measured run):").expect("the answers under the table");
        let lines: Vec<&str> = text[at..].lines().skip(1).take(r.points.len()).collect();
        assert_eq!(lines.len(), r.points.len());
        for (p, line) in r.points.iter().zip(&lines) {
            assert!(line.starts_with(&format!("    {}: 1 row; first: A | 37734107.00; digest ", p.target)), "{line}");
        }
        assert!(lines[0].ends_with("— MISMATCH: differs from the exact TPC-H reference answer"), "{}", lines[0]);
        assert!(lines[1..].iter().all(|l| l.ends_with("— matches the TPC-H reference")), "{lines:?}");
    }

    #[test]
    fn the_echo_floor_is_explained_with_each_targets_floor() {
        let report: Report = serde_json::from_str(include_str!("../../tests/golden/report.json")).unwrap();
        let text = render(&report);
        let at = text.find("\necho-floor (").expect("the echo-floor table");
        let section = &text[at..text[at + 1..].find("\n\n").map_or(text.len(), |e| at + 1 + e)];
        for line in ECHO_FLOOR_MEANING {
            assert!(section.contains(line), "{section}");
        }
        let floors: Vec<&PointResult> = report.points.iter().filter(|p| p.experiment == crate::plan::FLOOR_EXPERIMENT).collect();
        assert!(floors.len() >= 2);
        for p in floors {
            let p50 = micros(p.summary.as_ref().unwrap().latency.as_ref().unwrap().p50_us);
            assert!(section.contains(&format!("{} {p50}", p.target)), "{} floor {p50} missing: {section}", p.target);
        }
    }
}
