//! The HTML exporter: `report.html`, one self-contained page rendered from a saved
//! `Report` only. First screen: a one-line header, the findings as one ranked table
//! (`findings`) and the first chart; then the figures of each experiment (chosen in
//! `figures`, drawn as inline SVG in `chart`, one colour per system from `colors`) with
//! their data tables folded under each, flags next to the numbers they qualify; last, what
//! ran where, with which versions and settings (folded), and how to reproduce it.
//!
//! Laid out to read at 1400 px whatever the number of targets and points: numbers and
//! target names never wrap, wide tables scroll inside their card, not the page, and small
//! multiples past eight fold away. No network: inline CSS, system fonts, inline SVG, and one
//! small inline script (save a chart, open folds for printing, record load errors for the
//! browser test). Must not measure anything or read anything but the model.

pub mod chart;
mod colors;
pub mod figures;
mod findings;
mod latency;
mod rates;
mod verdicts;
mod ycsb;

use super::model::{Flag, MemoryDelta, PointResult, PointStatus, Report, Spread};
use crate::base::measurement::RunMeasurement;
use crate::base::op::OpKind;
use crate::report::format::micros;
use chart::{Axis, BarSeries, Pt, Scale, Series};
use colors::{Colors, css};
use figures::{FigureKind, FigureSpec, XAxis, points_of};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// HTML-escapes text for element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A point's (median, min, max) of some quantity.
type ValueOf = dyn Fn(&PointResult) -> Option<(f64, f64, f64)>;

/// What a mark's tooltip says about its point: the statistic (median, min, max over the
/// measured runs, not widened to the confidence interval) and how to write one value with
/// its unit.
struct Tip<'a> {
    value: &'a ValueOf,
    fmt: &'a dyn Fn(f64) -> String,
}

impl Tip<'_> {
    /// "sqlite · 4 clients, unbatched" then "35.2k ops/s: median of 5 runs, min–max 34k –
    /// 36k, ±1.2% CI" (a void point says so).
    fn of(&self, p: &PointResult, at: &str) -> String {
        let head = format!("{} · {at}", p.target);
        let Some((m, lo, hi)) = (self.value)(p).filter(|_| !p.is_void()) else {
            return format!("{head}\nvoid: no timing (see the flags in the table)");
        };
        let runs = p.summary.as_ref().map_or(0, |s| s.measured_runs);
        let mut text = format!("{head}\n{}: median of {runs} run{}", (self.fmt)(m), if runs == 1 { "" } else { "s" });
        if hi > lo {
            let _ = write!(text, ", min–max {} – {}", (self.fmt)(lo), (self.fmt)(hi));
        }
        if let Some(ci) = p.summary.as_ref().and_then(|s| s.precision) {
            let _ = write!(text, ", {} CI", precision_text(Some(ci)));
        }
        if is_flagged(p) {
            text.push_str("\nflagged: see the table");
        }
        text
    }
}

fn ops_text(v: f64) -> String {
    format!("{} ops/s", chart::short(v))
}

fn measured(p: &PointResult) -> Vec<&RunMeasurement> {
    p.measured_runs()
}

/// (median, min, max) of non-empty values.
fn spread(values: &[f64]) -> Option<(f64, f64, f64)> {
    Spread::of(values).map(Spread::tuple)
}

/// Seconds per measured run: (median, min, max); the console prints the same statistic.
fn run_seconds(p: &PointResult) -> Option<(f64, f64, f64)> {
    p.run_seconds().map(Spread::tuple)
}

/// Seconds per op (per query) over the measured runs.
fn seconds_per_op(p: &PointResult) -> Option<(f64, f64, f64)> {
    p.seconds_per_op().map(Spread::tuple)
}

