//! PostgreSQL in its three layouts; all three share one server (and dbsweep's schema).

use dbsweep::adapter::{self, OpenContext, Target, TargetUrl};
use std::sync::Arc;

/// The server under test.
// TODO(lead): switch to servers::spawn (ServerKind::Postgres) and return the Server as the guard.
fn server_url() -> String {
    std::env::var("DBSWEEP_TEST_POSTGRES_URL")
        .expect("set DBSWEEP_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:PORT/postgres to a running PostgreSQL 15")
}

async fn make(layout: &str) -> (Arc<dyn Target>, ()) {
    let url = format!("{}?layout={layout}", server_url());
    let ctx = OpenContext { scratch_dir: std::env::temp_dir() };
    let target = adapter::open(&format!("pg-{layout}"), &TargetUrl::parse(&url).unwrap(), &ctx).unwrap();
    (target, ())
}

conformance!(pg_row, make("row"));
conformance!(pg_hstore, make("hstore"));
conformance!(pg_jsonb, make("jsonb"));
