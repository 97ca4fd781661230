//! The console exporter: one compact table per experiment with each target's median
//! throughput, its spread over the measured runs, p99 latency and flag marks; the
//! findings; the warnings grouped by kind; and the line a run prints as each point lands.
//! Everything it writes fits the console's width (`width`): targets side by side when
//! they fit, else one row per point and target; prose wrapped at word boundaries.
//! Must not compute statistics; it formats the model.

use super::answers::{self, ShownAnswer};
use super::format::{COLUMN_GAP, TABLE_INDENT, columns_of, memory_delta, micros, missed_rate, point_label, rate, write_table};
use super::model::{Flag, MemorySummary, PointResult, PointStatus, Report};
use super::paper::PaperVerdicts;
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

/// The width without `COLUMNS` and without a terminal (logs, pipes).
pub const DEFAULT_WIDTH: usize = 100;
/// The narrowest width the console lays out for; a smaller `COLUMNS` counts as this.
const MIN_WIDTH: usize = 30;
/// The narrowest a table column is squeezed to (its words are cut below their length).
const MIN_COLUMN: usize = 6;
/// How many of a warning group's cases are named.
const WORST_NAMED: usize = 3;

/// The console's width in characters: `COLUMNS` when set to a number, else the width of
/// the terminal that stdout (or else stderr) is, else `DEFAULT_WIDTH`.
pub fn width() -> usize {
    let columns = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|c| *c > 0);
    columns
        .or_else(|| terminal_columns(libc::STDOUT_FILENO))
        .or_else(|| terminal_columns(libc::STDERR_FILENO))
        .unwrap_or(DEFAULT_WIDTH)
        .max(MIN_WIDTH)
}

/// The columns of the terminal `fd` is, if it is one.
fn terminal_columns(fd: libc::c_int) -> Option<usize> {
    // SAFETY: TIOCGWINSZ writes a `winsize` into the struct it is given and nothing else;
    // on a descriptor that is not a terminal it fails and the struct stays zeroed.
    let size = unsafe {
        let mut size: libc::winsize = std::mem::zeroed();
        (libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) == 0).then_some(size)
    };
    size.map(|s| usize::from(s.ws_col)).filter(|c| *c > 0)
}

/// `text` broken at spaces into lines of at most `width` characters, the first line
/// starting with `first` and the others with `rest`; a word longer than a line is cut.
/// Empty text gives one empty line (the indent trimmed).
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut has_words = false;
    for mut word in text.split(' ').filter(|w| !w.is_empty()) {
        loop {
            let room = width.saturating_sub(columns_of(&line) + usize::from(has_words));
            if columns_of(word) <= room {
                if has_words {
                    line.push(' ');
                }
                line.push_str(word);
                has_words = true;
                break;
            }
            if has_words {
                lines.push(std::mem::replace(&mut line, rest.to_string()));
                has_words = false;
                continue;
            }
            // Longer than a whole line: cut, at least one character per line.
            let cut = word.char_indices().nth(room.max(1)).map_or(word.len(), |(i, _)| i);
            line.push_str(&word[..cut]);
            lines.push(std::mem::replace(&mut line, rest.to_string()));
            word = &word[cut..];
            if word.is_empty() {
                break;
            }
        }
    }
    if has_words || lines.is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// Every line of `text` longer than `width` wrapped, each continuation indented two
/// spaces more than its line; a trailing newline is kept.
pub fn fit(text: &str, width: usize) -> String {
    let mut out = String::new();
    for line in text.lines() {
        push_wrapped(&mut out, line, width);
    }
    if !text.ends_with('\n') {
        out.pop();
    }
    out
}

/// Appends `line` wrapped to `width`, its continuations indented two spaces more than it.
fn push_wrapped(out: &mut String, line: &str, width: usize) {
    if columns_of(line) <= width {
        // As it is, its spacing kept.
        out.push_str(line.trim_end());
        out.push('\n');
        return;
    }
    let body = line.trim_start_matches(' ');
    let indent = &line[..line.len() - body.len()];
    for l in wrap(body, width, indent, &format!("{indent}  ")) {
        out.push_str(&l);
        out.push('\n');
    }
}

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
fn answers(out: &mut String, report: &Report, points: &[&PointResult], width: usize) {
    let shown: Vec<(&str, ShownAnswer)> = points.iter().filter_map(|p| Some((p.target.as_str(), answers::of(report, p)?))).collect();
    if shown.is_empty() {
        return;
    }
    push_wrapped(out, "  answers (first measured run):", width);
    for (target, a) in shown {
        push_wrapped(out, &format!("    {target}: {} — {}", a.compact, a.verdict.text()), width);
    }
}

