//! MariaDB (the MySQL adapter).

use crate::support;
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

/// A batch whose prepared INSERT outgrows the server's `max_allowed_packet` (1 MB here, on
/// a server of its own): the session sends its strings as long data, and every row arrives
/// whole. A string too long for its column in such a batch is the server's error, and the
/// session stays usable; closed, it leaves no aborted connection behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_a_batch_over_max_allowed_packet_arrives_whole_as_long_data() {
    use dbsweep::base::op::{ErrorClass, Op};
    use dbsweep::base::table::Value;
    use dbsweep::servers::ServerKind;
    use mysql_async::prelude::Queryable;

    let server = support::spawn(ServerKind::Mariadb).await;
    let mut admin = mysql_async::Conn::from_url(server.url()).await.unwrap();
    admin.query_drop("SET GLOBAL max_allowed_packet = 1048576").await.unwrap();
    let ctx = OpenContext::new(std::env::temp_dir());
    let target = registry::open("mariadb", &TargetUrl::parse(&server.url()).unwrap(), &ctx).unwrap();
    let table = Arc::new(dbsweep::data::kv::table_def());
    target.prepare(std::slice::from_ref(&table)).await.expect("prepare");
    let mut conn = target.connect().await.expect("connect");
    // 24 rows of 60 kB (a TEXT column holds 64 kB): 1.4 MB in one request.
    let payload = |k: i64| "abcdefghij".repeat(6_000) + &k.to_string();
    let row = |k: i64| vec![Value::Int(k), Value::Int(k % 7), Value::Float(k as f64), Value::Text(payload(k).into())];
    let ops: Vec<Op> = (0..24).map(|k| Op::Insert { table: 0, row: row(k) }).collect();
    assert_eq!(conn.execute_batch(&ops).await.expect("1.4 MB batch").rows, 24);
    assert_eq!(conn.execute(&Op::Get { table: 0, key: 5 }).await.unwrap().rows, 1);
    let stored: Vec<(i64, String)> = admin.query("SELECT k, payload FROM dbsweep.kv ORDER BY k").await.unwrap();
    assert_eq!(stored, (0..24).map(|k| (k, payload(k))).collect::<Vec<_>>());
    let mut ops: Vec<Op> = (100..124).map(|k| Op::Insert { table: 0, row: row(k) }).collect();
    let too_long = vec![Value::Int(99), Value::Int(0), Value::Float(0.0), Value::Text("x".repeat(70_000).into())];
    ops.push(Op::Insert { table: 0, row: too_long });
    assert_eq!(conn.execute_batch(&ops).await.unwrap_err().class, ErrorClass::Server);
    // The session stays usable after the server's error.
    assert_eq!(conn.execute(&Op::Get { table: 0, key: 7 }).await.unwrap().rows, 1);
    drop(conn);
    // The session said goodbye: the server counts no aborted connection.
    let aborted: Option<(String, u64)> = admin.query_first("SHOW GLOBAL STATUS LIKE 'Aborted_clients'").await.unwrap();
    assert_eq!(aborted.unwrap().1, 0);
    target.cleanup().await.expect("cleanup");
    drop(admin);
}
