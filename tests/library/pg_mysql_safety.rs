//! Safety of the PostgreSQL and MariaDB adapters against real servers: they leave other
//! schemas and databases alone, refuse a `dbsweep` namespace they did not create, never
//! show a password, and report an unreachable server as a setup error (exit code 2).

use crate::support::{open, pg_client};
use dbsweep::base::table::TableDef;
use dbsweep::data::kv::{self, KvGen};
use dbsweep::error::Error;
use mysql_async::prelude::Queryable;
use std::sync::Arc;

use crate::support;

fn pg_url() -> String {
    support::url(dbsweep::servers::ServerKind::Postgres)
}

fn my_url() -> String {
    support::url(dbsweep::servers::ServerKind::Mariadb)
}

/// MariaDB tests share the server-wide `dbsweep` database, so they take turns.
static MARIADB: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn with_path(base: &str, path: &str) -> String {
    let mut url = url::Url::parse(base).unwrap();
    url.set_path(path);
    url.to_string()
}

fn lineitem_def() -> Arc<TableDef> {
    Arc::new(TableDef { name: "lineitem".into(), ..kv::table_def() })
}

/// A fresh database of this test's own on the PostgreSQL server, so tests do not share
/// the `dbsweep` schema; returns its URL.
async fn fresh_pg_database(name: &str) -> String {
    let admin = pg_client(&pg_url()).await;
    admin.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
    admin.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
    with_path(&pg_url(), name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_other_schemas_survive_prepare_and_cleanup() {
    let url = fresh_pg_database("dbsweep_safety_public").await;
    let db = pg_client(&url).await;
    db.batch_execute(
        "CREATE TABLE public.lineitem (l_id BIGINT PRIMARY KEY, note TEXT); INSERT INTO public.lineitem VALUES (1, 'keep me')",
    )
    .await
    .unwrap();
    let table = lineitem_def();
    for layout in ["row", "hstore", "jsonb"] {
        let target = open("pg", &format!("{url}?layout={layout}"));
        target.prepare(std::slice::from_ref(&table)).await.expect("prepare");
        let rowgen = KvGen::new(1, 10, 8);
        assert_eq!(target.load(&table, Box::new((0..10).map(move |k| rowgen.row(k)))).await.unwrap(), 10);
        assert_eq!(target.count_rows(&table).await.unwrap(), 10);
        let info = target.info();
        assert!(info.version.starts_with("15"), "version: {}", info.version);
        for key in ["layout", "fsync", "synchronous_commit", "shared_buffers", "isolation"] {
            assert!(info.settings.contains_key(key), "{key} missing from {:?}", info.settings);
        }
        assert_eq!(info.settings["layout"], layout);
        target.cleanup().await.expect("cleanup");
        let rows = db.query("SELECT l_id, note FROM public.lineitem", &[]).await.unwrap();
        assert_eq!(rows.len(), 1, "public.lineitem lost or gained rows ({layout})");
        assert_eq!((rows[0].get::<_, i64>(0), rows[0].get::<_, String>(1)), (1, "keep me".to_string()));
        let schema = db.query("SELECT 1 FROM pg_namespace WHERE nspname = 'dbsweep'", &[]).await.unwrap();
        assert!(schema.is_empty(), "cleanup left dbsweep's own empty schema behind ({layout})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_unmarked_dbsweep_schema_is_refused_and_left_intact() {
    let url = fresh_pg_database("dbsweep_safety_unmarked").await;
    let db = pg_client(&url).await;
    db.batch_execute("CREATE SCHEMA dbsweep; CREATE TABLE dbsweep.kv (x INT); INSERT INTO dbsweep.kv VALUES (42)").await.unwrap();
    for (layout, comment) in [("row", None), ("hstore", Some("someone else's")), ("jsonb", None)] {
        if let Some(c) = comment {
            db.batch_execute(&format!("COMMENT ON SCHEMA dbsweep IS '{}'", c.replace('\'', "''"))).await.unwrap();
        }
        let target = open("pg", &format!("{url}?layout={layout}"));
        let err = target.prepare(&[kv::shared_def()]).await.expect_err("prepare must refuse an unmarked schema");
        assert!(matches!(err, Error::NotOwned { .. }), "{err:?}");
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("schema dbsweep"), "{err}");
        target.cleanup().await.expect("cleanup of nothing");
        let rows = db.query("SELECT x FROM dbsweep.kv", &[]).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].get::<_, i32>(0), 42);
    }
    let ext = db.query("SELECT 1 FROM pg_extension WHERE extname = 'hstore'", &[]).await.unwrap();
    assert!(ext.is_empty(), "a refused prepare installed hstore");
}

async fn my_conn() -> mysql_async::Conn {
    mysql_async::Conn::from_url(my_url()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_unmarked_dbsweep_database_is_refused_and_left_intact() {
    let _turn = MARIADB.lock().await;
    let mut conn = my_conn().await;
    let existing: Vec<String> =
        conn.query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'dbsweep'").await.unwrap();
    let databases: Vec<String> = conn.query("SHOW DATABASES LIKE 'dbsweep'").await.unwrap();
    assert!(
        databases.is_empty() || existing == ["precious"],
        "the test server already has a database dbsweep ({existing:?}); use a throwaway server"
    );
    conn.query_drop("DROP DATABASE IF EXISTS dbsweep").await.unwrap();
    conn.query_drop("CREATE DATABASE dbsweep").await.unwrap();
    conn.query_drop("CREATE TABLE dbsweep.precious (x INT)").await.unwrap();
    conn.query_drop("INSERT INTO dbsweep.precious VALUES (42)").await.unwrap();

    let target = open("maria", &my_url());
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("prepare must refuse an unmarked database");
    assert!(matches!(err, Error::NotOwned { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("database dbsweep"), "{err}");
    target.cleanup().await.expect("cleanup of nothing");

    let left: Vec<i32> = conn.query("SELECT x FROM dbsweep.precious").await.unwrap();
    assert_eq!(left, [42]);
    let tables: Vec<String> = conn.query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'dbsweep'").await.unwrap();
    assert_eq!(tables, ["precious"], "prepare created tables in a database it does not own");
    // The test created this database; it removes it again.
    conn.query_drop("DROP DATABASE dbsweep").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_other_databases_survive_prepare_and_cleanup() {
    let _turn = MARIADB.lock().await;
    let mut conn = my_conn().await;
    conn.query_drop("DROP DATABASE IF EXISTS dbsweep_safety_other").await.unwrap();
    conn.query_drop("CREATE DATABASE dbsweep_safety_other").await.unwrap();
    conn.query_drop("CREATE TABLE dbsweep_safety_other.lineitem (l_id BIGINT PRIMARY KEY, note TEXT)").await.unwrap();
    conn.query_drop("INSERT INTO dbsweep_safety_other.lineitem VALUES (1, 'keep me')").await.unwrap();

    let table = lineitem_def();
    let target = open("maria", &my_url());
    target.prepare(std::slice::from_ref(&table)).await.expect("prepare");
    let rowgen = KvGen::new(1, 2500, 8);
    // More than one bulk-load chunk, and a partial last one.
    assert_eq!(target.load(&table, Box::new((0..2500).map(move |k| rowgen.row(k)))).await.unwrap(), 2500);
    assert_eq!(target.count_rows(&table).await.unwrap(), 2500);
    let info = target.info();
    assert_eq!(info.system, "mariadb");
    assert!(info.version.contains("MariaDB"), "{}", info.version);
    for key in ["innodb_flush_log_at_trx_commit", "isolation", "binlog"] {
        assert!(info.settings.contains_key(key), "{key} missing from {:?}", info.settings);
    }
    target.cleanup().await.expect("cleanup");

    let rows: Vec<(i64, String)> = conn.query("SELECT l_id, note FROM dbsweep_safety_other.lineitem").await.unwrap();
    assert_eq!(rows, [(1, "keep me".to_string())]);
    let ours: Vec<String> = conn.query("SHOW DATABASES LIKE 'dbsweep'").await.unwrap();
    assert!(ours.is_empty(), "cleanup left dbsweep's own empty database behind");
    conn.query_drop("DROP DATABASE dbsweep_safety_other").await.unwrap();
}

const CANARY: &str = "Canary-pw-7f3a9";

fn assert_no_canary(text: &str) {
    assert!(!text.contains(CANARY), "password leaked: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_never_appear_in_info_or_errors() {
    let _turn = MARIADB.lock().await;
    // PostgreSQL (the test server trusts local logins, so the password is accepted).
    let mut pg = url::Url::parse(&pg_url()).unwrap();
    pg.set_password(Some(CANARY)).unwrap();
    let target = open("pg", pg.as_str());
    assert_no_canary(&format!("{:?}", target.info()));
    let url = fresh_pg_database("dbsweep_safety_canary").await;
    let mut pg = url::Url::parse(&url).unwrap();
    pg.set_password(Some(CANARY)).unwrap();
    let target = open("pg", pg.as_str());
    target.prepare(&[kv::shared_def()]).await.unwrap();
    assert_no_canary(&format!("{:?}", target.info()));
    target.cleanup().await.unwrap();
    // A missing database fails at login; its error must not carry the password either.
    pg.set_path("no_such_database");
    let err = open("pg", pg.as_str()).prepare(&[kv::shared_def()]).await.expect_err("missing database");
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    assert_no_canary(&format!("{err} {err:?}"));

    // MariaDB: root has no password on the test server, so the canary is refused.
    let mut my = url::Url::parse(&my_url()).unwrap();
    my.set_password(Some(CANARY)).unwrap();
    let target = open("maria", my.as_str());
    assert_no_canary(&format!("{:?}", target.info()));
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("wrong password must fail");
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("refused login"), "{err}");
    assert_no_canary(&format!("{err} {err:?}"));
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_servers_are_setup_errors() {
    for scheme in ["postgres", "mysql"] {
        let port = closed_port();
        let target = open("down", &format!("{scheme}://u:{CANARY}@127.0.0.1:{port}/x"));
        let err = target.prepare(&[kv::shared_def()]).await.expect_err("nothing listens there");
        assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
        assert_eq!(err.exit_code(), 2);
        let text = err.to_string();
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
        assert!(!text.contains('\n'), "one line: {text}");
        assert_no_canary(&format!("{err} {err:?}"));
        assert!(target.connect().await.is_err());
    }
}

/// A server out of connection slots is a run failure (exit 1) that says so and names the
/// fix, not a URL to correct: PostgreSQL answers a role at its CONNECTION LIMIT with the
/// same "too many connections" error (53300) as a full server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_too_many_clients_is_named_with_the_fix() {
    let admin = pg_client(&pg_url()).await;
    admin.batch_execute("DROP ROLE IF EXISTS dbsweep_full; CREATE ROLE dbsweep_full LOGIN CONNECTION LIMIT 0").await.unwrap();
    let mut url = url::Url::parse(&pg_url()).unwrap();
    url.set_username("dbsweep_full").unwrap();
    let target = open("full", url.as_str());
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("no connection slot is free");
    let text = err.to_string();
    assert_eq!(err.exit_code(), 1, "{text}");
    assert!(text.contains("too many clients") && text.contains("max_connections") && text.contains("--clients"), "{text}");
    assert!(!text.contains("fix the URL"), "{text}");
}