/// The run length of a saved plan ("30 s per run") when its runs lasted a duration.
pub fn time_based_runs(plan: &serde_json::Value) -> Option<String> {
    plan.get("duration_secs").and_then(|v| v.as_f64()).map(|secs| format!("{} per run", crate::base::span::words(secs)))
}

/// `client / server / engine` change over the operation: the client's first, the
/// paper's metric.
fn memory_cell(m: &MemorySummary) -> String {
    format!("{} / {} / {}", memory_delta(m.client()), memory_delta(m.server()), memory_delta(m.engine()))
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
            Flag::WorkerShare { .. } => text.push_str(" [WORKER SHARE MISMATCH]"),
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

/// The marks of the flags that qualify a point's numbers: " [client-bound] [3 retries]".
fn flag_marks(p: &PointResult) -> String {
    let mut text = String::new();
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
            Flag::Errors { .. } | Flag::MissingRows { .. } | Flag::WorkerShare { .. } | Flag::NotSupported => {}
        }
    }
    text
}

/// What a point measured: median throughput ± half the runs' spread, latency and flag
/// marks (analytic queries: the median time per query). `with_p50`: the latency as
/// "p50 … p99 …" (the line of a point as it lands), else only p99 (a table cell).
fn result(p: &PointResult, with_p50: bool) -> String {
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
                if with_p50 {
                    let _ = write!(text, " p50 {}", micros(l.p50_us));
                }
                let _ = write!(text, " p99 {}", micros(l.p99_us));
            }
            // At a fixed rate what a user waits is the response time, from each op's
            // intended start (service time hides a queue that builds up).
            if let (Some(_), Some(l)) = (p.point.rate, &s.response_latency) {
                let _ = write!(text, " response p99 {}", micros(l.p99_us));
            }
            text.push_str(&flag_marks(p));
            text
        }
        _ => "incomplete".into(),
    }
}

/// What a point measured, as its cell in its experiment's table or (`with_p50`) in its
/// line as it lands: the phases of a lifecycle study (`lifecycle`) as times, others as
/// rates.
fn measured(p: &PointResult, lifecycle: bool, with_p50: bool) -> String {
    if lifecycle && p.point.param.is_some() { lifecycle_cell(p) } else { result(p, with_p50) }
}

/// The line a run prints as a point lands on a target, as pgbench `-P` prints its
/// progress: "sqlite · get · c=4 b=1: 12.3k/s ±2% p50 80.0µs p99 310µs [client-bound]".
/// `lifecycle`: the run is a lifecycle study (its points read as times).
pub fn point_line(p: &PointResult, lifecycle: bool) -> String {
    let mut text = format!("{} · {} · {}: ", p.target, p.experiment, point_label(&p.point, p.op));
    match &p.status {
        PointStatus::NotSupported { reason } => {
            let _ = write!(text, "n/a ({reason})");
        }
        PointStatus::Incomplete { reason } => {
            let _ = write!(text, "{} ({reason})", measured(p, lifecycle, true));
        }
        PointStatus::Measured => text.push_str(&measured(p, lifecycle, true)),
    }
    text
}

/// The headings of a table by targets: of its labels' column when targets are columns,
/// of the targets' column when the labels are columns, and of the labels' and the values'
/// columns when each label and target is a row.
struct Headings<'a> {
    corner: &'a str,
    by_target: &'a str,
    labels: &'a str,
    values: &'a str,
}

