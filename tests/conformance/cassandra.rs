//! Cassandra adapter against a real single-node server started by dbsweep's spawn code:
//! the default (IF EXISTS lightweight transactions) and `?affected=read`, each in its own
//! keyspace on the one server.

use crate::body::Fault;
use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use futures_util::future::BoxFuture;
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

conformance!(cassandra_lwt, open("dbsweep", ""), Fault::Custom(drop_table));
conformance!(cassandra_read_then_write, open("dbsweep_read", "?affected=read"), Fault::Custom(drop_table));

/// Cassandra overwrites a repeated key, so the table is dropped under the run from another
/// session: every insert batch is refused by the server.
fn drop_table(target_url: String, _victim: i64) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let url = url::Url::parse(&target_url).unwrap();
        let node = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
        let keyspace = url.path().trim_start_matches('/').to_string();
        let session = scylla::client::session_builder::SessionBuilder::new().known_node(node).build().await.unwrap();
        session.query_unpaged(format!("DROP TABLE {keyspace}.kv"), ()).await.unwrap();
    })
}
// No keyspace in the URL: the namespace's (`dbsweep_lease_check`).
lease_conformance!(cassandra_lease, |ctx: &OpenContext| registry::open("cassandra", &TargetUrl::parse(&server_url()).unwrap(), ctx)
    .unwrap());
