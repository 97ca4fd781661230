//! The first thing report.html shows: the findings (`summary::Findings`) as one compact
//! table, a row per target ranked by its geometric mean across experiments and a column per
//! experiment with the target's time relative to the fastest there (hover a cell for its
//! throughput and what qualifies it); what qualifies a standing folded into one-letter
//! marks explained in a one-line legend (one mark per cell, never a badge per pair of
//! targets); then one headline per experiment in words.
//!
//! Renders only, through the findings' public API; what is found is decided in
//! `report::summary`.

use super::{Colors, css, esc};
use crate::report::summary::{ExperimentFinding, Findings, Standing};
use std::fmt::Write as _;

/// One kind of caveat: its mark in the table and its line in the legend.
#[derive(Debug, Clone, PartialEq)]
struct MarkKind {
    /// What groups caveats into this kind (the caveat with its numbers blanked, for kinds
    /// the legend does not know).
    key: String,
    mark: String,
    meaning: String,
    /// Voids the standing (shown red), rather than weakening it.
    loud: bool,
    /// Table cells that carry it.
    cells: usize,
}

/// The kinds the legend knows by the words a caveat starts with: (words, mark, meaning, loud).
const KNOWN_KINDS: &[(&str, &str, &str, bool)] = &[
    ("VOID", "V", "void: requests failed or rows were missing, no valid timing", true),
    ("WRONG", "W", "wrong answer: the timing is void", true),
    ("client-bound", "c", "client-bound: near the client's own ceiling (NO-DB), so it may be faster", false),
    (
        super::super::summary::TOO_FEW_SAMPLES,
        "?",
        "too few samples to rank it against the leader: the interval includes 1 and is wide; more or longer runs would tell",
        false,
    ),
    ("runs spread", "s", "the runs spread too wide to rank it against some targets (older reports)", false),
    ("could not keep the rate", "m", "missed the rate: fell behind the fixed-rate schedule", false),
    ("not converged", "n", "not converged: a run hit its cap before the precision asked", false),
    ("incomplete", "i", "incomplete", false),
    ("not supported", "x", "not supported by this system", false),
];

/// The kind of one caveat text: a known kind by its first words, or a kind of its own
/// (its numbers blanked, so "2 retried requests" and "40 retried requests" are one).
fn kind_key(caveat: &str) -> String {
    if let Some((words, ..)) = KNOWN_KINDS.iter().find(|(words, ..)| caveat.starts_with(words)) {
        return words.to_string();
    }
    let mut key = String::new();
    for c in caveat.chars() {
        if c.is_ascii_digit() || c == '.' && key.ends_with('#') {
            if !key.ends_with('#') {
                key.push('#');
            }
        } else {
            key.push(c);
        }
    }
    key
}

/// Every kind of caveat in the findings, loud ones first, with its mark and count.
fn mark_kinds(findings: &Findings) -> Vec<MarkKind> {
    let mut kinds: Vec<MarkKind> = Vec::new();
    for s in findings.experiments.iter().flat_map(|e| e.standings.iter()) {
        let mut seen_here: Vec<String> = Vec::new();
        for caveat in &s.caveats {
            let key = kind_key(caveat);
            if seen_here.contains(&key) {
                continue;
            }
            seen_here.push(key.clone());
            match kinds.iter_mut().find(|k| k.key == key) {
                Some(k) => k.cells += 1,
                None => {
                    let known = KNOWN_KINDS.iter().find(|(words, ..)| *words == key);
                    let (mark, meaning, loud) = match known {
                        Some((_, mark, meaning, loud)) => (mark.to_string(), meaning.to_string(), *loud),
                        None => (String::new(), caveat.clone(), false),
                    };
                    kinds.push(MarkKind { key, mark, meaning, loud, cells: 1 });
                }
            }
        }
    }
    // Kinds the legend does not know get digits, in order of appearance.
    for (number, k) in (1..).zip(kinds.iter_mut().filter(|k| k.mark.is_empty())) {
        k.mark = number.to_string();
    }
    kinds.sort_by_key(|k| !k.loud);
    kinds
}

