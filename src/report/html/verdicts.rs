//! A paper study's verdicts (`paper::PaperVerdicts`) as the first table of report.html,
//! after the header: each finding of the paper with the paper's side, dbsweep's counterpart
//! at the same point, and the verdict with its reason (green reproduced, red differs, grey
//! not comparable); then what this run did not measure and the command that would.
//!
//! Renders only; what is judged and why is decided in `report::paper`.

use super::esc;
use crate::report::paper::{PaperVerdicts, VerdictKind};
use std::fmt::Write as _;

pub(super) fn section(out: &mut String, verdicts: &PaperVerdicts) {
    out.push_str("<section id=\"paper-verdicts\" class=\"card\">\n<h2>The paper's findings</h2>\n");
    let _ = writeln!(out, "<p class=\"lede\">{}: {}.</p>", esc(&verdicts.paper), esc(&verdicts.tally()));
    out.push_str(
        "<div class=\"scroll\"><table id=\"verdict-table\" class=\"verdicts\">\n<tr><th>finding</th><th>in the paper</th><th>the paper</th><th>dbsweep</th><th>verdict</th></tr>\n",
    );
    for v in &verdicts.verdicts {
        let class = match v.verdict {
            VerdictKind::Reproduced => "reproduced",
            VerdictKind::Differs => "differs",
            VerdictKind::NotComparable => "not-comparable",
        };
        let dbsweep = if v.dbsweep.is_empty() { "nothing measured".to_string() } else { v.dbsweep.clone() };
        let _ = writeln!(
            out,
            "<tr data-finding=\"{}\" data-verdict=\"{class}\"><td title=\"{}\">{}<br><span class=\"at\">{}</span></td><td>{}</td><td>{}</td><td>{}<br><span class=\"at\">{} · {}</span></td><td class=\"verdict {class}\"><b>{}</b><br>{}</td></tr>",
            esc(&v.finding),
            esc(&v.conditions),
            esc(&v.claim),
            esc(&v.finding),
            esc(&v.source),
            esc(&v.paper),
            esc(&dbsweep),
            esc(&v.point),
            esc(&v.targets.join(", ")),
            v.verdict.text(),
            esc(&v.reason)
        );
    }
    out.push_str("</table></div>\n");
    if let (Some(text), Some(command)) = (verdicts.not_run_text(), &verdicts.judge_with) {
        let before = text.split('`').next().unwrap_or_default();
        let _ = writeln!(out, "<p class=\"note not-run\">{}<code>{}</code> would run them.</p>", esc(before), esc(command));
    }
    let _ = writeln!(
        out,
        "<p class=\"note\">Hover a finding for the paper's conditions. Reproduced: the paper's order, within the stated factor of its ratio where it gives numbers (95 % intervals of the throughput ratio, as the findings'); differs: the opposite order or beyond the factor; not comparable: a stand-in or missing system, a point not run or void, or data that cannot rank them. The findings and their places in the paper: <code>{}</code>.</p>\n</section>",
        esc(&verdicts.source)
    );
}
