//! Two runs against one spawned PostgreSQL and one spawned Redis (issue 17): a second run
//! on the same namespace exits 2 at once naming the first; with `--namespace` both run to
//! the end side by side, each with all of its own rows; no foreign row is touched; a lease
//! left by a run that is gone is taken over and the report says so.

use crate::support;
use crate::support::text;
use crate::support::{pg_client, report};
use dbsweep::servers::{self, Server, ServerKind, SpawnOptions};
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

const ROWS: u64 = 2000;

/// `run` arguments for a small get experiment on both servers, written to `out`.
fn run_args(pg: &Server, redis: &Server, out: &Path) -> Vec<String> {
    [
        "run",
        "--target",
        &format!("pg={}?layout=row", pg.url()),
        "--target",
        &format!("redis={}", redis.url()),
        "--experiments",
        "get",
        "--clients",
        "1",
        "--batch",
        "1",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--rows",
        &ROWS.to_string(),
        "--keep-data",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

async fn spawn_both() -> (Server, Server) {
    let opts = SpawnOptions::default();
    let (pg, redis) = tokio::join!(servers::spawn(ServerKind::Postgres, &opts), servers::spawn(ServerKind::Redis, &opts));
    (pg.expect("spawn postgres"), redis.expect("spawn redis"))
}

fn finished(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

async fn redis(server: &Server) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.url()).unwrap().get_multiplexed_async_connection().await.unwrap()
}

async fn scalar(db: &tokio_postgres::Client, sql: &str) -> i64 {
    db.query_one(sql, &[]).await.unwrap_or_else(|e| panic!("{sql}: {e}")).get(0)
}

/// Waits until PostgreSQL's statistics show `schema.kv` loaded once and never deleted from
/// (the counters reach the view within a second or so).
async fn assert_loaded_once(db: &tokio_postgres::Client, schema: &str) {
    let sql = format!(
        "SELECT n_tup_ins, n_tup_del FROM pg_stat_user_tables WHERE schemaname = '{schema}' AND relname = 'kv' \
         UNION ALL SELECT -1, -1 LIMIT 1"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let row = db.query_one(&sql, &[]).await.unwrap();
        let (ins, del): (i64, i64) = (row.get(0), row.get(1));
        if (ins, del) == (ROWS as i64, 0) {
            return;
        }
        assert!(Instant::now() < deadline, "{schema}.kv: {ins} rows inserted and {del} deleted; expected {ROWS} and 0");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn zcard(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> u64 {
    redis::cmd("ZCARD").arg(key).query_async(conn).await.unwrap()
}

async fn wait_for_lease(db: &tokio_postgres::Client, conn: &mut redis::aio::MultiplexedConnection) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pg_held = scalar(db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'dbsweep' AND tablename = 'dbsweep_lease'").await > 0;
        let redis_held: bool = redis::cmd("EXISTS").arg("dbsweep:lease").query_async(conn).await.unwrap();
        if pg_held && redis_held {
            return;
        }
        assert!(Instant::now() < deadline, "the first run never took its leases");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn point_errors(json: &serde_json::Value, target: &str) -> Vec<u64> {
    json["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["target"] == target && p["experiment"] == "get")
        .map(|p| p["summary"]["errors"].as_u64().unwrap_or(u64::MAX))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_refuses_and_namespaces_run_side_by_side() {
    let (pg_server, redis_server) = spawn_both().await;
    let db = pg_client(&pg_server.url()).await;
    let mut kv = redis(&redis_server).await;
    // Somebody else's data on both servers.
    db.batch_execute("CREATE TABLE public.keep_me (id int PRIMARY KEY, note text); INSERT INTO public.keep_me VALUES (1, 'theirs')")
        .await
        .unwrap();
    redis::cmd("SET").arg("user:1").arg("theirs").exec_async(&mut kv).await.unwrap();

    let tmp = tempfile::tempdir().unwrap();
    // The first run: at 1,000 gets per second, each target's point lasts 6 s.
    let first_out = tmp.path().join("first");
    let first =
        support::piped().args(run_args(&pg_server, &redis_server, &first_out)).args(["--ops", "6000", "--rate", "1000"]).spawn().unwrap();
    wait_for_lease(&db, &mut kv).await;

    // The same namespace: refused at once, naming the first run, writing nothing.
    let second_out = tmp.path().join("second");
    let started = Instant::now();
    let second = finished(support::piped().args(run_args(&pg_server, &redis_server, &second_out)).args(["--ops", "100"]).spawn().unwrap());
    let said = text(&second);
    assert_eq!(second.status.code(), Some(2), "{said}");
    assert!(started.elapsed() < Duration::from_secs(30), "refused at once, not after waiting");
    assert!(said.contains("is in use by dbsweep run") && said.contains(&format!("pid {}", first.id())), "names the holder: {said}");
    assert!(said.contains("wait for it to finish") && said.contains("--namespace NAME"), "says how to proceed: {said}");
    assert_eq!(said.trim().lines().count(), 1, "one line: {said}");
    assert!(!second_out.exists(), "a refused run writes nothing");
    // Redis alone is refused the same way.
    let redis_only = finished(
        support::piped()
            .args(["run", "--target", &format!("redis={}", redis_server.url()), "--experiments", "get", "--ops", "100", "--no-progress"])
            .arg("--out")
            .arg(tmp.path().join("redis-only"))
            .spawn()
            .unwrap(),
    );
    let said = text(&redis_only);
    assert_eq!(redis_only.status.code(), Some(2), "{said}");
    assert!(said.contains("key prefix 'dbsweep:' in Redis") && said.contains(&format!("pid {}", first.id())), "{said}");

    // Side by side in its own namespace: runs to the end while the first still runs.
    let side_out = tmp.path().join("side");
    let side = finished(
        support::piped()
            .args(run_args(&pg_server, &redis_server, &side_out))
            .args(["--ops", "2000", "--namespace", "side"])
            .spawn()
            .unwrap(),
    );
    assert!(side.status.success(), "{}", text(&side));
    let mut first = first;
    assert!(first.try_wait().unwrap().is_none(), "the first run was still running while the second completed");
    let first = finished(first);
    assert!(first.status.success(), "{}", text(&first));

    for (dir, schema, prefix) in [(&first_out, "dbsweep", "dbsweep:"), (&side_out, "dbsweep_side", "dbsweep_side:")] {
        let json = report(dir);
        assert_eq!(json["complete"], true, "{}", dir.display());
        for target in ["pg", "redis"] {
            let errors = point_errors(&json, target);
            assert!(!errors.is_empty() && errors.iter().all(|e| *e == 0), "{target} in {}: {errors:?}", dir.display());
        }
        assert_eq!(json["plan"]["namespace"], schema);
        // Each run's data is all there, loaded once and never deleted by the other run.
        assert_eq!(scalar(&db, &format!("SELECT count(*) FROM {schema}.kv")).await, ROWS as i64);
        assert_loaded_once(&db, schema).await;
        assert_eq!(zcard(&mut kv, &format!("{prefix}kv:pk")).await, ROWS);
        // The leases are gone with the runs (the data stays: --keep-data).
        let lease_tables = format!("SELECT count(*) FROM pg_tables WHERE schemaname = '{schema}' AND tablename = 'dbsweep_lease'");
        assert_eq!(scalar(&db, &lease_tables).await, 0, "{schema}");
        let lease: bool = redis::cmd("EXISTS").arg(format!("{prefix}lease")).query_async(&mut kv).await.unwrap();
        assert!(!lease, "{prefix}lease");
    }

    // A run that does not keep its data removes its whole namespace and nothing else.
    let gone_out = tmp.path().join("gone");
    let mut args = run_args(&pg_server, &redis_server, &gone_out);
    args.retain(|a| a != "--keep-data");
    let gone = finished(support::piped().args(args).args(["--ops", "500", "--namespace", "gone"]).spawn().unwrap());
    assert!(gone.status.success(), "{}", text(&gone));
    assert_eq!(scalar(&db, "SELECT count(*) FROM pg_namespace WHERE nspname = 'dbsweep_gone'").await, 0);
    let keys: Vec<String> = redis::cmd("KEYS").arg("dbsweep_gone*").query_async(&mut kv).await.unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    assert_eq!(
        scalar(&db, "SELECT count(*) FROM dbsweep.kv").await + scalar(&db, "SELECT count(*) FROM dbsweep_side.kv").await,
        2 * ROWS as i64
    );

    let theirs: String = db.query_one("SELECT note FROM public.keep_me WHERE id = 1", &[]).await.unwrap().get(0);
    assert_eq!(theirs, "theirs");
    let theirs: String = redis::cmd("GET").arg("user:1").query_async(&mut kv).await.unwrap();
    assert_eq!(theirs, "theirs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_left_by_a_dead_run_is_taken_over_and_reported() {
    let (pg_server, redis_server) = spawn_both().await;
    // A run that died on this host: its pid no longer exists, its records stayed.
    let dead_pid = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let record =
        serde_json::json!({"run": "d0d0d0d0d0d0", "host": host, "pid": dead_pid, "started": now - 100, "renewed": now - 5}).to_string();
    let db = pg_client(&pg_server.url()).await;
    db.batch_execute(&format!(
        "CREATE SCHEMA dbsweep; COMMENT ON SCHEMA dbsweep IS 'dbsweep-owned'; \
         CREATE TABLE dbsweep.dbsweep_lease (id int PRIMARY KEY, holder text NOT NULL); \
         INSERT INTO dbsweep.dbsweep_lease VALUES (1, '{record}')"
    ))
    .await
    .unwrap();
    let mut kv = redis(&redis_server).await;
    redis::cmd("SET").arg("dbsweep:lease").arg(&record).exec_async(&mut kv).await.unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut args = run_args(&pg_server, &redis_server, &out);
    args.retain(|a| a != "--keep-data");
    let o = finished(support::piped().args(args).args(["--ops", "500"]).spawn().unwrap());
    assert!(o.status.success(), "{}", text(&o));
    let json = report(&out);
    let warnings: Vec<&str> = json["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    for place in ["schema dbsweep of database postgres on PostgreSQL", "key prefix 'dbsweep:' in Redis"] {
        assert!(
            warnings.iter().any(|w| w.contains("took over the lease") && w.contains(place) && w.contains("d0d0d0d0d0d0")),
            "{place}: {warnings:?}"
        );
    }
    // Released at the end like any lease of its own.
    assert_eq!(scalar(&db, "SELECT count(*) FROM pg_namespace WHERE nspname = 'dbsweep'").await, 0);
    let keys: Vec<String> = redis::cmd("KEYS").arg("dbsweep*").query_async(&mut kv).await.unwrap();
    assert!(keys.is_empty(), "{keys:?}");
}
