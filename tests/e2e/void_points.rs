//! A failed request or a missing row is never a timing, end to end: dbsweep against a
//! spawned Redis that refuses some requests, and against one whose keys are deleted under
//! a running `get` experiment. The points are flagged and void (no throughput in any
//! output), the results are saved, and the run exits 1 naming them.

use crate::support;
use crate::support::{has_flag, report};
use dbsweep::servers::{Server, ServerKind};
use serde_json::Value;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

async fn redis() -> (Server, redis::aio::MultiplexedConnection) {
    let server = support::spawn(ServerKind::Redis).await;
    let conn = redis::Client::open(server.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    (server, conn)
}

/// Starts `dbsweep run` on `target` (one `name=url`), written to `out`, with `args`.
fn start_run(target: &str, out: &Path, args: &[&str]) -> std::process::Child {
    support::start(&[&["run", "--target", target, "--no-progress", "--out", out.to_str().unwrap()], args].concat())
}

fn points<'a>(report: &'a Value, target: &str, experiment: &str) -> Vec<&'a Value> {
    report["points"].as_array().unwrap().iter().filter(|p| p["target"] == target && p["experiment"] == experiment).collect()
}

fn sum(point: &Value, field: &str) -> u64 {
    point["runs"].as_array().unwrap().iter().map(|r| r[field].as_u64().unwrap()).sum()
}

/// The CSV rows of one target and experiment, as (header -> value) maps.
fn csv_rows(out: &Path, target: &str, experiment: &str) -> Vec<std::collections::HashMap<String, String>> {
    support::csv_rows(out).into_iter().filter(|r| r["target"] == target && r["experiment"] == experiment).collect()
}

/// Exit code 1, and the last line of stderr names the void points of `experiment`.
fn assert_exit_1_naming(o: &Output, experiment: &str, target: &str) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(last.contains("void") && last.contains(&format!("{experiment} / {target} / ")), "last line: {last}");
}

/// A Redis user that may do everything but `HGETALL`: dbsweep prepares, loads and
/// inserts, and the server refuses every primary-key read (NOPERM). The get points are
/// void, the insert points keep their throughput.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_the_server_refuses_void_their_points() {
    let (server, mut conn) = redis().await;
    let () = redis::cmd("ACL")
        .arg(&["SETUSER", "noreads", "on", ">noreads-pw", "~*", "&*", "+@all", "-hgetall"])
        .query_async(&mut conn)
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let target = format!("r=redis://noreads:noreads-pw@127.0.0.1:{}/0", server.port());
    let args = ["--experiments", "get,insert", "--ops", "300", "--runs", "2", "--warmup", "1", "--clients", "1", "--batch", "10"];
    let o = start_run(&target, &out, &[&args[..], &["--rows", "500"]].concat()).wait_with_output().unwrap();
    assert_exit_1_naming(&o, "get", "r");

    let json = report(&out);
    let gets = points(&json, "r", "get");
    assert!(!gets.is_empty());
    for p in &gets {
        assert!(has_flag(p, "errors") && p["summary"]["median_ops_per_sec"].is_null(), "a refused get is void: {p}");
        // Every get failed, warm-up included; none was timed.
        assert_eq!(sum(p, "failed_ops"), sum(p, "ops"), "{p}");
        assert_eq!((sum(p, "ok_ops"), sum(p, "rows")), (0, 0), "{p}");
        assert!(
            p["runs"].as_array().unwrap().iter().all(|r| r["errors"]["server"].as_u64() > Some(0) && r["service"].get("get").is_none())
        );
    }
    for p in points(&json, "r", "insert") {
        assert!(!has_flag(p, "errors") && p["summary"]["median_ops_per_sec"].as_f64() > Some(0.0), "inserts are accepted: {p}");
    }
    let rows = csv_rows(&out, "r", "get");
    assert!(!rows.is_empty() && rows.iter().all(|r| r["ops_per_sec"].is_empty() && r["flags"].contains("errors")), "{rows:?}");
    // The console wraps its lines to the width; the words are what is checked.
    let console = String::from_utf8_lossy(&o.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(console.contains("VOID [ERRORS: "), "{console}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("ERRORS: ") && html.contains("<p id=\"voided\">"), "the HTML report flags the void points");
}

/// True once the server has answered some of dbsweep's primary-key reads.
async fn reading(conn: &mut redis::aio::MultiplexedConnection) -> bool {
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    stats.lines().any(|l| l.starts_with("cmdstat_hgetall:calls="))
}

/// Deletes every row hash of the `kv` table (not its key and index sets); returns how many.
async fn delete_rows(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    let mut deleted = 0;
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<String>) =
            redis::cmd("SCAN").arg(cursor).arg("MATCH").arg("dbsweep:kv[0-9]*").arg("COUNT").arg(1000).query_async(conn).await.unwrap();
        if !keys.is_empty() {
            deleted += redis::cmd("UNLINK").arg(&keys).query_async::<u64>(conn).await.unwrap();
        }
        if next == 0 {
            return deleted;
        }
        cursor = next;
    }
}

/// Another client deletes the rows while a `get` experiment reads them: the reads that
/// find nothing are missing rows, the point is void, and the run exits 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_deleted_under_a_running_get_are_missing_rows() {
    let (server, mut conn) = redis().await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let args =
        ["--experiments", "get", "--ops", "30000", "--runs", "2", "--warmup", "1", "--clients", "2", "--batch", "10", "--rows", "2000"];
    let child = start_run(&format!("r={}", server.url()), &out, &args);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !reading(&mut conn).await {
        assert!(Instant::now() < deadline, "dbsweep never started reading");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(delete_rows(&mut conn).await, 2000, "every row is deleted while the first get point runs");
    let o = child.wait_with_output().unwrap();
    assert_exit_1_naming(&o, "get", "r");

    let json = report(&out);
    let gets = points(&json, "r", "get");
    assert!(gets.iter().all(|p| p["status"]["state"] == "measured"), "the run finished every point");
    // Every point read after the deletion, and finds nothing where the plan loaded rows.
    for p in &gets {
        assert!(has_flag(p, "missing_rows") && !has_flag(p, "errors"), "{p}");
        let flagged = p["flags"].as_array().unwrap().iter().find(|f| f["flag"] == "missing_rows").unwrap();
        assert_eq!(flagged["count"].as_u64(), Some(sum(p, "missing_rows")));
        assert_eq!(p["summary"]["missing_rows"].as_u64(), Some(sum(p, "missing_rows")));
        assert!(p["summary"]["median_ops_per_sec"].is_null(), "{p}");
        assert_eq!(sum(p, "ok_ops") + sum(p, "short_ops") + sum(p, "failed_ops"), sum(p, "ops"), "{p}");
    }
    // A point measured wholly after the deletion found none of its keys: one missing row
    // per get, and no request was ok.
    let last = gets.last().unwrap();
    assert_eq!((sum(last, "missing_rows"), sum(last, "ok_ops"), sum(last, "rows")), (sum(last, "ops"), 0, 0), "{last}");
    let rows = csv_rows(&out, "r", "get");
    assert!(rows.iter().all(|r| r["ops_per_sec"].is_empty() && r["flags"].contains("missing_rows")), "{rows:?}");
    assert!(rows.iter().any(|r| r["missing_rows"].parse::<u64>().unwrap() > 0), "{rows:?}");
    assert!(String::from_utf8_lossy(&o.stdout).split_whitespace().collect::<Vec<_>>().join(" ").contains("[MISSING ROWS: "));
}
