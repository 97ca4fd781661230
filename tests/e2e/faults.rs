//! A server killed mid-run: dbsweep does not crash, counts the failed ops by class, stops
//! that target cleanly, writes partial results marked incomplete and exits 1 (clients on
//! the shared runtime: Redis; on threads of their own: PostgreSQL, MariaDB). A server that
//! stops answering for longer than `--timeout` costs timeouts, then the run goes on.

use crate::support;
use dbsweep::servers::{self, ServerKind, SpawnOptions};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// True once the server has answered some of dbsweep's primary-key reads: the target is
/// being measured (NO-DB runs first at every point, so the time until then varies).
fn measuring(kind: ServerKind, port: u16) -> bool {
    // Past loading (one INSERT per 1,000 rows) and the short calibration runs before the
    // measured points (thousands of gets), so a kill lands inside a run, not between points.
    if matches!(kind, ServerKind::Mariadb) {
        return mariadb_executions(port) > 20_000;
    }
    if matches!(kind, ServerKind::Postgres) {
        return postgres_index_scans(port) > 1000;
    }
    let output = Command::new("redis-cli").args(["-p", &port.to_string(), "INFO", "commandstats"]).output();
    let text = output.map(|o| String::from_utf8_lossy(&o.stdout).to_string()).unwrap_or_default();
    text.lines().any(|l| l.starts_with("cmdstat_hgetall:calls="))
}

/// Index scans of dbsweep's data tables, as PostgreSQL's statistics tell them (at most
/// about a second late; 0 while it cannot tell): one per primary-key read. The lease
/// table's are not counted: the run reads its lease before it measures anything.
fn postgres_index_scans(port: u16) -> u64 {
    let output = Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres", "-tAc"])
        .arg("select coalesce(sum(idx_scan), 0) from pg_stat_user_tables where schemaname = 'dbsweep' and relname <> 'dbsweep_lease'")
        .output();
    output.map(|o| String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or(0)).unwrap_or(0)
}

/// Prepared statements MariaDB has executed since it started (0 while it cannot tell).
fn mariadb_executions(port: u16) -> u64 {
    let output = Command::new("mariadb")
        .args(["--no-defaults", "-h", "127.0.0.1", "-P", &port.to_string(), "-uroot", "-N", "-e"])
        .arg("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_STMT_EXECUTE'")
        .output();
    output.map(|o| String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or(0)).unwrap_or(0)
}

