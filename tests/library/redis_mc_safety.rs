//! Safety of the Redis and Memcached adapters against real servers (DESIGN §5): data
//! dbsweep did not create survives prepare, load and cleanup; an unmarked `dbsweep:` key
//! is refused with `NotOwned`; passwords never show; an unreachable server is a setup
//! error with exit code 2.

use crate::support::open;
use dbsweep::adapter::Target;
use dbsweep::data::kv::{self, KvGen};
use dbsweep::error::Error;
use std::io::{BufRead, BufReader, Write};

use crate::support;

fn env_url(kind: dbsweep::servers::ServerKind) -> url::Url {
    url::Url::parse(&support::url(kind)).expect("a spawned server's URL")
}

/// The test Redis server's URL with DB index `db` (each test uses its own DB).
fn redis_url(db: u32) -> String {
    let mut url = env_url(dbsweep::servers::ServerKind::Redis);
    url.set_path(&format!("/{db}"));
    url.to_string()
}

fn memcached_url() -> String {
    env_url(dbsweep::servers::ServerKind::Memcached).to_string()
}

async fn raw_redis(db: u32) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis_url(db)).unwrap().get_multiplexed_async_connection().await.unwrap()
}

async fn load_some(target: &dyn Target) {
    let table = kv::shared_def();
    target.prepare(std::slice::from_ref(&table)).await.expect("prepare");
    let rowgen = KvGen::new(3, 200, 16);
    let rows = Box::new((0..200).map(move |k| rowgen.row(k)));
    assert_eq!(target.load(&table, rows).await.expect("load"), 200);
    assert_eq!(target.count_rows(&table).await.expect("count"), 200);
}

/// A loopback port nothing listens on.
fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn redis_keys_it_did_not_create_survive_prepare_load_and_cleanup() {
    let (db, other_db) = (5, 6);
    let mut conn = raw_redis(db).await;
    let mut other = raw_redis(other_db).await;
    redis::cmd("SET").arg("user:1").arg("alice").exec_async(&mut conn).await.unwrap();
    redis::cmd("SET").arg("user:1").arg("bob").exec_async(&mut other).await.unwrap();
    redis::cmd("SET").arg("dbsweep:kv1").arg("not ours, other DB").exec_async(&mut other).await.unwrap();

    let target = open("r", &redis_url(db));
    load_some(target.as_ref()).await;
    let info = target.info();
    assert!(info.version.starts_with(|c: char| c.is_ascii_digit()), "version from INFO server: {}", info.version);
    assert_eq!(info.settings.get("appendonly").map(String::as_str), Some("no"), "{:?}", info.settings);
    assert_eq!(info.settings.get("db").map(String::as_str), Some("5"));
    let ours: u64 = redis::cmd("EXISTS").arg("dbsweep:kv17").arg("dbsweep:owner").query_async(&mut conn).await.unwrap();
    assert_eq!(ours, 2, "rows and marker are written to the URL's DB");
    target.cleanup().await.expect("cleanup");

    let user: Option<String> = redis::cmd("GET").arg("user:1").query_async(&mut conn).await.unwrap();
    assert_eq!(user.as_deref(), Some("alice"));
    let left: Vec<String> = redis::cmd("KEYS").arg("dbsweep:*").query_async(&mut conn).await.unwrap();
    assert!(left.is_empty(), "cleanup left {left:?}");
    let other_user: Option<String> = redis::cmd("GET").arg("user:1").query_async(&mut other).await.unwrap();
    assert_eq!(other_user.as_deref(), Some("bob"));
    let other_key: Option<String> = redis::cmd("GET").arg("dbsweep:kv1").query_async(&mut other).await.unwrap();
    assert_eq!(other_key.as_deref(), Some("not ours, other DB"), "another DB index is never touched");

    for (c, db) in [(&mut conn, db), (&mut other, other_db)] {
        redis::cmd("DEL").arg("user:1").arg("dbsweep:kv1").exec_async(c).await.unwrap_or_else(|e| panic!("db {db}: {e}"));
    }
}

