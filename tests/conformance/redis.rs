//! Redis adapter against a real server: MULTI/EXEC batches and plain-pipeline batches.

use crate::body::Fault;
use crate::support::faults::redis_key_set_string;
use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use std::sync::Arc;

/// The server under test, started by dbsweep's spawn code.
fn server_url() -> String {
    crate::support::url(dbsweep::servers::ServerKind::Redis)
}

/// The two bodies run in parallel, so each gets its own DB index on the one server.
async fn open(db: u32, params: &str) -> (Arc<dyn Target>, ()) {
    let mut url = url::Url::parse(&server_url()).expect("a spawned server's URL");
    url.set_path(&format!("/{db}"));
    let url = format!("{url}{params}");
    let ctx = OpenContext::new(std::env::temp_dir());
    let target = registry::open("redis", &TargetUrl::parse(&url).unwrap(), &ctx).unwrap();
    (target, ())
}

conformance!(redis_multi, open(1, ""), Fault::Custom(redis_key_set_string));
conformance!(redis_pipeline, open(2, "?batch=pipeline"), Fault::Custom(redis_key_set_string));

lease_conformance!(redis_lease, |ctx: &OpenContext| {
    let mut url = url::Url::parse(&server_url()).expect("a spawned server's URL");
    url.set_path("/3");
    registry::open("redis", &TargetUrl::parse(url.as_str()).unwrap(), ctx).unwrap()
});

/// A Redis Cluster of three masters, started by dbsweep's spawn code (`--spawn
/// redis-cluster`); the URL names its first node.
async fn open_cluster() -> (Arc<dyn Target>, ()) {
    let url = crate::support::url(dbsweep::servers::ServerKind::RedisCluster);
    let ctx = OpenContext::new(std::env::temp_dir());
    (registry::open("redis-cluster", &TargetUrl::parse(&url).unwrap(), &ctx).unwrap(), ())
}

/// The cluster's `kv` key set (hash tag `{kv}`) becomes a string: every insert gets
/// WRONGTYPE, as on one server.
fn cluster_key_set_string(target_url: String, _victim: i64) -> futures_util::future::BoxFuture<'static, ()> {
    Box::pin(async move {
        let seed = target_url.split('?').next().unwrap().to_string();
        let mut conn = redis::cluster::ClusterClient::new(vec![seed]).unwrap().get_async_connection().await.unwrap();
        let () = redis::cmd("SET").arg("dbsweep:{kv}:pk").arg("not a sorted set").query_async(&mut conn).await.unwrap();
    })
}

conformance!(redis_cluster, open_cluster(), Fault::Custom(cluster_key_set_string));
