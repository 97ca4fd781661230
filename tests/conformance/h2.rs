//! H2 (its PostgreSQL-protocol server, in-memory database), started by dbsweep's own spawn
//! code: the shared body, typed values and batches, the ownership marker, the settings
//! the spawn records, and what the engine reports as its memory.

use crate::support;
use crate::support::open;
use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use dbsweep::error::Error;
use dbsweep::servers::{self, ServerKind, SpawnOptions};
use std::sync::Arc;

/// A target on this test binary's H2 server, in its own in-memory database (tests run
/// in parallel, and each owns the `dbsweep` schema of its database).
async fn make_in(database: &str) -> (Arc<dyn Target>, ()) {
    let url = crate::support::url(ServerKind::H2);
    let base = url.strip_suffix("/mem:dbsweep").expect("the spawned server's URL names mem:dbsweep");
    (open("h2", &format!("{base}/mem:{database}")), ())
}

conformance!(h2, make_in("conformance"));
lease_conformance!(h2_lease, |ctx: &OpenContext| {
    let url = crate::support::url(ServerKind::H2).replace("/mem:dbsweep", "/mem:lease");
    registry::open("h2", &TargetUrl::parse(&url).unwrap(), ctx).unwrap()
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_types_and_batches() {
    let (target, _) = make_in("typed").await;
    super::postgres::typed::check(target).await;
}

/// The spawn's URL, version and settings; the engine's memory grows with the data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_spawn_settings_and_engine_memory() {
    let server = support::spawn(ServerKind::H2).await;
    assert!(server.version().starts_with("H2 2."), "{}", server.version());
    let heap = std::env::var("DBSWEEP_H2_HEAP").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "2g".into());
    assert_eq!(server.settings()["heap_max"], format!("{heap} (-Xmx; DBSWEEP_H2_HEAP)"));
    assert!(server.settings()["database"].contains("in-memory"), "{:?}", server.settings());
    assert!(
        server.settings().get("java").is_some_and(|java| java.chars().next().is_some_and(|c| c.is_ascii_digit())),
        "{:?}",
        server.settings()
    );
    let url = server.url();
    assert_eq!(url, format!("h2://sa@127.0.0.1:{}/mem:dbsweep", server.port()));
    assert_eq!(server.targets(), vec![("h2".to_string(), url.clone())]);
    let target = open("h2", &url);
    let table = dbsweep::data::kv::shared_def();
    target.prepare(std::slice::from_ref(&table)).await.unwrap();
    assert!(target.info().version.starts_with("H2 2."), "{}", target.info().version);
    let empty = target.engine_memory().await.unwrap().expect("H2 reports memory");
    assert!(empty.source.contains("MEMORY_USED"), "{}", empty.source);
    let rows = 50_000;
    let rowgen = dbsweep::data::kv::KvGen::new(7, rows, 200);
    assert_eq!(target.load(&table, Box::new((0..rows as i64).map(move |k| rowgen.row(k)))).await.unwrap(), rows);
    let full = target.engine_memory().await.unwrap().unwrap();
    eprintln!("h2 engine memory: {} bytes empty, {} bytes with {rows} rows ({})", empty.bytes, full.bytes, full.source);
    // 50,000 rows of a 200-byte payload: at least 10 MB more live heap.
    assert!(full.bytes > empty.bytes + 10_000_000, "heap {} -> {} bytes", empty.bytes, full.bytes);
    target.cleanup().await.unwrap();
    let dir = server.data_dir().to_path_buf();
    server.stop().await.unwrap();
    assert!(!dir.exists());
}

/// TPC-H SF 0.01: every table loads completely (multi-row INSERTs) and Q1, Q3, Q6, Q14
/// agree with the reference answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_tpch_sf001() {
    crate::body::check_tpch_sf001(make_in("tpch").await.0).await;
}

/// A `dbsweep` schema dbsweep did not create (no marker comment) is refused and kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_refuses_a_foreign_schema() {
    let url = crate::support::url(ServerKind::H2);
    let port = TargetUrl::parse(&url).unwrap().port().unwrap();
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(port).user("sa").password("").dbname("mem:foreign;DB_CLOSE_DELAY=-1");
    let (client, conn) = config.connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client.batch_execute("CREATE SCHEMA dbsweep; CREATE TABLE dbsweep.kv (k BIGINT PRIMARY KEY)").await.unwrap();
    client.batch_execute("INSERT INTO dbsweep.kv VALUES (1)").await.unwrap();
    let (target, _) = make_in("foreign").await;
    let err = target.prepare(&[dbsweep::data::kv::shared_def()]).await.unwrap_err();
    assert!(matches!(err, Error::NotOwned { .. }), "{err}");
    assert!(err.to_string().contains("dbsweep-owned"), "{err}");
    target.cleanup().await.unwrap();
    let n: i64 = client.query_one("SELECT COUNT(*) FROM dbsweep.kv", &[]).await.unwrap().get(0);
    assert_eq!(n, 1, "the foreign table and its row are kept");
}

/// Without java the spawn fails with `Missing`, naming the setup script (a missing jar:
/// the unit tests of `servers::h2`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_missing_java_names_the_setup_script() {
    let empty = tempfile::tempdir().unwrap();
    let err =
        servers::spawn_with_search_path(ServerKind::H2, &SpawnOptions::default(), Some(&[empty.path().to_path_buf()])).await.unwrap_err();
    assert!(matches!(err, Error::Missing(_)), "{err}");
    assert!(err.to_string().contains("scripts/setup-servers"), "{err}");
}