/// Appends a table of `rows` (a label and one cell per target, empty where the target
/// has none) by `targets`, the first of these that fits `width`: targets as columns; targets
/// as rows and labels as columns; one row per label and target, wrapped to fit.
fn write_grid(out: &mut String, width: usize, headings: Headings, rows: &[(String, Vec<String>)], targets: &[String]) {
    let mut wide: Vec<Vec<String>> = vec![std::iter::once(headings.corner.to_string()).chain(targets.iter().cloned()).collect()];
    wide.extend(rows.iter().map(|(label, cells)| std::iter::once(label.clone()).chain(cells.iter().cloned()).collect()));
    if table_width(&wide) <= width {
        write_table(out, &wide);
        return;
    }
    let mut turned: Vec<Vec<String>> =
        vec![std::iter::once(headings.by_target.to_string()).chain(rows.iter().map(|(label, _)| label.clone())).collect()];
    turned.extend(
        targets
            .iter()
            .enumerate()
            .map(|(t, target)| std::iter::once(target.clone()).chain(rows.iter().map(|(_, cells)| cells[t].clone())).collect()),
    );
    if table_width(&turned) <= width {
        write_table(out, &turned);
        return;
    }
    let mut long: Vec<Vec<String>> = vec![vec![headings.labels.to_string(), "target".to_string(), headings.values.to_string()]];
    for (label, cells) in rows {
        for (target, cell) in targets.iter().zip(cells).filter(|(_, c)| !c.is_empty()) {
            long.push(vec![label.clone(), target.clone(), cell.clone()]);
        }
    }
    write_fitted_table(out, &long, width);
}

/// The widest line `write_table` writes for `rows`.
fn table_width(rows: &[Vec<String>]) -> usize {
    let columns = rows[0].len();
    let widths = (0..columns).map(|c| rows.iter().map(|r| columns_of(&r[c])).max().unwrap_or(0));
    TABLE_INDENT.len() + widths.sum::<usize>() + COLUMN_GAP.len() * columns.saturating_sub(1)
}

/// `write_table` within `width`: the widest columns are narrowed, first down to their
/// longest word, then further (cutting words), and their cells wrapped at spaces.
fn write_fitted_table(out: &mut String, rows: &[Vec<String>], width: usize) {
    let columns = rows[0].len();
    let natural: Vec<usize> = (0..columns).map(|c| rows.iter().map(|r| columns_of(&r[c])).max().unwrap_or(0)).collect();
    let longest_word: Vec<usize> =
        (0..columns).map(|c| rows.iter().flat_map(|r| r[c].split(' ')).map(columns_of).max().unwrap_or(0).max(MIN_COLUMN)).collect();
    let room = width.saturating_sub(TABLE_INDENT.len() + COLUMN_GAP.len() * columns.saturating_sub(1));
    let mut widths = natural.clone();
    for floor in [longest_word, vec![MIN_COLUMN; columns]] {
        while widths.iter().sum::<usize>() > room {
            let Some(widest) = (0..columns).filter(|&c| widths[c] > floor[c]).max_by_key(|&c| widths[c]) else { break };
            widths[widest] -= 1;
        }
    }
    for row in rows {
        let cells: Vec<Vec<String>> = row.iter().zip(&widths).map(|(c, w)| wrap(c, *w, "", "")).collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for i in 0..height {
            let line: Vec<String> =
                cells.iter().zip(&widths).map(|(c, w)| format!("{:<w$}", c.get(i).map_or("", String::as_str))).collect();
            let _ = writeln!(out, "{TABLE_INDENT}{}", line.join(COLUMN_GAP).trim_end());
        }
    }
}

/// Every point label of `points`, in their order, once.
fn labels_of(points: &[&PointResult]) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for p in points {
        let l = point_label(&p.point, p.op);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    labels
}

pub fn render(report: &Report) -> String {
    render_width(report, width())
}

