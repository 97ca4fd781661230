//! Embedded and in-process adapters.

use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use dbsweep::base::measurement::RunMeasurement;
use dbsweep::data::{DataSpec, Dataset};
use dbsweep::runner::client::{RunJob, run_once};
use dbsweep::workload::experiment::{Experiment, ExperimentOp, OpStream, Point};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

async fn open(url: &str) -> (Arc<dyn Target>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let ctx = OpenContext::new(dir.path().to_path_buf());
    let target = registry::open("t", &TargetUrl::parse(url).unwrap(), &ctx).unwrap();
    (target, dir)
}

conformance!(mock, open("mock:"));
conformance!(sqlite, open("sqlite:"));
conformance!(redb, open("redb:"));
conformance!(duckdb, open("duckdb:"));
conformance!(monetdb, monetdb::open());

/// MonetDBe runs one database per process: the MonetDB tests of this binary take turns. A
/// test may open a second target once its first is dropped (the conformance body does), so
/// the turn belongs to the test's thread and is taken again there without waiting.
mod monetdb {
    use dbsweep::adapter::Target;
    use std::sync::{Arc, Condvar, Mutex};
    use std::thread::{self, ThreadId};

    /// The thread holding the turn, and how many `Turn`s it holds.
    static HOLDER: Mutex<Option<(ThreadId, usize)>> = Mutex::new(None);
    static FREED: Condvar = Condvar::new();

    pub struct Turn {
        _dir: tempfile::TempDir,
    }

    impl Drop for Turn {
        fn drop(&mut self) {
            let mut holder = HOLDER.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, n)) = holder.as_mut() {
                *n -= 1;
                if *n == 0 {
                    *holder = None;
                    FREED.notify_all();
                }
            }
        }
    }

    /// A `monetdb:` target (a throwaway database) while no other test's MonetDB runs.
    pub async fn open() -> (Arc<dyn Target>, Turn) {
        let me = thread::current().id();
        let mut holder = HOLDER.lock().unwrap_or_else(|e| e.into_inner());
        while holder.is_some_and(|(owner, _)| owner != me) {
            holder = FREED.wait(holder).unwrap_or_else(|e| e.into_inner());
        }
        let count = holder.map_or(0, |(_, n)| n);
        *holder = Some((me, count + 1));
        drop(holder);
        let (target, dir) = super::open("monetdb:").await;
        (target, Turn { _dir: dir })
    }
}

// Engine-specific checks on user files: what dbsweep leaves alone, reopening, concurrency.

use dbsweep::base::op::Op;
use dbsweep::data::kv::{self, KvGen};
use dbsweep::error::Error;
use std::path::Path;

/// Opens a target on a user file, as `--target t=<scheme>:/path` would.
fn open_file(scheme: &str, path: &Path) -> Arc<dyn Target> {
    let ctx = OpenContext::new(path.parent().unwrap().to_path_buf());
    registry::open("t", &TargetUrl::parse(&format!("{scheme}:{}", path.display())).unwrap(), &ctx).unwrap()
}

/// Direct access to each engine's file, bypassing dbsweep, to play the user.
mod user {
    use std::path::Path;

    const REDB_TABLE: redb::TableDefinition<i64, &str> = redb::TableDefinition::new("dbsweep:kv");
    const REDB_NOTES: redb::TableDefinition<i64, &str> = redb::TableDefinition::new("notes");

    /// Creates the user's own `notes` table, and, if `squat`, a `kv` table named exactly
    /// like dbsweep's but without dbsweep's marker; both hold one row.
    pub fn create(scheme: &str, path: &Path, squat: bool) {
        match scheme {
            "sqlite" => {
                let c = rusqlite::Connection::open(path).unwrap();
                c.execute_batch("CREATE TABLE notes (id INTEGER, note TEXT); INSERT INTO notes VALUES (1, 'mine');").unwrap();
                if squat {
                    c.execute_batch("CREATE TABLE dbsweep_kv (id INTEGER, note TEXT); INSERT INTO dbsweep_kv VALUES (1, 'mine');").unwrap();
                }
            }
            "duckdb" => {
                let c = duckdb::Connection::open(path).unwrap();
                c.execute_batch("CREATE TABLE notes (id INTEGER, note TEXT); INSERT INTO notes VALUES (1, 'mine');").unwrap();
                if squat {
                    c.execute_batch("CREATE TABLE dbsweep_kv (id INTEGER, note TEXT); INSERT INTO dbsweep_kv VALUES (1, 'mine');").unwrap();
                }
            }
            "redb" => {
                let db = redb::Database::create(path).unwrap();
                let txn = db.begin_write().unwrap();
                txn.open_table(REDB_NOTES).unwrap().insert(1, "mine").unwrap();
                if squat {
                    txn.open_table(REDB_TABLE).unwrap().insert(1, "mine").unwrap();
                }
                txn.commit().unwrap();
            }
            other => panic!("no user access for {other}"),
        }
    }

