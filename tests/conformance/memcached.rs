//! Memcached adapter against a real server.

use dbsweep::adapter::{self, OpenContext, Target, TargetUrl};
use std::sync::Arc;

/// The server under test. A missing server fails the test: it never passes silently.
// TODO(lead): switch to servers::spawn
fn server_url() -> String {
    std::env::var("DBSWEEP_TEST_MEMCACHED_URL")
        .expect("set DBSWEEP_TEST_MEMCACHED_URL=memcached://127.0.0.1:PORT to a throwaway memcached server")
}

async fn open() -> (Arc<dyn Target>, ()) {
    let ctx = OpenContext { scratch_dir: std::env::temp_dir() };
    let target = adapter::open("memcached", &TargetUrl::parse(&server_url()).unwrap(), &ctx).unwrap();
    (target, ())
}

conformance!(memcached, open());
