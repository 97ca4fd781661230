//! `run --resume DIR`: a run interrupted mid-point (Ctrl-C or SIGTERM) and resumed ends
//! with every point exactly once, the points it had completed unchanged (report.json and
//! results.csv rows), and the report saying it was resumed, when and from which point; a
//! resume whose plan or dbsweep differs, or of a complete run, is refused (exit 2) and
//! writes nothing. End to end on the in-process targets (NO-DB and SQLite).

use crate::support;
use crate::support::{dbsweep, report};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Echo floor, 4 insert and 4 get points, on two targets: 18 point results.
const POINT_RESULTS: usize = 18;

fn run_args(out: &Path) -> Vec<String> {
    let args = "run --target nodb=nodb: --target sqlite=sqlite: --experiments get,insert --clients 1,2 --rows 10000 --runs 2 --warmup 1 --ops 5000 --no-progress --out";
    let mut args: Vec<String> = args.split(' ').map(str::to_string).collect();
    args.push(out.display().to_string());
    args
}

fn points(r: &Value) -> &Vec<Value> {
    r["points"].as_array().unwrap()
}

fn incomplete(p: &Value) -> bool {
    p["status"]["state"] == "incomplete"
}

/// A point result's place in the plan: experiment, target and point.
fn identity(p: &Value) -> String {
    format!("{} / {} / c={} b={} {} {}", p["experiment"], p["target"], p["clients"], p["batch"], p["batched"], p["param"])
}

/// Starts the run, waits until its report holds the first two points (the echo floor on
/// both targets) and a few milliseconds into the next, sends `signal`, and returns the
/// exit code.
fn interrupt(out: &Path, signal: &str) -> i32 {
    let mut child = support::command().args(run_args(out)).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(Instant::now() < deadline, "the run saved no point in 5 minutes");
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it was interrupted");
        let saved = std::fs::read_to_string(out.join("report.json")).ok().and_then(|t| serde_json::from_str::<Value>(&t).ok());
        if saved.is_some_and(|r| points(&r).len() >= 2) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(50));
    let killed = Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let ended = child.wait_with_output().unwrap();
    ended.status.code().unwrap_or(-1)
}

