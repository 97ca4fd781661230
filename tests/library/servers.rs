//! End-to-end tests of the throwaway servers: each kind really starts, answers its own
//! protocol (checked here with the systems' own clients or raw protocol exchanges), and
//! leaves nothing behind after `stop` or `Drop`.

use crate::support::process_exists;
use dbsweep::adapter::url::TargetUrl;
use dbsweep::servers::{self, Server, ServerKind, SpawnOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

fn opts() -> SpawnOptions {
    SpawnOptions::default()
}

/// Sends one request line and returns the first reply line.
async fn exchange(port: u16, request: &str) -> String {
    let stream = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    let mut stream = BufReader::new(stream);
    stream.get_mut().write_all(request.as_bytes()).await.unwrap();
    let mut line = String::new();
    stream.read_line(&mut line).await.unwrap();
    line.trim_end().to_string()
}

async fn run(program: &str, args: &[&str]) -> String {
    let output = tokio::process::Command::new(program).args(args).output().await.expect(program);
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn group_exists(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(-(pgid as libc::pid_t), 0) == 0 }
}

async fn port_closed(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).await.is_err()
}

/// Checks what every server must offer, then stops it and checks nothing is left.
async fn stop_and_check_gone(server: Server) {
    let (port, pid, dir) = (server.port(), server.pid(), server.data_dir().to_path_buf());
    assert!(dir.is_dir());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700, "data dirs are private");
    assert!(process_exists(pid));
    assert_eq!(server.settings().get("data_dir").map(PathBuf::from), Some(dir.clone()));
    assert!(!server.version().is_empty());
    let kind = server.kind();
    server.stop().await.unwrap_or_else(|e| panic!("stopping {kind}: {e}"));
    assert!(!dir.exists(), "{kind} data dir {} left behind", dir.display());
    assert!(!process_exists(pid), "{kind} pid {pid} still alive");
    assert!(port_closed(port).await, "{kind} port {port} still open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_answers_psql_has_hstore_and_stops_cleanly() {
    let server = servers::spawn(ServerKind::Postgres, &opts()).await.unwrap();
    let url = TargetUrl::parse(&server.url()).unwrap();
    assert_eq!((url.scheme(), url.host(), url.port()), ("postgres", Some("127.0.0.1"), Some(server.port())));
    let port = server.port().to_string();
    let user = url.username().unwrap();
    let db = url.database().unwrap();
    let psql = |sql: &'static str| {
        let (port, user, db) = (port.clone(), user.clone(), db.clone());
        async move { run("psql", &["-h", "127.0.0.1", "-p", &port, "-U", &user, "-d", &db, "-tA", "-c", sql]).await }
    };
    assert_eq!(psql("select 1").await, "1");
    assert_eq!(psql("create extension hstore; select ('a=>1'::hstore) -> 'a'").await, "CREATE EXTENSION\n1");
    assert_eq!(psql("show fsync").await, server.settings()["fsync"]);
    assert_eq!(server.settings()["fsync"], "on");
    assert_eq!(server.settings()["synchronous_commit"], "on");
    assert!(server.settings().contains_key("shared_buffers"));
    assert!(server.version().starts_with(|c: char| c.is_ascii_digit()), "{}", server.version());
    // The pid is the postmaster itself, not a wrapper.
    assert_eq!(psql("select setting from pg_settings where name = 'port'").await, port);
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", server.pid())).unwrap();
    assert_eq!(comm.trim(), "postgres");
    let postmaster_pid = std::fs::read_to_string(server.data_dir().join("pgdata/postmaster.pid")).unwrap();
    assert_eq!(postmaster_pid.lines().next(), Some(server.pid().to_string().as_str()));
    stop_and_check_gone(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_accepts_the_url_user_over_tcp_with_full_rights_and_stops_cleanly() {
    let server = servers::spawn(ServerKind::Mariadb, &opts()).await.unwrap();
    let url = TargetUrl::parse(&server.url()).unwrap();
    assert_eq!((url.scheme(), url.host(), url.port()), ("mysql", Some("127.0.0.1"), Some(server.port())));
    assert_eq!(url.password(), None);
    let user = url.username().unwrap();
    let port = server.port().to_string();
    let sql = "select 1; create database dbsweep_probe; create table dbsweep_probe.t (a int primary key); \
               insert into dbsweep_probe.t values (7); select a from dbsweep_probe.t; select current_user()";
    let out =
        run("mariadb", &["--no-defaults", "--protocol=TCP", "-h", "127.0.0.1", "-P", &port, "-u", &user, "-N", "-B", "-e", sql]).await;
    assert_eq!(out, "1\n7\nroot@127.0.0.1");
    assert!(server.version().starts_with("10.") || server.version().starts_with("11."), "{}", server.version());
    // Read back from the server: MariaDB's durable defaults.
    assert_eq!(server.settings()["innodb_flush_log_at_trx_commit"], "1");
    assert_eq!(server.settings()["log_bin"], "OFF");
    // Temporary tables beside the data, not in the machine's /tmp.
    let tmpdir = &server.settings()["tmpdir"];
    assert!(tmpdir.ends_with("/tmp") && tmpdir != "/tmp" && std::path::Path::new(tmpdir).is_dir(), "{tmpdir}");
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", server.pid())).unwrap();
    assert_eq!(comm.trim(), "mariadbd");
    stop_and_check_gone(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_answers_ping_without_persistence_and_stops_cleanly() {
    let server = servers::spawn(ServerKind::Redis, &opts()).await.unwrap();
    assert_eq!(server.url(), format!("redis://127.0.0.1:{}/0", server.port()));
    assert_eq!(exchange(server.port(), "PING\r\n").await, "+PONG");
    assert_eq!(server.settings()["save"], "");
    assert_eq!(server.settings()["appendonly"], "no");
    // The running server agrees: no save points (the empty value is trimmed away), no AOF.
    let port = server.port().to_string();
    assert_eq!(run("redis-cli", &["-p", &port, "config", "get", "save"]).await, "save");
    assert_eq!(run("redis-cli", &["-p", &port, "config", "get", "appendonly"]).await, "appendonly\nno");
    stop_and_check_gone(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memcached_answers_version_and_stores_and_stops_cleanly() {
    let server = servers::spawn(ServerKind::Memcached, &opts()).await.unwrap();
    assert_eq!(server.url(), format!("memcached://127.0.0.1:{}", server.port()));
    let version = exchange(server.port(), "version\r\n").await;
    assert_eq!(version, format!("VERSION {}", server.version()));
    assert_eq!(exchange(server.port(), "set k 0 0 1\r\nx\r\n").await, "STORED");
    // A quarter of the machine's memory, 1-8 GB.
    let limit: u64 = server.settings()["memory_limit_mb"].parse().unwrap();
    assert!((1024..=8192).contains(&limit), "{limit}");
    stop_and_check_gone(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_postgres_server_kills_its_backends_and_removes_its_dir() {
    let server = servers::spawn(ServerKind::Postgres, &opts()).await.unwrap();
    let (port, pid, dir) = (server.port(), server.pid(), server.data_dir().to_path_buf());
    // An open session gives the postmaster a backend child in its process group.
    let mut session = tokio::process::Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres", "-tA", "-c", "select pg_sleep(60)"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while run_count_backends(port).await < 2 && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(server);
    assert!(!dir.exists(), "data dir {} left behind", dir.display());
    assert!(!process_exists(pid));
    assert!(port_closed(port).await);
    let status = tokio::time::timeout(Duration::from_secs(10), session.wait()).await.expect("psql still connected").unwrap();
    assert!(!status.success(), "the session's server was killed, psql must fail");
    let deadline = Instant::now() + Duration::from_secs(5);
    while group_exists(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!group_exists(pid) || only_zombies_in_group(pid), "postgres helpers of {pid} survived");
}

/// Client backends currently connected (psql's pg_sleep session plus the counting one).
async fn run_count_backends(port: u16) -> usize {
    let sql = "select count(*) from pg_stat_activity where backend_type = 'client backend'";
    run("psql", &["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres", "-tA", "-c", sql]).await.parse().unwrap_or(0)
}

/// True if every process still in the group is a zombie (dead, waiting for init to reap
/// it; it holds no files or ports).
fn only_zombies_in_group(pgid: u32) -> bool {
    std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()).all(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { return true };
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect::<Vec<_>>()) else { return true };
        // Fields after the command: state, ppid, pgrp.
        after.get(2).and_then(|g| g.parse::<u32>().ok()) != Some(pgid) || after[0] == "Z"
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_redis_server_without_stop_kills_it_and_removes_its_dir() {
    let server = servers::spawn(ServerKind::Redis, &opts()).await.unwrap();
    let (port, pid, dir) = (server.port(), server.pid(), server.data_dir().to_path_buf());
    drop(server);
    assert!(!dir.exists());
    assert!(!process_exists(pid));
    assert!(port_closed(port).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_from_outside_still_stops_and_cleans_up() {
    let server = servers::spawn(ServerKind::Redis, &opts()).await.unwrap();
    let dir = server.data_dir().to_path_buf();
    // SAFETY: plain syscall on the server we started.
    unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGKILL) };
    server.stop().await.unwrap();
    assert!(!dir.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_server_still_stops_gracefully_and_promptly() {
    let server = servers::spawn(ServerKind::Memcached, &opts()).await.unwrap();
    // SAFETY: plain syscall on the server we started.
    unsafe { libc::kill(server.pid() as libc::pid_t, libc::SIGSTOP) };
    let started = Instant::now();
    stop_and_check_gone(server).await;
    assert!(started.elapsed() < Duration::from_secs(10), "stop waited {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_redis_servers_at_once_get_different_ports() {
    let opts = opts();
    let (a, b) = tokio::join!(servers::spawn(ServerKind::Redis, &opts), servers::spawn(ServerKind::Redis, &opts));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_ne!(a.port(), b.port());
    assert_ne!(a.pid(), b.pid());
    assert_ne!(a.data_dir(), b.data_dir());
    assert_eq!(exchange(a.port(), "PING\r\n").await, "+PONG");
    assert_eq!(exchange(b.port(), "PING\r\n").await, "+PONG");
    // Each answers as its own process.
    let pid_of = |port: u16| async move {
        run("redis-cli", &["-p", &port.to_string(), "info", "server"])
            .await
            .lines()
            .find_map(|l| l.trim().strip_prefix("process_id:").map(str::to_string))
            .unwrap()
    };
    assert_eq!(pid_of(a.port()).await, a.pid().to_string());
    assert_eq!(pid_of(b.port()).await, b.pid().to_string());
    stop_and_check_gone(a).await;
    stop_and_check_gone(b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawn_all_starts_every_kind_under_the_data_root() {
    let root = tempfile::tempdir().unwrap();
    let opts = SpawnOptions { data_root: Some(root.path().to_path_buf()), ..SpawnOptions::default() };
    let started = Instant::now();
    // The two-node Cassandra ring (two more JVMs, ~1.5 GB) is tests/e2e/cassandra_cluster.rs's, opt-in.
    let kinds: Vec<ServerKind> = ServerKind::ALL.into_iter().filter(|k| *k != ServerKind::CassandraCluster).collect();
    let all = servers::spawn_all(&kinds, &opts).await.unwrap();
    eprintln!("spawn_all of {} servers took {:?}", all.len(), started.elapsed());
    assert_eq!(all.iter().map(Server::kind).collect::<Vec<_>>(), kinds);
    let mut ports: Vec<u16> = all.iter().map(Server::port).collect();
    ports.sort();
    ports.dedup();
    assert_eq!(ports.len(), kinds.len());
    for server in &all {
        eprintln!("{} {} at {}: {:?}", server.kind(), server.version(), server.url(), server.settings());
        assert!(server.data_dir().starts_with(root.path()), "{}", server.data_dir().display());
    }
    for server in all {
        stop_and_check_gone(server).await;
    }
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn a_missing_program_is_an_exit_code_2_error_naming_the_package() {
    let empty = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let opts = SpawnOptions { data_root: Some(root.path().to_path_buf()), ..SpawnOptions::default() };
    let search = [empty.path().to_path_buf()];
    for (kind, program, package) in [
        (ServerKind::Postgres, "initdb", "postgresql"),
        (ServerKind::Mariadb, "mariadb-install-db", "mariadb-server"),
        (ServerKind::Redis, "redis-server", "redis-server"),
        (ServerKind::Memcached, "memcached", "memcached"),
    ] {
        let err = servers::spawn_with_search_path(kind, &opts, Some(&search)).await.unwrap_err();
        assert_eq!(err.exit_code(), 2, "{kind}: {err}");
        assert_eq!(err.to_string(), format!("{program} not found: install it with scripts/setup-servers (apt-get install {package})"));
    }
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0, "nothing may be left on disk");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_data_root_works() {
    let root = tempfile::tempdir_in(".").unwrap();
    let relative = root.path().strip_prefix(std::env::current_dir().unwrap()).unwrap().to_path_buf();
    assert!(relative.is_relative());
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let server = servers::spawn(ServerKind::Postgres, &SpawnOptions { data_root: Some(relative.clone()), ..SpawnOptions::default() }).await;
    // As root, PostgreSQL runs as the postgres user, which cannot enter a private
    // root-owned directory: that must be a clear usage error, with nothing left behind.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let err = server.unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("cannot enter"), "{err}");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0);
    } else {
        stop_and_check_gone(server.unwrap()).await;
    }
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let server =
        servers::spawn(ServerKind::Postgres, &SpawnOptions { data_root: Some(relative), ..SpawnOptions::default() }).await.unwrap();
    assert!(server.data_dir().is_absolute());
    assert!(server.data_dir().starts_with(root.path()));
    stop_and_check_gone(server).await;
}

#[tokio::test]
async fn an_unwritable_data_root_is_a_usage_error() {
    let err = servers::spawn(
        ServerKind::Redis,
        &SpawnOptions { data_root: Some(Path::new("/proc/no-such-dir").to_path_buf()), ..SpawnOptions::default() },
    )
    .await
    .unwrap_err();
    assert_eq!(err.exit_code(), 2, "{err}");
    assert!(err.to_string().contains("/proc/no-such-dir"), "{err}");
}

/// Not a test on its own: the child process of `servers_die_with_dbsweep`. It starts a
/// Redis server, reports its pid and data dir, and waits to be killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "helper process for servers_die_with_dbsweep"]
async fn pdeathsig_helper() {
    if std::env::var_os("DBSWEEP_PDEATHSIG_HELPER").is_none() {
        return;
    }
    let server = servers::spawn(ServerKind::Redis, &opts()).await.unwrap();
    println!("SERVER {} {}", server.pid(), server.data_dir().display());
    tokio::time::sleep(Duration::from_secs(120)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_die_with_dbsweep() {
    let exe = std::env::current_exe().unwrap();
    // The helper's full test name in this binary: its module path without the crate's name.
    let helper_name = format!("{}::pdeathsig_helper", module_path!().split_once("::").expect("a module of the test binary").1);
    let mut helper = tokio::process::Command::new(exe)
        .args(["--exact", &helper_name, "--ignored", "--nocapture", "--test-threads=1"])
        .env("DBSWEEP_PDEATHSIG_HELPER", "1")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(helper.stdout.take().unwrap()).lines();
    let report = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some((_, rest)) = line.split_once("SERVER ") {
                return rest.to_string();
            }
        }
        panic!("the helper ended without starting a server");
    })
    .await
    .expect("the helper did not start a server in time");
    let (pid, dir) = report.split_once(' ').unwrap();
    let pid: u32 = pid.parse().unwrap();
    assert!(process_exists(pid));
    // dbsweep dies without running any destructor.
    helper.start_kill().unwrap();
    helper.wait().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_exists(pid) && !is_zombie(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!process_exists(pid) || is_zombie(pid), "redis {pid} outlived its parent");
    // Nobody is left to remove the data directory; do it here.
    let _ = std::fs::remove_dir_all(dir);
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .unwrap_or(false)
}