    /// The user's row in `table`, if the table still exists with it.
    pub fn row(scheme: &str, path: &Path, table: &str) -> Option<String> {
        let sql = format!("SELECT note FROM {table} WHERE id = 1");
        match scheme {
            "sqlite" => rusqlite::Connection::open(path).unwrap().query_row(&sql, [], |r| r.get(0)).ok(),
            "duckdb" => duckdb::Connection::open(path).unwrap().query_row(&sql, [], |r| r.get(0)).ok(),
            "redb" => {
                use redb::ReadableDatabase;
                let db = redb::Database::create(path).unwrap();
                let txn = db.begin_read().unwrap();
                let def = if table == "notes" { REDB_NOTES } else { REDB_TABLE };
                let table = txn.open_table(def).ok()?;
                table.get(1).unwrap().map(|v| v.value().to_string())
            }
            other => panic!("no user access for {other}"),
        }
    }
}

async fn refuses_what_it_did_not_create(scheme: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("user.{scheme}"));
    user::create(scheme, &path, true);
    {
        let target = open_file(scheme, &path);
        match target.prepare(&[kv::shared_def()]).await {
            Err(Error::NotOwned { detail, .. }) => assert!(detail.contains("dbsweep_kv") || detail.contains("dbsweep:kv"), "{detail}"),
            other => panic!("{scheme}: prepare over a user table must be NotOwned, got {other:?}"),
        }
        target.cleanup().await.unwrap();
    }
    assert_eq!(user::row(scheme, &path, "dbsweep_kv").as_deref(), Some("mine"), "{scheme}: the user's table was touched");
    assert_eq!(user::row(scheme, &path, "notes").as_deref(), Some("mine"), "{scheme}: the user's other table was touched");
}

async fn reopens_a_user_file(scheme: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("user.{scheme}"));
    user::create(scheme, &path, false);
    let table = kv::shared_def();
    let rows = KvGen::new(3, 100, 16);
    {
        let target = open_file(scheme, &path);
        target.prepare(std::slice::from_ref(&table)).await.unwrap();
        assert_eq!(target.load(&table, Box::new((0..100).map(move |k| rows.row(k)))).await.unwrap(), 100);
    }
    {
        // Closed and reopened: the data is still there and dbsweep recognises its table.
        let target = open_file(scheme, &path);
        assert_eq!(target.count_rows(&table).await.unwrap(), 100, "{scheme}: rows lost on reopen");
        target.prepare(std::slice::from_ref(&table)).await.expect("prepare over dbsweep's own table");
        assert_eq!(target.count_rows(&table).await.unwrap(), 0, "{scheme}: prepare must recreate the table");
        let mut conn = target.connect().await.unwrap();
        assert_eq!(conn.execute(&Op::Insert { table: 0, row: rows.row(7) }).await.unwrap().rows, 1);
        drop(conn);
        target.cleanup().await.unwrap();
    }
    assert!(path.exists(), "{scheme}: cleanup removed the user's file");
    assert_eq!(user::row(scheme, &path, "notes").as_deref(), Some("mine"), "{scheme}: cleanup touched the user's table");
    // After cleanup a new prepare starts from scratch without a NotOwned refusal.
    let target = open_file(scheme, &path);
    target.prepare(std::slice::from_ref(&table)).await.unwrap();
    target.cleanup().await.unwrap();
}

/// `clients` threads, each with its own connection (as the runner drives Blocking
/// targets), insert `per_client` distinct rows one op at a time.
async fn concurrent_inserts(target: Arc<dyn Target>, clients: i64, per_client: i64) {
    let table = kv::shared_def();
    let rows = KvGen::new(5, 1000, 16);
    target.prepare(std::slice::from_ref(&table)).await.unwrap();
    target.load(&table, Box::new((0..1000).map(move |k| rows.row(k)))).await.unwrap();
    let mut threads = Vec::new();
    for c in 0..clients {
        let mut conn = target.connect().await.unwrap();
        threads.push(std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                let mut written = 0;
                for i in 0..per_client {
                    let key = 1_000_000 + c * per_client + i;
                    written += conn.execute(&Op::Insert { table: 0, row: rows.row(key) }).await.expect("concurrent insert").rows;
                }
                written
            })
        }));
    }
    let written: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(written, (clients * per_client) as u64);
    assert_eq!(target.count_rows(&table).await.unwrap(), 1000 + (clients * per_client) as u64);
    target.cleanup().await.unwrap();
}

