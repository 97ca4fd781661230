//! MariaDB (the MySQL adapter).

use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use std::sync::Arc;

/// The server under test, started by dbsweep's spawn code.
fn server_url() -> String {
    crate::support::url(dbsweep::servers::ServerKind::Mariadb)
}

async fn make() -> (Arc<dyn Target>, ()) {
    let ctx = OpenContext::new(std::env::temp_dir());
    let target = registry::open("mariadb", &TargetUrl::parse(&server_url()).unwrap(), &ctx).unwrap();
    (target, ())
}

conformance!(mariadb, make());
lease_conformance!(mariadb_lease, |ctx: &OpenContext| registry::open("mariadb", &TargetUrl::parse(&server_url()).unwrap(), ctx).unwrap());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_types_and_batches() {
    let (target, _guard) = make().await;
    super::postgres::typed::check(target).await;
}
