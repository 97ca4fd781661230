//! End-to-end tests of what a run prints and the CSV files it writes, as a user and pandas
//! see them: every console line fits `COLUMNS` with ten targets, each point prints a line
//! as it lands, and results.csv and results_ops.csv sum, name and count the way a plain
//! `groupby` expects.

use crate::support;

use dbsweep::report::{self, format::point_label, model::Report};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Output;
use support::{csv_rows, op_type_rows};

/// Runs dbsweep with `COLUMNS` set to `columns` (stdout and stderr are pipes, not terminals).
fn dbsweep_at(columns: usize, args: &[&str]) -> Output {
    support::command().args(args).env("COLUMNS", columns.to_string()).output().expect("run dbsweep")
}

/// Three embedded engines and seven mock targets.
const TEN_TARGETS: [&str; 20] = [
    "--target",
    "a=sqlite:",
    "--target",
    "b=duckdb:",
    "--target",
    "c=redb:",
    "--target",
    "d=mock:",
    "--target",
    "e=mock:",
    "--target",
    "f=mock:",
    "--target",
    "g=mock:",
    "--target",
    "h=mock:",
    "--target",
    "i=mock:",
    "--target",
    "j=mock:",
];

/// Runs the ten targets at `columns` with `extra` arguments, checks every line of stdout
/// and stderr fits, and that each point result printed its line as it landed; returns
/// stdout.
fn ten_targets_fit(columns: usize, extra: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut args = vec!["run", "--quick"];
    args.extend(TEN_TARGETS);
    args.extend(extra);
    args.extend(["--out", out.to_str().unwrap()]);
    let o = dbsweep_at(columns, &args);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "{stderr}");
    for (stream, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        for line in text.lines() {
            assert!(line.chars().count() <= columns, "{stream} at COLUMNS={columns}: {} characters: {line}", line.chars().count());
        }
    }
    let report = report::load(&out).unwrap();
    let names: Vec<&str> = report.targets.iter().map(|t| t.name.as_str()).collect();
    assert!(["a", "b", "c", "d", "j"].iter().all(|t| names.contains(t)), "{names:?}");
    // One line per point result, numbered in the order they landed, each naming its target,
    // experiment and point.
    let landed: Vec<&str> = stderr.lines().filter(|l| l.starts_with('[') && l.contains("] ")).collect();
    assert_eq!(landed.len(), report.points.len(), "{stderr}");
    let all = landed.len();
    for (i, line) in landed.iter().enumerate() {
        assert!(line.starts_with(&format!("[{}/{all}] ", i + 1)), "{line}");
    }
    let joined = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    for p in &report.points {
        let named = format!("{} · {} · {}: ", p.target, p.experiment, point_label(&p.point, p.op));
        assert!(joined.contains(&named), "no line for {named}");
    }
    stdout
}

#[test]
fn ten_targets_fit_120_columns_and_each_point_prints_a_line_as_it_lands() {
    let stdout = ten_targets_fit(120, &[]);
    // Grouped: one line per kind of warning, not one per point and target.
    let warnings = stdout
        .split("\nwarnings:\n")
        .nth(1)
        .map_or(0, |w| w.lines().take_while(|l| !l.is_empty()).filter(|l| !l.starts_with("    ")).count());
    assert!(warnings <= 6, "{stdout}");
}

#[test]
fn ten_targets_fit_60_columns() {
    ten_targets_fit(60, &["--experiments", "get,insert"]);
}

/// A results.csv or results_ops.csv column as integers; panics naming a row that is not.
fn integers(rows: &[HashMap<String, String>], column: &str) -> Vec<u64> {
    rows.iter().map(|r| r[column].parse::<u64>().unwrap_or_else(|_| panic!("{column} is not an integer: {r:?}"))).collect()
}

