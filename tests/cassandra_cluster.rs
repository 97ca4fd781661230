//! `--spawn cassandra:2` in a study: a two-node Cassandra ring on 127.0.0.2 and 127.0.0.3,
//! started by dbsweep's spawn code, runs kv-vs-relational `--quick` beside one Cassandra
//! node: every point the single node measures, the ring measures too, with the same ops,
//! ok ops, rows and requests, and its target names both nodes as contact points.
//!
//! Opt-in (two more JVMs, ~1.5 GB, minutes to start on a loaded machine):
//! `cargo test --test cassandra_cluster -- --ignored`.

mod support;

use support::{counts_by_point, dbsweep};

#[test]
#[ignore = "opt-in: a two-node Cassandra ring (~1.5 GB, minutes to start); run with --ignored"]
fn kv_vs_relational_on_a_spawned_two_node_ring_counts_what_one_node_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep(&[
        "run",
        "kv-vs-relational",
        "--quick",
        "--ops",
        "300",
        "--spawn",
        "cassandra,cassandra:2",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (one, ring) = (counts_by_point(&out, "cassandra"), counts_by_point(&out, "cassandra-cluster"));
    assert!(!one.is_empty(), "the single node measured something");
    assert_eq!(one, ring, "the ring sent the same ops and found the same rows");
    for (key, [ops, ok_ops, ..]) in &ring {
        assert_eq!(ops, ok_ops, "{key}: every op of the ring succeeded");
    }
    let report = support::report(&out);
    let target = report["targets"].as_array().unwrap().iter().find(|t| t["name"] == "cassandra-cluster").expect("the ring's target");
    let url = target["url"].as_str().unwrap();
    assert!(url.starts_with("cassandra://127.0.0.2:") && url.contains(",127.0.0.3:"), "both nodes are contact points: {url}");
    assert_eq!(target["settings"]["server.spawned"], "true", "{target}");
    let nodes = target["settings"]["server.nodes"].as_str().unwrap_or_default();
    assert!(nodes.starts_with("127.0.0.2:") && nodes.contains(", 127.0.0.3:"), "{target}");
}
