//! Safety of the Cassandra adapter against a real server: a same-named keyspace or table
//! dbsweep did not create is refused with `NotOwned` and survives `prepare` and `cleanup`;
//! an unreachable server is a setup error.

use dbsweep::base::table::TableDef;
use dbsweep::data::kv;
use dbsweep::error::Error;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use std::sync::Arc;

use crate::support;

fn server_url() -> String {
    support::url(dbsweep::servers::ServerKind::Cassandra)
}

async fn client(url: &str) -> Session {
    let node = url.trim_start_matches("cassandra://");
    SessionBuilder::new().known_node(node).build().await.expect("a CQL session")
}

async fn cql(session: &Session, text: &str) {
    session.query_unpaged(text, ()).await.unwrap_or_else(|e| panic!("{text}: {e}"));
}

/// The `v` values of `ks.t`, sorted.
async fn values(session: &Session, table: &str) -> Vec<String> {
    let rows = session.query_unpaged(format!("SELECT v FROM {table}"), ()).await.unwrap().into_rows_result().unwrap();
    let mut out: Vec<String> = rows.rows::<(String,)>().unwrap().map(|r| r.unwrap().0).collect();
    out.sort();
    out
}

async fn keyspace_exists(session: &Session, ks: &str) -> bool {
    let rows = session
        .query_unpaged("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?", (ks,))
        .await
        .unwrap()
        .into_rows_result()
        .unwrap();
    rows.rows_num() == 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_keyspace_of_the_same_name_is_refused_and_survives() {
    let base = server_url();
    let session = client(&base).await;
    cql(&session, "CREATE KEYSPACE foreign_ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").await;
    cql(&session, "CREATE TABLE foreign_ks.kv (k bigint PRIMARY KEY, v text)").await;
    cql(&session, "INSERT INTO foreign_ks.kv (k, v) VALUES (1, 'theirs')").await;

    let target = support::open("cassandra", &format!("{base}/foreign_ks"));
    let err = target.prepare(&[kv::shared_def()]).await.unwrap_err();
    assert!(matches!(err, Error::NotOwned { .. }), "{err}");
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("foreign_ks") && err.to_string().contains("dbsweep_owner"), "{err}");
    target.cleanup().await.expect("cleanup of a keyspace that is not ours does nothing");
    assert_eq!(values(&session, "foreign_ks.kv").await, ["theirs"]);
    cql(&session, "DROP KEYSPACE foreign_ks").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_table_in_dbsweeps_keyspace_is_refused_and_survives() {
    let base = server_url();
    let session = client(&base).await;
    let target = support::open("cassandra", &format!("{base}/dbsweep_mixed"));
    let ours = Arc::new(TableDef { name: "ours".into(), ..kv::table_def() });
    target.prepare(std::slice::from_ref(&ours)).await.expect("prepare creates the keyspace");
    // Someone else adds a table named like dbsweep's kv table to the keyspace.
    cql(&session, "CREATE TABLE dbsweep_mixed.kv (k bigint PRIMARY KEY, v text)").await;
    cql(&session, "INSERT INTO dbsweep_mixed.kv (k, v) VALUES (1, 'theirs')").await;

    let err = target.prepare(&[kv::shared_def()]).await.unwrap_err();
    assert!(matches!(err, Error::NotOwned { .. }), "{err}");
    assert!(err.to_string().contains("dbsweep_mixed.kv"), "{err}");
    assert_eq!(values(&session, "dbsweep_mixed.kv").await, ["theirs"]);

    // Cleanup drops dbsweep's own table but keeps the foreign one, hence the keyspace.
    target.cleanup().await.expect("cleanup");
    assert_eq!(values(&session, "dbsweep_mixed.kv").await, ["theirs"]);
    assert!(session.query_unpaged("SELECT * FROM dbsweep_mixed.ours", ()).await.is_err(), "dbsweep's table was not dropped");
    assert!(keyspace_exists(&session, "dbsweep_mixed").await);
    cql(&session, "DROP KEYSPACE dbsweep_mixed").await;

    // With nothing foreign in it, cleanup removes the whole keyspace.
    let target = support::open("cassandra", &format!("{base}/dbsweep_alone"));
    target.prepare(std::slice::from_ref(&ours)).await.expect("prepare");
    assert!(keyspace_exists(&session, "dbsweep_alone").await);
    target.cleanup().await.expect("cleanup");
    assert!(!keyspace_exists(&session, "dbsweep_alone").await);
}

#[tokio::test]
async fn an_unreachable_server_is_a_setup_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let target = support::open("cassandra", &format!("cassandra://127.0.0.1:{port}"));
    let err = target.prepare(&[kv::shared_def()]).await.unwrap_err();
    assert!(matches!(err, Error::Unreachable { .. }), "{err}");
    assert_eq!(err.exit_code(), 2);
}

