//! `--spawn redis-cluster` in studies: three masters on loopback ports, formed by dbsweep's
//! spawn code, run through the kv-vs-relational study (hash rows, key and index sorted
//! sets, scripts: each table under its hash tag) and the insert-find study (plain string
//! keys, spread over every master) beside one Redis server: every point the single server
//! measures, the cluster measures too, with the same ops, ok ops and rows.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use support::{csv_rows, dbsweep};

/// Per (experiment, point, run): ops, ok ops, rows and requests of `target`'s rows.
fn counts(dir: &Path, target: &str) -> BTreeMap<String, (String, String, String, String)> {
    csv_rows(dir)
        .into_iter()
        .filter(|r| r["target"] == target)
        .map(|r| {
            let key = ["experiment", "op", "clients", "batch", "batched", "param", "run"].map(|c| r[c].clone()).join("|");
            (key, (r["ops"].clone(), r["ok_ops"].clone(), r["rows"].clone(), r["requests"].clone()))
        })
        .collect()
}

/// Runs `study` on a spawned Redis and a spawned Redis Cluster and checks that both
/// measured the same points with the same counts; returns the report.
fn same_as_one_server(study: &[&str]) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(
        &[study, &["--spawn", "redis,redis-cluster", "--runs", "1", "--warmup", "0", "--no-progress", "--out", out.to_str().unwrap()]]
            .concat(),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (one, cluster) = (counts(&out, "redis"), counts(&out, "redis-cluster"));
    assert!(!one.is_empty(), "redis measured something");
    assert_eq!(one, cluster, "the cluster sent the same ops and found the same rows");
    for (key, (ops, ok_ops, _, _)) in &cluster {
        assert_eq!(ops, ok_ops, "{key}: every op of the cluster succeeded");
    }
    let report = support::report(&out);
    let target = report["targets"].as_array().unwrap().iter().find(|t| t["name"] == "redis-cluster").expect("the cluster's target").clone();
    assert_eq!(target["settings"]["cluster.masters"], "3", "{target}");
    assert_eq!(target["settings"]["server.spawned"], "true", "{target}");
    report
}

#[test]
fn kv_vs_relational_on_a_spawned_cluster_counts_what_one_server_counts() {
    same_as_one_server(&["run", "kv-vs-relational", "--quick", "--ops", "300"]);
}

#[test]
fn insert_find_on_a_spawned_cluster_counts_what_one_server_counts() {
    same_as_one_server(&["run", "insert-find", "--quick", "--ops", "300"]);
}
