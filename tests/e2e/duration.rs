//! End-to-end tests of time-based runs (`--duration`, `-T`, `DBSWEEP_DURATION`): every run
//! lasts the duration, its ops are what a real Redis counted and what SQLite answered, its
//! throughput is those ops over its time, and the inputs a time-based run cannot take are
//! refused with one line, exit code 2 and nothing written.

use crate::support;

use dbsweep::servers::ServerKind;
use support::{csv_rows, dbsweep, report};

/// Reads of loaded keys and inserts of fresh ones, two clients, two measured runs.
const STUDY: &str = r#"
name = "timed"
description = "time-based runs against Redis and SQLite"
runs = 2
warmup = 0
clients = [2]

[data]
kind = "kv"
rows = 1000
payload_bytes = 16

[[experiments]]
name = "get"
op = "get"
sweep = ["clients"]

[[experiments]]
name = "insert"
op = "insert"
sweep = ["clients"]
"#;

/// The tests that use this binary's Redis take turns: one run at a time per key prefix,
/// and `INFO commandstats` counts every client's commands.
static REDIS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How long after its duration a run may end: the requests in flight at the deadline
/// finish (microseconds here), plus scheduling on a loaded 2-core machine.
const MARGIN_SECS: f64 = 0.5;

fn redis_command(url: &str, args: &[&str]) -> redis::Value {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_connection().unwrap();
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut conn).unwrap()
}

/// `calls=` of one command in `INFO commandstats` of the Redis server at `url`.
fn calls(url: &str, command: &str) -> u64 {
    support::redis_calls(&support::redis_info(url, "commandstats"), command)
}

