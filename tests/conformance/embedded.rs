//! Embedded and in-process adapters.

use dbsweep::adapter::{self, OpenContext, Target, TargetUrl};
use std::sync::Arc;

async fn open(url: &str) -> (Arc<dyn Target>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = OpenContext { scratch_dir: dir.path().to_path_buf() };
    let target = adapter::open("t", &TargetUrl::parse(url).unwrap(), &ctx).unwrap();
    (target, dir)
}

conformance!(mock, open("mock:"));
conformance!(sqlite, open("sqlite:"));
conformance!(redb, open("redb:"));
conformance!(duckdb, open("duckdb:"));