pub fn fmt_secs(s: f64) -> String {
    let a = s.abs();
    if a >= 1.0 {
        format!("{s:.3} s")
    } else if a >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// A seconds axis unit for values up to `max`: (divisor, label).
fn secs_unit(max: f64) -> (f64, &'static str) {
    if max >= 1.0 {
        (1.0, "s")
    } else if max >= 1e-3 {
        (1e-3, "ms")
    } else {
        (1e-6, "µs")
    }
}

pub fn fmt_bytes(b: f64) -> String {
    let a = b.abs();
    if a >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    } else if a >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else if a >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

/// The flags of a point (and its status) as HTML badges, next to its numbers.
pub fn flags_html(p: &PointResult) -> String {
    let mut out = String::new();
    match &p.status {
        PointStatus::NotSupported { reason } => {
            let _ = write!(out, r#"<span class="flag na" title="{}">not supported</span>"#, esc(reason));
        }
        PointStatus::Incomplete { reason } => {
            let _ = write!(out, r#"<span class="flag warn" title="{}">incomplete: {}</span>"#, esc(reason), esc(reason));
        }
        PointStatus::Measured => {}
    }
    for f in &p.flags {
        let badge = match f {
            Flag::ClientBound { share } => format!(
                r#"<span class="flag warn" title="throughput is {pct:.0}% of NO-DB's at this point: the client may be the bottleneck">client-bound ({pct:.0}%)</span>"#,
                pct = share * 100.0
            ),
            Flag::AnswerMismatch { detail } => {
                format!(
                    r#"<span class="flag loud" title="answers differ from the other systems': the timing is void">ANSWER MISMATCH: {}</span>"#,
                    esc(detail)
                )
            }
            Flag::Errors { count, failed_ops } => format!(
                r#"<span class="flag loud" title="requests failed: the timing is void, no throughput is published">ERRORS: {count} failed request{} ({failed_ops} ops)</span>"#,
                if *count == 1 { "" } else { "s" }
            ),
            Flag::MissingRows { count } => format!(
                r#"<span class="flag loud" title="requests returned or affected fewer rows than the plan expects: the timing is void, no throughput is published">MISSING ROWS: {count}</span>"#
            ),
            Flag::WorkerShare { detail } => format!(
                r#"<span class="flag loud" title="a worker's result did not fit its share of the run and was left out: the timing is void, no throughput is published">WORKER SHARE MISMATCH: {}</span>"#,
                esc(detail)
            ),
            Flag::Retried { count } => format!(
                r#"<span class="flag warn" title="requests were run again after the system aborted them for a concurrent one (optimistic concurrency); the latency includes the retries">{count} retr{}</span>"#,
                if *count == 1 { "y" } else { "ies" }
            ),
            Flag::NotConverged { asked, reached } => format!(
                r#"<span class="flag warn" title="a run reached its cap (--max-ops, --max-time) before its throughput was known to ±{asked:.1}% at 95% confidence; not void, only less precise">not converged ({})</span>"#,
                reached.map_or("precision unknown".to_string(), |r| format!("±{:.1}%", r * 100.0)),
                asked = asked * 100.0
            ),
            Flag::Incomplete if matches!(p.status, PointStatus::Incomplete { .. }) => continue,
            Flag::Incomplete => r#"<span class="flag warn">incomplete</span>"#.to_string(),
            Flag::NotSupported if matches!(p.status, PointStatus::NotSupported { .. }) => continue,
            Flag::NotSupported => r#"<span class="flag na">not supported</span>"#.to_string(),
            Flag::WideSpread { spread, overlaps } => format!(
                r#"<span class="flag warn" title="the runs spread ±{:.0}% around their median and overlap {}: their order is not established; rerun on a quieter machine or with more runs">spread too wide to rank</span>"#,
                spread * 100.0,
                esc(&overlaps.join(", "))
            ),
            Flag::MissedRate { .. } => format!(
                r#"<span class="flag warn" title="a fixed-rate point: the system fell behind the schedule; its response times (from each op's intended start) show by how much">{}</span>"#,
                esc(&crate::report::format::missed_rate(f).unwrap_or_default())
            ),
        };
        out.push_str(&badge);
    }
    out
}

/// A data-table cell spanning `columns` for a void point: no numbers, the flags say why.
fn void_cells(columns: usize) -> String {
    format!("<td colspan=\"{columns}\" class=\"void\">VOID: no timing (see flags)</td>")
}

fn is_flagged(p: &PointResult) -> bool {
    !p.flags.is_empty() || !matches!(p.status, PointStatus::Measured)
}

fn shell_quote(arg: &str) -> String {
    if !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c)) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The command as one shell line (the program name shortened to `dbsweep`).
pub fn command_line(report: &Report) -> String {
    let mut args: Vec<String> = report.command.iter().map(|a| shell_quote(a)).collect();
    if let Some(first) = args.first_mut()
        && first.rsplit('/').next().is_some_and(|n| n == "dbsweep")
    {
        *first = "dbsweep".into();
    }
    args.join(" ")
}

const CSS: &str = r#"
:root { color-scheme: light; }
*, *::before, *::after { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0 auto; max-width: 1400px; padding: 12px 24px 48px; color: #222; background: #fff; line-height: 1.4; }
h1 { font-size: 1.5em; margin: 0.1em 0; } h2 { border-bottom: 2px solid #ddd; padding-bottom: 3px; margin: 1.1em 0 0.5em; font-size: 1.25em; } h3 { margin: 0.6em 0 0.2em; font-size: 1.05em; }
.lede { margin: 0.1em 0 0.6em; color: #444; font-size: 0.92em; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.92em; }
pre { background: #f5f5f5; padding: 8px 12px; overflow-x: auto; border-radius: 4px; }
.scroll { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: 4px 0 8px; font-size: 0.86em; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 2px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.target, td.point { white-space: nowrap; }
.facts td:first-child { font-weight: 600; white-space: nowrap; }
.status-ok { color: #1a7f37; font-weight: 600; } .status-bad { color: #b3261e; font-weight: 600; }
.card { border: 1px solid #e2e2e2; border-radius: 6px; padding: 4px 14px 6px; }
#findings h2 { margin-top: 0.2em; border: 0; }
table.summary td, table.summary th { padding: 2px 9px; } table.summary th.num { vertical-align: bottom; }
table.summary td.overall { font-weight: 600; background: #fafafa; }
sup.mk { display: inline-block; min-width: 1.1em; margin-left: 2px; padding: 0 2px; border-radius: 3px; font-size: 0.72em; line-height: 1.2; text-align: center; background: #fff3cd; color: #7a5b00; border: 1px solid #e6cf7a; font-weight: 600; vertical-align: 0.35em; }
sup.mk.loud { background: #b3261e; color: #fff; border-color: #7a1a14; }
.marks { font-size: 0.85em; margin: 2px 0 6px; display: flex; flex-wrap: wrap; gap: 2px 16px; }
.findings-body { display: flex; flex-wrap: wrap; gap: 0 28px; align-items: flex-start; }
.findings-body > .ranking { flex: 0 1 auto; width: min-content; min-width: 0; max-width: 100%; }
ol.headlines { flex: 1 1 440px; margin: 4px 0; padding-left: 1.4em; font-size: 0.88em; columns: 2 440px; column-gap: 32px; } ol.headlines li { margin: 0 0 3px; break-inside: avoid; }
.at, .ci { color: #666; font-size: 0.88em; font-weight: 400; } .nw { white-space: nowrap; }
td.best { font-weight: 700; color: #1a7f37; }
table.verdicts td { max-width: 360px; } td.verdict.reproduced b { color: #1a7f37; } td.verdict.differs b { color: #b3261e; } td.verdict.not-comparable b { color: #555; }
#paper-verdicts h2 { margin-top: 0.2em; border: 0; }
nav { margin: 10px 0 0; font-size: 0.9em; } nav ul { display: inline; padding: 0; margin: 0; } nav li { display: inline; margin-right: 14px; }
.figs { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 14px; }
figure { margin: 0; padding: 8px 10px; border: 1px solid #e2e2e2; border-radius: 6px; min-width: 0; }
figure.wide { grid-column: 1 / -1; }
figcaption { font-weight: 600; margin-bottom: 2px; }
figcaption a.save { float: right; font-weight: 400; font-size: 0.85em; color: #355; }
figure svg { max-width: 100%; height: auto; display: block; }
.legend { display: flex; flex-wrap: wrap; gap: 2px 14px; font-size: 0.86em; margin: 2px 0 4px; } .legend > span { white-space: nowrap; }
.sw { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
.note { color: #555; font-size: 0.84em; margin: 4px 0; }
.flag { display: inline-block; border-radius: 3px; padding: 0 5px; margin: 0 2px; font-size: 0.85em; white-space: nowrap; }
.flag.warn { background: #fff3cd; color: #7a5b00; border: 1px solid #e6cf7a; }
.flag.err { background: #fde2e1; color: #8c1d18; border: 1px solid #f0a8a4; }
.flag.na { background: #eee; color: #555; border: 1px solid #ccc; }
.flag.loud { background: #b3261e; color: #fff; font-weight: 700; border: 1px solid #7a1a14; }
td.void { color: #b3261e; font-weight: 700; white-space: nowrap; }
td.url { min-width: 200px; max-width: 280px; word-break: break-all; }
td.settings { min-width: 420px; }
.settings code { display: inline-block; background: #f3f3f3; margin: 1px 2px; padding: 0 4px; border-radius: 3px; }
.warnings li { color: #7a5b00; }
.method { border-left: 3px solid #8aa; padding: 0.1em 0.8em; margin: 0.6em 0; background: #f5f8f8; font-size: 0.9em; }
.method p { margin: 0.3em 0; }
details.data, details.guide { margin: 4px 0; } details.data summary, details.guide summary { cursor: pointer; color: #355; font-size: 0.84em; }
.multiples { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 8px; }
.multiple { min-width: 0; } .multiple svg { width: 100%; } .multiple-head { font-size: 0.86em; font-weight: 600; }
.multiple-head a.save { float: right; font-weight: 400; color: #355; }
@media print {
  body { max-width: none; padding: 0; } nav, figcaption a.save, .multiple-head a.save { display: none; }
  .figs { display: block; } figure { margin-bottom: 12px; break-inside: avoid; } table { break-inside: auto; } .scroll { overflow: visible; }
  .multiples { grid-template-columns: repeat(2, 1fr); }
}
"#;

/// The page's only script: saves a chart as an SVG file ("save SVG"), opens folded data
/// tables for printing, and records, as attributes on <html> for the browser test, script
/// errors, load completion and the figures with a chart. The page reads fine without it.
const SCRIPT: &str = r#"(function(){var h=document.documentElement;h.setAttribute('data-errors','');
window.addEventListener('error',function(e){h.setAttribute('data-errors',h.getAttribute('data-errors')+(e.message||'resource error')+';');},true);
window.addEventListener('load',function(){h.setAttribute('data-loaded','1');h.setAttribute('data-svg-count',String(Array.prototype.filter.call(document.querySelectorAll('figure[data-figure]'),function(f){return f.querySelector('svg');}).length));});
window.addEventListener('beforeprint',function(){document.querySelectorAll('details').forEach(function(d){d.open=true;});});
document.addEventListener('click',function(e){var a=e.target.closest('a.save');if(!a){return;}e.preventDefault();
var svg=(a.closest('.multiple')||a.closest('figure')).querySelector('svg');if(!svg){return;}var x=new XMLSerializer().serializeToString(svg);
if(x.indexOf('xmlns=')<0){x=x.replace('<svg','<svg xmlns="http://www.w3.org/2000/svg"');}
var u=URL.createObjectURL(new Blob([x],{type:'image/svg+xml'}));var d=document.createElement('a');d.href=u;d.download=a.dataset.name;
document.body.appendChild(d);d.click();d.remove();setTimeout(function(){URL.revokeObjectURL(u);},1000);});})();"#;

/// Renders the whole page: the findings and the charts first, then what ran where and how
/// (settings and data tables folded).
pub fn render(report: &Report) -> String {
    let colors = Colors::new(report);
    let mut out = String::with_capacity(256 * 1024);
    let title = format!("dbsweep report: {}", report.study);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{CSS}</style>\n<script>{SCRIPT}</script>\n</head>\n<body>\n",
        esc(&title)
    );
    header(&mut out, report);
    if let Some(v) = crate::report::paper::PaperVerdicts::of(report) {
        verdicts::section(&mut out, &v);
    }
    findings::section(&mut out, &crate::report::summary::Findings::of(report), &colors);
    void_notes(&mut out, report);
    let sections = figures::plan(report);
    let mut guides = Guides::default();
    if sections.len() > 1 {
        out.push_str("<nav><b>Contents:</b> <ul>");
        for s in &sections {
            let _ = write!(out, "<li><a href=\"#{}\">{}</a></li>", esc(&s.id), esc(&s.title));
        }
        out.push_str("<li><a href=\"#about\">about this run</a></li></ul></nav>\n");
    }
    for s in &sections {
        let _ = write!(out, "<section id=\"{}\">\n<h2>{}</h2>\n", esc(&s.id), esc(&s.title));
        out.push_str("<div class=\"figs\">\n");
        for f in &s.figures {
            figure(&mut out, report, &colors, f, &mut guides);
        }
        out.push_str("</div>\n");
        if s.title == crate::plan::FLOOR_EXPERIMENT {
            echo_floor_meaning(&mut out, report);
        }
        if s.lifecycle_tables {
            lifecycle_tables(&mut out, report, &colors);
        }
        out.push_str("</section>\n");
    }
    if report.points.is_empty() {
        out.push_str("<p>No results yet.</p>\n");
    }
    about(&mut out, report, &colors);
    latency_files(&mut out, report);
    let _ = write!(
        out,
        "<footer id=\"report-end\"><p class=\"note\">Rendered by dbsweep {} from report.json (format {} v{}). Re-render with <code>dbsweep report DIR</code>.</p></footer>\n</body>\n</html>\n",
        esc(&report.dbsweep_version),
        esc(&report.format),
        report.format_version
    );
    out
}

/// The latency files of every point (`report::exports`), linked, in a folded table.
fn latency_files(out: &mut String, r: &Report) {
    let points: Vec<_> = r.points.iter().filter_map(|p| p.exports.as_ref().map(|e| (p, e))).collect();
    if points.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<section id=\"latency-files\">\n<h2>Latency files</h2>\n<p class=\"note\">For HdrHistogram's tools (HistogramLogProcessor, HistoView, the hdrhistogram packages): the percentile distribution of each point's service time (<code>.hgrm</code>, microseconds) and an interval log per measured run (<code>.hlog</code>, nanoseconds per request, one histogram per interval), in <code>exports/</code> beside this page.</p>\n<details class=\"data\"><summary>files of {} points</summary>\n<div class=\"scroll\"><table id=\"latency-files-table\"><tr><th>experiment</th><th>target</th><th>point</th><th>percentiles</th><th>interval logs</th></tr>\n",
        points.len()
    );
    for (p, files) in points {
        let link = |path: &str, text: &str| format!("<a href=\"{}\">{text}</a>", esc(path));
        let logs: Vec<String> = files.hlog.iter().enumerate().map(|(i, f)| link(f, &format!("run {}", i + 1))).collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.experiment),
            esc(&p.target),
            esc(&crate::report::format::point_words(&p.point, p.op)),
            link(&files.hgrm, ".hgrm"),
            logs.join(" · ")
        );
    }
    out.push_str("</table></div>\n</details>\n</section>\n");
}

/// What the echo floor measures, how to read the other results against it, and each
/// target's floor.
fn echo_floor_meaning(out: &mut String, r: &Report) {
    let floors = crate::report::console::floor_latencies(&points_of(r, crate::plan::FLOOR_EXPERIMENT));
    let _ = writeln!(
        out,
        "<div class=\"method\" id=\"echo-floor-meaning\"><p>{}</p><p><b>Floor (p50 per request):</b> {}</p></div>",
        esc(&crate::report::console::ECHO_FLOOR_MEANING.join(" ")),
        esc(&floors)
    );
}

/// The study's two method lines (`[method]` in its TOML): what the paper measured and how
/// dbsweep's measurement differs.
fn method(out: &mut String, r: &Report) {
    let line = |key: &str| r.plan.get("method").and_then(|m| m.get(key)).and_then(|v| v.as_str()).filter(|t| !t.is_empty());
    if let (Some(paper), Some(dbsweep)) = (line("paper"), line("dbsweep")) {
        let _ = writeln!(
            out,
            "<div class=\"method\" id=\"study-method\">\n<p><b>The paper measured:</b> {}</p>\n<p><b>dbsweep differs:</b> {}</p>\n</div>",
            esc(paper),
            esc(dbsweep)
        );
    }
}

/// "fixed rates, each point at 1k, 4k ops/s in total" or the closed loop.
fn mode_text(r: &Report) -> String {
    // One number in reports before rates became a sweep axis, a list since.
    let rates: Vec<f64> = match r.plan.get("rate") {
        Some(serde_json::Value::Array(list)) => list.iter().filter_map(|v| v.as_f64()).collect(),
        Some(one) => one.as_f64().into_iter().collect(),
        None => Vec::new(),
    };
    match rates.as_slice() {
        [] => "closed loop (maximum throughput)".into(),
        [one] => format!("fixed rate, {} ops/s in total", chart::short(*one)),
        many => {
            format!("fixed rates, each point at {} ops/s in total", many.iter().map(|v| chart::short(*v)).collect::<Vec<_>>().join(", "))
        }
    }
}

/// The title and one line of what ran: the study's description, the targets, the mode,
/// the status when incomplete, where and when.
fn header(out: &mut String, r: &Report) {
    let _ = write!(out, "<header>\n<h1>dbsweep: {}</h1>\n<p class=\"lede\">", esc(&r.study));
    let mut parts: Vec<String> = Vec::new();
    if let Some(description) = r.plan.get("description").and_then(|v| v.as_str()).filter(|d| !d.is_empty()) {
        parts.push(esc(description));
    }
    if !r.complete {
        parts.push(format!(
            "<span class=\"status-bad\">incomplete</span>: {}",
            esc(r.incomplete_reason.as_deref().unwrap_or("reason not recorded"))
        ));
    }
    let targets = r.targets.len();
    parts.push(format!("{targets} target{}", if targets == 1 { "" } else { "s" }));
    parts.push(esc(&mode_text(r)));
    parts.push(format!("{} on {}", esc(&r.started_at), esc(&r.environment.hostname)));
    out.push_str(&parts.join(" · "));
    out.push_str(" · <a href=\"#about\">about this run</a></p>\n</header>\n");
}

/// Points whose answers differ or whose timing is void: said once, loudly, under the findings.
fn void_notes(out: &mut String, r: &Report) {
    let mismatches = r.points.iter().filter(|p| p.flags.iter().any(|f| matches!(f, Flag::AnswerMismatch { .. }))).count();
    if mismatches > 0 {
        let _ = writeln!(
            out,
            "<p><span class=\"flag loud\">ANSWER MISMATCH</span> at {mismatches} point{}: those timings are void (see the flagged rows).</p>",
            if mismatches == 1 { "" } else { "s" }
        );
    }
    let voided = r.points.iter().filter(|p| p.is_void()).count();
    if voided > 0 {
        let _ = writeln!(
            out,
            "<p id=\"voided\"><span class=\"flag loud\">VOID</span> at {voided} point{}: requests failed or rows were missing, so those timings are void; they are not plotted (a red × marks the gap) and have no throughput.</p>",
            if voided == 1 { "" } else { "s" }
        );
    }
}

/// After the charts: the study's method, the run's facts, the targets and their settings
/// (folded), what could not run, the warnings, how to reproduce it and how to read it.
fn about(out: &mut String, r: &Report, colors: &Colors) {
    out.push_str("<section id=\"about\">\n<h2>About this run</h2>\n");
    method(out, r);
    let _ = writeln!(out, "<p class=\"note\" id=\"reading-findings\"><b>Reading the findings.</b> {}</p>", esc(findings::READING));
    let status = if r.complete {
        "<span class=\"status-ok\">complete</span>".to_string()
    } else {
        format!("<span class=\"status-bad\">incomplete</span>: {}", esc(r.incomplete_reason.as_deref().unwrap_or("reason not recorded")))
    };
    out.push_str("<details class=\"data\"><summary>the run: command, seed, times, status, host, versions</summary>\n<div class=\"scroll\"><table class=\"facts\" id=\"run-facts\">\n");
    let mut rows: Vec<(&str, String)> = vec![
        ("study", esc(&r.study)),
        ("command", format!("<code>{}</code>", esc(&command_line(r)))),
        ("seed", r.seed.to_string()),
        ("started", esc(&r.started_at)),
        ("finished", esc(r.finished_at.as_deref().unwrap_or("-"))),
        ("status", status),
        (
            "files",
            format!(
                "<a href=\"results.csv\">results.csv</a> · <a href=\"results_ops.csv\" title=\"one row per run and operation type (YCSB workloads' reads, updates, ...)\">results_ops.csv</a> · <a href=\"report.json\">report.json</a>{} (beside this page)",
                if r.points.iter().any(|p| p.exports.is_some()) {
                    " · <a href=\"#latency-files\">latency files</a> (exports/)"
                } else {
                    ""
                }
            ),
        ),
        ("mode", esc(&mode_text(r))),
        (
            "dbsweep",
            format!("{}{}", esc(&r.dbsweep_version), r.git_revision.as_deref().map(|g| format!(" (git {})", esc(g))).unwrap_or_default()),
        ),
        ("host", esc(&r.environment.hostname)),
        ("CPU", format!("{} ({} cores)", esc(&r.environment.cpu_model), r.environment.cores)),
        ("memory", fmt_bytes(r.environment.memory_bytes as f64)),
        ("OS", format!("{} (kernel {})", esc(&r.environment.os), esc(&r.environment.kernel))),
    ];
    if let Some(length) = crate::report::console::time_based_runs(&r.plan) {
        let mode = rows.iter().position(|(k, _)| *k == "mode").map_or(rows.len(), |i| i + 1);
        rows.insert(mode, ("runs", format!("{length} (time-based: a run's ops are what its clients sent in that time)")));
    }
    if !r.resumed.is_empty() {
        rows.insert(6, ("resumed", esc(&crate::report::console::resumptions(r).join("; "))));
    }
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><td>{k}</td><td>{v}</td></tr>");
    }
    if let Some(shard) = r.shard {
        let hash = r.plan_hash.as_deref().unwrap_or("-");
        let _ = writeln!(
            out,
            "<tr><td>shard</td><td>{shard} of plan <code>{}</code>: join the shards with <code>dbsweep merge</code></td></tr>",
            esc(hash)
        );
    }
    out.push_str("</table></div></details>\n");
    merged_parts(out, r);
    targets_table(out, r, colors);
    if !r.unavailable.is_empty() {
        out.push_str("<h3>Not run here</h3>\n<ul id=\"unavailable\">");
        for u in &r.unavailable {
            let _ = write!(out, "<li><b>{}</b>: {}</li>", esc(&u.system), esc(&u.reason));
        }
        out.push_str("</ul>\n");
    }
    if !r.warnings.is_empty() {
        let _ = write!(
            out,
            "<details class=\"data\"{}><summary>warnings ({})</summary>\n<ul class=\"warnings\" id=\"warnings\">",
            if r.warnings.len() <= 3 { " open" } else { "" },
            r.warnings.len()
        );
        for w in &r.warnings {
            let _ = write!(out, "<li>{}</li>", esc(w));
        }
        out.push_str("</ul></details>\n");
    }
    let _ = write!(
        out,
        "<h3>Reproduce</h3>\n<pre id=\"reproduce\">{}</pre>\n<p class=\"note\">Same seed, same operations. Numbers are the median of the measured runs (warm-up excluded); error bars and ranges are the min and max of those runs (error bars widened to the 95% confidence interval where that is wider; ±95% CI: the widest relative half-width of a run's throughput interval, by batch means); latency percentiles come from the runs' merged HDR histograms. Flags: <span class=\"flag warn\">client-bound (N%)</span> throughput is N% of the NO-DB ceiling's, so the client may be the bottleneck, <span class=\"flag loud\">ANSWER MISMATCH</span> the timing is void, <span class=\"flag loud\">ERRORS</span> requests failed and <span class=\"flag loud\">MISSING ROWS</span> requests returned or affected fewer rows than the plan expects: the point is void, it has no throughput and is not plotted (a red × on the axis marks the gap), <span class=\"flag na\">not supported</span>; other flagged points have a red ring in the charts.</p>\n</section>\n",
        esc(&command_line(r))
    );
}

/// Every target with its system, version, URL, capabilities and settings, folded.
fn targets_table(out: &mut String, r: &Report, colors: &Colors) {
    let _ = write!(
        out,
        "<details class=\"data\" id=\"targets\"><summary>targets and their settings ({})</summary>\n<div class=\"scroll\"><table id=\"targets-table\"><tr><th>target</th><th>system</th><th>version</th><th>URL</th><th>execution</th><th>native batches</th><th>secondary indexes</th><th>settings</th></tr>\n",
        r.targets.len()
    );
    for t in &r.targets {
        let settings: Vec<String> = t.settings.iter().map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v))).collect();
        let _ = writeln!(
            out,
            "<tr><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td>{}</td><td>{}</td><td class=\"url\"><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td class=\"settings\">{}</td></tr>",
            css(colors.of(&t.name)),
            esc(&t.name),
            esc(&t.system),
            esc(&t.version),
            esc(&t.url),
            t.execution.name(),
            if t.capabilities.native_batch { "yes" } else { "no" },
            if t.capabilities.secondary_indexes { "yes" } else { "no" },
            settings.join(" ")
        );
    }
    out.push_str("</table></div></details>\n");
}

/// The run directories `dbsweep merge` joined, with where and how each ran.
fn merged_parts(out: &mut String, r: &Report) {
    if r.merged_from.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h3>Merged from {} run directories (plan <code>{}</code>)</h3>\n<div class=\"scroll\"><table id=\"merged-from\"><tr><th>directory</th><th>shard</th><th>host</th><th>started</th><th>finished</th><th>status</th><th>points</th><th>command</th></tr>",
        r.merged_from.len(),
        esc(r.plan_hash.as_deref().unwrap_or("-"))
    );
    for part in &r.merged_from {
        let status = if part.complete {
            "complete".to_string()
        } else {
            format!("incomplete: {}", part.incomplete_reason.as_deref().unwrap_or("-"))
        };
        let command: Vec<String> = part.command.iter().map(|a| shell_quote(a)).collect();
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(&part.dir),
            part.shard.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
            esc(&part.hostname),
            esc(&part.started_at),
            esc(part.finished_at.as_deref().unwrap_or("-")),
            esc(&status),
            part.points,
            esc(&command.join(" "))
        );
    }
    out.push_str("</table></div>\n");
}

fn legend(out: &mut String, colors: &Colors, targets: &[String]) {
    out.push_str("<div class=\"legend\">");
    for t in targets {
        let _ = write!(out, "<span><span class=\"sw\" style=\"background:{}\"></span>{}</span>", css(colors.of(t)), esc(t));
    }
    out.push_str("</div>\n");
}

/// Targets (in colour order) that have any of these points.
fn targets_of(colors: &Colors, points: &[&PointResult]) -> Vec<String> {
    colors.0.iter().filter(|(n, _)| points.iter().any(|p| &p.target == n)).map(|(n, _)| n.clone()).collect()
}

fn open_figure(out: &mut String, f: &FigureSpec) {
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
fn save_link(figure_id: &str, name: &str) -> String {
    format!(
        "<a class=\"save\" href=\"#{}\" data-name=\"{}.svg\" title=\"save this chart as an SVG file\">save SVG</a>",
        esc(figure_id),
        esc(name)
    )
}

/// Small multiples shown before the rest fold away (a sweep of many points stays a few
/// screens tall).
const SHOWN_MULTIPLES: usize = 8;

/// A grid of small charts (each already a `.multiple`): the first `SHOWN_MULTIPLES`, the
/// rest folded under them.
fn small_multiples(out: &mut String, cells: &[String]) {
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

fn chart_or_error(out: &mut String, svg: Result<String, String>) {
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
struct Guides(Vec<&'static str>);

impl Guides {
    fn write(&mut self, out: &mut String, guide: &'static str) {
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

fn figure(out: &mut String, r: &Report, colors: &Colors, f: &FigureSpec, guides: &mut Guides) {
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
fn table_open(out: &mut String, rows: usize) {
    let _ = write!(
        out,
        "<details class=\"data\"><summary>data ({rows} row{})</summary>\n<div class=\"scroll\"><table>\n",
        if rows == 1 { "" } else { "s" }
    );
}

/// Closes what `table_open` opened.
fn table_close(out: &mut String) {
    out.push_str("</table></div></details>\n");
}

/// One line per target through its `points`: `value` (median, min, max) at `x`, drawn
/// `hollow` (not joined) where asked; void points have no value and mark a gap.
fn line_series(
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
fn throughput(out: &mut String, r: &Report, colors: &Colors, experiment: &str, x: XAxis, log_x: bool, records: Option<u64>) {
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

fn throughput_table(out: &mut String, colors: &Colors, points: &[&PointResult]) {
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

fn point_desc(p: &PointResult) -> String {
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

fn time_vs_records(out: &mut String, r: &Report, colors: &Colors, experiment: &str, log_x: bool) {
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
fn grouped_bars(
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

fn value_table(
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
fn ops_spread(p: &PointResult) -> Option<(f64, f64, f64)> {
    let s = p.summary.as_ref()?;
    Some((s.median_ops_per_sec?, s.min_ops_per_sec?, s.max_ops_per_sec?))
}

/// A throughput chart's error bar: the min..max of the measured runs, widened to the
/// median's 95 % confidence interval (`PointSummary::precision`) where that is wider.
fn ops_error_bar(p: &PointResult) -> Option<(f64, f64, f64)> {
    let (median, lo, hi) = ops_spread(p)?;
    let half = median * p.summary.as_ref().and_then(|s| s.precision).unwrap_or(0.0);
    Some((median, lo.min(median - half), hi.max(median + half)))
}

/// A table's `±95% CI` cell: the widest relative half-width among the measured runs.
fn precision_text(precision: Option<f64>) -> String {
    precision.map(|p| format!("±{:.1}%", p * 100.0)).unwrap_or_default()
}

fn throughput_bars(out: &mut String, r: &Report, colors: &Colors, experiment: &str) {
    let points = points_of(r, experiment);
    let groups: Vec<(String, Vec<&PointResult>)> = vec![(experiment.to_string(), points)];
    grouped_bars(out, colors, &groups, "ops/s", &ops_error_bar, false, &Tip { value: &ops_spread, fmt: &ops_text });
    value_table(out, colors, "experiment", &groups, "ops/s", &ops_spread, &chart::short);
}

fn query_durations(out: &mut String, r: &Report, colors: &Colors, experiments: &[String]) {
    let groups: Vec<(String, Vec<&PointResult>)> = experiments.iter().map(|e| (e.clone(), points_of(r, e))).collect();
    let tip = Tip { value: &seconds_per_op, fmt: &|v| format!("{} per query", fmt_secs(v)) };
    grouped_bars(out, colors, &groups, "time per query", &seconds_per_op, true, &tip);
    out.push_str("<p class=\"note\">Wall time per query (median of the measured runs; bars: min–max). A query whose answer differs from the other systems' or from the exact TPC-H reference is flagged and its time is void; the answers table shows each answer and its check.</p>\n");
    value_table(out, colors, "query", &groups, "time per query", &seconds_per_op, &fmt_secs);
    answers_table(out, r, colors, &groups);
}

/// Each query's answer per target (row count, first row, digest) and the check's verdict:
/// a positive mark when it matches the TPC-H reference, the mismatch otherwise.
fn answers_table(out: &mut String, r: &Report, colors: &Colors, groups: &[(String, Vec<&PointResult>)]) {
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

/// Record counts (params) of a lifecycle report, ascending.
fn record_counts(r: &Report) -> Vec<u64> {
    let set: BTreeSet<u64> = r.points.iter().filter_map(|p| p.point.param).collect();
    set.into_iter().collect()
}

fn by_count<'a>(r: &'a Report, experiment: &str) -> Vec<(String, Vec<&'a PointResult>)> {
    record_counts(r)
        .into_iter()
        .map(|n| (format!("{n}"), points_of(r, experiment).into_iter().filter(|p| p.point.param == Some(n)).collect()))
        .collect()
}

/// Lifecycle time: per key for single-key operations (read one, delete one: the run's time
/// over its keys), else the whole operation (write all, fetch all).
fn lifecycle_value(p: &PointResult) -> Option<(f64, f64, f64)> {
    if figures::per_key(p.op) { seconds_per_op(p) } else { run_seconds(p) }
}

fn lifecycle_time(out: &mut String, r: &Report, colors: &Colors, experiment: &str) {
    let groups = by_count(r, experiment);
    let per_key = groups.iter().flat_map(|(_, ps)| ps.iter()).any(|p| figures::per_key(p.op));
    let what = if per_key { "time per key" } else { "time" };
    grouped_bars(out, colors, &groups, what, &lifecycle_value, true, &Tip { value: &lifecycle_value, fmt: &fmt_secs });
    let what =
        if per_key { "Time per key (the run's wall time over the keys it read or deleted)" } else { "Wall time of the whole operation" };
    let _ = writeln!(out, "<p class=\"note\">x: record count N. {what}; median of the measured runs, whiskers min–max.</p>");
}

/// Bytes per record of a point and where the figure comes from: the engine's own
/// figure, else the spawned server's PSS, else the dbsweep process's resident memory.
fn bytes_per_record(p: &PointResult) -> Option<(f64, &'static str)> {
    if p.is_void() {
        return None;
    }
    let m = p.summary.as_ref()?.memory.as_ref()?;
    if let Some(b) = m.engine_bytes_per_row {
        return Some((b, "engine"));
    }
    if let Some(b) = m.server_bytes_per_row {
        return Some((b, "server PSS"));
    }
    let rows = measured(p).first().map(|r| r.rows).unwrap_or(0);
    (rows > 0).then(|| (m.client_delta_bytes / rows as f64, "client RSS"))
}

fn memory_per_record(out: &mut String, r: &Report, colors: &Colors, experiment: &str) {
    let groups = by_count(r, experiment);
    let value = |p: &PointResult| bytes_per_record(p).map(|(b, _)| (b, b, b));
    let tip = Tip { value: &value, fmt: &|b| format!("{} per record", fmt_bytes(b)) };
    grouped_bars(out, colors, &groups, "bytes per record", &value, false, &tip);
    let sources: Vec<String> = groups
        .iter()
        .flat_map(|(_, ps)| ps.iter())
        .filter_map(|p| bytes_per_record(p).map(|(_, s)| format!("{}: {s}", p.target)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let _ = writeln!(
        out,
        "<p class=\"note\">x: record count N. Memory added per record written (median over the measured runs). Source per target — engine: as the engine reports it; server PSS: the spawned server's process group; client RSS: dbsweep's own process (embedded engines live there). {}</p>",
        esc(&sources.join("; "))
    );
}

/// The rows of a lifecycle table: one per experiment and target, one cell per record
/// count; missing points show "–", unsupported ones their flag, the rest `cell`.
fn lifecycle_rows(
    out: &mut String,
    r: &Report,
    colors: &Colors,
    experiments: &[(String, OpKind)],
    counts: &[u64],
    cell: &mut dyn FnMut(&str, &PointResult) -> String,
) {
    for (e, _) in experiments {
        let points = points_of(r, e);
        for t in targets_of(colors, &points) {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td>",
                esc(e),
                css(colors.of(&t)),
                esc(&t)
            );
            for n in counts {
                match points.iter().find(|p| p.target == t && p.point.param == Some(*n)) {
                    None => out.push_str("<td>–</td>"),
                    Some(p) if matches!(p.status, PointStatus::NotSupported { .. }) => {
                        let _ = write!(out, "<td>{}</td>", flags_html(p));
                    }
                    Some(p) => out.push_str(&cell(&t, p)),
                }
            }
            out.push_str("</tr>\n");
        }
    }
}

fn lifecycle_tables(out: &mut String, r: &Report, colors: &Colors) {
    let counts = record_counts(r);
    let experiments = figures::lifecycle_experiments(r);
    let head = |out: &mut String, id: &str, caption: &str| {
        let _ = write!(
            out,
            "<details class=\"data\"><summary>{}</summary>\n<div class=\"scroll\"><table id=\"{id}\"><tr><th>operation</th><th>target</th>",
            esc(caption)
        );
        for n in &counts {
            let _ = write!(out, "<th>N = {n}</th>");
        }
        out.push_str("</tr>\n");
    };
    head(out, "lifecycle-time", "Time per operation (write all and fetch all: the whole operation; read one and delete one: per key)");
    lifecycle_rows(out, r, colors, &experiments, &counts, &mut |_, p| match lifecycle_value(p) {
        _ if p.is_void() => format!("<td class=\"void\">VOID {}</td>", flags_html(p)),
        Some((m, lo, hi)) => {
            format!("<td class=\"num\">{}<br><small>{} – {}</small> {}</td>", fmt_secs(m), fmt_secs(lo), fmt_secs(hi), flags_html(p))
        }
        None => format!("<td>{}</td>", flags_html(p)),
    });
    table_close(out);
    head(out, "lifecycle-memory", "Memory per operation (MiB: change over the whole operation, median of the measured runs)");
    let mut sources = BTreeSet::new();
    lifecycle_rows(out, r, colors, &experiments, &counts, &mut |t, p| match p.summary.as_ref().and_then(|s| s.memory.as_ref()) {
        Some(m) => {
            if let Some(src) = &m.engine_source {
                sources.insert(format!("{t}: {src}"));
            }
            let parts = [("client", m.client()), ("server", m.server()), ("engine", m.engine())]
                .into_iter()
                .filter(|(_, d)| *d != MemoryDelta::Missing)
                .map(|(what, d)| format!("{what} {}", memory_delta_html(d)))
                .collect::<Vec<_>>();
            format!("<td class=\"num\">{} {}</td>", parts.join("<br>"), flags_html(p))
        }
        None => {
            format!("<td>no reading {}</td>", flags_html(p))
        }
    });
    table_close(out);
    let _ = writeln!(
        out,
        "<p class=\"note\">client: dbsweep's own resident memory, the paper's metric (its Java client's heap change over each operation); for embedded engines it includes the engine. server: PSS of the spawned server's process group (/proc/PID/smaps_rollup). engine: memory as the engine reports it ({}). Each cell is after − before the whole operation, as the paper's tables, in MiB. &lt; noise: the change is not above the noise floor (one 4 KiB page, or half the min–max spread of the measured runs' changes if larger) or the runs disagree in sign, e.g. a garbage collection gave memory back during the operation.</p>",
        if sources.is_empty() {
            "no engine figure in this run".to_string()
        } else {
            esc(&sources.into_iter().collect::<Vec<_>>().join("; "))
        }
    );
}

/// A memory change in MiB, or `< noise` with the floor in its title.
fn memory_delta_html(d: MemoryDelta) -> String {
    match d {
        MemoryDelta::BelowNoise { floor } => {
            format!("<span class=\"noise\" title=\"noise floor {}\">&lt; noise</span>", fmt_bytes(floor))
        }
        other => esc(&super::format::memory_delta(other)),
    }
}

#[cfg(test)]
pub(crate) mod tests;
