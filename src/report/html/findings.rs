//! The first thing report.html shows: the findings (`summary::Findings`) as one headline per
//! experiment with each target's standing, and the table of relative performance across
//! experiments. Renders only; what is found is decided in `report::summary`.

use super::{Colors, css, esc};
use crate::report::summary::{Findings, Standing};
use std::fmt::Write as _;

pub(super) fn section(out: &mut String, findings: &Findings, colors: &Colors) {
    if findings.experiments.is_empty() {
        return;
    }
    out.push_str("<section id=\"findings\">\n<h2>Findings</h2>\n<ul class=\"findings\">\n");
    for e in &findings.experiments {
        let _ = write!(
            out,
            "<li data-experiment=\"{}\"><b>{}</b> <span class=\"at\">({}, {})</span>: {}.<br><span class=\"standings\">",
            esc(&e.experiment),
            esc(&e.experiment),
            esc(&e.op),
            esc(&e.point),
            esc(&e.sentence())
        );
        let parts: Vec<String> = e.standings.iter().map(|s| standing(s, colors)).collect();
        out.push_str(&parts.join(" · "));
        out.push_str("</span></li>\n");
    }
    out.push_str("</ul>\n");
    if let Some(note) = &findings.durability_note {
        let _ = writeln!(out, "<p class=\"durability flag-note\"><span class=\"flag warn\">durability</span> {}</p>", esc(note));
    }
    relative_table(out, findings, colors);
    out.push_str(
        "<p class=\"note\">Each experiment is ranked at the point most targets measured (the heaviest of those): median throughput of the measured runs; \
         \"N x\" is how many times faster the leader is, with the 95 % Welch interval of the runs' geometric means. \
         The table gives each target's time relative to the fastest per experiment (1.00 = fastest) and their geometric mean across experiments, \
         with its 95 % interval from the runs' spreads; a target's mean covers only the experiments it has a valid result in. \
         At a fixed rate every target is asked the same throughput, so there the ranking is by response time p99 (from each op's intended start) and \"N x\" is how many times the leader's p99 a target's is.</p>\n</section>\n",
    );
}

fn standing(s: &Standing, colors: &Colors) -> String {
    let swatch = format!("<span class=\"sw\" style=\"background:{}\"></span>", css(colors.of(&s.target)));
    let value = s.value();
    let caveats: String = s
        .caveats
        .iter()
        .map(|c| {
            let class = if c.starts_with("VOID") || c.starts_with("WRONG") { "loud" } else { "warn" };
            format!(" <span class=\"flag {class}\">{}</span>", esc(c))
        })
        .collect();
    format!("{swatch}{} {value}{caveats}", esc(&s.target))
}

fn relative_table(out: &mut String, findings: &Findings, colors: &Colors) {
    out.push_str("<table id=\"relative-table\"><tr><th>time relative to the fastest</th>");
    for t in &findings.targets {
        let _ = write!(out, "<th><span class=\"sw\" style=\"background:{}\"></span>{}</th>", css(colors.of(t)), esc(t));
    }
    out.push_str("</tr>\n");
    for e in &findings.experiments {
        let _ = write!(out, "<tr><td>{} <span class=\"at\">({})</span></td>", esc(&e.experiment), esc(&e.point));
        for t in &findings.targets {
            let text = Findings::relative_text(e, t);
            let class = match text.as_str() {
                "1.00" => "num best",
                "void" => "num void",
                _ => "num",
            };
            let _ = write!(out, "<td class=\"{class}\">{text}</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("<tr class=\"overall\"><td>geometric mean</td>");
    let experiments = findings.experiments.len();
    for o in &findings.overall {
        let partial = if o.experiments_with_value < experiments && o.experiments_with_value > 0 {
            format!(" <span class=\"ci\">in {} of {experiments}</span>", o.experiments_with_value)
        } else {
            String::new()
        };
        let _ = write!(out, "<td class=\"num\">{}{partial}</td>", esc(&o.text()));
    }
    out.push_str("</tr>\n</table>\n");
}
