//! The insert-find study as its paper ran it, against servers dbsweep spawns itself:
//! what reaches the servers per request (Redis `INFO commandstats`: exactly one MSET per
//! insert-all request and one MGET per find; MariaDB `SHOW GLOBAL STATUS`: one INSERT and one
//! SELECT), the rows stored and found at N = 100,000, and the study end to end with the
//! command-line client targets, two data roots and the settings that say what was sent.

use crate::support;
use crate::support::open;

use dbsweep::adapter::{Connection, Target};
use dbsweep::base::op::Op;
use dbsweep::data::Dataset;
use dbsweep::plan::{self, RunOptions};
use dbsweep::servers::ServerKind;
use dbsweep::workload::experiment::OpStream;
use mysql_async::prelude::Queryable;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The paper's largest N: beyond 65,535 placeholders for MariaDB's driver.
const N: u64 = 100_000;

/// The study's plan at one size, and its data.
fn study(size: u64) -> (plan::Plan, Dataset) {
    let opts = RunOptions { study: Some("insert-find".into()), sizes: Some(size.to_string()), ..Default::default() };
    let plan = plan::resolve(&opts).expect("the built-in study resolves");
    let data = Dataset::new(&plan.data, plan.seed);
    (plan, data)
}

/// The ops of the single request of experiment `name` at its only point.
fn request(plan: &plan::Plan, data: &Dataset, name: &str) -> Vec<Op> {
    let (index, e) = plan.experiments.iter().enumerate().find(|(_, e)| e.name == name).expect("experiment");
    let stream = OpStream::new(e, index, data, plan.seed, e.warmup + e.runs);
    let point = e.points[0];
    (0..stream.ops_at(&point)).map(|seq| stream.op(&point, 0, 0, seq)).collect()
}

async fn prepared(target: &Arc<dyn Target>, data: &Dataset) -> Box<dyn Connection> {
    target.prepare(&data.tables).await.expect("prepare");
    assert_eq!(target.load(&data.tables[0], data.initial(0)).await.expect("load"), N);
    target.connect().await.expect("connect")
}

/// `calls` per command from `INFO commandstats`.
async fn redis_calls() -> BTreeMap<String, u64> {
    let client = redis::Client::open(support::url(ServerKind::Redis)).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let text: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.split(',').find_map(|f| f.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_string(), calls))
        })
        .collect()
}

fn delta(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    after.iter().map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0))).filter(|(_, v)| *v > 0).collect()
}

/// Redis: one insert-all request of N pairs is exactly one MSET (and nothing else), one
/// find of N keys exactly one MGET, for the driver and for redis-cli; N rows are stored
/// and found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_gets_one_mset_per_insert_all_and_one_mget_per_find() {
    let (plan, data) = study(N);
    let insert_all = request(&plan, &data, "insert-all");
    let find = request(&plan, &data, "find");
    assert_eq!((insert_all.len() as u64, find.len()), (N, 1));
    for (name, url) in [("redis", support::url(ServerKind::Redis)), ("redis-cli", support::url_as(ServerKind::Redis, "redis-cli"))] {
        let target = open(name, &url);
        let mut conn = prepared(&target, &data).await;
        let before = redis_calls().await;
        assert_eq!(conn.execute_batch(&insert_all).await.expect("insert-all").rows, N, "{name}");
        let sent = delta(&before, &redis_calls().await);
        // redis-cli ends each request with its own ECHO marker; INFO is the probe itself.
        let expected: BTreeMap<String, u64> = [("mset", 1), ("echo", u64::from(name == "redis-cli")), ("info", 1)]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (k.to_string(), n))
            .collect();
        assert_eq!(sent, expected, "{name}: commands of one insert-all request");
        assert_eq!(target.count_rows(&data.tables[1]).await.unwrap(), N, "{name}: rows stored");

        let before = redis_calls().await;
        assert_eq!(conn.execute(&find[0]).await.expect("find").rows, N, "{name}: keys found");
        let sent = delta(&before, &redis_calls().await);
        assert_eq!(sent.get("mget"), Some(&1), "{name}: {sent:?}");
        assert!(sent.keys().all(|k| ["mget", "echo", "info"].contains(&k.as_str())), "{name}: {sent:?}");
        let settings = &target.info().settings;
        assert!(settings["request.insert_batch"].contains("MSET"), "{settings:?}");
        assert!(settings["request.multi_get"].contains("MGET"), "{settings:?}");
        assert!(!target.info().capabilities.ops.contains(&dbsweep::base::op::OpKind::Scan), "no scans on plain string keys");
        drop(conn);
        target.cleanup().await.unwrap();
    }
}

async fn mariadb_status(admin: &mut mysql_async::Conn) -> BTreeMap<String, u64> {
    let rows: Vec<(String, String)> = admin
        .query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_insert', 'Com_select', 'Com_stmt_execute', 'Com_stmt_prepare')")
        .await
        .unwrap();
    rows.into_iter().map(|(k, v)| (k, v.parse().unwrap())).collect()
}

