//! The command-line client adapters (`mysql-cli://`, `redis-cli://`) against real servers
//! started by dbsweep's spawn code: the shared conformance body (it runs only the declared
//! ops; its pairs part sends one 70,000-row MSET / INSERT and one MGET / IN through the
//! client), a 1000-row batch insert read back through the library adapter, a 100-key
//! multi-get, values with awkward characters, and the password kept off the client's
//! command line.

use crate::body;
use crate::support;
use crate::support::open;

use dbsweep::adapter::Target;
use dbsweep::base::op::{ErrorClass, Op, OpKind};
use dbsweep::base::table::Value;
use dbsweep::data::kv::{self, KvGen};
use dbsweep::servers::ServerKind;
use std::sync::Arc;

async fn mysql_cli() -> (Arc<dyn Target>, ()) {
    (open("mycli", &support::url_as(ServerKind::Mariadb, "mysql-cli")), ())
}
async fn mysql_cli_per_op() -> (Arc<dyn Target>, ()) {
    (open("mycli1", &format!("{}?spawn=per-op", support::url_as(ServerKind::Mariadb, "mysql-cli"))), ())
}
async fn redis_cli() -> (Arc<dyn Target>, ()) {
    (open("rcli", &support::url_as(ServerKind::Redis, "redis-cli")), ())
}
async fn redis_cli_per_op() -> (Arc<dyn Target>, ()) {
    (open("rcli1", &format!("{}?spawn=per-op", support::url_as(ServerKind::Redis, "redis-cli"))), ())
}