fn interrupted_mid_point_and_resumed(signal: &str, exit_code: i32) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    assert_eq!(interrupt(&out, signal), exit_code, "{signal}");
    let before = report(&out);
    let before_csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(before["complete"], false);
    let saved = points(&before);
    // Interrupted mid-point: that point's results are saved, marked incomplete.
    let first_incomplete = saved.iter().position(incomplete).expect("the interrupted point is saved as incomplete");
    assert!(saved.len() < POINT_RESULTS, "{signal}: interrupted before the end");
    // The point of the first incomplete result starts where its experiment and point do.
    let same_point = |a: &Value, b: &Value| ["experiment", "clients", "batch", "batched", "param"].iter().all(|k| a[k] == b[k]);
    let kept =
        (0..first_incomplete).rev().take_while(|&i| same_point(&saved[i], &saved[first_incomplete])).last().unwrap_or(first_incomplete);
    assert!(kept >= 2, "{signal}: the echo floor completed before the signal");

    // Resumed with its directory only: the saved command gives the plan. A DBSWEEP_OUT in
    // the environment does not apply: the run continues in its own directory.
    let elsewhere = dir.path().join("elsewhere");
    let o = support::command()
        .args(["run", "--resume", out.to_str().unwrap(), "--no-progress"])
        .env("DBSWEEP_OUT", &elsewhere)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{signal}: {}", String::from_utf8_lossy(&o.stderr));
    assert!(!elsewhere.exists(), "{signal}: DBSWEEP_OUT is not written by a resumed run");
    let after = report(&out);
    assert_eq!(after["complete"], true);
    // Sealed over the points it kept as read back and those it measured: the seal holds.
    let sealed: dbsweep::report::model::Report = serde_json::from_value(after.clone()).unwrap();
    assert_eq!(dbsweep::report::seal::check(&sealed, None), Ok(()), "{signal}: the resumed report matches its seal");
    let done = points(&after);
    // Every point exactly once, each measured.
    let mut ids: Vec<String> = done.iter().map(identity).collect();
    assert!(done.iter().all(|p| !incomplete(p)));
    ids.sort();
    ids.dedup();
    assert_eq!((done.len(), ids.len()), (POINT_RESULTS, POINT_RESULTS), "{signal}: every point exactly once");
    // The completed points are unchanged, in report.json and in results.csv.
    assert_eq!(done[..kept], saved[..kept], "{signal}: completed points kept as saved");
    let rows_of = |p: &Value| p["runs"].as_array().unwrap().iter().filter(|r| r["warmup"] == false).count().max(1);
    let kept_lines = 1 + saved[..kept].iter().map(rows_of).sum::<usize>();
    let after_csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let lines = |csv: &str| csv.lines().take(kept_lines).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(lines(&after_csv), lines(&before_csv), "{signal}: the completed points' CSV rows are byte for byte the same");
    // The report says it was resumed, when, from which point, keeping how many results.
    let resumed = after["resumed"].as_array().expect("resumed");
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0]["kept_points"], kept);
    let from = resumed[0]["from_point"].as_str().unwrap();
    assert!(from.starts_with(saved[first_incomplete]["experiment"].as_str().unwrap()), "{from}");
    // (Timestamps are whole seconds: a run interrupted within its first second and resumed
    // at once shares its start's second.)
    assert!(resumed[0]["at"].as_str().unwrap() >= before["started_at"].as_str().unwrap());
    assert_eq!(after["started_at"], before["started_at"]);
    assert_eq!(after["command"], before["command"], "the run's own command stays");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("resumed"), "the HTML report says it was resumed");
    // Nothing is left to resume.
    let o = dbsweep(&["run", "--resume", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to resume"));
}

#[test]
fn a_run_stopped_by_ctrl_c_mid_point_resumes_with_every_point_once() {
    interrupted_mid_point_and_resumed("INT", 130);
}

#[test]
fn a_run_stopped_by_sigterm_mid_point_resumes_with_every_point_once() {
    interrupted_mid_point_and_resumed("TERM", 143);
}

#[test]
fn a_different_plan_or_dbsweep_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    std::fs::create_dir(&out).unwrap();
    // A run directory as an interrupted run leaves it: one for a shorter plan.
    let first = dbsweep(&[
        "run",
        "--target",
        "nodb=nodb:",
        "--experiments",
        "get",
        "--clients",
        "1",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--ops",
        "100",
        "--rows",
        "1000",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    let mut saved = report(&out);
    saved["complete"] = Value::Bool(false);
    saved["incomplete_reason"] = Value::String("interrupted (Ctrl-C)".into());
    let write = |r: &Value| std::fs::write(out.join("report.json"), serde_json::to_string_pretty(r).unwrap()).unwrap();
    write(&saved);
    let untouched = || std::fs::read_to_string(out.join("report.json")).unwrap();
    let original = untouched();
    let dir_arg = out.to_str().unwrap();
    let same =
        ["run", "--target", "nodb=nodb:", "--experiments", "get", "--clients", "1", "--runs", "1", "--warmup", "0", "--rows", "1000"];
    for (args, says) in [
        // More ops per run: another plan.
        ([&same[..], &["--ops", "200", "--resume", dir_arg]].concat(), "the plan differs"),
        // --out and --resume name the directory twice.
        ([&same[..], &["--ops", "100", "--resume", dir_arg, "--out", dir_arg]].concat(), "drop --out"),
        ([&same[..], &["--ops", "100", "-o", dir_arg, "--resume", dir_arg]].concat(), "drop --out"),
    ] {
        let o = dbsweep(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says) && stderr.lines().count() == 1, "{args:?}: {stderr}");
        assert_eq!(untouched(), original, "a refused resume writes nothing");
    }
    // Written by another dbsweep.
    saved["dbsweep_version"] = Value::String("0.0.1".into());
    write(&saved);
    let o = dbsweep(&["run", "--resume", dir_arg]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("dbsweep 0.0.1") && stderr.contains("start a new run"), "{stderr}");
    // No run there at all.
    let o = dbsweep(&["run", "--resume", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("report.json"));
}