/// The console text of a report, every line at most `width` characters (from
/// `MIN_WIDTH` up).
pub fn render_width(report: &Report, width: usize) -> String {
    let width = width.max(MIN_WIDTH);
    let mut out = String::new();
    let targets: Vec<String> = report.targets.iter().map(|t| t.name.clone()).collect();
    let lifecycle = report.plan.get("lifecycle").and_then(|v| v.as_bool()).unwrap_or(false);
    let mut experiments: Vec<&str> = Vec::new();
    for p in &report.points {
        if !experiments.contains(&p.experiment.as_str()) {
            experiments.push(&p.experiment);
        }
    }
    for exp in experiments {
        let points: Vec<&PointResult> = report.points.iter().filter(|p| p.experiment == exp).collect();
        let labels = labels_of(&points);
        let at = |t: &str, label: &str| points.iter().copied().find(|p| p.target == t && point_label(&p.point, p.op) == label);
        let op = points.first().map(|p| p.op.name()).unwrap_or_default();
        let lifecycle_exp = lifecycle && points.iter().any(|p| p.point.param.is_some());
        let title = if lifecycle_exp {
            format!("{exp} ({op}; median wall time of the measured runs, and per op)")
        } else {
            let runs = match time_based_runs(&report.plan) {
                Some(length) => format!("measured runs of {}", length.trim_end_matches(" per run")),
                None => "measured runs".to_string(),
            };
            format!("{exp} ({op}; median of {runs}, ± half the min-max spread)")
        };
        out.push('\n');
        push_wrapped(&mut out, &title, width);
        let rows: Vec<(String, Vec<String>)> = labels
            .iter()
            .map(|label| {
                (label.clone(), targets.iter().map(|t| at(t, label).map(|p| measured(p, lifecycle, false)).unwrap_or_default()).collect())
            })
            .collect();
        write_grid(&mut out, width, Headings { corner: "point", by_target: "target", labels: "point", values: "result" }, &rows, &targets);
        answers(&mut out, report, &points, width);
        if exp == crate::plan::FLOOR_EXPERIMENT {
            for line in ECHO_FLOOR_MEANING {
                push_wrapped(&mut out, &format!("  {line}"), width);
            }
            push_wrapped(&mut out, &format!("  floor (p50 per request): {}", floor_latencies(&points)), width);
        }
        if points.iter().any(|p| p.summary.as_ref().is_some_and(|s| !s.by_kind.is_empty())) {
            push_wrapped(&mut out, "  per operation type: ops/s of the type, p99", width);
            let mut rows: Vec<(String, Vec<String>)> = Vec::new();
            for label in &labels {
                for kind in OpKind::YCSB {
                    let of = |t: &String| at(t, label)?.summary.as_ref()?.by_kind.get(&kind);
                    if !targets.iter().any(|t| of(t).is_some()) {
                        continue;
                    }
                    let cells = targets
                        .iter()
                        .map(|t| {
                            of(t)
                                .map(|k| match k.median_ops_per_sec {
                                    Some(v) => format!("{}/s p99 {}", rate(v), micros(k.latency.p99_us)),
                                    None => "VOID".into(),
                                })
                                .unwrap_or_default()
                        })
                        .collect();
                    rows.push((format!("{label} {}", kind.name()), cells));
                }
            }
            let headings = Headings { corner: "point", by_target: "target", labels: "point", values: "ops/s of the type, p99" };
            write_grid(&mut out, width, headings, &rows, &targets);
        }
        if points.iter().any(|p| p.summary.as_ref().is_some_and(|s| s.memory.is_some())) {
            let rows: Vec<(String, Vec<String>)> = labels
                .iter()
                .map(|label| {
                    let memory = |t: &String| at(t, label)?.summary.as_ref()?.memory.as_ref().map(memory_cell);
                    (label.clone(), targets.iter().map(|t| memory(t).unwrap_or_default()).collect())
                })
                .collect();
            push_wrapped(
                &mut out,
                "  memory change over the operation (median of the measured runs): client (the paper's metric) / server process (PSS) / engine-reported; <noise: within one page or half the runs' spread, or runs disagree in sign",
                width,
            );
            let headings =
                Headings { corner: "memory Δ", by_target: "memory Δ", labels: "point", values: "memory Δ client / server / engine" };
            write_grid(&mut out, width, headings, &rows, &targets);
        }
    }
    findings(&mut out, &Findings::of(report), width);
    if !report.unavailable.is_empty() {
        out.push_str("\nnot available here:\n");
        for u in &report.unavailable {
            push_wrapped(&mut out, &format!("  {}: {}", u.system, u.reason), width);
        }
    }
    warnings(&mut out, report, width);
    let voided = report.points.iter().filter(|p| p.is_void()).count();
    if voided > 0 {
        out.push('\n');
        push_wrapped(
            &mut out,
            &format!(
                "VOID: {voided} point{} had failed requests or missing rows; their timings are void and no throughput is published",
                if voided == 1 { "" } else { "s" }
            ),
            width,
        );
    }
    for line in resumptions(report) {
        out.push('\n');
        push_wrapped(&mut out, &line, width);
    }
    if !report.complete {
        out.push('\n');
        push_wrapped(&mut out, &format!("INCOMPLETE: {}", report.incomplete_reason.as_deref().unwrap_or("stopped early")), width);
    }
    if let Some(verdicts) = PaperVerdicts::of(report) {
        paper_verdicts(&mut out, &verdicts, width);
    }
    out
}

