//! Cassandra adapter against a real single-node server started by dbsweep's spawn code:
//! the default (IF EXISTS lightweight transactions) and `?affected=read`, each in its own
//! keyspace on the one server; and against a spawned two-node ring (`--spawn
//! cassandra:2`, both nodes as contact points, replication factor 2), opt-in because it
//! needs two more JVMs (~1.5 GB) and minutes to start:
//! `cargo test --test conformance cassandra_cluster -- --ignored`.

use crate::body::Fault;
use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use futures_util::future::BoxFuture;
use std::sync::Arc;

/// The server under test, started by dbsweep's spawn code.
fn server_url() -> String {
    crate::support::url(dbsweep::servers::ServerKind::Cassandra)
}

async fn open(keyspace: &str, params: &str) -> (Arc<dyn Target>, ()) {
    let url = format!("{}/{keyspace}{params}", server_url());
    let ctx = OpenContext::new(std::env::temp_dir());
    let target = registry::open("cassandra", &TargetUrl::parse(&url).unwrap(), &ctx).unwrap();
    (target, ())
}

conformance!(cassandra_lwt, open("dbsweep", ""), Fault::Custom(drop_table));
conformance!(cassandra_read_then_write, open("dbsweep_read", "?affected=read"), Fault::Custom(drop_table));
conformance!(
    cassandra_cluster_rf2,
    open_cluster("dbsweep", "?replication_factor=2"),
    Fault::Custom(drop_table),
    #[ignore = "opt-in: a two-node Cassandra ring (~1.5 GB, minutes to start); run with --ignored"]
);

/// The spawned two-node ring; the URL names both nodes.
async fn open_cluster(keyspace: &str, params: &str) -> (Arc<dyn Target>, ()) {
    let url = format!("{}/{keyspace}{params}", crate::support::url(dbsweep::servers::ServerKind::CassandraCluster));
    assert!(url.starts_with("cassandra://127.0.0.2:") && url.contains(",127.0.0.3:"), "{url}");
    let ctx = OpenContext::new(std::env::temp_dir());
    (registry::open("cassandra-cluster", &TargetUrl::parse(&url).unwrap(), &ctx).unwrap(), ())
}

/// Cassandra overwrites a repeated key, so the table is dropped under the run from another
/// session: every insert batch is refused by the server.
fn drop_table(target_url: String, _victim: i64) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let url = TargetUrl::parse(&target_url).unwrap();
        let nodes = url.hosts().into_iter().map(|(host, port)| format!("{host}:{}", port.unwrap()));
        let keyspace = url.database().unwrap();
        let session = scylla::client::session_builder::SessionBuilder::new().known_nodes(nodes).build().await.unwrap();
        session.query_unpaged(format!("DROP TABLE {keyspace}.kv"), ()).await.unwrap();
    })
}
// No keyspace in the URL: the namespace's (`dbsweep_lease_check`).
lease_conformance!(cassandra_lease, |ctx: &OpenContext| registry::open("cassandra", &TargetUrl::parse(&server_url()).unwrap(), ctx)
    .unwrap());
