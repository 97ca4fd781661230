//! Unit tests of the HTML exporter: flags next to numbers, escaping, the header.

use super::*;
use crate::report::model::Report;

fn fixture() -> Report {
    serde_json::from_str(include_str!("../../../tests/golden/report.json")).expect("fixture parses")
}

#[test]
fn escaping_covers_markup_and_quotes() {
    assert_eq!(esc(r#"<b a="x">&'"#), "&lt;b a=&quot;x&quot;&gt;&amp;&#39;");
}

#[test]
fn target_names_and_settings_are_escaped() {
    let mut r = fixture();
    let evil = "<script>alert(1)</script>";
    let old = r.targets[0].name.clone();
    r.targets[0].name = evil.into();
    r.targets[0].settings.insert("durability\"><img src=x>".into(), "<off>".into());
    for p in r.points.iter_mut().filter(|p| p.target == old) {
        p.target = evil.into();
    }
    let html = render(&r);
    assert!(!html.contains(evil), "raw target name leaked into the page");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains("<img src=x>") && html.contains("durability&quot;&gt;&lt;img src=x&gt;=&lt;off&gt;"));
}

#[test]
fn flags_are_rendered_next_to_their_numbers() {
    let mut r = fixture();
    let i = r.points.iter().position(|p| p.experiment == "insert" && p.point.batched && p.point.batch > 1 && p.summary.is_some()).unwrap();
    r.points[i].flags = vec![Flag::ClientBound { share: 0.87 }, Flag::AnswerMismatch { detail: "count 3 vs 4".into() }];
    let badges = flags_html(&r.points[i]);
    assert!(badges.contains("client-bound (87%)"), "{badges}");
    assert!(badges.contains("class=\"flag loud\"") && badges.contains("ANSWER MISMATCH: count 3 vs 4"), "{badges}");
    let html = render(&r);
    // In the point's data-table row, after its numbers, and loudly in the header.
    let fig = html.find("<figure id=\"fig-insert-batch\"").expect("the batch figure");
    let row_start = fig
        + html[fig..]
            .find(&format!(">{}</td><td class=\"point\">{}", esc(&r.points[i].target), esc(&point_desc(&r.points[i]))))
            .expect("the point's row");
    let row = &html[row_start..row_start + html[row_start..].find("</tr>").unwrap()];
    assert!(row.contains("ANSWER MISMATCH") && row.contains("client-bound"), "{row}");
    assert!(html.contains("ANSWER MISMATCH</span> at 1 point"));
}

#[test]
fn not_supported_points_say_so_with_the_reason() {
    let mut r = fixture();
    let i = r.points.iter().position(|p| p.summary.is_some()).unwrap();
    r.points[i].status = PointStatus::NotSupported { reason: "memcached cannot enumerate keys".into() };
    r.points[i].summary = None;
    r.points[i].runs.clear();
    r.points[i].flags = vec![Flag::NotSupported];
    let badges = flags_html(&r.points[i]);
    assert_eq!(badges.matches("not supported").count(), 1, "{badges}");
    assert!(badges.contains("title=\"memcached cannot enumerate keys\""));
    assert!(render(&r).contains("not supported"));
}

#[test]
fn header_names_what_ran_where_and_how_to_reproduce() {
    let r = fixture();
    let html = render(&r);
    for needle in [&r.study, &r.environment.cpu_model, &r.environment.hostname, &r.dbsweep_version, &r.started_at] {
        assert!(html.contains(&esc(needle)), "header lacks {needle}");
    }
    assert!(html.contains(&format!("<pre id=\"reproduce\">{}</pre>", esc(&command_line(&r)))));
    for t in &r.targets {
        assert!(html.contains(&esc(&t.version)), "target version {} missing", t.version);
    }
}

#[test]
fn every_planned_figure_is_in_the_page_with_an_svg() {
    let r = fixture();
    let html = render(&r);
    let ids = figures::figure_ids(&r);
    assert!(!ids.is_empty());
    for id in ids {
        let at = html.find(&format!("<figure id=\"{id}\"")).unwrap_or_else(|| panic!("figure {id} missing"));
        let end = at + html[at..].find("</figure>").unwrap();
        assert!(html[at..end].contains("<svg"), "figure {id} has no chart");
    }
    assert!(!html.contains("http://") || !html.contains("src=\"http"), "no external resources");
}

#[test]
fn the_command_is_shell_quoted() {
    let mut r = fixture();
    r.command = vec!["/x/target/debug/dbsweep".into(), "run".into(), "--target".into(), "a=sqlite:/tmp/my db.sqlite".into()];
    assert_eq!(command_line(&r), "dbsweep run --target 'a=sqlite:/tmp/my db.sqlite'");
}

#[test]
fn void_points_show_their_flags_loudly_and_are_not_plotted() {
    let mut r = fixture();
    let i = r.points.iter().position(|p| p.experiment == "insert" && p.point.batched && p.point.batch > 1 && p.summary.is_some()).unwrap();
    let figure_of = |html: &str| {
        let at = html.find("<figure id=\"fig-insert-batch\"").expect("the batch figure");
        html[at..at + html[at..].find("</figure>").unwrap()].to_string()
    };
    let before = figure_of(&render(&r));
    assert!(!before.contains("<line opacity=\"1\" stroke=\"#FF0000\""), "no void marks before");
    let median = r.points[i].summary.as_ref().unwrap().median_ops_per_sec.unwrap();
    r.points[i].flags = vec![Flag::Errors { count: 2, failed_ops: 200 }, Flag::MissingRows { count: 7 }];
    let s = r.points[i].summary.as_mut().unwrap();
    (s.median_ops_per_sec, s.min_ops_per_sec, s.max_ops_per_sec, s.median_rows_per_sec) = (None, None, None, None);
    let badges = flags_html(&r.points[i]);
    assert!(badges.contains("class=\"flag loud\"") && badges.contains("ERRORS: 2 failed requests (200 ops)"), "{badges}");
    assert!(badges.contains("MISSING ROWS: 7"), "{badges}");
    let html = render(&r);
    assert!(html.contains("VOID</span> at 1 point:"), "the header names the void point count");
    let fig = figure_of(&html);
    let row_start = fig
        .find(&format!(">{}</td><td class=\"point\">{}", esc(&r.points[i].target), esc(&point_desc(&r.points[i]))))
        .expect("the point's row");
    let row = &fig[row_start..row_start + fig[row_start..].find("</tr>").unwrap()];
    assert!(row.contains("VOID: no timing") && row.contains("MISSING ROWS: 7"), "{row}");
    assert!(!row.contains(&chart::short(median)), "the void point's old throughput is not shown: {row}");
    // Its place in the chart is a red × on the axis instead of a point on the line.
    assert!(fig.contains("<line opacity=\"1\" stroke=\"#FF0000\""), "the gap is marked");
}

/// A lifecycle (in-memory) report of one write-all point at N = 1,000 whose two measured
/// runs took 100 ms and 650 ms, with an H2-like memory reading: the client grew by 2 MiB,
/// the server's PSS fell by 7.6 MB in one run and rose in the other.
fn lifecycle_fixture() -> Report {
    let mut r = fixture();
    let mut p =
        r.points.iter().find(|p| p.summary.is_some() && !p.is_void() && p.runs.iter().filter(|r| !r.warmup).count() >= 2).unwrap().clone();
    (p.experiment, p.op, p.point.param) = ("write-all".into(), OpKind::Insert, Some(1000));
    (p.point.clients, p.point.batch, p.point.batched) = (1, 1, false);
    p.flags.clear();
    p.runs.retain(|r| !r.warmup);
    p.runs.truncate(2);
    for (run, seconds) in p.runs.iter_mut().zip([0.1, 0.65]) {
        (run.seconds, run.ops, run.ok_ops) = (seconds, 1000, 1000);
    }
    let s = p.summary.as_mut().unwrap();
    s.median_ops_per_sec = Some(crate::stats::median(&[10_000.0, 1000.0 / 0.65]));
    s.memory = Some(crate::report::model::MemorySummary {
        engine_source: None,
        engine_delta_bytes: None,
        server_delta_bytes: Some(-7.6e6),
        client_delta_bytes: 2.0 * 1024.0 * 1024.0,
        engine_bytes_per_row: None,
        server_bytes_per_row: Some(-7600.0),
        engine_after_bytes: None,
        server_after_bytes: Some(300e6),
        engine_delta_range: None,
        server_delta_range: Some([-9e6, 2e6]),
        client_delta_range: Some([2.0 * 1024.0 * 1024.0, 2.0 * 1024.0 * 1024.0]),
    });
    r.targets.retain(|t| t.name == p.target);
    r.points = vec![p];
    r.plan["lifecycle"] = serde_json::json!(true);
    r
}

#[test]
fn console_and_html_print_the_same_time_statistic_and_memory_rule() {
    let r = lifecycle_fixture();
    let console = crate::report::console::render(&r);
    let html = render(&r);
    // The median of the runs' seconds (100 and 650 ms): 375 ms in both, never the
    // 173 ms that ops over the median throughput gives.
    assert!(console.contains("375ms (375µs/op × 1000)"), "{console}");
    assert!(html.contains("375.000 ms"), "the HTML time table has the same median");
    assert!(!console.contains("173") && !html.contains("173."), "no second statistic");
    assert!(console.contains("median wall time of the measured runs"), "{console}");
    // Memory: the client's change first (the paper's metric), the server's -7.6 MB with
    // runs of both signs is noise, in both outputs.
    assert!(console.contains("+2.00MiB / <noise / -"), "{console}");
    assert!(html.contains("client +2.00MiB<br>server <span class=\"noise\""), "the HTML memory cell");
    assert!(!html.contains("7.6") && !console.contains("7.6"), "a garbage collection is not printed as data");
}

#[test]
fn every_built_in_study_report_states_the_papers_method_and_dbsweeps_after_the_findings() {
    for study in ["embedded", "kv-vs-relational", "insert-find", "ycsb", "in-memory"] {
        let plan = crate::plan::resolve(&crate::plan::RunOptions { study: Some(study.into()), ..Default::default() }).unwrap();
        let mut r = fixture();
        r.plan = plan.to_json();
        let html = render(&r);
        let method = plan.method.as_ref().unwrap_or_else(|| panic!("{study}: no [method]"));
        assert!(method.paper.len() > 80 && method.dbsweep.len() > 80, "{study}: two real lines");
        let block = html.find("id=\"study-method\"").unwrap_or_else(|| panic!("{study}: no method block"));
        let findings = html.find("id=\"findings\"").unwrap_or(0);
        assert!(
            findings < block && block < html.find("id=\"run-facts\"").unwrap(),
            "{study}: the method lines follow the findings, before the provenance"
        );
        assert!(html.contains(&esc(&method.paper)) && html.contains(&esc(&method.dbsweep)), "{study}");
    }
}

#[test]
fn retried_points_keep_their_numbers_and_say_how_often() {
    let mut r = fixture();
    let i = r.points.iter().position(|p| p.experiment == "insert" && p.summary.is_some() && !p.is_void()).unwrap();
    r.points[i].flags = vec![Flag::Retried { count: 1 }];
    assert!(!r.points[i].is_void(), "retries do not void a point");
    assert!(flags_html(&r.points[i]).contains(">1 retry</span>"));
    r.points[i].flags = vec![Flag::Retried { count: 40 }];
    assert!(flags_html(&r.points[i]).contains(">40 retries</span>"));
    let html = render(&r);
    assert!(html.contains(">40 retries</span>") && !html.contains("VOID</span>"), "shown beside the point's numbers");
    let console = crate::report::console::render(&r);
    let line = console.lines().find(|l| l.contains("[40 retries]")).expect("the console shows the retries");
    assert!(!line.contains("VOID") && line.contains("/s"), "{line}");
}

#[test]
fn every_plotted_point_has_a_tooltip_with_target_point_value_and_spread() {
    let r = fixture();
    let html = render(&r);
    let fig = |id: &str| {
        let at = html.find(&format!("<figure id=\"{id}\"")).unwrap_or_else(|| panic!("figure {id}"));
        html[at..at + html[at..].find("</figure>").unwrap()].to_string()
    };
    let batch = fig("fig-insert-batch");
    let plotted: Vec<&PointResult> = r
        .points
        .iter()
        .filter(|p| p.experiment == "insert" && p.point.param.is_none() && (p.point.batched || p.point.clients == 1) && !p.is_void())
        .collect();
    assert!(!plotted.is_empty());
    for p in &plotted {
        let s = p.summary.as_ref().unwrap();
        let head = esc(&format!(
            "{} · {}\n{} ops/s: median of {} run",
            p.target,
            point_desc(p),
            chart::short(s.median_ops_per_sec.unwrap()),
            s.measured_runs
        ));
        assert!(batch.contains(&format!("<title>{head}")), "no tooltip {head} in {batch}");
    }
    let latency = fig("fig-insert-latency");
    assert!(latency.contains(" · ") && latency.contains("p99 service time"), "{latency}");
}

#[test]
fn latency_percentiles_are_drawn_and_tabled_at_every_client_count() {
    let r = fixture();
    let html = render(&r);
    let at = html.find("<figure id=\"fig-insert-latency\"").expect("the insert latency figure");
    let fig = &html[at..at + html[at..].find("</figure>").unwrap()];
    let unbatched: Vec<&PointResult> = r.points.iter().filter(|p| p.experiment == "insert" && !p.point.batched).collect();
    let clients: BTreeSet<usize> = unbatched.iter().map(|p| p.point.clients).collect();
    assert!(clients.len() >= 2, "the fixture sweeps clients: {clients:?}");
    for c in &clients {
        assert_eq!(fig.matches(&format!("<div class=\"multiple\" data-clients=\"{c}\">")).count(), 1, "one small chart for {c} clients");
    }
    assert_eq!(fig.matches("<svg").count(), clients.len(), "one chart per client count");
    assert_eq!(fig.matches("class=\"save\"").count(), clients.len(), "a save link per small chart");
    for p in unbatched {
        let l = p.summary.as_ref().unwrap().latency.as_ref().unwrap();
        let row = format!(">{}</td><td class=\"point\">{}</td>", esc(&p.target), esc(&point_desc(p)));
        let start = fig.find(&row).unwrap_or_else(|| panic!("no latency row {row}"));
        let row = &fig[start..start + fig[start..].find("</tr>").unwrap()];
        for us in [l.p50_us, l.p99_us, l.max_us] {
            assert!(row.contains(&format!("<td class=\"num\">{}</td>", micros(us))), "{row}");
        }
    }
    // The throughput tables carry max beside p50 and p99.
    assert!(html.contains("<th>p50</th><th>p99</th><th>max</th>"));
}

#[test]
fn the_echo_floor_section_says_what_it_measures_and_each_targets_floor() {
    let r = fixture();
    let html = render(&r);
    let at = html.find("<section id=\"exp-echo-floor\">").expect("the echo-floor section");
    let section = &html[at..at + html[at..].find("</section>").unwrap()];
    let meaning = &section[section.find("id=\"echo-floor-meaning\"").expect("the explanation")..];
    assert!(meaning.contains(&esc(crate::report::console::ECHO_FLOOR_MEANING[0])));
    for p in r.points.iter().filter(|p| p.experiment == "echo-floor") {
        let p50 = micros(p.summary.as_ref().unwrap().latency.as_ref().unwrap().p50_us);
        assert!(meaning.contains(&esc(&format!("{} {p50}", p.target))), "{meaning}");
    }
}

/// The fixture with its 1-client echo points turned into TPC-H Q1 points that kept their
/// answer; the first target's answer flagged as differing from the reference.
pub(crate) fn tpch_fixture() -> Report {
    use crate::base::op::Answer;
    use crate::base::table::{Decimal, Value};
    let mut r = fixture();
    r.plan = serde_json::json!({ "data": { "kind": "tpch", "scale": 0.01 } });
    r.points.retain(|p| p.experiment == "echo" && p.point.clients == 1 && !p.is_void());
    let answer = Answer::Table(vec![vec![Value::Text("A".into()), Value::Decimal(Decimal(3773410700))]]);
    for (i, p) in r.points.iter_mut().enumerate() {
        p.experiment = "tpch-q1".into();
        p.op = OpKind::Query;
        p.flags.clear();
        if i == 0 {
            p.flags.push(Flag::AnswerMismatch { detail: crate::report::answers::REFERENCE_MISMATCH.into() });
        }
        for run in p.runs.iter_mut() {
            run.sample_answer = Some(answer.clone());
        }
    }
    r
}

#[test]
fn query_answers_are_shown_with_a_positive_reference_mark_or_the_mismatch() {
    let r = tpch_fixture();
    assert!(r.points.len() >= 2);
    let html = render(&r);
    let at = html.find("<table id=\"answers\">").expect("the answers table");
    let table = &html[at..at + html[at..].find("</table>").unwrap()];
    for (i, p) in r.points.iter().enumerate() {
        let start = table.find(&format!(">{}</td>", esc(&p.target))).unwrap_or_else(|| panic!("no answer row for {}", p.target));
        let row = &table[start..start + table[start..].find("</tr>").unwrap()];
        assert!(row.contains("1 row; first: A | 37734107.00; digest "), "{row}");
        if i == 0 {
            assert!(row.contains("MISMATCH: differs from the exact TPC-H reference answer") && !row.contains("✓"), "{row}");
        } else {
            assert!(row.contains("✓ matches the TPC-H reference"), "{row}");
        }
    }
}

#[test]
fn findings_are_one_table_ranked_by_geometric_mean_with_one_mark_per_flagged_cell_and_a_legend() {
    use crate::report::summary::Findings;
    let mut r = fixture();
    // Every insert point: runs too spread to rank against each of the other targets.
    let names: Vec<String> = r.targets.iter().filter(|t| t.system != "nodb").map(|t| t.name.clone()).collect();
    for p in r.points.iter_mut().filter(|p| p.experiment == "insert" && p.system != "nodb" && !p.is_void()) {
        let others = names.iter().filter(|n| **n != p.target).cloned().collect();
        p.flags.push(Flag::WideSpread { spread: 0.4, overlaps: others });
    }
    let findings = Findings::of(&r);
    let html = render(&r);
    let section = &html[html.find("<section id=\"findings\"").expect("the findings")..];
    let section = &section[..section.find("</section>").unwrap()];
    let table = &section[section.find("<table id=\"relative-table\"").expect("the table")..];
    let table = &table[..table.find("</table>").unwrap()];

    // A row per target, the lowest geometric mean first.
    let rows: Vec<&str> = table.split("<tr data-target=\"").skip(1).collect();
    let shown: Vec<&str> = rows.iter().map(|row| &row[..row.find('"').unwrap()]).collect();
    let mut ranked: Vec<&crate::report::summary::Overall> = findings.overall.iter().collect();
    ranked.sort_by(|a, b| a.geometric_mean.unwrap_or(f64::INFINITY).total_cmp(&b.geometric_mean.unwrap_or(f64::INFINITY)));
    assert_eq!(shown, ranked.iter().map(|o| o.target.as_str()).collect::<Vec<_>>());
    assert!(shown.len() >= 3 && !shown.contains(&"nodb"), "{shown:?}");
    // In each row: the overall text, then each experiment's relative time, in column order.
    for (row, o) in rows.iter().zip(&ranked) {
        let cells: Vec<&str> =
            row.split("<td class=\"num").skip(1).map(|c| &c[c.find('>').unwrap() + 1..c.find("</td>").unwrap()]).collect();
        assert!(cells[0].starts_with(&esc(&o.text())), "{}: {}", o.target, cells[0]);
        for (cell, e) in cells[1..].iter().zip(&findings.experiments) {
            assert!(cell.starts_with(&Findings::relative_text(e, &o.target)), "{} in {}: {cell}", o.target, e.experiment);
        }
        assert_eq!(cells.len(), 1 + findings.experiments.len());
    }
    // One mark per flagged cell (not a badge per pair of targets), explained once.
    let insert = findings.experiments.iter().find(|e| e.experiment == "insert").unwrap();
    let flagged = insert.standings.iter().filter(|s| s.caveats.iter().any(|c| c.starts_with("runs spread"))).count();
    assert!(flagged >= 2, "{:?}", insert.standings);
    assert_eq!(table.matches(">s</sup>").count(), flagged, "{table}");
    assert!(!section.contains("class=\"flag"), "no badges in the findings: {section}");
    let legend = &section[section.find("id=\"findings-marks\"").expect("the legend")..];
    let legend = &legend[..legend.find("</p>").unwrap()];
    assert_eq!(legend.matches("too wide to rank").count(), 1, "{legend}");
    assert!(legend.contains(&format!("({flagged} cells)")), "{legend}");
    // The headlines in words, one per experiment.
    for e in &findings.experiments {
        assert!(section.contains(&format!("<li data-experiment=\"{}\"><b>", esc(&e.experiment))), "{}", e.experiment);
        assert!(section.contains(&findings::unbroken_numbers(&e.sentence())), "{}", e.sentence());
    }
}

#[test]
fn data_tables_and_settings_are_folded_below_the_charts_and_scroll_in_their_card() {
    let r = fixture();
    let html = render(&r);
    let first_chart = html.find("<figure").expect("a chart");
    assert!(html.find("id=\"findings\"").unwrap() < first_chart);
    for id in ["id=\"targets-table\"", "id=\"run-facts\"", "id=\"study-method\""] {
        if let Some(at) = html.find(id) {
            assert!(at > first_chart, "{id} comes after the first chart");
        }
    }
    // Every table but the findings' sits in a scrolling container inside a folded <details>.
    let tables = html.matches("<table").count();
    assert!(tables > 10, "{tables}");
    assert_eq!(html.matches("<div class=\"scroll\"><table").count(), tables, "every table scrolls in its card");
    assert_eq!(html.matches("<details class=\"data").count(), html.matches("<details").count(), "every fold is one of data");
    assert!(!html.contains("<details class=\"data\" open"), "nothing folded is open");
    // Numbers and target names never wrap.
    for rule in [
        "td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }",
        "td.target, td.point { white-space: nowrap; }",
    ] {
        assert!(html.contains(rule), "{rule}");
    }
    assert!(!html.contains("overflow-wrap: anywhere") && !html.contains("white-space: normal"));
}

#[test]
fn a_paper_study_opens_with_its_verdict_table_and_other_studies_do_not() {
    let mut r = fixture();
    assert!(!render(&r).contains("id=\"paper-verdicts\""), "the embedded study has no paper");
    r.study = "in-memory".into();
    let html = render(&r);
    let table = html.find("<section id=\"paper-verdicts\" class=\"card\">").expect("the verdict table");
    assert!(html.find("<section id=\"findings\"").is_some_and(|f| f > table), "before the findings");
    // Tables 3-10 of the paper, one finding per record count, and for the six tables with
    // a like-for-like quantity (Tables 5 and 7: the cold call; 4, 6, 8, 10: the server's
    // memory) a second, labelled verdict on dbsweep's own figure; none measured by the
    // embedded targets.
    assert_eq!(html.matches("<tr data-finding=\"table-").count(), 32 + 6 * 4);
    assert_eq!(html.matches("-warm\" data-verdict=").count() + html.matches("-client\" data-verdict=").count(), 6 * 4);
    assert!(html.contains("<tr data-finding=\"table-3-n1000\" data-verdict=\"not-comparable\">"));
    assert!(html.contains("Memcached 23 &lt; Redis 34 &lt; H2 147 &lt; MongoDB 904 &lt; Cassandra 1202 ms"), "escaped");
    let command = "dbsweep run in-memory --spawn cassandra,h2,memcached,redis --experiments delete-one,fetch-all,read-one,write-all";
    assert!(html.contains(&format!("<code>{command}</code> would run them.")), "{}", &html[html.find("not-run").unwrap_or(0)..][..400]);
}