/// Last, for a paper study: each of the paper's findings with the paper's side, dbsweep's
/// and the verdict with its reason, one wrapped paragraph each; then what was not run and
/// the command that would run it.
fn paper_verdicts(out: &mut String, verdicts: &PaperVerdicts, width: usize) {
    out.push('\n');
    push_wrapped(out, &format!("the paper's findings, judged on this run ({}): {}", verdicts.paper, verdicts.tally()), width);
    for v in &verdicts.verdicts {
        let dbsweep = if v.dbsweep.is_empty() { "nothing measured".to_string() } else { v.dbsweep.clone() };
        push_wrapped(
            out,
            &format!(
                "  {} {} ({}): paper: {} · dbsweep: {} · why: {}",
                v.verdict.text().to_uppercase(),
                v.finding,
                v.point,
                v.paper,
                dbsweep,
                v.reason
            ),
            width,
        );
    }
    if let Some(text) = verdicts.not_run_text() {
        push_wrapped(out, &format!("  {text}"), width);
    }
    push_wrapped(out, &format!("  the findings, their conditions and places in the paper: {}", verdicts.source), width);
}

/// The findings, after the tables: each experiment's headline and standings, then each
/// target's time relative to the fastest and its geometric mean across experiments.
fn findings(out: &mut String, findings: &Findings, width: usize) {
    if findings.experiments.is_empty() {
        return;
    }
    out.push('\n');
    push_wrapped(out, "findings (each experiment at the point most targets measured; 95 % intervals):", width);
    for e in &findings.experiments {
        push_wrapped(out, &format!("  {} ({}): {}", e.experiment, e.point, e.sentence()), width);
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
        // On one line when it fits, else one standing a line, in their order.
        let line = format!("    {}", standings.join(" · "));
        if columns_of(&line) <= width {
            push_wrapped(out, &line, width);
        } else {
            for (rank, standing) in standings.iter().enumerate() {
                push_wrapped(out, &format!("    {}. {standing}", rank + 1), width);
            }
        }
    }
    let mut rows: Vec<(String, Vec<String>)> = findings
        .experiments
        .iter()
        .map(|e| (e.experiment.clone(), findings.targets.iter().map(|t| Findings::relative_text(e, t)).collect()))
        .collect();
    rows.push(("geometric mean".to_string(), findings.overall.iter().map(|o| o.text()).collect()));
    let headings = Headings { corner: "time vs fastest", by_target: "time vs fastest", labels: "experiment", values: "time vs fastest" };
    write_grid(out, width, headings, &rows, &findings.targets);
    if let Some(note) = &findings.durability_note {
        push_wrapped(out, &format!("  {note}"), width);
    }
}

/// One kind of warning and the points it concerns, worst first: how bad each case is
/// (for ordering) and how it reads ("92 % of NO-DB").
struct FlagGroup<'a> {
    kind: &'static str,
    cases: Vec<(f64, &'a PointResult, String)>,
}

/// "sqlite get c=4": where a warning's case is.
fn case_label(p: &PointResult) -> String {
    format!("{} {} {}", p.target, p.experiment, point_label(&p.point, p.op))
}

/// The flags that qualify results without voiding them, one group per kind with its
/// cases worst first.
fn flag_groups(report: &Report) -> Vec<FlagGroup<'_>> {
    let mut groups: Vec<FlagGroup> = [
        "client-bound (near the NO-DB ceiling: the client may be the limit)",
        "spread too wide to rank (runs' min-max range over ±10 % of the median, overlapping another target's)",
        "not converged (a run hit its cap before the precision asked)",
        "could not keep the rate",
        "retried after conflicts (latency includes the retries)",
    ]
    .into_iter()
    .map(|kind| FlagGroup { kind, cases: Vec::new() })
    .collect();
    for p in &report.points {
        for f in &p.flags {
            let (group, badness, text) = match f {
                Flag::ClientBound { share } => (0, *share, format!("{:.0} % of NO-DB", share * 100.0)),
                Flag::WideSpread { spread, .. } => (1, *spread, format!("±{:.0} %", spread * 100.0)),
                Flag::NotConverged { asked, reached } => {
                    let reached_text = reached.map_or("unknown".to_string(), |r| format!("±{:.1} %", r * 100.0));
                    (2, reached.unwrap_or(f64::INFINITY), format!("{reached_text} of ±{:.1} %", asked * 100.0))
                }
                Flag::MissedRate { late_ops, ops, .. } => {
                    let late = *late_ops as f64 / (*ops).max(1) as f64;
                    (3, late, format!("{:.0} % of ops late", late * 100.0))
                }
                Flag::Retried { count } => (4, *count as f64, format!("{count} retr{}", if *count == 1 { "y" } else { "ies" })),
                _ => continue,
            };
            groups[group].cases.push((badness, p, text));
        }
    }
    groups.retain(|g| !g.cases.is_empty());
    for g in &mut groups {
        g.cases.sort_by(|a, b| b.0.total_cmp(&a.0));
    }
    groups
}