#[tokio::test]
async fn redis_unmarked_prefix_key_is_not_owned_and_left_alone() {
    let db = 7;
    let mut conn = raw_redis(db).await;
    redis::cmd("DEL").arg("dbsweep:owner").exec_async(&mut conn).await.unwrap();
    redis::cmd("SET").arg("dbsweep:foo").arg("theirs").exec_async(&mut conn).await.unwrap();

    let target = open("r", &redis_url(db));
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("prepare must refuse");
    assert!(matches!(err, Error::NotOwned { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("dbsweep:foo"), "the message names the key: {err}");
    let cleanup = target.cleanup().await;
    assert!(matches!(cleanup, Err(Error::NotOwned { .. })), "cleanup must refuse too: {cleanup:?}");

    let value: Option<String> = redis::cmd("GET").arg("dbsweep:foo").query_async(&mut conn).await.unwrap();
    assert_eq!(value.as_deref(), Some("theirs"));
    let marker: bool = redis::cmd("EXISTS").arg("dbsweep:owner").query_async(&mut conn).await.unwrap();
    assert!(!marker, "a refused prepare must not plant the marker");
    redis::cmd("DEL").arg("dbsweep:foo").exec_async(&mut conn).await.unwrap();
}

#[tokio::test]
async fn redis_password_never_shows_and_dead_servers_are_unreachable() {
    let canary = "Canary-Pw-4711";
    // The test server has no password, so this login is refused.
    let mut url = url::Url::parse(&redis_url(8)).unwrap();
    url.set_password(Some(canary)).unwrap();
    let target = open("r", url.as_str());
    let shown = format!("{:?} {}", target.info(), target.info().url);
    assert!(!shown.contains(canary), "{shown}");
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("a wrong password must fail");
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    let shown = format!("{err:?} {err}");
    assert!(!shown.contains(canary), "{shown}");

    let port = dead_port();
    let target = open("r", &format!("redis://:{canary}@127.0.0.1:{port}/0"));
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("nothing listens there");
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 2);
    let shown = format!("{err:?} {err} {:?}", target.info());
    assert!(!shown.contains(canary), "{shown}");
    assert!(target.connect().await.is_err());
}

/// A blocking text-protocol exchange with the test memcached (independent of the adapter).
fn memcached_command(request: &str, end: &[&str]) -> Vec<String> {
    let url = url::Url::parse(&memcached_url()).unwrap();
    let addr = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(11211));
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let line = line.trim_end().to_string();
        let done = end.contains(&line.as_str());
        lines.push(line);
        if done {
            break;
        }
    }
    lines
}

fn memcached_get(key: &str) -> Option<String> {
    let lines = memcached_command(&format!("get {key}\r\n"), &["END"]);
    (lines.len() == 3).then(|| lines[1].clone())
}

