//! HyPer (hyperd from the tableauhyperapi wheel), started by dbsweep's own spawn code: the
//! shared body, typed values and batches, the ownership marker, and TPC-H SF 0.01 (load
//! all tables, Q1/Q3/Q6/Q14 against the reference answers).

use crate::body::Fault;
use crate::support;
use crate::support::open;
use dbsweep::adapter::Target;
use dbsweep::error::Error;
use dbsweep::servers::{self, Server, ServerKind, SpawnOptions};
use futures_util::future::BoxFuture;
use std::sync::Arc;

async fn make() -> (Arc<dyn Target>, Server) {
    let server = support::spawn(ServerKind::Hyper).await;
    (open("hyper", &server.url()), server)
}

conformance!(hyper, make(), Fault::Custom(drop_table));

/// HyPer has no primary keys (a repeated key is stored twice), so the table is dropped
/// under the run from another connection: every insert batch is refused by the server.
fn drop_table(target_url: String, _victim: i64) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let url = url::Url::parse(&target_url).unwrap();
        let mut config = tokio_postgres::Config::new();
        config.host(url.host_str().unwrap()).port(url.port().unwrap()).user(url.username()).dbname(url.path());
        let (client, conn) = config.connect(tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(conn);
        client.batch_execute("DROP TABLE \"dbsweep\".\"kv\"").await.unwrap();
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyper_types_and_batches() {
    let (target, _server) = make().await;
    super::postgres::typed::check(target).await;
}

/// The spawned server answers, reports its version, and leaves nothing behind; the
/// adapter's database file lives in the server's directory and goes away on cleanup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyper_spawn_and_cleanup() {
    let server = support::spawn(ServerKind::Hyper).await;
    assert!(server.version().starts_with("hyper main."), "{}", server.version());
    assert_eq!(server.settings()["indexes"], "none (HyPer has none)");
    let url = server.url();
    assert!(url.starts_with("hyper://tableau_internal_user@127.0.0.1:"), "{url}");
    let file = server.data_dir().join("dbsweep.hyper");
    assert!(url.ends_with(&file.display().to_string()), "{url}");
    let target = open("hyper", &url);
    let table = dbsweep::data::kv::shared_def();
    target.prepare(std::slice::from_ref(&table)).await.unwrap();
    assert!(file.exists());
    assert!(target.info().version.starts_with("hyper main."), "{}", target.info().version);
    target.cleanup().await.unwrap();
    assert!(!file.exists(), "cleanup removes dbsweep's database file");
    let dir = server.data_dir().to_path_buf();
    server.stop().await.unwrap();
    assert!(!dir.exists());
}

/// A database file dbsweep did not create (no marker) is refused and left intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyper_refuses_a_foreign_database_file() {
    let server = support::spawn(ServerKind::Hyper).await;
    let path = server.data_dir().join("foreign.hyper");
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(server.port()).user("tableau_internal_user");
    let (client, conn) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.batch_execute(&format!("CREATE DATABASE \"{}\"", path.display())).await.unwrap();
    drop(client);
    let url = format!("hyper://tableau_internal_user@127.0.0.1:{}{}", server.port(), path.display());
    let target = open("foreign", &url);
    let err = target.prepare(&[dbsweep::data::kv::shared_def()]).await.unwrap_err();
    assert!(matches!(err, Error::NotOwned { .. }), "{err}");
    assert!(err.to_string().contains("dbsweep_owner"), "{err}");
    target.cleanup().await.unwrap();
    assert!(path.exists(), "a foreign file is never removed");
}

/// TPC-H SF 0.01: every table loads completely and Q1, Q3, Q6, Q14 agree with the reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyper_tpch_sf001() {
    let (target, _server) = make().await;
    crate::body::check_tpch_sf001(target).await;
}

/// Without hyperd the spawn fails with `Missing`, naming the setup script.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyper_missing_hyperd_names_the_setup_script() {
    let empty = tempfile::tempdir().unwrap();
    let err = servers::spawn_with_search_path(ServerKind::Hyper, &SpawnOptions::default(), Some(&[empty.path().to_path_buf()]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Missing(_)), "{err}");
    assert!(err.to_string().contains("scripts/setup-servers"), "{err}");
}
