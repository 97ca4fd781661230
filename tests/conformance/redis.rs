//! Redis adapter against a real server: MULTI/EXEC batches and plain-pipeline batches.

use dbsweep::adapter::{self, OpenContext, Target, TargetUrl};
use std::sync::Arc;

/// The server under test. A missing server fails the test: it never passes silently.
// TODO(lead): switch to servers::spawn
fn server_url() -> String {
    std::env::var("DBSWEEP_TEST_REDIS_URL").expect("set DBSWEEP_TEST_REDIS_URL=redis://127.0.0.1:PORT/DB to a throwaway Redis server")
}

/// The two bodies run in parallel, so each gets its own DB index on the one server.
async fn open(db: u32, params: &str) -> (Arc<dyn Target>, ()) {
    let mut url = url::Url::parse(&server_url()).expect("DBSWEEP_TEST_REDIS_URL is not a URL");
    url.set_path(&format!("/{db}"));
    let url = format!("{url}{params}");
    let ctx = OpenContext { scratch_dir: std::env::temp_dir() };
    let target = adapter::open("redis", &TargetUrl::parse(&url).unwrap(), &ctx).unwrap();
    (target, ())
}

conformance!(redis_multi, open(1, ""));
conformance!(redis_pipeline, open(2, "?batch=pipeline"));
