//! LedisDB and FerretDB end to end, each started by dbsweep's own spawn code: rows reach
//! the server exactly as generated (read back with the systems' own protocols, not through
//! dbsweep), data dbsweep did not create survives prepare, load and cleanup, an unmarked
//! `dbsweep` namespace is refused, and the server leaves nothing behind when stopped.

use crate::support;
use crate::support::{open, process_exists};
use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use dbsweep::base::op::Op;
use dbsweep::data::kv::{self, KvGen};
use dbsweep::error::Error;
use dbsweep::servers::{self, ServerKind};
use mongodb::bson::{Bson, Document, doc};
use std::collections::BTreeMap;

const ROWS: i64 = 200;

/// Prepares the `kv` table and loads ROWS generated rows.
async fn load(target: &dyn Target) -> KvGen {
    let table = kv::shared_def();
    let rowgen = KvGen::new(5, ROWS as u64, 16);
    target.prepare(std::slice::from_ref(&table)).await.expect("prepare");
    let rows = Box::new((0..ROWS).map(move |k| rowgen.row(k)));
    assert_eq!(target.load(&table, rows).await.expect("load"), ROWS as u64);
    assert_eq!(target.count_rows(&table).await.expect("count"), ROWS as u64);
    rowgen
}

async fn stop_and_check_gone(server: servers::Server) {
    let (pid, dir, kind) = (server.pid(), server.data_dir().to_path_buf(), server.kind());
    server.stop().await.unwrap_or_else(|e| panic!("stopping {kind}: {e}"));
    assert!(!dir.exists(), "{kind} left {} behind", dir.display());
    assert!(!process_exists(pid), "{kind} pid {pid} still alive");
}

