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

/// Pauses every client of the server for `ms` (other tests' requests only wait).
async fn pause_clients(url: &str, ms: u64) {
    let mut admin = redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap();
    let () = redis::cmd("CLIENT").arg("PAUSE").arg(ms).arg("ALL").query_async(&mut admin).await.unwrap();
}

/// A request dropped before its reply (the runner's per-op timeout) leaves the client's
/// connection in step: the next requests get their own replies, not the abandoned one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_dropped_before_its_reply_leaves_the_next_ones_their_own_replies() {
    use dbsweep::base::op::Op;
    use dbsweep::data::kv::{self, KvGen};
    let (target, ()) = open(4, "").await;
    let table = kv::shared_def();
    target.prepare(std::slice::from_ref(&table)).await.expect("prepare");
    let rowgen = KvGen::new(7, 100, 24);
    assert_eq!(target.load(&table, Box::new((0..100).map(move |k| rowgen.row(k)))).await.expect("load"), 100);
    let mut conn = target.connect().await.expect("connect");
    let missing = Op::Get { table: 0, key: 1_000 };
    let existing = |key| Op::Get { table: 0, key };
    let drop_unanswered = async |conn: &mut Box<dyn dbsweep::adapter::Connection>, ops: &[Op]| {
        pause_clients(&server_url(), 300).await;
        let mut request = if ops.len() == 1 { conn.execute(&ops[0]) } else { conn.execute_batch(ops) };
        assert!(futures_util::poll!(&mut request).is_pending(), "the paused server cannot have answered");
    };
    drop_unanswered(&mut conn, std::slice::from_ref(&missing)).await;
    assert_eq!(conn.execute(&existing(17)).await.unwrap().rows, 1);
    assert_eq!(conn.execute(&missing).await.unwrap().rows, 0);
    let sixteen: Vec<Op> = (0..16).map(existing).collect();
    drop_unanswered(&mut conn, &sixteen).await;
    assert_eq!(conn.execute(&missing).await.unwrap().rows, 0);
    assert_eq!(conn.execute_batch(&sixteen).await.unwrap().rows, 16);
    drop_unanswered(&mut conn, &[missing.clone(), missing.clone()]).await;
    drop_unanswered(&mut conn, std::slice::from_ref(&missing)).await;
    assert_eq!(conn.execute_batch(&sixteen[..3]).await.unwrap().rows, 3);
    drop(conn);
    target.cleanup().await.expect("cleanup");
}
