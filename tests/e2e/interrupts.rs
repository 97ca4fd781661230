//! Ctrl-C answers at once in every phase (issue 18): while spawned servers start, while
//! data loads, while a request is in flight that never returns. The first Ctrl-C says what
//! the run was doing and what stopping still does; a second one abandons that cleanup.
//! Each run ends with exit code 130 and leaves no server or directory behind. (SIGTERM
//! ends runs the same way with 143: tests/e2e/endings.rs.)

use crate::support;
use crate::support::{pg_client, wait_until};

use support::entries;

use dbsweep::servers::ServerKind;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long dbsweep may take from Ctrl-C to its exit (the issue's bound).
const ANSWER_WITHIN: Duration = Duration::from_secs(2);

/// dbsweep with its temporary directories (spawned servers' data, scratch) in `tmp`, and
/// its stderr lines sent to the returned channel as they come.
fn start(tmp: &Path, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
    let mut child =
        support::command().args(args).env("TMPDIR", tmp).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("start dbsweep");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

fn interrupt(child: &Child) {
    // SAFETY: sends SIGINT to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
}

/// The first stderr line containing `text`, waiting up to `within`.
fn line_with(lines: &mpsc::Receiver<String>, text: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(text) => return line,
            Ok(line) => seen.push(line),
            Err(_) => panic!("no stderr line with {text:?} within {within:?}; stderr until then: {seen:?}"),
        }
    }
}

/// Waits for the exit; returns the exit code, how long it took and the rest of stderr.
fn exit_after_interrupt(mut child: Child, lines: &mpsc::Receiver<String>) -> (Option<i32>, Duration, String) {
    let asked = Instant::now();
    let deadline = asked + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("dbsweep did not exit within 120 s of Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = asked.elapsed();
    // Every line it wrote: the reader ends at the pipe's end (a loaded machine can take
    // well over 50 ms to hand the last lines over after the exit).
    let mut rest = Vec::new();
    let until = Instant::now() + Duration::from_secs(10);
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => rest.push(line),
            Err(_) => break,
        }
    }
    (status.code(), took, rest.join("\n"))
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// Rows the COPY into `database` has sent so far (0 when none runs).
async fn rows_copied(admin_url: &str, database: &str) -> i64 {
    let client = pg_client(admin_url).await;
    let sql = "SELECT COALESCE(SUM(p.tuples_processed), 0)::int8 FROM pg_stat_progress_copy p \
               JOIN pg_database d ON d.oid = p.datid WHERE d.datname = $1";
    client.query_one(sql, &[&database]).await.unwrap().get(0)
}