async fn ledis(url: &str, db: u32) -> redis::aio::MultiplexedConnection {
    let mut url = url::Url::parse(&url.replacen("ledis://", "redis://", 1)).unwrap();
    url.set_path(&format!("/{db}"));
    redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledisdb_stores_the_rows_keeps_foreign_keys_and_refuses_an_unmarked_namespace() {
    let server = support::spawn(ServerKind::LedisDb).await;
    assert_eq!(server.url(), format!("ledis://127.0.0.1:{}/0", server.port()));
    assert_eq!(server.version(), "0.5");
    assert_eq!(server.settings()["store"], "goleveldb");
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", server.pid())).unwrap();
    assert_eq!(comm.trim(), "ledis-server");

    let (db, other_db) = (1, 2);
    let mut raw = ledis(&server.url(), db).await;
    let mut other = ledis(&server.url(), other_db).await;
    redis::cmd("SET").arg("user:1").arg("alice").exec_async(&mut raw).await.unwrap();
    redis::cmd("HMSET").arg("profile:1").arg("name").arg("alice").exec_async(&mut raw).await.unwrap();
    redis::cmd("HMSET").arg("dbsweep:kv1").arg("k").arg("not ours, other DB").exec_async(&mut other).await.unwrap();

    let mut url = url::Url::parse(&server.url()).unwrap();
    url.set_path(&format!("/{db}"));
    let target = open("ledisdb", url.as_str());
    let rowgen = load(target.as_ref()).await;
    assert_eq!(target.info().system, "ledisdb");
    assert_eq!(target.info().version, "0.5");
    assert!(target.info().settings["server"].contains("SSDB"), "{:?}", target.info().settings);

    // What reached LedisDB, read with its own commands: the hash fields and both indexes.
    let fields: BTreeMap<String, String> = redis::cmd("HGETALL").arg("dbsweep:kv17").query_async(&mut raw).await.unwrap();
    let row = rowgen.row(17);
    let expected: BTreeMap<String, String> =
        kv::table_def().columns.iter().zip(&row).map(|(c, v)| (c.name.clone(), v.to_string())).collect();
    assert_eq!(fields, expected);
    let pks: u64 = redis::cmd("ZCARD").arg("dbsweep:kv:pk").query_async(&mut raw).await.unwrap();
    assert_eq!(pks, ROWS as u64);
    let group_members: u64 = redis::cmd("ZCARD").arg("dbsweep:kv:idx:grp").query_async(&mut raw).await.unwrap();
    assert_eq!(group_members, ROWS as u64);
    let marker: Option<String> = redis::cmd("GET").arg("dbsweep:owner").query_async(&mut raw).await.unwrap();
    assert_eq!(marker.as_deref(), Some("dbsweep"));

    // A delete removes the hash itself (HCLEAR), not only its index entries.
    let mut conn = target.connect().await.unwrap();
    assert_eq!(conn.execute(&Op::Delete { table: 0, key: 17 }).await.unwrap().rows, 1);
    let left: u64 = redis::cmd("HLEN").arg("dbsweep:kv17").query_async(&mut raw).await.unwrap();
    assert_eq!(left, 0);
    assert_eq!(conn.execute(&Op::Get { table: 0, key: 17 }).await.unwrap().rows, 0);
    assert_eq!(conn.execute(&Op::Get { table: 0, key: 18 }).await.unwrap().rows, 1);
    drop(conn);

    target.cleanup().await.expect("cleanup");
    for ty in ["KV", "HASH", "ZSET"] {
        let (_, keys): (String, Vec<String>) =
            redis::cmd("XSCAN").arg(ty).arg("").arg("MATCH").arg("^dbsweep:").query_async(&mut raw).await.unwrap();
        assert!(keys.is_empty(), "cleanup left {ty} keys {keys:?}");
    }
    let user: Option<String> = redis::cmd("GET").arg("user:1").query_async(&mut raw).await.unwrap();
    assert_eq!(user.as_deref(), Some("alice"));
    let profile: Option<String> = redis::cmd("HGET").arg("profile:1").arg("name").query_async(&mut raw).await.unwrap();
    assert_eq!(profile.as_deref(), Some("alice"));
    let theirs: Option<String> = redis::cmd("HGET").arg("dbsweep:kv1").arg("k").query_async(&mut other).await.unwrap();
    assert_eq!(theirs.as_deref(), Some("not ours, other DB"), "another DB index is never touched");

    // A hash under the prefix without the marker (LedisDB keeps each type apart, so this
    // is only seen by listing hashes) is not dbsweep's: prepare and cleanup refuse.
    let target = open("ledisdb", &format!("ledis://127.0.0.1:{}/{other_db}", server.port()));
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("prepare must refuse");
    assert!(matches!(err, Error::NotOwned { .. }), "{err:?}");
    assert!(err.to_string().contains("dbsweep:kv1") && err.to_string().contains("LedisDB"), "{err}");
    assert!(matches!(target.cleanup().await, Err(Error::NotOwned { .. })));
    let marker: Option<String> = redis::cmd("GET").arg("dbsweep:owner").query_async(&mut other).await.unwrap();
    assert_eq!(marker, None, "a refused prepare must not plant the marker");
    let multi =
        registry::open("l", &TargetUrl::parse("ledis://127.0.0.1:1/0?batch=multi").unwrap(), &OpenContext::new(std::env::temp_dir()));
    assert_eq!(multi.err().expect("LedisDB has no MULTI").exit_code(), 2);

    stop_and_check_gone(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ferretdb_stores_documents_keeps_foreign_collections_and_refuses_an_unmarked_namespace() {
    let server = support::spawn(ServerKind::FerretDb).await;
    assert_eq!(server.url(), format!("mongodb://127.0.0.1:{}/", server.port()));
    assert_eq!(server.version(), "1.24.0");
    assert!(server.settings()["backend"].starts_with("sqlite"), "{:?}", server.settings());
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", server.pid())).unwrap();
    assert_eq!(comm.trim(), "ferretdb");

    let raw = mongodb::Client::with_uri_str(server.url()).await.unwrap();
    raw.database("dbsweep").collection::<Document>("users").insert_one(doc! {"_id": 1, "name": "alice"}).await.unwrap();
    raw.database("other").collection::<Document>("dbsweep_kv").insert_one(doc! {"_id": 1, "name": "theirs"}).await.unwrap();

    let target = open("ferretdb", &server.url());
    let rowgen = load(target.as_ref()).await;
    assert_eq!(target.info().system, "ferretdb", "FerretDB is named by its buildInfo");
    assert!(target.info().version.starts_with("FerretDB v1.24.0"), "{}", target.info().version);
    let memory = target.engine_memory().await.unwrap().expect("dbStats");
    assert!(memory.bytes > 0 && memory.source.starts_with("dbStats"), "{memory:?}");

    // What reached FerretDB, read with the MongoDB protocol: one document per row.
    let stored = raw.database("dbsweep").collection::<Document>("dbsweep_kv");
    let document = stored.find_one(doc! {"_id": "0000000000000000017"}).await.unwrap().expect("row 17");
    let row = rowgen.row(17);
    assert_eq!(document.get("grp"), Some(&Bson::Int64(row[kv::GROUP].as_int().unwrap())));
    assert_eq!(document.get_f64("val").unwrap().to_string(), row[kv::VALUE].to_string());
    assert_eq!(document.get_str("payload").unwrap(), row[kv::PAYLOAD].to_string());
    assert_eq!(stored.count_documents(doc! {}).await.unwrap(), ROWS as u64);
    let indexes = stored.list_index_names().await.unwrap();
    assert!(indexes.iter().any(|i| i.starts_with("grp")), "{indexes:?}");

    let mut conn = target.connect().await.unwrap();
    let batch: Vec<Op> = (0..10).map(|k| Op::Delete { table: 0, key: k }).collect();
    assert_eq!(conn.execute_batch(&batch).await.unwrap().rows, 10);
    assert_eq!(stored.count_documents(doc! {}).await.unwrap(), ROWS as u64 - 10);
    drop(conn);

    target.cleanup().await.expect("cleanup");
    let names = raw.database("dbsweep").list_collection_names().await.unwrap();
    assert_eq!(names, vec!["users".to_string()], "only dbsweep's collections are dropped");
    let user = raw.database("dbsweep").collection::<Document>("users").find_one(doc! {"_id": 1}).await.unwrap();
    assert_eq!(user.and_then(|u| u.get_str("name").ok().map(str::to_string)).as_deref(), Some("alice"));

    // A `dbsweep_*` collection without the marker is not dbsweep's: refused, left alone.
    let target = open("ferretdb", &format!("{}other", server.url()));
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("prepare must refuse");
    assert!(matches!(err, Error::NotOwned { .. }), "{err:?}");
    assert!(err.to_string().contains("dbsweep_kv"), "{err}");
    assert!(matches!(target.cleanup().await, Err(Error::NotOwned { .. })));
    let theirs = raw.database("other").collection::<Document>("dbsweep_kv").count_documents(doc! {}).await.unwrap();
    assert_eq!(theirs, 1);
    let names = raw.database("other").list_collection_names().await.unwrap();
    assert!(!names.iter().any(|n| n == "dbsweep_owner"), "a refused prepare must not plant the marker: {names:?}");

    // The password reaches the server, never a message: FerretDB without auth ignores it.
    let canary = "Canary-Pw-4711";
    let target = open("ferretdb", &format!("mongodb://bench:{canary}@127.0.0.1:1/x"));
    assert!(!format!("{:?}", target.info()).contains(canary));
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("nothing listens on port 1");
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    assert!(!format!("{err:?} {err}").contains(canary), "{err}");

    raw.shutdown().await;
    stop_and_check_gone(server).await;
}
