//! How a run ends when it is stopped from outside (issue 17): SIGTERM — what `kill`,
//! `timeout`, systemd and CI cancellation send — while servers start, while data loads and
//! while it measures, and a disk that fills up under `--out`. Each ends like Ctrl-C: the
//! spawned servers and their directories and every `dbsweep-scratch-*` directory are
//! removed, report.json is finished with the true reason, the exit code says what happened.
//! A spawned server that dies while data loads is a run failure quoting its log. A run
//! killed with SIGKILL leaves its directories, and the next run (`--resume` too) removes
//! them; those of a run stopped with SIGSTOP stay while it lives.

use crate::support::report_has_points;
use crate::support::{entries, report, start_in, wait_until};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

fn terminate(child: Child) -> Output {
    // SAFETY: sends SIGTERM to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    child.wait_with_output().unwrap()
}

/// Processes whose working directory is under `dir` (spawned servers run in their data
/// directory).
fn processes_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir)))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The checks every ending shares: exit code, one line on stderr, nothing left in `tmp`.
fn assert_ended(o: &Output, code: i32, says: &str, tmp: &Path) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(entries(tmp), Vec::<String>::new(), "spawned servers' and scratch directories are removed");
    assert_eq!(processes_in(tmp), Vec::<String>::new(), "no server process is left running");
}

fn assert_finished(out: &Path, reason: &str) -> serde_json::Value {
    let json = report(out);
    assert_eq!(json["complete"], false);
    assert_eq!(json["incomplete_reason"].as_str(), Some(reason), "{}", json["incomplete_reason"]);
    assert!(json["finished_at"].is_string(), "finished_at: {}", json["finished_at"]);
    assert!(!out.join(".dbsweep-run").exists(), "the run's lock on --out is released");
    json
}