/// Runs two YCSB workloads (one scans and inserts) on SQLite and a mock target.
fn ycsb_run(out: &Path) {
    let o = dbsweep_at(
        100,
        &[
            "run",
            "ycsb",
            "--target",
            "lite=sqlite:",
            "--target",
            "m=mock:",
            "--experiments",
            "workload-a,workload-e",
            "--rows",
            "500",
            "--clients",
            "1,2",
            "--ops",
            "300",
            "--runs",
            "2",
            "--warmup",
            "0",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn results_csv_sums_once_names_ops_one_way_and_has_no_zero_latencies() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    ycsb_run(&out);
    let report: Report = report::load(&out).unwrap();
    let (rows, types) = (csv_rows(&out), op_type_rows(&out));

    // A plain groupby('target').ops.sum() is each target's ops, counted once.
    let mut json_ops: BTreeMap<String, u64> = BTreeMap::new();
    for p in &report.points {
        *json_ops.entry(p.target.clone()).or_default() += p.measured_runs().iter().map(|r| r.ops).sum::<u64>();
    }
    let mut csv_ops: BTreeMap<String, u64> = BTreeMap::new();
    for (r, ops) in rows.iter().zip(integers(&rows, "ops")) {
        *csv_ops.entry(r["target"].clone()).or_default() += ops;
    }
    assert_eq!(csv_ops, json_ops);
    assert!(json_ops["m"] > 0 && json_ops["lite"] > 0);

    // Counts are integers on every row; a measured run's latency is never 0 ns.
    for column in ["ops", "requests", "rows", "errors", "ok_ops", "failed_ops", "short_ops", "missing_rows", "retries"] {
        integers(&rows, column);
    }
    for (file, rows) in [("results.csv", &rows), ("results_ops.csv", &types)] {
        for (r, ok) in rows.iter().zip(integers(rows, "ok_ops")) {
            if ok > 0 {
                for column in ["p50_ns", "p90_ns", "p99_ns", "max_ns"] {
                    assert!(r[column].parse::<u64>().is_ok_and(|ns| ns > 0), "{file}: {column} of a run with ops: {r:?}");
                }
            }
        }
    }
    // The mock target answers in well under a microsecond: its latencies are still there.
    assert!(types.iter().any(|r| r["target"] == "m" && r["p50_ns"].parse::<u64>().unwrap() < 1000), "{types:?}");

    // One naming scheme, lower case: dbsweep's op names.
    let names = |rows: &[HashMap<String, String>]| rows.iter().map(|r| r["op"].clone()).collect::<std::collections::BTreeSet<_>>();
    assert_eq!(names(&rows), ["echo".to_string(), "mixed".to_string()].into());
    assert_eq!(names(&types), ["get", "insert", "scan", "update"].map(String::from).into());

    // Each run's types add up to its ok ops (every YCSB op is one request).
    let key = |r: &HashMap<String, String>| ["experiment", "target", "clients", "param", "run"].map(|c| r[c].clone()).join("|");
    let mut by_run: BTreeMap<String, u64> = BTreeMap::new();
    for (r, ok) in types.iter().zip(integers(&types, "ok_ops")) {
        *by_run.entry(key(r)).or_default() += ok;
    }
    let mixed: Vec<&HashMap<String, String>> = rows.iter().filter(|r| r["op"] == "mixed").collect();
    assert_eq!(mixed.len(), by_run.len(), "each run has its types");
    for r in mixed {
        assert_eq!(by_run[&key(r)], r["ok_ops"].parse::<u64>().unwrap(), "{r:?}");
    }

    // `dbsweep report DIR` renders both files again, byte for byte.
    let read = |name: &str| std::fs::read(out.join(name)).unwrap();
    let before = (read("results.csv"), read("results_ops.csv"));
    std::fs::remove_file(out.join("results.csv")).unwrap();
    std::fs::remove_file(out.join("results_ops.csv")).unwrap();
    let o = support::dbsweep(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!((read("results.csv"), read("results_ops.csv")), before);
}
