//! MariaDB (the MySQL adapter).

use dbsweep::adapter::{self, OpenContext, Target, TargetUrl};
use std::sync::Arc;

/// The server under test.
// TODO(lead): switch to servers::spawn (ServerKind::Mariadb) and return the Server as the guard.
fn server_url() -> String {
    std::env::var("DBSWEEP_TEST_MYSQL_URL")
        .expect("set DBSWEEP_TEST_MYSQL_URL=mysql://root@127.0.0.1:PORT/ to a running MariaDB")
}

async fn make() -> (Arc<dyn Target>, ()) {
    let ctx = OpenContext { scratch_dir: std::env::temp_dir() };
    let target = adapter::open("mariadb", &TargetUrl::parse(&server_url()).unwrap(), &ctx).unwrap();
    (target, ())
}

conformance!(mariadb, make());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_types_and_batches() {
    let (target, _guard) = make().await;
    super::postgres::typed::check(target).await;
}