#[test]
fn ctrl_c_while_loading_exits_130_within_2_s_and_removes_the_loaded_rows() {
    let admin = support::url(ServerKind::Postgres);
    let database = "interrupt_load";
    block_on(async {
        let client = pg_client(&admin).await;
        client.batch_execute(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)")).await.unwrap();
        client.batch_execute(&format!("CREATE DATABASE {database}")).await.unwrap();
    });
    let url = admin.rsplit_once('/').map(|(base, _)| format!("{base}/{database}")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let target = format!("pg={url}");
    let (child, lines) = start(
        tmp.path(),
        &["run", "--target", &target, "--experiments", "get", "--rows", "3000000", "--no-progress", "--out", out.to_str().unwrap()],
    );
    wait_until("the COPY has sent rows", || block_on(rows_copied(&admin, database)) > 10_000);
    interrupt(&child);
    let said = line_with(&lines, "stopping", ANSWER_WITHIN);
    assert!(said.contains("(was loading ") && said.contains(" into pg)"), "{said}");
    assert!(said.contains("removing dbsweep's data from pg") && said.contains("press Ctrl-C again to abandon it"), "{said}");
    let (code, took, rest) = exit_after_interrupt(child, &lines);
    assert_eq!(code, Some(130), "{rest}");
    assert!(took <= ANSWER_WITHIN, "exited {took:?} after Ctrl-C (at most {ANSWER_WITHIN:?}): {rest}");
    assert!(rest.contains("interrupted; partial results written to"), "{rest}");
    // The report is finished and says why: no point was measured.
    let json = support::report(&out);
    assert_eq!((json["complete"].as_bool(), json["incomplete_reason"].as_str()), (Some(false), Some("interrupted by Ctrl-C")));
    assert_eq!(json["points"].as_array().map(Vec::len), Some(0));
    // The partly loaded table is gone and no COPY is left running.
    let (tables, copying) = block_on(async {
        let client = pg_client(&url).await;
        let tables: i64 = client
            .query_one("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'dbsweep'", &[])
            .await
            .unwrap()
            .get(0);
        (tables, rows_copied(&admin, database).await)
    });
    assert_eq!((tables, copying), (0, 0), "dbsweep's tables removed, no COPY running");
    assert_eq!(entries(tmp.path()), vec!["run".to_string()], "the scratch directory is removed");
}

#[test]
fn ctrl_c_while_servers_start_exits_130_within_2_s_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let scratch = tmp.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    let (child, lines) =
        start(&scratch, &["run", "--spawn", "postgres", "--experiments", "get", "--no-progress", "--out", out.to_str().unwrap()]);
    wait_until("the server's directory exists", || entries(&scratch).iter().any(|n| n.starts_with("dbsweep-postgres-")));
    interrupt(&child);
    let said = line_with(&lines, "stopping", ANSWER_WITHIN);
    assert!(said.contains("(was starting the servers (postgres))"), "{said}");
    let (code, took, rest) = exit_after_interrupt(child, &lines);
    assert_eq!(code, Some(130), "{rest}");
    assert!(took <= ANSWER_WITHIN, "exited {took:?} after Ctrl-C (at most {ANSWER_WITHIN:?}): {rest}");
    assert!(rest.contains("interrupted; nothing was written"), "{rest}");
    assert_eq!(entries(&scratch), Vec::<String>::new(), "the server's directory is removed");
    assert!(!out.exists(), "nothing was written");
}

/// Resumes a server paused with SIGSTOP, also when the test fails.
struct Paused(u32);

impl Drop for Paused {
    fn drop(&mut self) {
        // SAFETY: resumes the test's own server.
        unsafe {
            libc::kill(self.0 as i32, libc::SIGCONT);
        }
    }
}