/// MariaDB at N = 100,000 (200,000 values, beyond 65,535 placeholders): the driver and the
/// command-line client each send one INSERT with literal values and one SELECT … IN; no
/// error, 100,000 rows stored and found; the settings say what was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_gets_one_insert_and_one_select_at_the_papers_largest_n() {
    let (plan, data) = study(N);
    let insert_all = request(&plan, &data, "insert-all");
    let find = request(&plan, &data, "find");
    let mut admin = mysql_async::Conn::from_url(support::url(ServerKind::Mariadb)).await.unwrap();
    for (name, url) in [("mariadb", support::url(ServerKind::Mariadb)), ("mariadb-cli", support::url_as(ServerKind::Mariadb, "mysql-cli"))]
    {
        let cli = name == "mariadb-cli";
        let target = open(name, &url);
        let mut conn = prepared(&target, &data).await;
        let before = mariadb_status(&mut admin).await;
        assert_eq!(conn.execute_batch(&insert_all).await.expect("insert-all").rows, N, "{name}");
        let after = mariadb_status(&mut admin).await;
        let d = |k: &str| after[k] - before[k];
        assert_eq!(d("Com_insert"), 1, "{name}: one INSERT");
        assert_eq!(d("Com_stmt_execute"), 0, "{name}: literal values, no prepared statement");
        // The client adds `SELECT ROW_COUNT()` and its end marker `SELECT '<marker>'`.
        assert_eq!(d("Com_select"), if cli { 2 } else { 0 }, "{name}");
        assert_eq!(target.count_rows(&data.tables[1]).await.unwrap(), N, "{name}: rows stored");

        let before = mariadb_status(&mut admin).await;
        assert_eq!(conn.execute(&find[0]).await.expect("find").rows, N, "{name}: keys found");
        let after = mariadb_status(&mut admin).await;
        let d = |k: &str| after[k] - before[k];
        assert_eq!(d("Com_select"), if cli { 2 } else { 1 }, "{name}: one SELECT … IN");
        assert_eq!(d("Com_insert"), 0);
        let settings = &target.info().settings;
        assert!(settings["request.insert_batch"].contains("literal values"), "{settings:?}");
        assert!(settings["request.multi_get"].contains("IN ("), "{settings:?}");
        drop(conn);
        target.cleanup().await.unwrap();
    }
    // Below 65,535 placeholders the driver prepares its INSERT: one execution, no text INSERT.
    let (plan, data) = study(1000);
    let insert_all = request(&plan, &data, "insert-all");
    let target = open("mariadb", &support::url(ServerKind::Mariadb));
    let mut conn = prepared(&target, &data).await;
    let before = mariadb_status(&mut admin).await;
    assert_eq!(conn.execute_batch(&insert_all).await.unwrap().rows, 1000);
    let after = mariadb_status(&mut admin).await;
    assert_eq!((after["Com_stmt_execute"] - before["Com_stmt_execute"], after["Com_insert"] - before["Com_insert"]), (1, 1));
    drop(conn);
    target.cleanup().await.unwrap();
}

/// The study end to end on spawned MariaDB and Redis, on two data roots: every spawned
/// server runs once per root with its command-line client beside its driver, every point
/// completes with one request per run and N rows, the settings say what was sent and where
/// the data lived, the report opens with the method lines, and the roots are left empty.
#[test]
fn the_study_runs_with_cli_clients_on_two_data_roots() {
    let (a, b, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let roots = format!("a={},b={}", a.path().display(), b.path().display());
    let output = support::command()
        .args(["run", "insert-find", "--spawn", "mariadb,redis", "--sizes", "100,40000", "--rows", "40000", "--runs", "1"])
        .args(["--warmup", "0", "--experiments", "insert-all,find", "--no-progress", "--data-root", &roots, "--out"])
        .arg(out.path().join("run"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out.path().join("run/report.json")).unwrap()).unwrap();
    assert_eq!(report["complete"], true);
    let spawned = ["mariadb", "mariadb-cli", "redis", "redis-cli"];
    for (label, root) in [("a", a.path()), ("b", b.path())] {
        for name in spawned {
            let target = format!("{name}-{label}");
            let info = report["targets"].as_array().unwrap().iter().find(|t| t["name"] == target.as_str()).expect(&target);
            let s = &info["settings"];
            assert!(s["server.data_dir"].as_str().unwrap().starts_with(&root.display().to_string()), "{target}: {s}");
            let batch = s["request.insert_batch"].as_str().unwrap();
            assert!(batch.contains(if name.starts_with("redis") { "MSET" } else { "INSERT" }), "{target}: {batch}");
            for (experiment, n) in [("insert-all", 100), ("insert-all", 40000), ("find", 100), ("find", 40000)] {
                let p = report["points"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["target"] == target.as_str() && p["experiment"] == experiment && p["param"] == n)
                    .unwrap_or_else(|| panic!("{target} {experiment} {n}"));
                assert_eq!(p["status"]["state"], "measured", "{target} {experiment} {n}");
                let run = &p["runs"][0];
                assert_eq!(
                    (run["requests"].as_u64(), run["rows"].as_u64(), run["errors"].as_object().map(|e| e.len())),
                    (Some(1), Some(n), Some(0)),
                    "{target} {experiment} {n}"
                );
            }
        }
        assert_eq!(std::fs::read_dir(root).unwrap().count(), 0, "{} is left empty", root.display());
    }
    let html = std::fs::read_to_string(out.path().join("run/report.html")).unwrap();
    assert!(html.contains("id=\"study-method\"") && html.contains("The paper measured:") && html.contains("TIME"), "method lines");
}