/// A spawned node answers CQL as Cassandra 5.0, records its settings, and `stop` ends the
/// JVM and removes its data directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawned_node_answers_cql_and_stops_cleanly() {
    use dbsweep::servers::ServerKind;
    let started = std::time::Instant::now();
    let server = support::spawn(ServerKind::Cassandra).await;
    eprintln!("cassandra {} answered CQL after {:?}", server.version(), started.elapsed());
    assert!(server.version().starts_with("5.0."), "{}", server.version());
    assert_eq!(server.url(), format!("cassandra://127.0.0.1:{}", server.port()));
    let settings = server.settings();
    assert_eq!(settings["commitlog_sync"], "periodic");
    assert!(settings["heap"].starts_with("-Xms2g -Xmx2g"), "{settings:?}");
    assert_eq!(settings["num_tokens"], "1");
    let session = client(&server.url()).await;
    let rows = session.query_unpaged("SELECT cluster_name FROM system.local", ()).await.unwrap().into_rows_result().unwrap();
    assert_eq!(rows.single_row::<(String,)>().unwrap().0, "dbsweep");
    drop(session);
    let (pid, dir, port) = (server.pid(), server.data_dir().to_path_buf(), server.port());
    assert!(dir.join("commitlog").is_dir());
    server.stop().await.unwrap();
    assert!(!dir.exists(), "data dir left behind");
    // SAFETY: signal 0 only checks whether the process exists.
    assert_eq!(unsafe { libc::kill(pid as i32, 0) }, -1, "the JVM is still alive");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "CQL port still open");
}

/// All eight TPC-H tables (Decimal, Date and Text columns, keys from 0) load with the right
/// row counts, gets find generated keys, and a range MAX over lineitem's indexed
/// `l_orderkey` returns a Decimal and a Date equal to the generator's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_tables_load_and_typed_values_come_back() {
    use dbsweep::base::op::{Answer, Op, RangeAgg};
    use dbsweep::base::table::Value;
    use dbsweep::data::tpch::{LINEITEM, TABLE_NAMES};
    use dbsweep::data::{DataSpec, Dataset};
    let target = support::open("cassandra", &format!("{}/dbsweep_tpch", server_url()));
    let dataset = Dataset::new(&DataSpec::Tpch { scale: 0.001 }, 3);
    target.prepare(&dataset.tables).await.expect("prepare");
    for (id, table) in dataset.tables.iter().enumerate() {
        let loaded = target.load(table, dataset.initial(id)).await.expect("load");
        assert_eq!(loaded, dataset.initial_rows(id), "{}", TABLE_NAMES[id]);
        assert_eq!(target.count_rows(table).await.unwrap(), loaded, "{}", TABLE_NAMES[id]);
    }
    let mut conn = target.connect().await.unwrap();
    let def = &dataset.tables[LINEITEM];
    let key = dataset.key_at(LINEITEM, 0);
    assert_eq!(conn.execute(&Op::Get { table: LINEITEM, key }).await.unwrap().rows, 1);
    let orderkey = def.indexed[0];
    let rows: Vec<_> = dataset.initial(LINEITEM).collect();
    let first_order = rows[0][orderkey].as_int().unwrap();
    let of_order: Vec<_> = rows.iter().filter(|r| r[orderkey].as_int() == Some(first_order)).collect();
    let count = Op::Range { table: LINEITEM, column: orderkey, lo: first_order, hi: first_order, agg: RangeAgg::Count };
    assert_eq!(conn.execute(&count).await.unwrap().answer, Some(Answer::Scalar(Value::Int(of_order.len() as i64))));
    for column in ["l_extendedprice", "l_shipdate"] {
        let c = def.column_index(column).unwrap();
        let order = |v: &Value| match v {
            Value::Decimal(d) => d.0,
            Value::Date(d) => i64::from(d.0),
            other => panic!("{column} is {other:?}"),
        };
        let expected = of_order.iter().map(|r| r[c].clone()).max_by_key(order).unwrap();
        let max = Op::Range { table: LINEITEM, column: orderkey, lo: first_order, hi: first_order, agg: RangeAgg::Max { column: c } };
        assert_eq!(conn.execute(&max).await.unwrap().answer, Some(Answer::Scalar(expected)), "{column}");
    }
    drop(conn);
    target.cleanup().await.unwrap();
}
