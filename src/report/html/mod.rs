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

mod about;
pub mod chart;
mod colors;
pub mod figures;
mod findings;
mod latency;
mod lifecycle;
mod rates;
mod sections;
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

use about::*;
use lifecycle::*;
use sections::*;

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

#[cfg(test)]
pub(crate) mod tests;