async fn kill_mid_run(kind: ServerKind, target: &str) {
    let server = servers::spawn(kind, &SpawnOptions::default()).await.expect("spawn");
    let url = match kind {
        ServerKind::Postgres => format!("{}?layout=row", server.url()),
        _ => server.url(),
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let child = support::command()
        .args([
            "run",
            "--target",
            &format!("{target}={url}"),
            "--experiments",
            "get",
            "--ops",
            "400000",
            "--runs",
            "3",
            "--clients",
            "2",
            "--batch",
            "10",
            "--rows",
            "2000",
            "--timeout",
            "5",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !measuring(kind, server.port()) {
        assert!(Instant::now() < deadline, "dbsweep never started measuring");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    unsafe {
        libc::kill(server.pid() as i32, libc::SIGKILL);
    }
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("run incomplete"), "{stderr}");

    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["complete"], false);
    let info = json["targets"].as_array().unwrap().iter().find(|t| t["name"] == target).expect("the target's description");
    let execution = if matches!(kind, ServerKind::Mariadb | ServerKind::Postgres) { "async_threads" } else { "async" };
    assert_eq!(info["execution"], execution, "{info}");
    let points: Vec<&serde_json::Value> = json["points"].as_array().unwrap().iter().filter(|p| p["target"] == target).collect();
    let broken = points.iter().find(|p| p["status"]["state"] == "incomplete").expect("a point marked incomplete");
    let errors: u64 = broken["runs"].as_array().unwrap().iter().map(|r| r["errors"]["connection"].as_u64().unwrap_or(0)).sum();
    assert!(errors > 0, "connection errors counted: {broken}");
    // Measured work before the kill is kept.
    let ops: u64 = broken["runs"].as_array().unwrap().iter().map(|r| r["ops"].as_u64().unwrap()).sum();
    assert!(ops > 0, "{broken}");
    // Every later point of that target is marked skipped instead of hammering a dead server.
    let after: Vec<_> = points.iter().skip_while(|p| p["status"]["state"] != "incomplete").skip(1).collect();
    assert!(after.iter().all(|p| p["status"]["reason"].as_str().is_some_and(|r| r.starts_with("skipped"))), "{after:?}");
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let (target_col, complete_col) =
        (header.iter().position(|h| *h == "target").unwrap(), header.iter().position(|h| *h == "complete").unwrap());
    assert!(
        csv.lines().skip(1).map(|l| l.split(',').collect::<Vec<_>>()).any(|f| f[target_col] == target && f[complete_col] == "false"),
        "CSV marks incomplete rows"
    );
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_mid_run() {
    kill_mid_run(ServerKind::Redis, "redis").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_killed_mid_run() {
    kill_mid_run(ServerKind::Postgres, "pg").await;
}

/// MariaDB's clients run on threads of their own (each with its own runtime): the same
/// counting, partial results and prompt end as the shared runtime's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_killed_mid_run() {
    kill_mid_run(ServerKind::Mariadb, "maria").await;
}

/// MariaDB paused for 2.5 s with `--timeout 1`: the blocking clients' requests end as
/// counted timeouts (the driver's read timeout, not a hang), and once the server answers
/// again the sessions (on fresh connections) run the last run without an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_paused_past_the_timeout_counts_timeouts_then_recovers() {
    paused_past_the_timeout(ServerKind::Mariadb, "maria", mariadb_executions).await;
}

/// PostgreSQL (its postmaster and every backend) paused for 2.5 s with `--timeout 1`: the
/// same for its sessions on blocking sockets of their own (the socket's read timeout, a
/// CancelRequest, and a new login before the next request).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_paused_past_the_timeout_counts_timeouts_then_recovers() {
    paused_past_the_timeout(ServerKind::Postgres, "pg", postgres_index_scans).await;
}

/// Pauses the server's whole process group for 2.5 s once `executions` says 100,000 gets
/// were served: inside the warm-up run of 400,000 gets (the points before it are short),
/// so the pause ends inside a run, not while a point connects. Its requests must end as
/// 1 to 10 counted timeouts, and the last run must have none.
async fn paused_past_the_timeout(kind: ServerKind, target: &str, executions: fn(u16) -> u64) {
    let server = servers::spawn(kind, &SpawnOptions::default()).await.expect("spawn");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let child = support::command()
        .args(["run", "--target", &format!("{target}={}", server.url()), "--experiments", "get", "--ops", "400000", "--runs", "2"])
        .args(["--clients", "2", "--batch", "1", "--rows", "2000", "--timeout", "1", "--no-progress", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while executions(server.port()) < 100_000 {
        assert!(Instant::now() < deadline, "dbsweep never reached the warm-up run");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The server and its children: PostgreSQL's backends are sessions of their own.
    let server_processes = dbsweep::runner::server_processes::of_group(server.pid());
    let signal_all = |signal| {
        for process in &server_processes {
            unsafe {
                libc::kill(process.pid as i32, signal);
            }
        }
    };
    signal_all(libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(2500));
    signal_all(libc::SIGCONT);
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let point = json["points"].as_array().unwrap().iter().find(|p| p["target"] == target && p["experiment"] == "get").unwrap();
    let runs = point["runs"].as_array().unwrap();
    let timeouts: u64 = runs.iter().map(|r| r["errors"]["timeout"].as_u64().unwrap_or(0)).sum();
    assert!((1..=10).contains(&timeouts), "two clients, one timeout each per second paused: {point}");
    let last = runs.last().unwrap();
    assert_eq!(last["errors"].as_object().map_or(0, |e| e.len()), 0, "{last}");
    assert!(last["ops"].as_u64().unwrap() > 0, "{last}");
    drop(server);
}

/// A fixed-rate run against a Redis paused for 2 s: the stall shows in the response time
/// (measured from each op's intended start) but not in the service time of the requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_server_shows_in_response_time_not_service_time() {
    let server = support::spawn(ServerKind::Redis).await;
    let tmp = tempfile::tempdir().unwrap();
    let study = tmp.path().join("rate.toml");
    std::fs::write(
        &study,
        "name = \"rate\"\nops = 3000\nruns = 1\nwarmup = 0\nclients = [2]\n[data]\nkind = \"kv\"\nrows = 2000\n\
         [[experiments]]\nname = \"get\"\nop = \"get\"\nsweep = [\"clients\"]\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let child = support::command()
        .args(["run", study.to_str().unwrap(), "--target", &format!("redis={}", server.url()), "--rate", "500", "--no-progress"])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !measuring(ServerKind::Redis, server.port()) {
        assert!(Instant::now() < deadline, "dbsweep never started measuring");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1000));
    unsafe {
        libc::kill(server.pid() as i32, libc::SIGSTOP);
    }
    std::thread::sleep(Duration::from_secs(2));
    unsafe {
        libc::kill(server.pid() as i32, libc::SIGCONT);
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let point = json["points"].as_array().unwrap().iter().find(|p| p["target"] == "redis" && p["experiment"] == "get").unwrap();
    let run = &point["runs"][0];
    let service_p99 = run["service"]["get"]["p99_us"].as_f64().unwrap();
    let response_p99 = run["response"]["get"]["p99_us"].as_f64().unwrap();
    // ~1,000 ops were due during the 2 s stall: a third of the run waited up to 2 s.
    assert!(response_p99 > 1_000_000.0, "response p99 {response_p99} µs does not show the stall");
    // Only the two requests in flight at the stall took long; the service p99 stays small.
    assert!(service_p99 < 100_000.0, "service p99 {service_p99} µs");
    assert!(run["late_ops"].as_u64().unwrap() > 500, "missed schedule reported: {}", run["late_ops"]);
    assert_eq!(point["rate"], 500.0);
}
