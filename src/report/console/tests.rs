//! Unit tests of `report::console`.

use super::*;

/// A width every line of the fixtures fits unwrapped.
const WIDE: usize = 1000;

fn golden() -> Report {
    serde_json::from_str(include_str!("../../../tests/golden/report.json")).unwrap()
}

/// The golden report with its targets copied under other names up to `count` targets
/// (NO-DB and the golden run's four, then copies of sqlite named `t5`, `t6`, ...).
fn with_targets(count: usize) -> Report {
    let mut report = golden();
    let model = report.targets.iter().find(|t| t.name == "sqlite").unwrap().clone();
    let points: Vec<PointResult> = report.points.iter().filter(|p| p.target == "sqlite").cloned().collect();
    for i in report.targets.len()..count {
        let name = format!("t{i}");
        report.targets.push(crate::adapter::TargetInfo { name: name.clone(), ..model.clone() });
        report.points.extend(points.iter().cloned().map(|p| PointResult { target: name.clone(), ..p }));
    }
    report
}

fn widest(text: &str) -> usize {
    text.lines().map(columns_of).max().unwrap_or(0)
}

#[test]
fn prose_wraps_at_word_boundaries_and_cuts_only_words_longer_than_a_line() {
    assert_eq!(wrap("the quick brown fox", 10, "", ""), ["the quick", "brown fox"]);
    assert_eq!(wrap("the quick brown fox", 12, "  ", "    "), ["  the quick", "    brown", "    fox"]);
    assert_eq!(wrap("/a/very/long/path/name and more", 10, "", ""), ["/a/very/lo", "ng/path/na", "me and", "more"]);
    assert_eq!(wrap("", 10, "  ", ""), [""]);
    assert_eq!(
        fit("results: here and there\n  indented words go on\n", 12),
        "results:\n  here and\n  there\n  indented\n    words go\n    on\n"
    );
}

#[test]
fn targets_are_columns_when_they_fit_and_rows_when_not() {
    let report = golden();
    // The table header under an experiment's title, as words.
    let header = |text: &str, experiment: &str| -> Vec<String> {
        let at = text.find(&format!("\n{experiment} (")).unwrap();
        text[at..].lines().nth(2).unwrap().split_whitespace().map(String::from).collect()
    };
    let wide = render_width(&report, WIDE);
    assert_eq!(header(&wide, "insert"), ["point", "nodb", "sqlite", "duckdb", "redb"]);
    let narrow = render_width(&report, 100);
    // Two points fit as columns, with the targets as rows.
    assert_eq!(header(&narrow, "echo"), ["target", "c=1", "c=2"]);
    let echo = &narrow[narrow.find("\necho (").unwrap()..];
    let turned = echo.lines().find(|l| l.starts_with("  duckdb ")).unwrap();
    let duckdb_echo = report.points.iter().find(|p| p.experiment == "echo" && p.target == "duckdb").unwrap();
    assert!(turned.contains(&format!("{}/s", rate(duckdb_echo.summary.as_ref().unwrap().median_ops_per_sec.unwrap()))));
    // Five points do not: one row per point and target, each with its result.
    assert_eq!(header(&narrow, "insert"), ["point", "target", "result"]);
    let p = report.points.iter().find(|p| p.experiment == "insert" && !p.is_void() && p.summary.is_some()).unwrap();
    let label = point_label(&p.point, p.op);
    let row: Vec<&str> = label.split(' ').chain([p.target.as_str()]).collect();
    let value = format!("{}/s", rate(p.summary.as_ref().unwrap().median_ops_per_sec.unwrap()));
    let found = narrow
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .any(|words| words.starts_with(&row) && words.contains(&value.as_str()));
    assert!(found, "{row:?} {value}: {narrow}");
}

#[test]
fn every_line_fits_the_width_with_ten_targets() {
    let report = with_targets(10);
    assert_eq!(report.targets.len(), 10);
    // Before: one column per target.
    assert!(widest(&render_width(&report, WIDE)) > 300);
    for width in [60, 80, 100, 120] {
        let text = render_width(&report, width);
        assert!(widest(&text) <= width, "{width}: {}", text.lines().find(|l| columns_of(l) > width).unwrap());
        // Every target's every point is still there.
        for p in &report.points {
            assert!(text.contains(&format!("  {}", p.target)), "{width}: {} missing", p.target);
        }
    }
    assert!(widest(&render_width(&report, 10)) <= MIN_WIDTH);
}

