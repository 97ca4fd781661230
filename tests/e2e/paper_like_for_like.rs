//! The paper studies' like-for-like figures, by value, on servers dbsweep spawns itself:
//! insert-find's command-line clients report the server's own time of each request (the
//! paper's `TIME` in `MULTI` for Redis, `SYSDATE(6)` around the statement for MariaDB),
//! positive and below the request's end-to-end time, and the library drivers report none;
//! the in-memory study records one cold call per run, kept out of the warm histogram, and
//! the server's memory grows over loading it. The verdicts name the figure they use.

use serde_json::Value;
use std::path::Path;

fn run(out: &Path, args: &[&str]) -> Value {
    let output = crate::support::command().args(["run", "--no-progress", "--out"]).arg(out).args(args).output().expect("run dbsweep");
    assert!(
        output.status.success(),
        "dbsweep failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    crate::support::report(out)
}

fn point<'a>(report: &'a Value, experiment: &str, target: &str, n: u64) -> &'a Value {
    report["points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["experiment"] == experiment && p["target"] == target && p["param"] == n)
        .unwrap_or_else(|| panic!("no {experiment} point for {target} at N={n}"))
}

fn measured_runs(p: &Value) -> Vec<&Value> {
    p["runs"].as_array().unwrap().iter().filter(|r| r["warmup"] == false).collect()
}

fn verdict<'a>(report: &'a Value, finding: &str) -> &'a Value {
    report["paper_verdicts"]["verdicts"].as_array().unwrap().iter().find(|v| v["finding"] == finding).unwrap()
}

#[test]
fn command_line_clients_report_the_servers_own_time_below_the_end_to_end_time() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(
        dir.path(),
        &["insert-find", "--quick", "--spawn", "mariadb,redis", "--sizes", "1000", "--experiments", "insert-all,find", "--runs", "2"],
    );
    assert_eq!(report["complete"], true, "{}", report["incomplete_reason"]);
    for target in ["redis-cli", "mariadb-cli"] {
        for experiment in ["insert-all", "find"] {
            let p = point(&report, experiment, target, 1000);
            for r in measured_runs(p) {
                let requests = r["requests"].as_u64().unwrap();
                assert_eq!(r["server_timed_requests"].as_u64(), Some(requests), "{target} {experiment}: every request timed: {r}");
                let server = r["server_seconds"].as_f64().unwrap_or_else(|| panic!("{target} {experiment}: no server time: {r}"));
                let end_to_end = r["seconds"].as_f64().unwrap();
                assert!(server > 0.0 && server < end_to_end, "{target} {experiment}: server {server} s, end to end {end_to_end} s");
            }
        }
        let settings = &report["targets"].as_array().unwrap().iter().find(|t| t["name"] == target).unwrap()["settings"];
        assert!(settings["timing"].as_str().is_some_and(|t| t.starts_with("server (")), "{target}: {settings}");
    }
    // The library drivers are timed end to end only.
    for target in ["redis", "mariadb"] {
        let p = point(&report, "insert-all", target, 1000);
        assert!(measured_runs(p).iter().all(|r| r.get("server_seconds").is_none()), "{target} reports no server time");
    }
    // The command-line findings are judged on the server's time, their end-to-end verdicts
    // follow, labelled; at N = 1,000 neither point of Table I (N = 100,000) was run.
    let cli = verdict(&report, "insert-cli-hdd");
    assert!(cli["reason"].as_str().unwrap().contains("judged on the server's own time per request"), "{cli}");
    let own = verdict(&report, "insert-cli-hdd-end-to-end");
    assert!(own["claim"].as_str().unwrap().ends_with("[dbsweep's end-to-end time]"), "{own}");
    assert_eq!((cli["not_run"].as_bool(), own["not_run"].as_bool()), (Some(true), Some(true)));
}

#[test]
fn the_in_memory_study_records_a_cold_call_apart_and_the_servers_memory_growth() {
    let dir = tempfile::tempdir().unwrap();
    let report = run(dir.path(), &["in-memory", "--quick", "--spawn", "redis", "--sizes", "1000", "--runs", "2", "--ops", "100"]);
    assert_eq!(report["complete"], true, "{}", report["incomplete_reason"]);
    let read = point(&report, "read-one", "redis", 1000);
    for r in measured_runs(read) {
        let cold = r["cold_call_us"].as_f64().unwrap_or_else(|| panic!("no cold call: {r}"));
        assert!(cold > 0.0, "{cold}");
        let ok = r["ok_ops"].as_u64().unwrap();
        assert_eq!(ok, 100);
        // One client, one cold call: every other request is in the warm histogram.
        assert_eq!(r["service"]["get"]["count"].as_u64(), Some(ok - 1), "{r}");
    }
    // Loading 1,000 pairs grows the Redis server's memory.
    let write = point(&report, "write-all", "redis", 1000);
    let growth = write["summary"]["memory"]["server_delta_bytes"].as_f64().expect("the server's memory is read");
    assert!(growth > 1000.0 * 100.0, "1,000 pairs of 100-byte values: {growth} bytes");
    // Table 5 (read one key) is judged on the cold call, its warm verdict follows.
    let t5 = verdict(&report, "table-5-n1000");
    assert!(t5["reason"].as_str().unwrap().contains("judged on the cold call"), "{t5}");
    assert!(verdict(&report, "table-5-n1000-warm")["claim"].as_str().unwrap().ends_with("[dbsweep's warm time per request]"));
    let t4 = verdict(&report, "table-4-n1000");
    assert!(t4["reason"].as_str().unwrap().contains("judged on the server's memory growth"), "{t4}");
}
