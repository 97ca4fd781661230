//! The client count against the server's connection limit (issue 16, item 7): a run whose
//! busiest point needs more connections than PostgreSQL, MariaDB or Redis has room for
//! (or MonetDB embedded, whose session limit is fixed) ends with exit 2 and one line naming
//! the numbers and the fix, and writes nothing; a run just under the limit runs; servers
//! dbsweep spawns are started with a limit above what the plan needs. Each test spawns its own server, since it changes its limit or fills it.

use crate::support;
use crate::support::spawn;

use dbsweep::servers::{self, ServerKind, SpawnOptions};
use std::path::Path;
use std::process::Output;

/// `dbsweep run` of a small get experiment with `clients` clients on `target`
/// (`NAME=URL`), written to `out`.
fn run(target: &str, clients: usize, out: &Path) -> Output {
    let (clients, ops) = (clients.to_string(), (clients * 20).to_string());
    support::dbsweep(&[
        "run",
        "--target",
        target,
        "--experiments",
        "get",
        "--clients",
        &clients,
        "--ops",
        &ops,
        "--batch",
        "1",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--rows",
        "500",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ])
}

/// The one line of a refused run (exit 2, no run directory), without the `dbsweep: ` prefix.
fn refusal(o: &Output, out: &Path) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "refused with exit 2: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(!out.exists(), "a refused run writes nothing");
    stderr.trim_end().strip_prefix("dbsweep: ").unwrap_or_else(|| panic!("prefixed: {stderr}")).to_string()
}