#[test]
fn sigterm_while_measuring_finishes_the_report_and_removes_servers_and_scratch() {
    let tmp = tempfile::tempdir().unwrap();
    let (scratch, out) = (tmp.path().join("tmp"), tmp.path().join("run"));
    std::fs::create_dir(&scratch).unwrap();
    let child = start_in(
        &scratch,
        &[
            "run",
            "--spawn",
            "redis",
            "--target",
            "sqlite=sqlite:",
            "--experiments",
            "get",
            "--ops",
            "200000",
            "--runs",
            "3",
            "--clients",
            "1",
            "--batch",
            "1",
            "--rows",
            "2000",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    wait_until("the first point is saved", || report_has_points(&out));
    let before = entries(&scratch);
    assert!(before.iter().any(|n| n.starts_with("dbsweep-redis-")), "{before:?}");
    assert!(before.iter().any(|n| n.starts_with("dbsweep-scratch-")), "{before:?}");
    let o = terminate(child);
    assert_ended(&o, 143, "terminated by SIGTERM; partial results written to", &scratch);
    let json = assert_finished(&out, "terminated by SIGTERM");
    let points = json["points"].as_array().unwrap();
    assert!(points.iter().any(|p| p["status"]["state"] == "incomplete"), "the interrupted point is marked");
    assert!(out.join("results.csv").exists() && out.join("report.html").exists());
}

#[test]
fn sigterm_while_loading_finishes_the_report_without_points() {
    let tmp = tempfile::tempdir().unwrap();
    let (scratch, out) = (tmp.path().join("tmp"), tmp.path().join("run"));
    std::fs::create_dir(&scratch).unwrap();
    let child = start_in(
        &scratch,
        &[
            "run",
            "--target",
            "sqlite=sqlite:",
            "--experiments",
            "get",
            "--rows",
            "5000000",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    // The throwaway SQLite file grows while the rows load.
    let loading = || {
        let Some(dir) = entries(&scratch).into_iter().find(|n| n.starts_with("dbsweep-scratch-")) else { return false };
        let dir = scratch.join(dir);
        entries(&dir).iter().any(|sub| std::fs::metadata(dir.join(sub).join("dbsweep.sqlite-wal")).is_ok_and(|m| m.len() > 1 << 20))
    };
    wait_until("the load has begun", loading);
    let o = terminate(child);
    assert_ended(&o, 143, "terminated by SIGTERM", &scratch);
    let json = assert_finished(&out, "terminated by SIGTERM");
    assert_eq!(json["points"].as_array().unwrap().len(), 0);
}

#[test]
fn sigterm_while_servers_start_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (scratch, out) = (tmp.path().join("tmp"), tmp.path().join("run"));
    std::fs::create_dir(&scratch).unwrap();
    let child =
        start_in(&scratch, &["run", "--spawn", "postgres", "--experiments", "get", "--no-progress", "--out", out.to_str().unwrap()]);
    wait_until("the server's directory exists", || entries(&scratch).iter().any(|n| n.starts_with("dbsweep-postgres-")));
    let o = terminate(child);
    assert_ended(&o, 143, "terminated by SIGTERM; nothing was written", &scratch);
    assert!(!out.exists(), "nothing was written");
}

/// A small tmpfs, unmounted (with everything in it) when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: PathBuf, size: &str) -> Tmpfs {
        std::fs::create_dir_all(&at).unwrap();
        let status = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(&at).status().unwrap();
        assert!(status.success(), "mounting a tmpfs needs root (CAP_SYS_ADMIN); the disk-full test cannot run without it");
        Tmpfs(at)
    }

    fn free_bytes(&self) -> u64 {
        let path = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: statvfs fills the zeroed struct for a valid C path.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut stat) }, 0);
        stat.f_bavail as u64 * stat.f_frsize as u64
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_under_out_ends_the_run_with_a_finished_report() {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    let disk = Tmpfs::mount(tmp.path().join("disk"), "2m");
    let out = disk.0.join("run");
    let child = start_in(
        &scratch,
        &[
            "run",
            "--target",
            "slow=mock:?latency_us=2000",
            "--experiments",
            "get,echo",
            "--ops",
            "1000",
            "--runs",
            "3",
            "--clients",
            "1",
            "--batch",
            "1",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    wait_until("the first point is saved", || report_has_points(&out));
    // Fill the disk, leaving less room than the next report.json needs.
    let filler = vec![0u8; disk.free_bytes().saturating_sub(8 * 1024) as usize];
    // The run keeps writing meanwhile: if it took some of that room first, the filler stops
    // at a full disk, which is the state this test wants.
    match std::fs::write(disk.0.join("filler"), filler) {
        Err(e) if e.kind() != std::io::ErrorKind::StorageFull => panic!("filling the disk: {e}"),
        _ => {}
    }
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("disk full while writing"), "{stderr}");
    assert_eq!(entries(&scratch), Vec::<String>::new(), "the scratch directory is removed");
    let json = report(&out);
    assert_eq!(json["complete"], false);
    assert!(json["finished_at"].is_string(), "finished_at: {}", json["finished_at"]);
    let reason = json["incomplete_reason"].as_str().unwrap();
    assert!(reason.starts_with("disk full while writing") && reason.contains("report.json"), "{reason}");
    assert!(!json["points"].as_array().unwrap().is_empty(), "the points measured before are kept");
}

/// The port of a `redis-server --port N` process, if `pid` is one.
fn redis_port(pid: &str) -> Option<u16> {
    let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&str> = cmdline.split(['\0', ' ']).filter(|a| !a.is_empty()).collect();
    if !args.first()?.ends_with("redis-server") {
        return None;
    }
    // Once running, redis-server shows its process title `redis-server HOST:PORT` there.
    match args.iter().position(|a| *a == "--port") {
        Some(at) => args.get(at + 1)?.parse().ok(),
        None => args.get(1)?.rsplit(':').next()?.parse().ok(),
    }
}

fn redis_keys(port: u16) -> u64 {
    let Ok(mut conn) = redis::Client::open(format!("redis://127.0.0.1:{port}/0")).and_then(|c| c.get_connection()) else { return 0 };
    redis::cmd("DBSIZE").query(&mut conn).unwrap_or(0)
}

#[test]
fn a_spawned_server_dying_mid_load_is_a_run_failure_quoting_its_log() {
    let tmp = tempfile::tempdir().unwrap();
    let (scratch, out) = (tmp.path().join("tmp"), tmp.path().join("run"));
    std::fs::create_dir(&scratch).unwrap();
    // The only other target is NO-DB, so the spawned Redis (listed after it) loads soon.
    let rows = "2000000";
    let args = [
        "run",
        "--spawn",
        "redis",
        "--target",
        "nodb=nodb:",
        "--experiments",
        "get",
        "--ops",
        "100",
        "--runs",
        "1",
        "--clients",
        "1",
        "--batch",
        "1",
    ];
    let child = start_in(&scratch, &[&args[..], &["--rows", rows, "--no-progress", "--out", out.to_str().unwrap()]].concat());
    let mut server = None;
    wait_until("rows reach the spawned Redis", || {
        server = processes_in(&scratch).into_iter().find(|pid| redis_port(pid).is_some_and(|port| redis_keys(port) > 1000));
        server.is_some()
    });
    let pid: i32 = server.unwrap().parse().unwrap();
    // SAFETY: kills the redis-server this test's dbsweep spawned (found under its TMPDIR).
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    let o = child.wait_with_output().unwrap();
    assert_ended(&o, 1, "went away while loading", &scratch);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains(&format!("the spawned redis server (pid {pid}) died during the run")), "{stderr}");
    assert!(stderr.contains("Ready to accept connections"), "the server's log is quoted: {stderr}");
}