/// How the findings are computed, for the notes after the charts.
pub(super) const READING: &str = "Each experiment is ranked at its headline point: the one most targets measured, the heaviest of those. \
     A cell is the target's time relative to the fastest there (1.00 = fastest), from the median throughput of the measured runs; \
     at a fixed rate every target is asked the same throughput, so there the ranking is by response time p99 (from each op's intended start) \
     and \"N x\" is how many times the leader's p99 a target's is. Overall: the geometric mean of a target's relative times over the experiments \
     it has a valid result in, with its 95 % interval from the runs' spreads. A headline's \"N x\" is how many times faster the leader is, \
     with the 95 % interval of the runs' geometric means: each point's run-to-run variance moderated across all points of the report \
     (empirical Bayes), plus one typical run's variance per side for drift between the times they were measured. \
     Where that interval includes 1 the two are tied (a narrow interval) or cannot be ranked (a wide one: too few samples, with the fix).";

pub(super) fn section(out: &mut String, findings: &Findings, colors: &Colors) {
    if findings.experiments.is_empty() {
        return;
    }
    let kinds = mark_kinds(findings);
    out.push_str("<section id=\"findings\" class=\"card\">\n<h2>Findings</h2>\n");
    out.push_str("<div class=\"findings-body\"><div class=\"ranking\">\n");
    summary_table(out, findings, colors, &kinds);
    legend(out, &kinds);
    out.push_str("</div>\n");
    headlines(out, findings);
    out.push_str("</div>\n");
    if let Some(note) = &findings.durability_note {
        let _ = writeln!(
            out,
            "<p class=\"note durability\"><b>Durability differs.</b> {}</p>",
            esc(note.trim_start_matches("Durability differs: "))
        );
    }
    out.push_str(
        "<p class=\"note\">1.00 = the fastest in that experiment, 3.10x = 3.1 times its time; overall: the geometric mean across experiments with its 95 % interval. \
         Hover a cell for the throughput and its flags. <a href=\"#reading-findings\">How these are computed</a>.</p>\n</section>\n",
    );
}

/// A target's overall standing, for the row order: geometric mean, lowest first.
fn overall_rank(findings: &Findings, target: &str) -> f64 {
    findings.overall.iter().find(|o| o.target == target).and_then(|o| o.geometric_mean).unwrap_or(f64::INFINITY)
}

