//! The Redis adapter on LedisDB (`ledis://`, Redis protocol on LevelDB) against a server
//! started by dbsweep's spawn code: batches are pipelines (LedisDB has no MULTI/EXEC); the
//! pairs part runs on plain string keys (MSET/MGET; deletes and updates by script, since
//! LedisDB's DEL counts the keys given and its SET has no XX).
//!
//! Only the body's value checks run here, not `check_measured_failures`: nothing makes
//! LedisDB refuse an insert. Each data type is its own key space (a string under the key
//! set's name is no WRONGTYPE, as it is on Redis), inserts overwrite (no duplicate-key
//! error), and the spawned server cannot be made read-only or password-protected at run
//! time (no CONFIG SET; SLAVEOF needs replication). The failure accounting is the Redis
//! adapter's, which the Redis bodies check.

use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use std::sync::Arc;

async fn open() -> Arc<dyn Target> {
    let url = crate::support::url(dbsweep::servers::ServerKind::LedisDb);
    let target = registry::open("ledisdb", &TargetUrl::parse(&url).unwrap(), &OpenContext::new(std::env::temp_dir())).unwrap();
    assert_eq!(target.info().system, "ledisdb");
    target
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledisdb() {
    crate::body::check_target(open().await).await;
    crate::body::check_pairs(open().await).await;
}

// DB index 3, as the Redis lease body uses on its own server.
lease_conformance!(ledisdb_lease, |ctx: &OpenContext| {
    let mut url = url::Url::parse(&crate::support::url(dbsweep::servers::ServerKind::LedisDb)).expect("a spawned server's URL");
    url.set_path("/3");
    registry::open("ledisdb", &TargetUrl::parse(url.as_str()).unwrap(), ctx).unwrap()
});