#[test]
fn a_point_line_says_target_experiment_point_throughput_latencies_and_flags() {
    let report = golden();
    let p = report
        .points
        .iter()
        .find(|p| p.flags.iter().any(|f| matches!(f, Flag::ClientBound { .. })) && p.experiment != "echo-floor")
        .unwrap();
    let s = p.summary.as_ref().unwrap();
    let l = s.latency.as_ref().unwrap();
    let line = point_line(p, false);
    let expected =
        format!("{} · {} · {}: {}/s ±", p.target, p.experiment, point_label(&p.point, p.op), rate(s.median_ops_per_sec.unwrap()));
    assert!(line.starts_with(&expected), "{line}");
    assert!(line.contains(&format!(" p50 {} p99 {} [client-bound]", micros(l.p50_us), micros(l.p99_us))), "{line}");
    let mut missing = p.clone();
    missing.status = PointStatus::NotSupported { reason: "redb has no SQL".into() };
    assert!(point_line(&missing, false).ends_with(": n/a (redb has no SQL)"));
}

#[test]
fn warnings_are_grouped_by_kind_with_counts_and_worst_cases() {
    let mut report = with_targets(10);
    let mut spread = 0.2;
    for p in report.points.iter_mut().filter(|p| p.target.starts_with('t') && p.experiment == "insert") {
        spread += 0.1;
        p.flags.push(Flag::WideSpread { spread, overlaps: vec!["sqlite".into()] });
        for r in &mut p.runs {
            r.load = Some(crate::base::measurement::HostLoad { before: 0.5, after: 3.2 });
        }
        report.warnings.push(format!(
                "{} {} / {}: runs spread ±{:.0} % around the median (load average 0.5-3.2 on 2 cores); too wide to rank against sqlite: rerun on a quieter machine or with more --runs",
                p.experiment,
                point_label(&p.point, p.op),
                p.target,
                spread * 100.0
            ));
    }
    for t in ["t5", "t6", "t7"] {
        report.warnings.push(format!("ycsb-a / {t}: records the workload inserted were left in place: connection reset"));
    }
    let flagged = report.points.iter().filter(|p| p.flags.iter().any(|f| matches!(f, Flag::WideSpread { .. }))).count();
    let client_bound: Vec<(f64, String)> = report
        .points
        .iter()
        .filter_map(|p| p.flags.iter().find_map(|f| if let Flag::ClientBound { share } = f { Some((*share, case_label(p))) } else { None }))
        .collect();
    assert!(flagged > 10 && client_bound.len() > 3, "{flagged} {}", client_bound.len());
    let text = render_width(&report, 120);
    let section = &text[text.find("\nwarnings:\n").expect("a warnings section")..];
    let lines: Vec<&str> = section.lines().skip(2).filter(|l| l.starts_with("  ") && !l.starts_with("    ")).collect();
    assert_eq!(lines.len(), 3, "one line per kind: {section}");
    let (worst_share, worst) = client_bound.iter().max_by(|a, b| a.0.total_cmp(&b.0)).unwrap();
    let joined = section.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(joined.contains(&format!("{} points, worst {worst} ({:.0} % of NO-DB)", client_bound.len(), worst_share * 100.0)), "{section}");
    assert!(joined.contains(&format!("{flagged} points, worst ")) && joined.contains("load average 0.5-3.2 on"), "{section}");
    assert!(
        joined.contains(
            "ycsb-a / t5: records the workload inserted were left in place: connection reset (and 2 more like it: ycsb-a / t6, ycsb-a / t7)"
        ),
        "{section}"
    );
    assert!(!section.contains("around the median"), "the spread warnings are folded into their group: {section}");
}

#[test]
fn run_lengths_read_in_their_unit() {
    let lengths: Vec<String> = [0.5, 2.0, 2.5, 30.0, 90.0, 120.0, 7200.0].into_iter().map(crate::base::span::words).collect();
    assert_eq!(lengths, ["500 ms", "2 s", "2.5 s", "30 s", "90 s", "2 min", "2 h"]);
    assert_eq!(time_based_runs(&serde_json::json!({"duration_secs": 30.0})).as_deref(), Some("30 s per run"));
    assert_eq!(time_based_runs(&serde_json::json!({"rate": null})), None);
}

#[test]
fn query_answers_are_listed_with_the_reference_verdict() {
    let r = crate::report::html::tests::tpch_fixture();
    let text = render_width(&r, WIDE);
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
    let report = golden();
    let text = render_width(&report, WIDE);
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