fn summary_table(out: &mut String, findings: &Findings, colors: &Colors, kinds: &[MarkKind]) {
    out.push_str("<div class=\"scroll\"><table id=\"relative-table\" class=\"summary\">\n<tr><th>target</th><th class=\"num\">overall<br><span class=\"at\">geometric mean</span></th>");
    for e in &findings.experiments {
        let _ = write!(
            out,
            "<th class=\"num\" data-experiment=\"{}\" title=\"{}\">{}<br><span class=\"at\">{}</span></th>",
            esc(&e.experiment),
            esc(&e.sentence()),
            esc(&e.experiment),
            esc(&e.point)
        );
    }
    out.push_str("</tr>\n");
    let mut targets: Vec<&String> = findings.targets.iter().collect();
    targets.sort_by(|a, b| overall_rank(findings, a).total_cmp(&overall_rank(findings, b)));
    let experiments = findings.experiments.len();
    for t in targets {
        let _ = write!(
            out,
            "<tr data-target=\"{}\"><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td>",
            esc(t),
            css(colors.of(t)),
            esc(t)
        );
        match findings.overall.iter().find(|o| &o.target == t) {
            Some(o) => {
                let partial = if o.experiments_with_value < experiments && o.experiments_with_value > 0 {
                    format!(" <span class=\"ci\">in {} of {experiments}</span>", o.experiments_with_value)
                } else {
                    String::new()
                };
                let _ = write!(out, "<td class=\"num overall\">{}{partial}</td>", esc(&o.text()));
            }
            None => out.push_str("<td class=\"num overall\">-</td>"),
        }
        for e in &findings.experiments {
            out.push_str(&cell(e, t, kinds));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
}

/// One target's cell in one experiment: relative time, marks, the standing in its title.
fn cell(e: &ExperimentFinding, target: &str, kinds: &[MarkKind]) -> String {
    let text = Findings::relative_text(e, target);
    let class = match text.as_str() {
        "1.00" => "num best",
        "void" => "num void",
        _ => "num",
    };
    let Some(standing) = e.standings.iter().find(|s| s.target == target) else {
        return format!("<td class=\"{class}\" title=\"not measured\">{text}</td>");
    };
    format!("<td class=\"{class}\" title=\"{}\">{}{}</td>", esc(&standing_title(target, standing)), esc(&text), marks(standing, kinds))
}

/// "sqlite: 8.4k/s (1.20x slower)" and each caveat on a line of its own.
fn standing_title(target: &str, s: &Standing) -> String {
    let mut title = format!("{target}: {}", s.value());
    for c in &s.caveats {
        title.push('\n');
        title.push_str(c);
    }
    title
}

/// The marks of a standing's caveats, one per kind.
fn marks(s: &Standing, kinds: &[MarkKind]) -> String {
    let mut out = String::new();
    let mut shown: Vec<&str> = Vec::new();
    for c in &s.caveats {
        let key = kind_key(c);
        let Some(k) = kinds.iter().find(|k| k.key == key) else { continue };
        if shown.contains(&k.mark.as_str()) {
            continue;
        }
        shown.push(&k.mark);
        let _ = write!(out, "<sup class=\"mk{}\" title=\"{}\">{}</sup>", if k.loud { " loud" } else { "" }, esc(c), esc(&k.mark));
    }
    out
}

/// One line: each mark with its meaning and how many cells carry it.
fn legend(out: &mut String, kinds: &[MarkKind]) {
    if kinds.is_empty() {
        return;
    }
    out.push_str("<p class=\"marks\" id=\"findings-marks\">");
    let parts: Vec<String> = kinds
        .iter()
        .map(|k| {
            format!(
                "<span><sup class=\"mk{}\">{}</sup> {} <span class=\"ci\">({} cell{})</span></span>",
                if k.loud { " loud" } else { "" },
                esc(&k.mark),
                esc(&k.meaning),
                k.cells,
                if k.cells == 1 { "" } else { "s" }
            )
        })
        .collect();
    out.push_str(&parts.join(" "));
    out.push_str("</p>\n");
}

/// One headline per experiment, in words.
fn headlines(out: &mut String, findings: &Findings) {
    out.push_str("<ol class=\"headlines\">\n");
    for e in &findings.experiments {
        let _ = writeln!(
            out,
            "<li data-experiment=\"{}\"><b>{}</b> <span class=\"at\">({}, {})</span>: {}.</li>",
            esc(&e.experiment),
            esc(&e.experiment),
            esc(&e.op),
            esc(&e.point),
            unbroken_numbers(&e.sentence())
        );
    }
    out.push_str("</ol>\n");
}

/// Escapes prose so that no number breaks across lines: each word with a digit in it
/// ("5.13x-7.42x)", "c=8") is kept whole, and a lone "%" stays with its number.
pub(super) fn unbroken_numbers(text: &str) -> String {
    let mut out = String::new();
    for (i, word) in text.split(' ').enumerate() {
        if i > 0 {
            out.push_str(if word == "%" { "&nbsp;" } else { " " });
        }
        if word.chars().any(|c| c.is_ascii_digit()) {
            let _ = write!(out, "<span class=\"nw\">{}</span>", esc(word));
        } else {
            out.push_str(&esc(word));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_headlines_do_not_break() {
        assert_eq!(
            unbroken_numbers("a is 5.1x faster than b (95 % interval 2.74x-687x)"),
            "a is <span class=\"nw\">5.1x</span> faster than b <span class=\"nw\">(95</span>&nbsp;% interval <span class=\"nw\">2.74x-687x)</span>"
        );
        assert_eq!(unbroken_numbers("<b> & c"), "&lt;b&gt; &amp; c");
    }

    #[test]
    fn caveats_fold_into_one_mark_per_kind_whatever_their_numbers_and_pairs() {
        assert_eq!(kind_key("runs spread ±40 %, too wide to rank against a, b"), kind_key("runs spread ±9 %, too wide to rank against c"));
        assert_eq!(kind_key("2 retried requests"), kind_key("40 retried requests"));
        assert_eq!(kind_key("2 retried requests"), "# retried requests");
        assert_ne!(kind_key("VOID: 3 failed requests"), kind_key("client-bound (90 % of the client's ceiling): may be faster"));
    }
}
