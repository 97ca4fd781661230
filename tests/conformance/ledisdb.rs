//! The Redis adapter on LedisDB (`ledis://`, Redis protocol on LevelDB) against a server
//! started by dbsweep's spawn code: batches are pipelines (LedisDB has no MULTI/EXEC).

use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use std::sync::Arc;

async fn open() -> (Arc<dyn Target>, ()) {
    let url = crate::support::url(dbsweep::servers::ServerKind::LedisDb);
    let target = registry::open("ledisdb", &TargetUrl::parse(&url).unwrap(), &OpenContext { scratch_dir: std::env::temp_dir() }).unwrap();
    assert_eq!(target.info().system, "ledisdb");
    (target, ())
}

conformance!(ledisdb, open());
