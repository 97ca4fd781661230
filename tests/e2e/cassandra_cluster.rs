//! `--spawn cassandra:2` in a study: a two-node Cassandra ring on 127.0.0.2 and 127.0.0.3,
//! started by dbsweep's spawn code, runs kv-vs-relational `--quick` beside one Cassandra
//! node: every point the single node measures, the ring measures too, with the same ops,
//! ok ops, rows and requests, and its target names both nodes as contact points.
//!
//! Opt-in (two more JVMs, ~1.5 GB, minutes to start on a loaded machine):
//! `cargo test --test e2e cassandra_cluster -- --ignored`.

use crate::support;

#[test]
#[ignore = "opt-in: a two-node Cassandra ring (~1.5 GB, minutes to start); run with --ignored"]
fn kv_vs_relational_on_a_spawned_two_node_ring_counts_what_one_node_counts() {
    let study = ["run", "kv-vs-relational", "--quick", "--ops", "300"];
    let target = support::cluster_counts_what_one_server_counts(&study, "cassandra,cassandra:2", "cassandra", "cassandra-cluster");
    let url = target["url"].as_str().unwrap();
    assert!(url.starts_with("cassandra://127.0.0.2:") && url.contains(",127.0.0.3:"), "both nodes are contact points: {url}");
    assert_eq!(target["settings"]["server.spawned"], "true", "{target}");
    let nodes = target["settings"]["server.nodes"].as_str().unwrap_or_default();
    assert!(nodes.starts_with("127.0.0.2:") && nodes.contains(", 127.0.0.3:"), "{target}");
}