// Tests against one server share its namespace; run them one at a time per server.
static MY_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
static REDIS_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_cli_conformance() {
    let _l = MY_LOCK.lock().await;
    let target = mysql_cli().await.0;
    body::check_measured_failures(target.clone(), body::Fault::DuplicateKey).await;
    body::check_target(target).await;
    body::check_pairs(mysql_cli().await.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_cli_per_op_conformance() {
    let _l = MY_LOCK.lock().await;
    let target = mysql_cli_per_op().await.0;
    body::check_measured_failures(target.clone(), body::Fault::DuplicateKey).await;
    body::check_target(target).await;
    body::check_pairs(mysql_cli_per_op().await.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_conformance() {
    let _l = REDIS_LOCK.lock().await;
    let target = redis_cli().await.0;
    body::check_measured_failures(target.clone(), body::Fault::Custom(support::faults::redis_key_set_string)).await;
    body::check_target(target).await;
    body::check_pairs(redis_cli().await.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_per_op_conformance() {
    let _l = REDIS_LOCK.lock().await;
    let target = redis_cli_per_op().await.0;
    body::check_measured_failures(target.clone(), body::Fault::Custom(support::faults::redis_key_set_string)).await;
    body::check_target(target).await;
    body::check_pairs(redis_cli_per_op().await.0).await;
}

/// 1000 keys in one batch through the client, counted by the library adapter; a 100-key
/// multi-get finds 100; a delete through the client is seen by the library adapter.
async fn thousand_keys(cli: Arc<dyn Target>, lib: Arc<dyn Target>) {
    let table = kv::shared_def();
    let rowgen = KvGen::new(11, 2000, 16);
    cli.prepare(std::slice::from_ref(&table)).await.unwrap();
    // The library adapter only learns the table list from its own prepare; it recreates
    // the same (empty) objects.
    lib.prepare(std::slice::from_ref(&table)).await.unwrap();
    let caps = &cli.info().capabilities;
    assert_eq!(caps.ops, vec![OpKind::Echo, OpKind::Insert, OpKind::Get, OpKind::MultiGet, OpKind::Delete]);
    assert!(cli.info().settings.get("spawn").is_some_and(|s| s.starts_with("per-connection")));
    let mut conn = cli.connect().await.unwrap();
    let batch: Vec<Op> = (0..1000).map(|k| Op::Insert { table: 0, row: rowgen.row(k) }).collect();
    assert_eq!(conn.execute_batch(&batch).await.unwrap().rows, 1000);
    assert_eq!(lib.count_rows(&table).await.unwrap(), 1000);
    let keys: Vec<i64> = (0..100).map(|i| i * 7).collect();
    assert_eq!(conn.execute(&Op::MultiGet { table: 0, keys }).await.unwrap().rows, 100);
    let keys: Vec<i64> = (950..1050).collect();
    assert_eq!(conn.execute(&Op::MultiGet { table: 0, keys }).await.unwrap().rows, 50);
    assert_eq!(conn.execute(&Op::Delete { table: 0, key: 5 }).await.unwrap().rows, 1);
    assert_eq!(lib.count_rows(&table).await.unwrap(), 999);
    // Text with quotes, backslashes, newlines, tabs, spaces and non-ASCII is stored and found.
    let mut row = rowgen.row(5000);
    row[3] = Value::Text("it's a \"test\"\\ with\nnew\tline é ' ; SELECT 1; ECHO x".into());
    assert_eq!(conn.execute(&Op::Insert { table: 0, row }).await.unwrap().rows, 1);
    assert_eq!(conn.execute(&Op::Get { table: 0, key: 5000 }).await.unwrap().rows, 1);
    assert_eq!(conn.execute(&Op::Get { table: 0, key: 5001 }).await.unwrap().rows, 0);
    assert_eq!(lib.count_rows(&table).await.unwrap(), 1000);
    // A request larger than the pipe buffers (a 5000-row MULTI answers ~25000 QUEUED lines
    // while it is still being written) completes.
    let batch: Vec<Op> = (10_000..15_000).map(|k| Op::Insert { table: 0, row: rowgen.row(k) }).collect();
    assert_eq!(conn.execute_batch(&batch).await.unwrap().rows, 5000);
    assert_eq!(lib.count_rows(&table).await.unwrap(), 6000);
    // The connection stays usable after many requests.
    for _ in 0..50 {
        conn.execute(&Op::Echo).await.unwrap();
    }
    drop(conn);
    cli.cleanup().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_cli_thousand_keys_and_multi_get() {
    let _l = MY_LOCK.lock().await;
    thousand_keys(mysql_cli().await.0, open("my", &support::url(ServerKind::Mariadb))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cli_thousand_keys_and_multi_get() {
    let _l = REDIS_LOCK.lock().await;
    thousand_keys(redis_cli().await.0, open("r", &support::url(ServerKind::Redis))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_cli_server_errors_are_server_class() {
    let _l = MY_LOCK.lock().await;
    let cli = mysql_cli().await.0;
    let table = kv::shared_def();
    cli.prepare(std::slice::from_ref(&table)).await.unwrap();
    let rowgen = KvGen::new(1, 10, 8);
    let mut conn = cli.connect().await.unwrap();
    conn.execute(&Op::Insert { table: 0, row: rowgen.row(1) }).await.unwrap();
    let e = conn.execute(&Op::Insert { table: 0, row: rowgen.row(1) }).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Server, "{e:?}");
    assert!(e.message.contains("Duplicate"), "{}", e.message);
    // The client carried on after the error.
    assert_eq!(conn.execute(&Op::Get { table: 0, key: 1 }).await.unwrap().rows, 1);
    drop(conn);
    cli.cleanup().await.unwrap();
}

/// Live children of this process running the client `program` (not the server, also our
/// child): (pid, argv, environ).
fn children(program: &str) -> Vec<(String, String, String)> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // The parent pid is the second field after the parenthesised command name.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1).map(str::to_string));
        if ppid.as_deref() != Some(me.as_str()) {
            continue;
        }
        let read = |f: &str| String::from_utf8_lossy(&std::fs::read(entry.path().join(f)).unwrap_or_default()).replace('\0', " ");
        let argv = read("cmdline");
        let exe = argv.split(' ').next().unwrap_or("");
        if exe.rsplit('/').next() == Some(program) {
            out.push((entry.file_name().to_string_lossy().into_owned(), argv, read("environ")));
        }
    }
    out
}

const CANARY: &str = "canaryPw4711";

/// A live client started with the canary password: it is in the child's environment (so
/// the check can see it) and never in its argv.
async fn canary_stays_in_env(url: &str, program: &str) {
    let target = open("canary-live", url);
    assert!(!target.info().url.contains(CANARY));
    let table = kv::shared_def();
    target.prepare(std::slice::from_ref(&table)).await.unwrap();
    let mut conn = target.connect().await.unwrap();
    assert_eq!(conn.execute(&Op::Get { table: 0, key: 1 }).await.unwrap().rows, 0);
    let live = children(program);
    assert!(!live.is_empty(), "no live {program} child found");
    for (pid, argv, env) in &live {
        assert!(!argv.contains(CANARY), "pid {pid} argv: {argv}");
        assert!(env.contains(CANARY), "pid {pid}: the password was not passed in the environment");
    }
    drop(conn);
    target.cleanup().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_stay_off_argv_and_out_of_errors() {
    use mysql_async::prelude::Queryable;
    {
        let _l = MY_LOCK.lock().await;
        let lib = support::url(ServerKind::Mariadb);
        let hostpart = lib.split_once('@').unwrap().1.trim_end_matches('/').to_string();
        // A user with the canary as password, on this throwaway server.
        let mut admin = mysql_async::Conn::new(mysql_async::Opts::from_url(&lib).unwrap()).await.unwrap();
        for sql in [
            format!("CREATE USER IF NOT EXISTS 'dbsweep_canary'@'%' IDENTIFIED BY '{CANARY}'"),
            "GRANT ALL ON *.* TO 'dbsweep_canary'@'%'".to_string(),
        ] {
            admin.query_drop(sql).await.unwrap();
        }
        drop(admin);
        let client = if std::path::Path::new("/usr/bin/mariadb").exists() { "mariadb" } else { "mysql" };
        canary_stays_in_env(&format!("mysql-cli://dbsweep_canary:{CANARY}@{hostpart}/"), client).await;
        let err = match open("canary", &format!("mysql-cli://root:{CANARY}@{hostpart}/")).connect().await {
            Ok(_) => panic!("mysql-cli: a wrong password was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("Access denied") && !err.contains(CANARY), "{err}");
    }
    {
        let _l = REDIS_LOCK.lock().await;
        let hostpart = support::url(ServerKind::Redis).split_once("://").unwrap().1.to_string();
        // The passwordless `default` user accepts any password.
        canary_stays_in_env(&format!("redis-cli://default:{CANARY}@{hostpart}"), "redis-cli").await;
        let err = match open("canary", &format!("redis-cli://nosuchuser:{CANARY}@{hostpart}")).connect().await {
            Ok(_) => panic!("redis-cli: a wrong password was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("WRONGPASS") && !err.contains(CANARY), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_client_is_a_connection_error() {
    let _l = REDIS_LOCK.lock().await;
    let target = redis_cli().await.0;
    let table = kv::shared_def();
    target.prepare(std::slice::from_ref(&table)).await.unwrap();
    let mut conn = target.connect().await.unwrap();
    let live = children("redis-cli");
    assert_eq!(live.len(), 1, "{live:?}");
    let pid: i32 = live[0].0.parse().unwrap();
    // SAFETY: sends SIGKILL to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let e = conn.execute(&Op::Get { table: 0, key: 1 }).await.unwrap_err();
    assert_eq!(e.class, ErrorClass::Connection, "{e:?}");
    // The next request starts a new client.
    assert_eq!(conn.execute(&Op::Get { table: 0, key: 1 }).await.unwrap().rows, 0);
    drop(conn);
    target.cleanup().await.unwrap();
}