/// Sends `signal` to process `pid` this test started.
fn signal(pid: u32, signal: i32) {
    // SAFETY: signals a dbsweep this test started.
    unsafe {
        libc::kill(pid as i32, signal);
    }
}

#[test]
fn directories_of_a_run_killed_with_sigkill_are_removed_by_the_next_run_and_a_stopped_runs_stay() {
    let tmp = tempfile::tempdir().unwrap();
    let (scratch, out) = (tmp.path().join("tmp"), tmp.path().join("run"));
    std::fs::create_dir(&scratch).unwrap();
    let first = [
        "run",
        "--spawn",
        "redis",
        "--experiments",
        "get,insert",
        "--ops",
        "20000",
        "--runs",
        "2",
        "--clients",
        "1",
        "--batch",
        "1",
        "--rows",
        "2000",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ];
    let killed = start_in(&scratch, &first);
    wait_until("the first point is saved", || report_has_points(&out));
    let pid = killed.id();
    let theirs = entries(&scratch);
    for kind in ["scratch", "redis"] {
        let named = format!("dbsweep-{kind}-{pid}-");
        assert!(theirs.iter().any(|n| n.starts_with(&named)), "a {named}* directory: {theirs:?}");
    }
    // Named like dbsweep's, but not marked as one of its directories: never removed.
    std::fs::create_dir(scratch.join("dbsweep-redis-foreign")).unwrap();
    std::fs::write(scratch.join("dbsweep-redis-foreign/data"), "not dbsweep's").unwrap();

    // Stopped, the run is still alive: another run leaves its directories alone.
    signal(pid, libc::SIGSTOP);
    let other = tmp.path().join("other");
    let o = start_in(
        &scratch,
        &[
            "run",
            "--target",
            "nodb=nodb:",
            "--experiments",
            "get",
            "--ops",
            "100",
            "--runs",
            "1",
            "--rows",
            "100",
            "--no-progress",
            "--out",
        ]
        .into_iter()
        .chain([other.to_str().unwrap()])
        .collect::<Vec<_>>(),
    )
    .wait_with_output()
    .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut expected = theirs.clone();
    expected.push("dbsweep-redis-foreign".into());
    expected.sort();
    assert_eq!(entries(&scratch), expected, "a stopped run's directories stay");

    // Killed, it leaves them behind (its server dies with it)...
    signal(pid, libc::SIGKILL);
    killed.wait_with_output().unwrap();
    wait_until("the spawned server is gone", || processes_in(&scratch).is_empty());
    assert_eq!(entries(&scratch), expected, "kill -9 leaves the directories");
    // ...and the next run, a resumed one, removes them: only what dbsweep did not create stays.
    let o = start_in(&scratch, &["run", "--resume", out.to_str().unwrap(), "--no-progress"]).wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(report(&out)["complete"], true);
    assert_eq!(entries(&scratch), vec!["dbsweep-redis-foreign".to_string()]);
    assert_eq!(std::fs::read_to_string(scratch.join("dbsweep-redis-foreign/data")).unwrap(), "not dbsweep's");
}