/// The host's load average around the runs of `points`: " (load average 0.4-3.9 on 2
/// cores)", or nothing when it was not read.
fn load_range(points: &[&PointResult], cores: usize) -> String {
    let loads: Vec<f64> = points.iter().flat_map(|p| &p.runs).filter_map(|r| r.load).flat_map(|l| [l.before, l.after]).collect();
    match (loads.iter().copied().reduce(f64::min), loads.iter().copied().reduce(f64::max)) {
        (Some(lo), Some(hi)) => format!("; load average {lo:.1}-{hi:.1} on {cores} cores"),
        _ => String::new(),
    }
}

/// A saved warning's subject and message: "get c=8 / duckdb" (or "duckdb") and what
/// happened, when it names one ("SUBJECT / TARGET: message", "TARGET: message"); else no
/// subject.
fn subject_and_message(warning: &str) -> (Option<&str>, &str) {
    match warning.split_once(": ") {
        Some((subject, message)) if subject.contains(" / ") || !subject.contains(' ') => (Some(subject), message),
        _ => (None, warning),
    }
}

/// A warning's kind: its message with every number made `#`, so the same warning about
/// other points, targets or counts groups together.
fn warning_kind(message: &str) -> String {
    let mut kind = String::new();
    for c in message.chars() {
        if c.is_ascii_digit() {
            if !kind.ends_with('#') {
                kind.push('#');
            }
        } else if !(c == '.' && kind.ends_with('#')) {
            kind.push(c);
        }
    }
    kind
}

/// The warnings, grouped by kind with their counts and worst cases: the flags that
/// qualify results (client-bound, wide spread, ...) and the run's own warnings (a saved
/// warning per point or target becomes one line per kind, the first in full).
fn warnings(out: &mut String, report: &Report, width: usize) {
    let groups = flag_groups(report);
    // The wide-spread flags' own warnings are the flag group's cases.
    let spread_warning = |w: &str| {
        report.points.iter().any(|p| {
            p.flags.iter().any(|f| matches!(f, Flag::WideSpread { .. }))
                && w.starts_with(&format!("{} {} / {}: runs spread ", p.experiment, point_label(&p.point, p.op), p.target))
        })
    };
    let mut kinds: Vec<(String, Vec<&str>)> = Vec::new();
    for w in report.warnings.iter().filter(|w| !spread_warning(w)) {
        let kind = warning_kind(subject_and_message(w).1);
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, all)) => all.push(w),
            None => kinds.push((kind, vec![w])),
        }
    }
    if groups.is_empty() && kinds.is_empty() {
        return;
    }
    out.push_str("\nwarnings:\n");
    for g in &groups {
        let points: Vec<&PointResult> = g.cases.iter().map(|(_, p, _)| *p).collect();
        let worst: Vec<String> = g.cases.iter().take(WORST_NAMED).map(|(_, p, text)| format!("{} ({text})", case_label(p))).collect();
        let count = g.cases.len();
        let mut line = format!("  {}: {count} point{}", g.kind, if count == 1 { "" } else { "s" });
        let _ = write!(line, ", {} {}", if count == 1 { "at" } else { "worst" }, worst.join(", "));
        if g.kind.starts_with("spread") {
            let _ = write!(line, "{}; rerun on a quieter machine or with more --runs", load_range(&points, report.environment.cores));
        }
        push_wrapped(out, &line, width);
    }
    for (_, all) in &kinds {
        let mut line = format!("  {}", all[0]);
        if all.len() > 1 {
            let others: Vec<&str> = all[1..].iter().map(|w| subject_and_message(w).0.unwrap_or(w)).collect();
            let named = others.len().min(WORST_NAMED);
            let _ = write!(line, " (and {} more like it: {}", others.len(), others[..named].join(", "));
            if others.len() > named {
                let _ = write!(line, ", …");
            }
            line.push(')');
        }
        push_wrapped(out, &line, width);
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
mod tests;
