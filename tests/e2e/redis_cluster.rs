//! `--spawn redis-cluster` in studies: three masters on loopback ports, formed by dbsweep's
//! spawn code, run through the kv-vs-relational study (hash rows, key and index sorted
//! sets, scripts: each table under its hash tag) and the insert-find study (plain string
//! keys, spread over every master) beside one Redis server: every point the single server
//! measures, the cluster measures too, with the same ops, ok ops and rows.

use crate::support;

/// Runs `study` on a spawned Redis and a spawned Redis Cluster: both measured the same
/// points with the same counts, on three spawned masters.
fn same_as_one_server(study: &[&str]) {
    let target = support::cluster_counts_what_one_server_counts(study, "redis,redis-cluster", "redis", "redis-cluster");
    assert_eq!(target["settings"]["cluster.masters"], "3", "{target}");
    assert_eq!(target["settings"]["server.spawned"], "true", "{target}");
}

#[test]
fn kv_vs_relational_on_a_spawned_cluster_counts_what_one_server_counts() {
    same_as_one_server(&["run", "kv-vs-relational", "--quick", "--ops", "300"]);
}

#[test]
fn insert_find_on_a_spawned_cluster_counts_what_one_server_counts() {
    same_as_one_server(&["run", "insert-find", "--quick", "--ops", "300"]);
}