/// The measured runs of `target` in `experiment`, from report.json.
fn runs_of(json: &serde_json::Value, experiment: &str, target: &str) -> Vec<serde_json::Value> {
    let point = json["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["experiment"] == experiment && p["target"] == target)
        .unwrap_or_else(|| panic!("{experiment} on {target}"));
    point["runs"].as_array().unwrap().iter().filter(|r| r["warmup"] != true).cloned().collect()
}

#[test]
fn every_run_lasts_the_duration_and_its_ops_are_what_the_server_counted() {
    let _turn = REDIS.lock().unwrap_or_else(|e| e.into_inner());
    let url = support::url(ServerKind::Redis);
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("timed.toml");
    std::fs::write(&study, STUDY).unwrap();
    let out = tmp.path().join("run");
    redis_command(&url, &["CONFIG", "RESETSTAT"]);
    let o = dbsweep(&[
        "run",
        study.to_str().unwrap(),
        "-t",
        &format!("redis={url}"),
        "-t",
        "sqlite=sqlite:",
        "-T",
        "2s",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("get (get; median of measured runs of 2 s, "), "{stdout}");
    let json = report(&out);
    assert_eq!(json["plan"]["duration_secs"], 2.0);
    assert!(json["plan"]["experiments"].as_array().unwrap().iter().all(|e| e["duration_secs"] == 2.0));
    let warnings: Vec<&str> = json["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.is_empty(), "no leftovers, no refusals: {warnings:?}");
    for target in ["redis", "sqlite"] {
        for experiment in ["get", "insert"] {
            let runs = runs_of(&json, experiment, target);
            assert_eq!(runs.len(), 2, "{experiment} on {target}");
            for r in &runs {
                let (seconds, ops) = (r["seconds"].as_f64().unwrap(), r["ops"].as_u64().unwrap());
                assert!((2.0..2.0 + MARGIN_SECS).contains(&seconds), "{experiment} on {target}: {seconds} s");
                assert!(ops > 0 && r["ok_ops"] == ops && r["rows"] == ops && r["complete"] == true, "{experiment} on {target}: {r}");
            }
        }
    }
    // Every read reached Redis once (a read of a kv row is one HGETALL), and nothing else
    // of the run read rows: the ops are the server's count.
    let reads: u64 = runs_of(&json, "get", "redis").iter().map(|r| r["ops"].as_u64().unwrap()).sum();
    assert_eq!(calls(&url, "hgetall"), reads);
    // Throughput is each run's ops over its time, in results.csv as in report.json.
    let rows = csv_rows(&out);
    let measured: Vec<_> = rows.iter().filter(|r| r["experiment"] == "get" || r["experiment"] == "insert").collect();
    assert_eq!(measured.len(), 3 * 2 * 2, "NO-DB, Redis, SQLite x 2 experiments x 2 runs: {rows:?}");
    for r in measured {
        let (ops, seconds, rate): (f64, f64, f64) =
            (r["ops"].parse().unwrap(), r["seconds"].parse().unwrap(), r["ops_per_sec"].parse().unwrap());
        assert!((rate - ops / seconds).abs() <= 1e-3 * rate, "{r:?}");
        assert!((2.0..2.0 + MARGIN_SECS).contains(&seconds), "{r:?}");
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<td>runs</td><td>2 s per run (time-based"), "report.html says how long a run lasts");
}

#[test]
fn at_a_fixed_rate_a_run_sends_the_ops_due_within_its_duration() {
    let _turn = REDIS.lock().unwrap_or_else(|e| e.into_inner());
    let url = support::url(ServerKind::Redis);
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("timed.toml");
    std::fs::write(&study, STUDY).unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        study.to_str().unwrap(),
        "-t",
        &format!("redis={url}"),
        "-e",
        "get",
        "--rate",
        "200",
        "--duration",
        "1500ms",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Op n is due at n / 200 s: ops 0..300 fall within 1.5 s, op 300 is due at its end.
    for r in runs_of(&report(&out), "get", "redis") {
        assert_eq!((r["ops"].as_u64(), r["ok_ops"].as_u64()), (Some(300), Some(300)), "{r}");
        let seconds = r["seconds"].as_f64().unwrap();
        assert!((1.49..1.5 + MARGIN_SECS).contains(&seconds), "{seconds} s");
    }
}

#[test]
fn inputs_a_time_based_run_cannot_take_exit_2_with_one_line_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let out = out.to_str().unwrap();
    let cases: [(&[&str], &str); 10] = [
        (&["-T", "0"], "--duration '0': give a duration such as 500ms"),
        (&["--duration", "soon"], "--duration 'soon': give a duration"),
        (&["--duration", "-2s"], "--duration '-2s': give a duration"),
        (&["--duration", "5ms"], "give a duration from 10ms to 7 days"),
        (&["-T", "2s", "-n", "100"], "--ops and --duration both say how long a run is: give one"),
        (&["-T", "2s", "--precision", "2%"], "--precision and --budget end runs at a precision: give one"),
        (&["-T", "2s", "-e", "get,delete"], "experiment delete deletes keys loaded before each run"),
        (&["in-memory", "-T", "2s"], "is a lifecycle phase"),
        (&["insert-find", "-T", "2s", "-e", "insert-all"], "sweeps sizes"),
        (&["-t", "n=nodb:", "-j", "2", "-T", "2s", "-e", "insert"], "--workers and --duration: experiment insert inserts"),
    ];
    for (args, expected) in cases {
        let o = dbsweep(&[&["run", "--no-progress", "--out", out], args].concat());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!std::path::Path::new(out).exists(), "{args:?} wrote nothing");
    }
    // The variable is read like the flag.
    let o = support::command().args(["run", "--no-progress", "--out", out]).env("DBSWEEP_DURATION", "0ms").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--duration '0ms'"));
}

#[test]
fn shards_of_a_time_based_plan_merge_into_one_report_with_the_same_duration() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs: Vec<_> = ["s0", "s1", "merged"].iter().map(|d| tmp.path().join(d)).collect();
    let plan = ["run", "-t", "nodb=nodb:", "-t", "sqlite=sqlite:", "-e", "get", "-c", "2", "--rows", "1000", "-T", "500ms"];
    let plan = [&plan[..], &["--runs", "1", "--warmup", "0", "--no-progress"]].concat();
    for (i, dir) in dirs[..2].iter().enumerate() {
        let o = dbsweep(&[&plan[..], &["--shard", &format!("{i}/2"), "--out", dir.to_str().unwrap()]].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let o = dbsweep(&["merge", dirs[0].to_str().unwrap(), dirs[1].to_str().unwrap(), "--out", dirs[2].to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (merged, parts) = (report(&dirs[2]), [report(&dirs[0]), report(&dirs[1])]);
    assert_eq!(merged["plan"]["duration_secs"], 0.5);
    for target in ["nodb", "sqlite"] {
        // Each point's runs are the shard's that ran it, as saved: its ops and its 0.5 s.
        let runs = runs_of(&merged, "get", target);
        let from_shard = parts.iter().find_map(|p| {
            p["points"]
                .as_array()
                .unwrap()
                .iter()
                .any(|q| q["experiment"] == "get" && q["target"] == target)
                .then(|| runs_of(p, "get", target))
        });
        assert_eq!(Some(&runs), from_shard.as_ref(), "{target}");
        for r in &runs {
            let seconds = r["seconds"].as_f64().unwrap();
            assert!((0.5..0.5 + MARGIN_SECS).contains(&seconds) && r["ops"].as_u64().unwrap() > 0, "{target}: {r}");
        }
    }
}

/// Time-based runs of several clients stop with sequence numbers claimed and never sent,
/// so their answers are compared over the blocks each run answered in full: SQLite, DuckDB
/// and redb, which count the same rows, are never flagged as answering wrongly.
#[test]
fn time_based_runs_of_many_clients_compare_answers_over_the_blocks_they_completed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "--quick",
        "-T",
        "50ms",
        "-e",
        "range-count",
        "-t",
        "sqlite=sqlite:",
        "-t",
        "duckdb=duckdb:",
        "-t",
        "redb=redb:",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json = report(&out);
    let mut compared = 0;
    for target in ["sqlite", "duckdb", "redb"] {
        for point in json["points"].as_array().unwrap().iter().filter(|p| p["experiment"] == "range-count" && p["target"] == target) {
            let flags: Vec<&str> = point["flags"].as_array().unwrap().iter().map(|f| f["flag"].as_str().unwrap()).collect();
            assert!(!flags.contains(&"answer_mismatch"), "{target}: {point}");
            let runs = point["runs"].as_array().unwrap();
            let ops: Vec<u64> = runs.iter().filter(|r| r["warmup"] == false).map(|r| r["ops"].as_u64().unwrap()).collect();
            compared += usize::from(
                ops.windows(2).any(|w| w[0] != w[1]) && runs.iter().all(|r| r["answer_blocks"].as_array().is_some_and(|b| !b.is_empty())),
            );
        }
    }
    assert!(compared > 0, "some runs stopped at different ops and were compared by blocks: {json}");
}
