//! `--precision`: each run stops once its throughput is known to the precision asked (or
//! at its caps, flagged "not converged"), every row carries the precision it reached, and
//! a low-noise target (NO-DB) stops far before the op cap that the fixed-ops mode would
//! run to. End to end on the in-process targets (NO-DB and SQLite).

use crate::support::{dbsweep, has_flag, report};
use serde_json::Value;
use std::path::Path;

const ASKED: f64 = 0.10;
const CAP: u64 = 3_000_000;
const MAX_TIME_SECS: f64 = 0.5;

fn measured(point: &Value) -> Vec<&Value> {
    point["runs"].as_array().unwrap().iter().filter(|r| r["warmup"] == false).collect()
}

#[test]
fn every_row_reaches_the_precision_or_says_it_did_not_and_nodb_stops_early() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = dbsweep(&[
        "run",
        "--target",
        "nodb=nodb:",
        "--target",
        "sqlite=sqlite:",
        "--experiments",
        "echo,insert,range-count",
        "--clients",
        "1",
        "--batch",
        "1",
        "--widths",
        "10",
        "--rows",
        "10000",
        "--precision",
        "10%",
        "--max-ops",
        &CAP.to_string(),
        "--max-time",
        "0.5s",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let r = report(&out);
    assert_eq!(r["plan"]["precision"]["target"], ASKED);
    assert!(r["warnings"].as_array().unwrap().is_empty(), "no rows left behind, nothing else odd: {}", r["warnings"]);
    let points = r["points"].as_array().unwrap();
    assert!(points.len() >= 8, "floor, echo, insert (unbatched and a batch of one) and range-count on two targets");
    for p in points {
        let what = format!("{} / {} / b={}", p["experiment"], p["target"], p["batch"]);
        let runs = measured(p);
        assert!(runs.len() >= 3, "{what}: at least three measured runs");
        // Every run did a prefix of the cap's ops: all of them, or it stopped because it
        // was precise enough, or because its time was up.
        for run in &runs {
            let (ops, seconds) = (run["ops"].as_u64().unwrap(), run["seconds"].as_f64().unwrap());
            assert!(run["complete"] == true && ops > 0 && ops <= CAP, "{what}: {run}");
            // (A run's seconds start at its first client's start, which on a loaded machine
            // can lag the monitor's clock that enforces --max-time: half of it is surely
            // no time cap.)
            if ops < CAP && seconds < 0.5 * MAX_TIME_SECS {
                let reached = run["precision"].as_f64().unwrap_or_else(|| panic!("{what}: a run that stopped early says why: {run}"));
                assert!(reached <= ASKED, "{what}: stopped at ±{reached} before its caps");
            }
        }
        // The point's precision is its widest run's; above the target it is flagged.
        let widest = runs.iter().map(|r| r["precision"].as_f64()).collect::<Option<Vec<f64>>>().map(|v| v.into_iter().fold(0.0, f64::max));
        assert_eq!(p["summary"]["precision"].as_f64(), widest, "{what}");
        let converged = widest.is_some_and(|w| w <= ASKED);
        assert_eq!(has_flag(p, "not_converged"), !converged, "{what}: {}", p["flags"]);
        assert!(!has_flag(p, "answer_mismatch"), "{what}: runs that stopped at different ops compare the ops they share");
    }
    // NO-DB's throughput is known within a fraction of a second: it stops far earlier
    // than the fixed-ops mode's CAP ops.
    let nodb_early = points
        .iter()
        .filter(|p| p["target"] == "nodb" && p["experiment"] != "echo-floor")
        .flat_map(|p| measured(p))
        .filter(|run| run["ops"].as_u64().unwrap() <= CAP / 10 && run["precision"].as_f64().is_some_and(|p| p <= ASKED))
        .count();
    assert!(nodb_early >= 1, "no NO-DB run stopped at a tenth of the cap");
    // SQLite's range counts answered the same in every run, whatever their lengths.
    let counts: Vec<&Value> = points.iter().filter(|p| p["target"] == "sqlite" && p["experiment"] == "range-count").collect();
    assert!(measured(counts[0]).iter().all(|run| !run["answer_blocks"].as_array().unwrap().is_empty()));

    // Each CSV row carries its run's precision.
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = header.iter().position(|h| *h == "precision").expect("a precision column");
    let run_rows: Vec<&str> = lines.collect();
    let csv_precisions: Vec<String> = run_rows.iter().map(|l| l.split(',').nth(column).unwrap_or_default().to_string()).collect();
    let json_precisions: Vec<String> = points
        .iter()
        .flat_map(|p| measured(p))
        .map(|run| run["precision"].as_f64().map(|v| format!("{v:.4}")).unwrap_or_default())
        .collect();
    assert_eq!(csv_precisions, json_precisions);
    // The HTML tables show it too.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("±95% CI"));
}

#[test]
fn the_caps_need_precision_and_precision_needs_three_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let out = out.to_str().unwrap();
    for (args, says) in [
        (vec!["--max-ops", "100"], "--precision"),
        (vec!["--precision", "2%", "--runs", "2"], "--runs 3"),
        (vec!["--precision", "200%"], "--precision"),
        (vec!["--precision", "2%", "--max-time", "soon"], "--max-time"),
    ] {
        let o = dbsweep(&[&["run", "--target", "nodb=nodb:", "--out", out][..], &args].concat());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!Path::new(out).exists(), "bad input writes nothing");
    }
}