/// Through the runner's own client loop: `clients` clients insert batches of `batch` new
/// rows into one keyed table at once, `ops` rows in all. Every request must succeed and
/// every row be stored exactly once (conflicts retried, never lost or doubled); returns
/// the run's measurement.
async fn concurrent_batches(target: Arc<dyn Target>, clients: usize, batch: usize, ops: u64) -> RunMeasurement {
    let data = Dataset::new(&DataSpec::Kv { rows: 1000, payload_bytes: 16 }, 3);
    target.prepare(&data.tables).await.unwrap();
    target.load(&data.tables[0], data.initial(0)).await.unwrap();
    let point = Point { clients, batch, batched: true, param: None, rate: None };
    let experiment = Experiment::single("insert", ExperimentOp::Insert, ops, point);
    let job = RunJob {
        target: target.clone(),
        stream: Arc::new(OpStream::new(&experiment, 0, &data, 3, 1)),
        point,
        point_index: 0,
        run: 0,
        warmup: false,
        seqs: 0..ops,
        clients: point.clients,
        timeout: Duration::from_secs(60),
        cancel: Arc::new(AtomicBool::new(false)),
        progress: Arc::new(AtomicU64::new(0)),
        rate: None,
        time_limit: None,
        check_rows: true,
        stop: None,
        cold_call: false,
        budget: None,
        min_run: None,
        intervals: Some(Duration::from_secs(1)),
    };
    let m = run_once(Arc::new(job)).await;
    assert_eq!((m.ops, m.ok_ops, m.failed_ops, m.short_ops), (ops, ops, 0, 0), "{:?}", m.error_samples);
    assert!(m.errors.is_empty() && !m.is_void(), "{:?}", m.errors);
    assert_eq!((m.requests, m.rows), (ops / batch as u64, ops));
    assert_eq!(target.count_rows(&data.tables[0]).await.unwrap(), 1000 + ops, "every row stored once");
    target.cleanup().await.unwrap();
    m
}

/// Rows in one batch of `concurrent_batches`: more than one MonetDB insert statement holds.
const BIG_BATCH: usize = 1500;

macro_rules! embedded_file_tests {
    ($($scheme:ident),*) => {
        mod not_owned {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scheme() {
                super::refuses_what_it_did_not_create(stringify!($scheme)).await;
            })*
        }
        mod reopen {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scheme() {
                super::reopens_a_user_file(stringify!($scheme)).await;
            })*
        }
        mod concurrent {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scheme() {
                let (target, _dir) = super::open(concat!(stringify!($scheme), ":")).await;
                super::concurrent_inserts(target, 4, 250).await;
            })*
        }
        mod concurrent_batches {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $scheme() {
                let (target, _dir) = super::open(concat!(stringify!($scheme), ":")).await;
                let m = super::concurrent_batches(target, 8, super::BIG_BATCH, 16 * super::BIG_BATCH as u64).await;
                assert_eq!(m.retries, 0, "{} locks instead of aborting", stringify!($scheme));
            })*
        }
    };
}

embedded_file_tests!(sqlite, redb, duckdb);

/// Four clients inserting distinct keys into one keyed table at once: MonetDB aborts
/// some of the commits ("concurrency conflicts"); each lost statement runs again, and
/// every row is stored exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_monetdb_inserts_are_retried_after_conflicts() {
    let (target, _turn) = monetdb::open().await;
    concurrent_inserts(target, 4, 250).await;
}

/// Eight clients inserting batches of `BIG_BATCH` rows (two multi-row statements in one
/// transaction) into one keyed table at once: MonetDB aborts some of the transactions
/// ("concurrency conflicts"; single statements did not conflict here); each aborted batch
/// runs again as a whole, the retries are reported, no request fails and every row is
/// stored exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_monetdb_batches_are_retried_whole_and_reported() {
    let (target, _turn) = monetdb::open().await;
    let m = concurrent_batches(target, 8, BIG_BATCH, 16 * BIG_BATCH as u64).await;
    eprintln!("monetdb: {} retries in {} batches of {BIG_BATCH}", m.retries, m.requests);
    assert!(m.retries > 0, "eight writers of one table conflict in MonetDB: {m:?}");
}

/// The insert-find study looks up to 100,000 keys in one request: more than SQLite's
/// 32,766 bound parameters.
async fn large_multi_get(target: Arc<dyn Target>) {
    let table = kv::shared_def();
    let rows = KvGen::new(9, 60_000, 4);
    target.prepare(std::slice::from_ref(&table)).await.unwrap();
    target.load(&table, Box::new((0..60_000).map(move |k| rows.row(k)))).await.unwrap();
    let mut conn = target.connect().await.unwrap();
    // Keys 0, 2, 4, ... of which those below 60,000 exist: 30,000 hits out of 100,000.
    let keys: Vec<i64> = (0..100_000).map(|i| i * 2).collect();
    let started = std::time::Instant::now();
    assert_eq!(conn.execute(&Op::MultiGet { table: 0, keys }).await.unwrap().rows, 30_000);
    eprintln!("{}: multi-get of 100,000 keys took {:?}", target.info().system, started.elapsed());
    drop(conn);
    target.cleanup().await.unwrap();
}

mod large_multi_get {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn monetdb() {
        let (target, _turn) = super::monetdb::open().await;
        super::large_multi_get(target).await;
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        let (target, _dir) = super::open("sqlite:").await;
        super::large_multi_get(target).await;
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redb() {
        let (target, _dir) = super::open("redb:").await;
        super::large_multi_get(target).await;
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn duckdb() {
        let (target, _dir) = super::open("duckdb:").await;
        super::large_multi_get(target).await;
    }
}