#[tokio::test]
async fn memcached_items_it_did_not_create_survive_and_unmarked_prefix_is_refused() {
    // Ours from an earlier run would make the unmarked check below meaningless: start clean.
    memcached_command("delete dbsweep:owner\r\n", &["DELETED", "NOT_FOUND"]);
    memcached_command("set user:1 0 0 5\r\nalice\r\n", &["STORED"]);

    let target = open("m", &memcached_url());
    load_some(target.as_ref()).await;
    let info = target.info();
    assert!(info.version.starts_with("1."), "version: {}", info.version);
    assert!(info.settings.contains_key("maxbytes"), "{:?}", info.settings);
    // The row's non-key columns, length-prefixed: grp, val, payload.
    let row = KvGen::new(3, 200, 16).row(17);
    let expected: String = row[1..]
        .iter()
        .map(|v| {
            let t = v.to_string();
            format!("{}:{t},", t.len())
        })
        .collect();
    assert_eq!(memcached_get("dbsweep:kv17"), Some(expected));
    assert!(memcached_get("dbsweep:kv17").is_some());
    target.cleanup().await.expect("cleanup");
    assert_eq!(memcached_get("user:1").as_deref(), Some("alice"));
    assert_eq!(memcached_get("dbsweep:kv17"), None, "cleanup removes our rows");
    assert_eq!(memcached_get("dbsweep:owner"), None, "cleanup removes the marker last");

    memcached_command("set dbsweep:foo 0 0 6\r\ntheirs\r\n", &["STORED"]);
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("prepare must refuse");
    assert!(matches!(err, Error::NotOwned { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 2);
    assert_eq!(memcached_get("dbsweep:foo").as_deref(), Some("theirs"));
    assert_eq!(memcached_get("dbsweep:owner"), None);

    memcached_command("delete dbsweep:foo\r\n", &["DELETED", "NOT_FOUND"]);
    memcached_command("delete user:1\r\n", &["DELETED", "NOT_FOUND"]);
}

#[tokio::test]
async fn memcached_dead_server_is_unreachable() {
    let target = open("m", &format!("memcached://127.0.0.1:{}", dead_port()));
    let err = target.prepare(&[kv::shared_def()]).await.expect_err("nothing listens there");
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 2);
    assert!(target.connect().await.is_err());
}

#[tokio::test]
async fn redis_rows_follow_the_study_mapping() {
    let db = 9;
    let target = open("r", &redis_url(db));
    load_some(target.as_ref()).await;
    let mut conn = raw_redis(db).await;
    let row = KvGen::new(3, 200, 16).row(17);
    let fields: std::collections::BTreeMap<String, String> =
        redis::cmd("HGETALL").arg("dbsweep:kv17").query_async(&mut conn).await.unwrap();
    let expected: std::collections::BTreeMap<String, String> =
        kv::table_def().columns.iter().zip(&row).map(|(c, v)| (c.name.clone(), v.to_string())).collect();
    assert_eq!(fields, expected, "one hash field per column, values as text");
    let score: f64 = redis::cmd("ZSCORE").arg("dbsweep:kv:idx:grp").arg(17).query_async(&mut conn).await.unwrap();
    assert_eq!(score, row[kv::GROUP].as_int().unwrap() as f64, "index score = column value, member = pk");
    let pk_score: f64 = redis::cmd("ZSCORE").arg("dbsweep:kv:pk").arg(17).query_async(&mut conn).await.unwrap();
    assert_eq!(pk_score, 17.0);

    // A range over an unindexed column is refused, not emulated.
    use dbsweep::base::op::{ErrorClass, Op, RangeAgg};
    let mut c = target.connect().await.unwrap();
    let op = Op::Range { table: 0, column: kv::VALUE, lo: 0, hi: 10, agg: RangeAgg::Count };
    assert_eq!(c.execute(&op).await.unwrap_err().class, ErrorClass::Unsupported);
    // Updating the indexed column moves the row in its index, never duplicating it.
    let op = Op::Update { table: 0, key: 17, column: kv::GROUP, value: dbsweep::base::table::Value::Int(-42).into() };
    assert_eq!(c.execute(&op).await.unwrap().rows, 1);
    let count = Op::Range { table: 0, column: kv::GROUP, lo: -42, hi: -42, agg: RangeAgg::Count };
    assert_eq!(c.execute(&count).await.unwrap().answer, Some(dbsweep::base::op::Answer::Scalar(dbsweep::base::table::Value::Int(1))));
    let members: u64 = redis::cmd("ZCARD").arg("dbsweep:kv:idx:grp").query_async(&mut conn).await.unwrap();
    assert_eq!(members, 200);
    drop(c);
    target.cleanup().await.unwrap();
}

#[tokio::test]
async fn a_redis_busy_running_a_script_is_named_as_such_not_blamed_on_the_password() {
    use dbsweep::servers::ServerKind;
    // A server of its own: a running script blocks every client of it.
    let server = support::spawn(ServerKind::Redis).await;
    let url = server.url();
    let client = redis::Client::open(url.as_str()).unwrap();
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    let mut admin = client.get_multiplexed_async_connection_with_config(&config).await.unwrap();
    redis::cmd("CONFIG").arg("SET").arg("busy-reply-threshold").arg(50).exec_async(&mut admin).await.unwrap();
    // As a TPC-H query whose request timed out on the client: a script still running.
    let mut busy = client.get_multiplexed_async_connection_with_config(&config).await.unwrap();
    let spinning = tokio::spawn(async move { redis::cmd("EVAL").arg("while true do end").arg(0).exec_async(&mut busy).await });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;

    let target = open("busy", &url);
    let table = kv::shared_def();
    let prepared = target.prepare(std::slice::from_ref(&table)).await.expect_err("a busy server cannot be prepared");
    let connected = target.connect().await.err().expect("a busy server takes no client");
    for e in [prepared.to_string(), connected.to_string()] {
        assert!(e.contains("busy running a script") && e.contains("--timeout"), "{e}");
        assert!(!e.contains("password"), "not blamed on the password: {e}");
    }

    redis::cmd("SCRIPT").arg("KILL").exec_async(&mut admin).await.unwrap();
    assert!(spinning.await.unwrap().is_err(), "the killed script's caller gets an error");
    // Once the script ends, the same target works.
    target.prepare(std::slice::from_ref(&table)).await.expect("prepare after the script ended");
    target.cleanup().await.expect("cleanup");
    drop(server);
}
