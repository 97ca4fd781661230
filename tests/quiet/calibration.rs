//! `--calibrate` end to end with the binary, on the in-process engines: the sample alone
//! (`--dry-run --calibrate`) and a real short study whose calibrated estimate is compared
//! with the time it really took, both recorded in report.json.
//!
//! The comparison is tolerant of load (a factor of 2 either way): this machine's cores are
//! shared with other builds and tests, which slow a run by up to about half as much again
//! after its sample was timed (or the sample rather than the run). A calibration that
//! measured nothing, or a cost model that extrapolated wrongly over sizes, is off by far
//! more: the estimate from typical costs, also recorded and checked, is off 2-10x on these
//! engines.

use std::path::Path;
use std::process::Output;

fn dbsweep_in(args: &[&str], tmp: &Path) -> Output {
    crate::support::command().args(args).env("COLUMNS", "1000").env("TMPDIR", tmp).output().unwrap()
}

/// Two engines, two experiments whose costs differ in shape (single gets, ranges of two
/// widths): a study of about half a minute.
const STUDY: &[&str] = &[
    "run",
    "--target",
    "sqlite=sqlite:",
    "--target",
    "duckdb=duckdb:",
    "--experiments",
    "get,range-count",
    "--ops",
    "2000",
    "--calibrate",
    "--no-progress",
];

#[test]
fn the_sample_alone_prints_the_calibrated_estimate_per_target_and_leaves_nothing_behind() {
    let _alone = crate::alone();
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let mut args = STUDY.to_vec();
    args.push("--dry-run");
    let o =
        crate::support::command().args(&args).current_dir(cwd.path()).env("COLUMNS", "1000").env("TMPDIR", tmp.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    // The estimate from typical costs, the sample, the calibrated estimate.
    assert!(lines[0].starts_with("estimated duration: ") && lines[0].contains("typical per-op costs"), "{stdout}");
    let sample = lines.iter().position(|l| l.starts_with("calibrating: timing a short sample")).expect(&stdout);
    let lines = &lines[sample + 1..];
    assert!(lines[0].starts_with("estimated duration: ") && lines[0].contains("(calibrated: costs measured by a "), "{stdout}");
    for target in ["nodb", "sqlite", "duckdb"] {
        assert!(
            lines.iter().any(|l| l.trim_start().starts_with(&format!("{target} ")) && l.contains("typical costs: ")),
            "{target}: {stdout}"
        );
    }
    // No run directory, and the sample's scratch data is gone.
    assert_eq!(std::fs::read_dir(cwd.path()).unwrap().count(), 0, "a dry run writes nothing");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "the sample removes what it created: {left:?}");
}

#[test]
fn a_calibrated_estimate_is_within_twice_the_real_time_and_both_are_in_the_report() {
    let _alone = crate::alone();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut args = STUDY.to_vec();
    args.extend(["--out", out.to_str().unwrap()]);
    let o = dbsweep_in(&args, tmp.path());
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let timing = &report["timing"];
    let number = |v: &serde_json::Value| v.as_f64().unwrap_or_else(|| panic!("not a number: {v} in {timing}"));
    let (fixed, calibrated, real) =
        (number(&timing["estimated_fixed_secs"]), number(&timing["estimated_calibrated_secs"]), number(&timing["real_secs"]));
    assert!(number(&timing["calibration_secs"]) > 0.0, "{timing}");
    assert!(fixed > 0.0 && real > 0.0, "{timing}");
    assert!(
        calibrated > real / 2.0 && calibrated < real * 2.0,
        "calibrated {calibrated:.1} s, real {real:.1} s (typical costs: {fixed:.1} s): {timing}"
    );
    // Per target, both estimates and the real time; the targets' real times add up to at
    // most the run's.
    let targets = timing["per_target"].as_array().unwrap();
    let names: Vec<&str> = targets.iter().map(|t| t["target"].as_str().unwrap()).collect();
    assert_eq!(names, ["nodb", "sqlite", "duckdb"]);
    for t in targets {
        assert!(number(&t["estimated_fixed_secs"]) > 0.0 && number(&t["estimated_calibrated_secs"]) > 0.0, "{t}");
        assert!(number(&t["real_secs"]) >= number(&t["load_secs"]) && number(&t["load_secs"]) > 0.0, "{t}");
    }
    let summed: f64 = targets.iter().map(|t| number(&t["real_secs"])).sum();
    assert!(summed <= real * 1.001, "{summed} of {real}");
    // The console says it too: the corrected estimate before the results, the real time after.
    let calibrated = stdout.lines().position(|l| l.contains("(calibrated: ")).expect(&stdout);
    assert!(stdout.lines().nth(calibrated - 1).is_some_and(|l| l.starts_with("calibrating: ")), "{stdout}");
    assert!(stdout.contains("\ntook ") && stdout.contains("from measured costs"), "{stdout}");
}
