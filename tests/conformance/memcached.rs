//! Memcached adapter against a real server.

use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use std::sync::Arc;

/// The server under test, started by dbsweep's spawn code.
fn server_url() -> String {
    crate::support::url(dbsweep::servers::ServerKind::Memcached)
}

async fn open() -> (Arc<dyn Target>, ()) {
    let ctx = OpenContext::new(std::env::temp_dir());
    let target = registry::open("memcached", &TargetUrl::parse(&server_url()).unwrap(), &ctx).unwrap();
    (target, ())
}

conformance!(memcached, open());
lease_conformance!(memcached_lease, |ctx: &OpenContext| registry::open("memcached", &TargetUrl::parse(&server_url()).unwrap(), ctx)
    .unwrap());
