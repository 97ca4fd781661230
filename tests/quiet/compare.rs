//! `dbsweep compare` and the findings on real runs, both ways: six A/A pairs of four runs
//! (the default study under `--quick`, only the seed differs) call at most 5 % of their
//! points different, with intervals no wider than their differences warrant and the
//! narrowest pair's median interval at most 2x wide (a run that catches a slow spell of
//! this shared machine widens its three pairs, as it should); an A/B pair where one real change was made
//! (`--durability none`: redb stops syncing each commit, its one-row inserts and deletes
//! become about 10x faster; nothing else changes that much) calls at least 90 % of the
//! points that change touches (SQLite's writes change too, by less: the A/A pair, not this one, bounds
//! what is called by chance). `--quick` findings never print an interval wider than 100x. Also keeps
//! every target of every run.

use crate::support;

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

/// (experiment, target, verdict, interval width, point) of each tested row.
fn tested(json: &serde_json::Value) -> Vec<(String, String, String, f64, String)> {
    json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let c = &r["cells"][1];
            let verdict = c["verdict"].as_str()?;
            matches!(verdict, "faster" | "slower" | "no_difference" | "too_few_samples").then(|| {
                let width = c["ratio_high"].as_f64().unwrap() / c["ratio_low"].as_f64().unwrap();
                let text = |key: &str| r[key].as_str().unwrap().to_string();
                (text("experiment"), text("target"), verdict.to_string(), width, text("point"))
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

/// Whether a compared point is one `--durability none` changes by far: redb's writes of
/// one row per commit, which stop waiting for a disk flush (about 10x; batches of 10 share
/// a flush and change about 5x in a release build, less in a debug one).
fn touched(experiment: &str, target: &str, point: &str) -> bool {
    target == "redb" && matches!(experiment, "insert" | "delete") && !point.contains("b=10")
}

#[test]
fn a_a_pairs_call_almost_nothing_and_an_a_b_pair_calls_the_real_change() {
    let _alone = crate::alone();
    let tmp = tempfile::tempdir().unwrap();
    let runs: Vec<std::path::PathBuf> = (1..=4).map(|i| tmp.path().join(format!("a{i}"))).collect();
    let mut consoles: Vec<String> = runs.iter().zip(["1", "2", "3", "4"]).map(|(dir, seed)| quick_run(dir, seed, &[])).collect();
    let changed = tmp.path().join("changed");
    consoles.push(quick_run(&changed, "5", &["--durability", "none"]));

    // --quick findings: no interval wider than 100x is printed.
    let widths: Vec<f64> = consoles.iter().flat_map(|c| printed_interval_widths(c)).collect();
    assert!(!widths.is_empty(), "the findings print intervals: {}", consoles[0]);
    assert!(widths.iter().all(|w| *w <= 100.0), "{widths:?} in {consoles:?}");

    // Six A/A pairs: at most 5 % of all their tested points called different.
    let (mut tested_points, mut called, mut widths_and_allowed) = (0, 0, Vec::new());
    for (i, j) in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)] {
        let json = compare(&runs[i], &runs[j]);
        assert!(json["warnings"].as_array().unwrap().is_empty(), "only the seed differs: {}", json["warnings"]);
        let rows = tested(&json);
        assert!(rows.len() >= 60, "most points are tested: {}", rows.len());
        tested_points += rows.len();
        let called_here: Vec<_> = rows.iter().filter(|r| matches!(r.2.as_str(), "faster" | "slower")).collect();
        eprintln!("A/A pair {i}-{j}: {} of {} called: {called_here:?}", called_here.len(), rows.len());
        called += called_here.len();
        // The intervals are no wider than the pair's own differences warrant: the median
        // width within twice (in log) a 99 % interval of Student's t at 3 degrees of
        // freedom (compare's) around the robust spread of the points' log ratios. Welch's
        // t on each point's two runs made them about 25x wide on a quiet machine, where
        // this allows about 2-4x.
        let ratios: Vec<f64> =
            json["rows"].as_array().unwrap().iter().filter_map(|r| r["cells"][1]["ratio"].as_f64()).map(f64::ln).collect();
        let center = median(ratios.clone());
        let spread = 1.4826 * median(ratios.iter().map(|r| (r - center).abs()).collect());
        let allowed = (2.0 * 2.0 * 5.841 * spread).exp();
        let median_width = median(rows.iter().map(|r| r.3).collect());
        widths_and_allowed.push((median_width, allowed));
        assert!(median_width <= allowed, "A/A: the median interval is {median_width:.2}x wide; the differences allow {allowed:.2}x");
    }
    // And at most 2x wide between the two runs that agree best: --quick runs last at least
    // 30 ms, long enough to tell a 2x change on an undisturbed machine.
    let narrowest = widths_and_allowed.iter().map(|(width, _)| *width).fold(f64::INFINITY, f64::min);
    assert!(narrowest <= 2.0, "A/A: the narrowest pair's median interval is {narrowest:.2}x wide: {widths_and_allowed:?}");
    assert!(called * 20 <= tested_points, "A/A: {called} of {tested_points} points called different");
    eprintln!("A/A median interval widths (allowed): {widths_and_allowed:?}");

    let rows = tested(&compare(&runs[0], &changed));
    let (hit, missed): (Vec<_>, Vec<_>) = rows.iter().filter(|r| touched(&r.0, &r.1, &r.4)).partition(|r| r.2 == "faster");
    assert!(hit.len() + missed.len() >= 6, "redb's inserts and deletes are tested: {rows:?}");
    assert!(
        hit.len() * 10 >= (hit.len() + missed.len()) * 9,
        "A/B: the change is called on {} of {}: {missed:?}",
        hit.len(),
        hit.len() + missed.len()
    );
}

#[test]
fn targets_of_any_run_are_kept() {
    let _alone = crate::alone();
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
