//! Cassandra adapter against a real single-node server started by dbsweep's spawn code:
//! the default (IF EXISTS lightweight transactions) and `?affected=read`, each in its own
//! keyspace on the one server.

use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
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

conformance!(cassandra_lwt, open("dbsweep", ""));
conformance!(cassandra_read_then_write, open("dbsweep_read", "?affected=read"));
// No keyspace in the URL: the namespace's (`dbsweep_lease_check`).
lease_conformance!(cassandra_lease, |ctx: &OpenContext| registry::open("cassandra", &TargetUrl::parse(&server_url()).unwrap(), ctx)
    .unwrap());