/// A run that succeeded, its get experiment at `clients` clients among its points, every
/// op answered.
fn ran(o: &Output, out: &Path, clients: usize) {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = support::csv_rows(out);
    assert!(rows.iter().any(|r| r["experiment"] == "get" && r["clients"] == clients.to_string()), "a get point with {clients} clients");
    for row in &rows {
        assert_eq!(row["ops"], row["ok_ops"], "every op succeeded: {row:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_counts_the_sessions_others_hold() {
    let server = spawn(ServerKind::Postgres).await;
    let config: tokio_postgres::Config = server.url().parse().unwrap();
    let mut held = Vec::new();
    for _ in 0..5 {
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        held.push(client);
    }
    let max: String = held[0].query_one("SHOW max_connections", &[]).await.unwrap().get(0);
    assert_eq!(max, "100", "the spawned server keeps PostgreSQL's default for a plan that fits");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let target = format!("pg={}", server.url());

    let line = refusal(
        &tokio::task::spawn_blocking({
            let (target, out) = (target.clone(), out.clone());
            move || run(&target, 95, &out)
        })
        .await
        .unwrap(),
        &out,
    );
    assert_eq!(
        line,
        "--clients 95 needs 96 connections to target pg (experiment get: one per client and one for the run's lease), \
         but the server allows 95 more (max_connections=100, 5 in use); lower --clients or raise max_connections"
    );
    let rows: i64 = held[0].query_one("SELECT count(*) FROM pg_namespace WHERE nspname = 'dbsweep'", &[]).await.unwrap().get(0);
    assert_eq!(rows, 0, "a refused run touches nothing on the server");

    // A role's CONNECTION LIMIT binds a user that is not a superuser.
    held[0].batch_execute("CREATE ROLE dbsweep_limited LOGIN CONNECTION LIMIT 3").await.unwrap();
    let mut limited = url::Url::parse(&server.url()).unwrap();
    limited.set_username("dbsweep_limited").unwrap();
    let line = refusal(
        &tokio::task::spawn_blocking({
            let (target, out) = (format!("pg={limited}"), out.clone());
            move || run(&target, 3, &out)
        })
        .await
        .unwrap(),
        &out,
    );
    assert_eq!(
        line,
        "--clients 3 needs 4 connections to target pg (experiment get: one per client and one for the run's lease), \
         but the server allows 3 more (role dbsweep_limited: CONNECTION LIMIT 3, 0 in use); lower --clients or raise the role's CONNECTION LIMIT"
    );

    // 90 held: 10 free, 9 clients and the lease's connection fit exactly.
    for _ in 0..85 {
        let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        held.push(client);
    }
    let o = tokio::task::spawn_blocking({
        let (target, out) = (target.clone(), out.clone());
        move || run(&target, 9, &out)
    })
    .await
    .unwrap();
    ran(&o, &out, 9);
    drop(held);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_counts_maxclients_set_at_run_time() {
    let server = spawn(ServerKind::Redis).await;
    let mut admin = redis::Client::open(server.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    redis::cmd("CONFIG").arg("SET").arg("maxclients").arg("10").query_async::<()>(&mut admin).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let target = format!("redis={}", server.url());

    let line = refusal(
        &tokio::task::spawn_blocking({
            let (target, out) = (target.clone(), out.clone());
            move || run(&target, 9, &out)
        })
        .await
        .unwrap(),
        &out,
    );
    assert_eq!(
        line,
        "--clients 9 needs 10 connections to target redis (experiment get: one per client and one for the run's lease), \
         but the server allows 9 more (maxclients=10, 1 in use); lower --clients or raise maxclients"
    );
    // A command-line client target holds one connection per client as the library's does.
    let line = refusal(
        &tokio::task::spawn_blocking({
            let (target, out) = (format!("rcli={}", server.url().replacen("redis://", "redis-cli://", 1)), out.clone());
            move || run(&target, 9, &out)
        })
        .await
        .unwrap(),
        &out,
    );
    assert!(line.starts_with("--clients 9 needs 10 connections to target rcli "), "{line}");
    assert!(line.contains("allows 9 more (maxclients=10, 1 in use)"), "{line}");
    let keys: Vec<String> = redis::cmd("KEYS").arg("dbsweep*").query_async(&mut admin).await.unwrap();
    assert!(keys.is_empty(), "a refused run touches nothing on the server: {keys:?}");

    let o = tokio::task::spawn_blocking({
        let (target, out) = (target.clone(), out.clone());
        move || run(&target, 8, &out)
    })
    .await
    .unwrap();
    ran(&o, &out, 8);
    drop(admin);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_counts_max_connections_set_at_run_time() {
    use mysql_async::prelude::Queryable;
    let server = spawn(ServerKind::Mariadb).await;
    let mut admin = mysql_async::Conn::from_url(server.url()).await.unwrap();
    admin.query_drop("SET GLOBAL max_connections = 10").await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let target = format!("mysql={}", server.url());

    let line = refusal(
        &tokio::task::spawn_blocking({
            let (target, out) = (target.clone(), out.clone());
            move || run(&target, 9, &out)
        })
        .await
        .unwrap(),
        &out,
    );
    assert_eq!(
        line,
        "--clients 9 needs 10 connections to target mysql (experiment get: one per client and one for the run's lease), \
         but the server allows 9 more (max_connections=10, 1 in use); lower --clients or raise max_connections"
    );
    let databases: Vec<String> = admin.query("SHOW DATABASES LIKE 'dbsweep%'").await.unwrap();
    assert!(databases.is_empty(), "a refused run touches nothing on the server: {databases:?}");

    let o = tokio::task::spawn_blocking({
        let (target, out) = (target.clone(), out.clone());
        move || run(&target, 8, &out)
    })
    .await
    .unwrap();
    ran(&o, &out, 8);
    admin.disconnect().await.unwrap();
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spawned_servers_allow_the_plans_clients() {
    let (pg_opts, memcached_opts) =
        (SpawnOptions { clients: Some(200), ..SpawnOptions::default() }, SpawnOptions { clients: Some(1100), ..SpawnOptions::default() });
    let (pg, memcached) =
        tokio::join!(servers::spawn(ServerKind::Postgres, &pg_opts), servers::spawn(ServerKind::Memcached, &memcached_opts));
    let (pg, memcached) = (pg.unwrap(), memcached.unwrap());
    assert_eq!(pg.settings()["max_connections"], (200 + servers::SPARE_CONNECTIONS).to_string());
    assert_eq!(memcached.settings()["maxconns"], (1100 + servers::SPARE_CONNECTIONS).to_string());
    pg.stop().await.unwrap();
    memcached.stop().await.unwrap();
}

/// MonetDB embedded serves at most 64 sessions, one of them dbsweep's own: 63 clients run
/// with every op answered, 64 are refused before anything is written (they used to fail
/// mid-run with "Failed to initialize client", voiding the point).
#[test]
fn monetdb_embedded_refuses_more_clients_than_its_64_sessions() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("refused");
    let line = refusal(&run("monetdb=monetdb:", 64, &out), &out);
    assert_eq!(
        line,
        "--clients 64 needs 64 connections to target monetdb (experiment get: one per client), but the server allows 63 more \
         (max_clients=64, 1 held by dbsweep itself); lower --clients or raise max_clients, which MonetDBe does not let a program change"
    );
    let out = tmp.path().join("fits");
    ran(&run("monetdb=monetdb:", 63, &out), &out, 63);
}
