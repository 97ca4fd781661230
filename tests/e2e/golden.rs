//! Golden tests: lock the output formats of a run directory and the published JSON schema.
//!
//! - `tests/golden/report.json` is a real report (`dbsweep run embedded --quick
//!   --experiments echo,insert,range-count --ops 100`). Re-serialized it must equal itself,
//!   byte for byte, and its CSV must equal `tests/golden/results.csv`.
//! - `docs/report.schema.json` must equal the schema generated from the model, and real
//!   reports (the fixture and a fresh run) must validate against it.
//!
//! - `tests/golden/statements.txt` lists every SQL statement of every dialect: a change
//!   to generated SQL is a reviewed diff.
//!
//! A deliberate format change: run `UPDATE_GOLDEN=1 cargo test --test e2e golden::`, review the
//! diff of the golden files, and bump `FORMAT_VERSION` when a field changes meaning.

use crate::support;
use crate::support::root;
use dbsweep::report::{self, model::Report};
use std::path::Path;

fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// Compares `actual` with the golden file, or rewrites the file under UPDATE_GOLDEN=1.
fn check_golden(path: &Path, actual: &str) {
    if updating() {
        std::fs::write(path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e} (create it with UPDATE_GOLDEN=1)", path.display()));
    if expected != actual {
        let line =
            expected.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the output at line {}:\n  golden: {:?}\n  actual: {:?}\nIf the format change is deliberate, run UPDATE_GOLDEN=1 cargo test --test e2e golden:: and review the diff.",
            path.display(),
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}

fn fixture() -> Report {
    let text = std::fs::read_to_string(root().join("tests/golden/report.json")).unwrap();
    serde_json::from_str(&text).expect("the fixture is a report")
}

#[test]
fn report_json_round_trips_byte_for_byte() {
    let report = fixture();
    let json = serde_json::to_string_pretty(&report).unwrap();
    // write_all writes exactly these bytes (to_vec_pretty, no trailing newline).
    assert_eq!(json.as_bytes(), serde_json::to_vec_pretty(&report).unwrap());
    check_golden(&root().join("tests/golden/report.json"), &json);
}

#[test]
fn results_csv_matches_the_golden_file() {
    let csv = report::csv::render(&fixture());
    assert!(csv.lines().count() > 10, "the fixture has measured rows");
    check_golden(&root().join("tests/golden/results.csv"), &csv);
}

#[test]
fn report_dir_rerenders_the_same_files() {
    // `dbsweep report DIR` from the saved JSON reproduces report.json and results.csv.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(root().join("tests/golden/report.json"), dir.path().join("report.json")).unwrap();
    let out = support::command().arg("report").arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("re-rendered results.csv, results_ops.csv and report.html"), "{stdout}");
    let read = |p: &str| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(dir.path().join("report.json").to_str().unwrap()), read(root().join("tests/golden/report.json").to_str().unwrap()));
    assert_eq!(read(dir.path().join("results.csv").to_str().unwrap()), report::csv::render(&fixture()));
    let html = read(dir.path().join("report.html").to_str().unwrap());
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("data-figure=\"fig-insert-batch\""));
}

fn schema_text() -> String {
    let schema = schemars::schema_for!(Report);
    let mut text = serde_json::to_string_pretty(&schema).unwrap();
    text.push('\n');
    text
}

#[test]
fn published_schema_is_the_generated_one() {
    check_golden(&root().join("docs/report.schema.json"), &schema_text());
}

fn validate(schema: &serde_json::Value, instance: &serde_json::Value, what: &str) {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(instance).take(5).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{what} does not validate against docs/report.schema.json: {errors:#?}");
}

fn published_schema() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(root().join("docs/report.schema.json")).unwrap()).unwrap()
}

#[test]
fn fixture_validates_against_the_schema_and_broken_reports_do_not() {
    let schema = published_schema();
    let good: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(root().join("tests/golden/report.json")).unwrap()).unwrap();
    validate(&schema, &good, "the fixture");
    // The schema is not vacuous: wrong types and missing fields are rejected.
    let validator = jsonschema::validator_for(&schema).unwrap();
    let mut bad = good.clone();
    bad["seed"] = serde_json::json!("forty-two");
    assert!(!validator.is_valid(&bad), "a string seed must not validate");
    let mut bad = good.clone();
    bad["points"][0]["summary"]["median_ops_per_sec"] = serde_json::json!("fast");
    assert!(!validator.is_valid(&bad), "a text median must not validate");
    let mut bad = good.clone();
    bad["points"][0]["runs"][0]["ok_ops"] = serde_json::json!(-1);
    assert!(!validator.is_valid(&bad), "negative ok ops must not validate");
    let mut bad = good;
    bad.as_object_mut().unwrap().remove("environment");
    assert!(!validator.is_valid(&bad), "a report without environment must not validate");
}

#[test]
fn a_fresh_run_validates_against_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("run");
    let out = support::command()
        .args(["run", "embedded", "--quick", "--experiments", "get,range-count", "--ops", "50", "--runs", "1", "--no-progress", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "run failed: {}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap()).unwrap();
    assert!(report["points"].as_array().is_some_and(|p| !p.is_empty()));
    validate(&published_schema(), &report, "a fresh report.json");
}

#[test]
fn sql_statements_match_the_golden_file() {
    check_golden(&root().join("tests/golden/statements.txt"), &dbsweep::adapter::sql::listing::all_statements());
}
