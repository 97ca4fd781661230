//! The duration estimate every run prints before any work starts (and `--dry-run` too),
//! the hint of the kv-vs-relational study without servers, and `--budget`. End to end
//! with the binary; on the in-process targets only (nothing here needs a server).

use crate::support;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A console width that wraps none of the lines checked here (the console fits its
/// lines to `COLUMNS`).
const UNWRAPPED: &str = "1000";

/// dbsweep run to its end with `args`, on a console wide enough to wrap nothing.
fn unwrapped(args: &[&str]) -> Output {
    support::command().args(args).env("COLUMNS", UNWRAPPED).output().unwrap()
}

const NO_SERVERS: &str = "no server targets: this runs kv-vs-relational on the in-process engines only";

#[test]
fn kv_vs_relational_without_servers_prints_its_estimate_and_the_hint_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let mut child = support::command()
        .args(["run", "kv-vs-relational", "--no-progress", "--out", out.to_str().unwrap()])
        .env("COLUMNS", UNWRAPPED)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read what it says until the hint (the run would go on loading SF 1 for minutes).
    let mut said = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let hint = line.starts_with(NO_SERVERS);
        said.push(line);
        if hint {
            break;
        }
    }
    // Nothing was loaded or measured yet: the first report is saved after loading.
    let report_before_stop = out.join("report.json").exists();
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    drop(lines);
    let ended = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&ended.stderr);
    let text = said.join("\n");
    assert!(said.last().is_some_and(|l| l.starts_with(NO_SERVERS)), "no hint before the output ended: {text}\n{stderr}");
    assert!(said[0].starts_with("estimated duration: "), "the estimate comes first: {text}");
    for engine in ["nodb", "sqlite", "duckdb"] {
        assert!(said.iter().any(|l| l.trim_start().starts_with(&format!("{engine} "))), "an estimate for {engine}: {text}");
    }
    // SF 1 on the embedded engines is hours: the total says so.
    assert!(said[0].contains('h'), "{text}");
    let hint = said.last().unwrap();
    assert!(hint.contains("on servers instead with --spawn all") && hint.contains("--quick"), "{hint}");
    assert!(!report_before_stop, "the estimate comes before any point is loaded or measured");
    assert_eq!(ended.status.code(), Some(130), "stopped by Ctrl-C: {stderr}");
}

#[test]
fn every_run_starts_with_its_estimate_and_a_budget_says_what_it_buys() {
    let o = unwrapped(&["run", "kv-vs-relational", "--dry-run"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("estimated duration: ") && stdout.contains("  duckdb "), "{stdout}");
    assert!(stdout.contains(NO_SERVERS) && stdout.contains("--quick"), "{stdout}");
    // A real run prints the same before it loads anything: its first lines.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = unwrapped(&[
        "run",
        "kv-vs-relational",
        "--target",
        "nodb=nodb:",
        "--quick",
        "--experiments",
        "echo",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    let first: Vec<&str> = stdout.lines().take(3).collect();
    assert!(first[0].starts_with("estimated duration: ") && first[1].trim_start().starts_with("nodb "), "{stdout}");
    assert!(first[2].starts_with(NO_SERVERS), "{stdout}");
    // With servers the hint is not given.
    let o = unwrapped(&["run", "kv-vs-relational", "--scale", "1", "--spawn", "all", "--dry-run"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("  pg-jsonb ") && !stdout.contains(NO_SERVERS), "{stdout}");
    // --budget says what it chose; a budget too short is refused, writing nothing.
    let o = unwrapped(&["run", "kv-vs-relational", "--scale", "1", "--spawn", "all", "--budget", "8h", "--dry-run"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("budget 8h 00m: each of the") && stdout.contains("±2.0%"), "{stdout}");
    let refused = dir.path().join("refused");
    let o = unwrapped(&["run", "kv-vs-relational", "--target", "nodb=nodb:", "--budget", "1s", "--out", refused.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--budget 1.0s: too short") && stderr.contains("give at least"), "{stderr}");
    assert!(!Path::new(&refused).exists(), "bad input writes nothing");
}
