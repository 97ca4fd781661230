//! The kv-vs-relational study end to end on its own (embedded) targets, MonetDB among them:
//! `dbsweep run kv-vs-relational --quick` with the TPC-H queries, an index range and
//! inserts. MonetDB must be in every experiment, table and figure, answer Q1/Q3/Q6/Q14 as
//! the exact TPC-H reference (no mismatch flag) and each range MAX as SQLite and DuckDB do,
//! and store every inserted row. The servers of the study (`--spawn all`) are covered by
//! `servers_e2e` and the conformance suite.

use crate::support;

use support::{csv_rows, dbsweep, report};

const EXPERIMENTS: &str = "tpch-q1,tpch-q3,tpch-q6,tpch-q14,range-max-orders,insert-orders";

#[test]
fn monetdb_runs_the_study_with_reference_answers_in_every_table_and_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "kv-vs-relational",
        "--quick",
        // Exactly the quick run's ops (no 30 ms runs): every engine answers the same ops.
        "--ops",
        "300",
        "--experiments",
        EXPERIMENTS,
        "--clients",
        "1,4",
        "--batch",
        "1,100",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let r = report(&out);
    assert_eq!(r["complete"], true);
    let monetdb = r["targets"].as_array().unwrap().iter().find(|t| t["name"] == "monetdb").expect("monetdb is a study target");
    assert!(monetdb["version"].as_str().unwrap().starts_with("11.41"), "{}", monetdb["version"]);
    assert!(monetdb["settings"]["engine"].as_str().unwrap().contains("mserver5"));
    assert!(r["unavailable"].as_array().unwrap().iter().all(|u| u["system"] != "monetdb"), "MonetDB is not listed as unavailable");

    let points = r["points"].as_array().unwrap();
    let of = |experiment: &str, target: &str| -> Vec<&serde_json::Value> {
        points.iter().filter(|p| p["experiment"] == experiment && p["target"] == target).collect()
    };
    for experiment in EXPERIMENTS.split(',') {
        let mine = of(experiment, "monetdb");
        assert!(!mine.is_empty(), "monetdb has no {experiment} point");
        for p in mine {
            assert_eq!(p["status"]["state"], "measured", "{experiment}: {p}");
            let flags: Vec<&str> = p["flags"].as_array().unwrap().iter().map(|f| f["flag"].as_str().unwrap()).collect();
            assert!(
                !flags.iter().any(|f| ["answer_mismatch", "errors", "missing_rows", "incomplete"].contains(f)),
                "{experiment}: {flags:?}"
            );
            assert!(p["summary"]["median_ops_per_sec"].as_f64().is_some_and(|v| v > 0.0), "{experiment}: a timing");
            if experiment.starts_with("tpch") {
                // Every measured run kept its answer, which the runner compared with the
                // exact reference (a difference would be an answer_mismatch flag).
                assert!(p["runs"].as_array().unwrap().iter().filter(|m| m["warmup"] == false).all(|m| m["sample_answer"].is_object()));
            }
        }
    }
    // The answers are shown with the reference's verdict, in the console and report.html.
    let answered =
        |p: &&serde_json::Value| p["runs"].as_array().unwrap().iter().any(|m| m["warmup"] == false && m["sample_answer"].is_object());
    let checked = points.iter().filter(|p| p["experiment"].as_str().unwrap().starts_with("tpch")).filter(answered).count();
    assert!(checked >= 4 * 3, "every TPC-H point of every target: {checked}");
    // (The console wraps its lines to the width: words are compared, not line breaks.)
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(words.matches("— matches the TPC-H reference").count(), checked, "{stdout}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let answers = &html[html.find("<table id=\"answers\">").expect("the answers table")..];
    let answers = &answers[..answers.find("</table>").unwrap()];
    assert_eq!(answers.matches("✓ matches the TPC-H reference").count(), checked, "{answers}");
    // The same ranges answer the same MAX on every engine (digests over (op, answer)).
    for (p, q) in of("range-max-orders", "monetdb").into_iter().zip(of("range-max-orders", "sqlite")) {
        assert_eq!(p["param"], q["param"]);
        let digest = |p: &serde_json::Value| p["runs"].as_array().unwrap().iter().map(|m| m["answer_digest"].clone()).collect::<Vec<_>>();
        assert_eq!(digest(p), digest(q), "monetdb and sqlite MAX answers at width {}", p["param"]);
        let duck = of("range-max-orders", "duckdb").into_iter().find(|d| d["param"] == p["param"]).unwrap();
        assert_eq!(digest(p), digest(duck));
    }
    // Inserts: every op of every run is a stored row.
    for p in of("insert-orders", "monetdb") {
        for m in p["runs"].as_array().unwrap() {
            assert_eq!(
                (m["ok_ops"].as_u64(), m["rows"].as_u64(), m["failed_ops"].as_u64()),
                (m["ops"].as_u64(), m["ops"].as_u64(), Some(0))
            );
        }
    }

    // Every table (console) and every figure (HTML) has MonetDB; results.csv has its rows.
    for experiment in EXPERIMENTS.split(',') {
        let at = stdout.find(&format!("\n{experiment} (")).unwrap_or_else(|| panic!("no {experiment} table: {stdout}"));
        let table = &stdout[at + 1..];
        let table = &table[..table.find("\n\n").unwrap_or(table.len())];
        assert!(table.contains("monetdb"), "a console table without monetdb: {table}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let figures: Vec<&str> = html.split("<figure id=").skip(1).map(|f| &f[..f.find("</figure>").unwrap()]).collect();
    assert!(figures.len() >= EXPERIMENTS.split(',').count(), "{} figures", figures.len());
    for figure in figures {
        assert!(figure.contains("monetdb"), "a figure without monetdb: {}", &figure[..80.min(figure.len())]);
    }
    let rows = csv_rows(&out);
    for experiment in EXPERIMENTS.split(',') {
        assert!(rows.iter().any(|r| r["experiment"] == experiment && r["target"] == "monetdb"), "results.csv: {experiment}");
    }
    assert!(rows.iter().filter(|r| r["target"] == "monetdb").all(|r| r.get("retries").is_some_and(|v| !v.is_empty())));
}
