//! `dbsweep compare` and the findings on real runs, both ways: an A/A pair (the default
//! study under `--quick` twice, only the seed differs) calls at most 5 % of its points
//! different and its intervals are narrow; an A/B pair where one real change was made
//! (`--durability none`: redb stops syncing each commit, its inserts and deletes become
//! about 10x faster; nothing else changes that much) calls at least 90 % of the points that
//! change touches (SQLite's writes change too, by less: the A/A pair, not this one, bounds
//! what is called by chance). `--quick` findings never print an interval wider than 100x. Also keeps
//! every target of every run.

mod support;

use std::path::Path;
use support::dbsweep;

/// Runs the default study under `--quick` with `extra` flags; its console output.
fn quick_run(out: &Path, seed: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", "--quick", "--seed", seed, "--no-progress", "--out", out.to_str().unwrap()];
    args.extend(extra);
    let o = dbsweep(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `compare A B --format json`.
fn compare(a: &Path, b: &Path) -> serde_json::Value {
    let o = dbsweep(&["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// (experiment, target, verdict, interval width) of each tested row.
fn tested(json: &serde_json::Value) -> Vec<(String, String, String, f64)> {
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let c = &r["cells"][1];
            let verdict = c["verdict"].as_str()?;
            matches!(verdict, "faster" | "slower" | "no_difference" | "too_few_samples").then(|| {
                let width = c["ratio_high"].as_f64().unwrap() / c["ratio_low"].as_f64().unwrap();
                (r["experiment"].as_str().unwrap().to_string(), r["target"].as_str().unwrap().to_string(), verdict.to_string(), width)
            })
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Every "95 % interval AxBx-CxDx" the console printed, as high / low.
fn printed_interval_widths(console: &str) -> Vec<f64> {
    let parse = |s: &str| s.trim_end_matches('x').parse::<f64>().ok();
    console
        .split("interval ")
        .skip(1)
        .filter_map(|rest| {
            let range = rest.split([')', ',', ' ']).next()?;
            let (low, high) = range.split_once("x-")?;
            Some(parse(high)? / parse(low)?)
        })
        .collect()
}

/// Whether a compared point is one `--durability none` changes by far (redb's writes).
fn touched(experiment: &str, target: &str) -> bool {
    target == "redb" && matches!(experiment, "insert" | "delete")
}

#[test]
fn an_a_a_pair_calls_almost_nothing_and_an_a_b_pair_calls_the_real_change() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, changed) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("changed"));
    let console = quick_run(&a, "1", &[]);
    quick_run(&b, "2", &[]);
    quick_run(&changed, "3", &["--durability", "none"]);

    // --quick findings: no interval wider than 100x is printed; too few samples are named.
    let widths = printed_interval_widths(&console);
    assert!(!widths.is_empty(), "the findings print intervals: {console}");
    assert!(widths.iter().all(|w| *w <= 100.0), "{widths:?} in {console}");

    let aa = compare(&a, &b);
    assert!(aa["warnings"].as_array().unwrap().is_empty(), "only the seed differs: {}", aa["warnings"]);
    let rows = tested(&aa);
    let called = rows.iter().filter(|r| matches!(r.2.as_str(), "faster" | "slower")).count();
    assert!(rows.len() >= 60, "most points are tested: {}", rows.len());
    assert!(called * 20 <= rows.len(), "A/A: {called} of {} points called different: {rows:?}", rows.len());
    let median_width = median(rows.iter().map(|r| r.3).collect());
    assert!(median_width <= MEDIAN_WIDTH_AT_MOST, "A/A: the median interval is {median_width:.2}x wide");

    let ab = compare(&a, &changed);
    let rows = tested(&ab);
    let (hit, missed): (Vec<_>, Vec<_>) = rows.iter().filter(|r| touched(&r.0, &r.1)).partition(|r| r.2 == "faster");
    assert!(hit.len() >= 6, "redb's inserts and deletes are tested: {rows:?}");
    assert!(
        hit.len() * 10 >= (hit.len() + missed.len()) * 9,
        "A/B: the change is called on {} of {}: {missed:?}",
        hit.len(),
        hit.len() + missed.len()
    );
}

/// The A/A pair's median interval (high / low) at most: see bench/README.md for the
/// widths measured on a quiet and on a loaded 2-core machine.
const MEDIAN_WIDTH_AT_MOST: f64 = 2.0;

#[test]
fn targets_of_any_run_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, targets: &[&str]| {
        let out = tmp.path().join(name);
        let mut args =
            vec!["run", "--experiments", "get", "--ops", "100", "--runs", "2", "--clients", "1", "--batch", "1", "--no-progress"];
        for t in targets {
            args.extend(["--target", t]);
        }
        args.extend(["--out", out.to_str().unwrap()]);
        let o = dbsweep(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let one = run("one", &["m=mock:"]);
    let two = run("two", &["m=mock:", "late=mock:"]);
    let o = dbsweep(&["compare", one.to_str().unwrap(), two.to_str().unwrap(), "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let late: Vec<&serde_json::Value> = json["rows"].as_array().unwrap().iter().filter(|r| r["target"] == "late").collect();
    assert!(!late.is_empty(), "a target only the second run has is shown");
    assert!(late.iter().all(|r| r["cells"][0]["note"] == "not in this run" && r["cells"][1]["verdict"] == "missing"), "{late:?}");
    assert!(late.iter().all(|r| r["cells"][1]["ops_per_sec"].as_f64().unwrap() > 0.0), "{late:?}");
    let o = dbsweep(&["compare", one.to_str().unwrap(), two.to_str().unwrap(), "--min-effect", "-3"]);
    assert_eq!(o.status.code(), Some(2));
}
