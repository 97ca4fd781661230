//! `dbsweep compare` on real runs: an A/A comparison (the same study twice, only the seed
//! differs) calls at most 5 % of points significantly different, and keeps every target of
//! every run.

mod support;

use support::dbsweep;

fn quick_run(out: &std::path::Path, seed: &str) {
    let o = dbsweep(&["run", "--quick", "--runs", "3", "--seed", seed, "--no-progress", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn an_a_a_comparison_finds_almost_no_differences() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    quick_run(&a, "1");
    quick_run(&b, "2");
    let o = dbsweep(&["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(json["warnings"].as_array().unwrap().is_empty(), "only the seed differs: {}", json["warnings"]);
    let verdicts: Vec<&str> = json["rows"].as_array().unwrap().iter().filter_map(|r| r["cells"][1]["verdict"].as_str()).collect();
    let tested = verdicts.iter().filter(|v| matches!(**v, "faster" | "slower" | "no_difference")).count();
    let different = verdicts.iter().filter(|v| matches!(**v, "faster" | "slower")).count();
    assert!(tested >= 20 && tested * 10 >= verdicts.len() * 8, "most points have three runs on each side: {verdicts:?}");
    assert!(different * 20 <= tested, "{different} of {tested} points called different in an A/A comparison");
}

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