#[test]
fn a_request_that_never_returns_does_not_hold_ctrl_c_and_a_second_one_abandons_the_cleanup() {
    let _turn = REDIS.lock().unwrap_or_else(|e| e.into_inner());
    let url = support::url(ServerKind::Redis);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let target = format!("r={url}");
    let (child, lines) = start(
        tmp.path(),
        &[
            "run",
            "--target",
            &target,
            "--experiments",
            "get",
            "--rows",
            "1000",
            "--ops",
            "1000000",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--clients",
            "1",
            "--batch",
            "1",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    // The data is loaded once the run directory is written; then the server stops
    // answering, and the request in flight to it never returns. (The run is far longer
    // than the moment between the two, even on a loaded machine: with a short one the
    // run could end before the pause and never see it.)
    wait_until("the run directory is written", || out.join("report.json").exists());
    let pid = support::pid(ServerKind::Redis);
    // SAFETY: pauses the test's own server; `Paused` resumes it.
    unsafe {
        libc::kill(pid as i32, libc::SIGSTOP);
    }
    let _resume = Paused(pid);
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    let said = line_with(&lines, "stopping", ANSWER_WITHIN);
    assert!(said.contains("(was measuring ") && said.contains(" · r · ") && said.contains("removing dbsweep's data from r;"), "{said}");
    // The in-flight request is given up; the cleanup then waits on the paused server.
    wait_until("the interrupted point is saved", || {
        std::fs::read_to_string(out.join("report.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|j| j["points"].as_array().and_then(|p| p.last()).is_some_and(|p| p["status"]["state"] == "incomplete"))
    });
    interrupt(&child);
    let (code, took, rest) = exit_after_interrupt(child, &lines);
    assert_eq!(code, Some(130), "{rest}");
    assert!(took <= ANSWER_WITHIN, "exited {took:?} after the second Ctrl-C (at most {ANSWER_WITHIN:?}): {rest}");
    assert!(rest.contains("cleanup abandoned: dbsweep's data is left in r"), "{rest}");
    let json = support::report(&out);
    // Points measured before the server paused are kept; the one it held is incomplete.
    let points = json["points"].as_array().unwrap();
    let (last, before) = points.split_last().unwrap();
    assert_eq!((last["target"].as_str(), last["status"]["state"].as_str()), (Some("r"), Some("incomplete")), "{last}");
    assert!(before.iter().all(|p| p["status"]["state"] == "measured"), "{before:?}");
}

/// The tests that pause this binary's Redis take turns with each other.
static REDIS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One Redis command on `url`.
fn redis_query<T: redis::FromRedisValue>(url: &str, args: &[&str]) -> T {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(&mut conn).unwrap()
}

#[test]
fn a_second_ctrl_c_during_cleanup_leaves_the_keys_marked_and_the_next_run_removes_them() {
    let _turn = REDIS.lock().unwrap_or_else(|e| e.into_inner());
    // A DB index of its own, so that its key count is this test's keys.
    let url = support::url(ServerKind::Redis).replace("/0", "/7");
    let _: () = redis_query(&url, &["FLUSHDB"]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let target = format!("r={url}");
    const ROWS: u64 = 300_000;
    let rows = ROWS.to_string();
    let args = |out: &Path| -> Vec<String> {
        ["run", "--target", &target, "--experiments", "get", "--rows", &rows, "--ops", "100", "--runs", "1", "--warmup", "0"]
            .into_iter()
            .chain(["--clients", "1", "--no-progress", "--out", out.to_str().unwrap()])
            .map(str::to_string)
            .collect()
    };
    let first = args(&out);
    let (child, lines) = start(tmp.path(), &first.iter().map(String::as_str).collect::<Vec<_>>());
    // Every point measured, the report says so before the cleanup starts; the test pauses
    // the server once the cleanup has removed most keys.
    wait_until("the report says the cleanup is under way", || {
        std::fs::read_to_string(out.join("report.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .is_some_and(|j| j["incomplete_reason"] == "interrupted during cleanup")
    });
    wait_until("most keys are removed", || redis_query::<u64>(&url, &["DBSIZE"]) < ROWS / 5);
    let pid = support::pid(ServerKind::Redis);
    // SAFETY: pauses the test's own server; `Paused` resumes it.
    unsafe {
        libc::kill(pid as i32, libc::SIGSTOP);
    }
    let paused = Paused(pid);
    interrupt(&child);
    let said = line_with(&lines, "stopping", ANSWER_WITHIN);
    assert!(said.contains("(was removing dbsweep's data from r)"), "{said}");
    interrupt(&child);
    let (code, _, rest) = exit_after_interrupt(child, &lines);
    assert_eq!(code, Some(130), "{rest}");
    assert!(rest.contains("cleanup abandoned: dbsweep's data is left in r (still marked as dbsweep's"), "{rest}");
    drop(paused);

    // Keys are left, and the marker with them; the report says what happened.
    let left: u64 = redis_query(&url, &["DBSIZE"]);
    assert!(left > 1, "the cleanup was interrupted with {left} keys left");
    let marker: Option<String> = redis_query(&url, &["GET", "dbsweep:owner"]);
    assert!(marker.is_some(), "{left} keys left without the dbsweep:owner marker");
    let json = support::report(&out);
    assert_eq!((json["complete"].as_bool(), json["incomplete_reason"].as_str()), (Some(false), Some("interrupted during cleanup")));
    assert!(json["points"].as_array().unwrap().iter().all(|p| p["status"]["state"] == "measured"));

    // The next run takes the namespace as dbsweep's, and its cleanup removes every key.
    let second = args(&tmp.path().join("again"));
    let o = support::command().args(&second).env("TMPDIR", tmp.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(redis_query::<u64>(&url, &["DBSIZE"]), 0, "every key removed");
}
