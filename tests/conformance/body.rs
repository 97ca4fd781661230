//! The one conformance body every adapter must pass: it checks stored and returned values
//! against the generator, so an adapter that drops, duplicates or misreads rows fails. A
//! second part does the same on the insert-find study's two-column `pairs` tables at a size
//! beyond every statement limit (65,535 placeholders): one batch of `PAIRS` rows, one
//! multi-get of all of them.

use dbsweep::adapter::Target;
use dbsweep::base::measurement::RunMeasurement;
use dbsweep::base::op::{Answer, Op, OpKind, QueryId, RangeAgg};
use dbsweep::base::table::{TableDef, Value};
use dbsweep::data::kv::{self, KvGen};
use dbsweep::data::tpch_reference;
use dbsweep::data::{DataSpec, Dataset};
use dbsweep::runner::client::{RunJob, run_once};
use dbsweep::workload::experiment::{Experiment, ExperimentOp, OpStream, Point};
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

pub const ROWS: u64 = 1_000;
pub const SEED: u64 = 7;
/// Rows in the pairs part's one insert batch and one multi-get: more than 65,535 values.
pub const PAIRS: u64 = 70_000;

/// Runs the body per adapter as its own `#[test]` with a multi-threaded runtime: measured
/// failures and the kv part, then the pairs part on a fresh target. `$make` is an async
/// expression yielding `(Arc<dyn Target>, guard)`; the guard (e.g. a spawned server) lives
/// until its part ends. `$fault` says how the system is made to reject a request of a
/// measured batch (default: a repeated primary key).
#[macro_export]
macro_rules! conformance {
    ($name:ident, $make:expr) => {
        conformance!($name, $make, $crate::body::Fault::DuplicateKey);
    };
    // An optional `#[ignore = "why"]`: a system too heavy for every run (opt-in: --ignored).
    ($name:ident, $make:expr, $fault:expr $(, #[$attr:meta])?) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])?
        async fn $name() {
            let (target, _guard) = $make.await;
            $crate::body::check_measured_failures(target.clone(), $fault).await;
            $crate::body::check_target(target).await;
            let (target, _guard) = $make.await;
            $crate::body::check_pairs(target).await;
        }
    };
}

/// How a system is made to reject one request of a measured batch of inserts: something
/// the system itself refuses.
pub enum Fault {
    /// A row of the second batch is stored before the run: that batch repeats a primary key,
    /// which the system refuses (SQL engines, redb, Memcached's `add`).
    DuplicateKey,
    /// Systems that overwrite instead (or have no keys) are broken by their own test after
    /// the data is loaded: `(target URL, key of the victim row)`. Every batch may fail.
    Custom(fn(String, i64) -> BoxFuture<'static, ()>),
}

fn scalar(outcome: dbsweep::base::op::Outcome) -> Value {
    match outcome.answer {
        Some(Answer::Scalar(v)) => v,
        other => panic!("expected a scalar answer, got {other:?}"),
    }
}

fn as_f64(v: &Value) -> f64 {
    match v {
        Value::Float(f) => *f,
        Value::Int(i) => *i as f64,
        Value::Decimal(d) => d.0 as f64 / 100.0,
        other => panic!("not numeric: {other:?}"),
    }
}

pub async fn check_target(target: Arc<dyn Target>) {
    let table: Arc<TableDef> = kv::shared_def();
    let rowgen = KvGen::new(SEED, ROWS, 24);
    let caps = target.info().capabilities.clone();
    let supports = |k: OpKind| caps.supports_kind(k);

    // Prepare twice: the second prepare must replace dbsweep's own tables, not fail.
    target.prepare(std::slice::from_ref(&table)).await.expect("prepare");
    target.prepare(std::slice::from_ref(&table)).await.expect("prepare again");
    let rows = Box::new((0..ROWS as i64).map(move |k| rowgen.row(k)));
    assert_eq!(target.load(&table, rows).await.expect("load"), ROWS);
    assert_eq!(target.count_rows(&table).await.expect("count"), ROWS);

    let mut conn = target.connect().await.expect("connect");
    if supports(OpKind::Echo) {
        conn.execute(&Op::Echo).await.expect("echo");
    }
    if supports(OpKind::Get) {
        assert_eq!(conn.execute(&Op::Get { table: 0, key: 17 }).await.unwrap().rows, 1, "get existing");
        assert_eq!(conn.execute(&Op::Get { table: 0, key: ROWS as i64 + 5 }).await.unwrap().rows, 0, "get missing");
    }
    if supports(OpKind::MultiGet) {
        let keys = vec![1, 2, 3, ROWS as i64 + 9];
        assert_eq!(conn.execute(&Op::MultiGet { table: 0, keys }).await.unwrap().rows, 3, "multi-get");
    }
    if supports(OpKind::Insert) {
        let new_key = ROWS as i64 + 1;
        let out = conn.execute(&Op::Insert { table: 0, row: rowgen.row(new_key) }).await.expect("insert");
        assert_eq!(out.rows, 1);
        assert_eq!(target.count_rows(&table).await.unwrap(), ROWS + 1);
        // A duplicate insert may fail (SQL) or overwrite (key-value SET semantics), but it
        // must never store a second row.
        let _ = conn.execute(&Op::Insert { table: 0, row: rowgen.row(new_key) }).await;
        assert_eq!(target.count_rows(&table).await.unwrap(), ROWS + 1, "duplicate insert stored a second row");
        let batch: Vec<Op> = (0..10).map(|i| Op::Insert { table: 0, row: rowgen.row(ROWS as i64 + 100 + i) }).collect();
        assert_eq!(conn.execute_batch(&batch).await.expect("batch insert").rows, 10);
        assert_eq!(target.count_rows(&table).await.unwrap(), ROWS + 11);
        if supports(OpKind::Get) {
            assert_eq!(conn.execute(&Op::Get { table: 0, key: ROWS as i64 + 105 }).await.unwrap().rows, 1);
        }
    }
    if supports(OpKind::Get) {
        let batch: Vec<Op> = (0..20).map(|k| Op::Get { table: 0, key: k * 7 }).collect();
        assert_eq!(conn.execute_batch(&batch).await.expect("batch get").rows, 20);
    }
    if supports(OpKind::Delete) {
        assert_eq!(conn.execute(&Op::Delete { table: 0, key: 3 }).await.unwrap().rows, 1, "delete existing");
        assert_eq!(conn.execute(&Op::Delete { table: 0, key: 3 }).await.unwrap().rows, 0, "delete again");
        let batch: Vec<Op> = (10..15).map(|k| Op::Delete { table: 0, key: k }).collect();
        assert_eq!(conn.execute_batch(&batch).await.expect("batch delete").rows, 5);
        if supports(OpKind::Get) {
            assert_eq!(conn.execute(&Op::Get { table: 0, key: 3 }).await.unwrap().rows, 0);
        }
    }
    let deleted: Vec<i64> = if supports(OpKind::Delete) { vec![3, 10, 11, 12, 13, 14] } else { vec![] };
    let inserted: Vec<i64> = if supports(OpKind::Insert) {
        std::iter::once(ROWS as i64 + 1).chain(ROWS as i64 + 100..ROWS as i64 + 110).collect()
    } else {
        vec![]
    };
    let live: Vec<i64> = (0..ROWS as i64).filter(|k| !deleted.contains(k)).chain(inserted).collect();

    let (lo, hi) = (20, 34);
    let in_range: Vec<i64> = live.iter().copied().filter(|k| (lo..=hi).contains(&rowgen.group_of(*k))).collect();
    assert!(in_range.len() > 50, "test data too sparse");
    if supports(OpKind::RangeCount) {
        let op = Op::Range { table: 0, column: kv::GROUP, lo, hi, agg: RangeAgg::Count };
        assert_eq!(scalar(conn.execute(&op).await.unwrap()), Value::Int(in_range.len() as i64), "range count");
    }
    if supports(OpKind::RangeMax) {
        let op = Op::Range { table: 0, column: kv::GROUP, lo, hi, agg: RangeAgg::Max { column: kv::VALUE } };
        let expected = in_range.iter().map(|k| as_f64(&rowgen.row(*k)[kv::VALUE])).fold(f64::MIN, f64::max);
        let got = as_f64(&scalar(conn.execute(&op).await.unwrap()));
        assert!((got - expected).abs() < 1e-9, "range max: got {got}, expected {expected}");
        let empty = Op::Range { table: 0, column: kv::GROUP, lo: -10, hi: -5, agg: RangeAgg::Max { column: kv::VALUE } };
        assert_eq!(scalar(conn.execute(&empty).await.unwrap()), Value::Null, "max over nothing is NULL");
    }
    if supports(OpKind::RangeRows) {
        let op = Op::Range { table: 0, column: kv::GROUP, lo, hi, agg: RangeAgg::Rows };
        assert_eq!(conn.execute(&op).await.unwrap().rows, in_range.len() as u64, "range rows");
    }
    if supports(OpKind::FetchAll) {
        let op = Op::FetchAll { table: 0 };
        assert_eq!(conn.execute(&op).await.unwrap().rows, live.len() as u64, "fetch all");
    }
    if let Some(memory) = target.engine_memory().await.expect("engine memory") {
        assert!(memory.bytes > 0, "engine memory with {} rows stored is 0 ({})", live.len(), memory.source);
    }
    if supports(OpKind::Scan) {
        // Keys 10..=14 are deleted when the adapter can delete: a scan from 8 of 5 rows
        // returns 8, 9, 15, 16, 17.
        let op = Op::Scan { table: 0, start: 8, count: 5 };
        assert_eq!(conn.execute(&op).await.unwrap().rows, 5, "scan");
        let tail = Op::Scan { table: 0, start: ROWS as i64 - 2, count: 5 };
        let expected_tail = if supports(OpKind::Insert) { 5 } else { 2 };
        assert_eq!(conn.execute(&tail).await.unwrap().rows, expected_tail, "scan past the end");
    }
    if supports(OpKind::Update) {
        let op = Op::Update { table: 0, key: 40, column: kv::VALUE, value: Value::Float(123456.5).into() };
        assert_eq!(conn.execute(&op).await.unwrap().rows, 1, "update");
        if supports(OpKind::RangeMax) {
            let g = rowgen.group_of(40);
            let max = Op::Range { table: 0, column: kv::GROUP, lo: g, hi: g, agg: RangeAgg::Max { column: kv::VALUE } };
            assert_eq!(as_f64(&scalar(conn.execute(&max).await.unwrap())), 123456.5, "updated value is read back");
        }
        let missing = Op::Update { table: 0, key: ROWS as i64 * 10, column: kv::VALUE, value: Value::Float(1.0).into() };
        assert_eq!(conn.execute(&missing).await.unwrap().rows, 0, "update of a missing key");
        let absent = |key: i64| Op::Get { table: 0, key };
        assert_eq!(conn.execute(&absent(ROWS as i64 * 10)).await.unwrap().rows, 0, "an update of a missing key leaves no row");
        let batch = [
            Op::Update { table: 0, key: 42, column: kv::VALUE, value: Value::Float(2.5).into() },
            Op::Update { table: 0, key: ROWS as i64 * 10 + 1, column: kv::VALUE, value: Value::Float(2.5).into() },
        ];
        assert_eq!(conn.execute_batch(&batch).await.unwrap().rows, 1, "a batch of updates counts the rows found");
        assert_eq!(conn.execute(&absent(ROWS as i64 * 10 + 1)).await.unwrap().rows, 0, "a batched update of a missing key leaves no row");
    }
    if supports(OpKind::ReadModifyWrite) {
        let op = Op::ReadModifyWrite { table: 0, key: 41, column: kv::VALUE, value: Value::Float(7.25).into() };
        assert_eq!(conn.execute(&op).await.unwrap().rows, 1, "read-modify-write");
    }
    drop(conn);

    target.cleanup().await.expect("cleanup");
}

/// The insert-find study's data: a 1,000-key store of shuffled pairs with BIGINT values and
/// an empty second table. One batch inserts `PAIRS` rows into the empty table, one
/// multi-get reads them all back, and the counts must match exactly.
pub async fn check_pairs(target: Arc<dyn Target>) {
    use dbsweep::data::pairs::{KeyOrder, PairValue};
    let spec = DataSpec::Pairs {
        rows: ROWS,
        value: PairValue::Int,
        value_bytes: 0,
        keys: KeyOrder::Shuffled,
        empty_table: Some("pairs_new".into()),
    };
    let data = Dataset::new(&spec, SEED);
    let (store, fresh) = (&data.tables[0], &data.tables[1]);
    let caps = target.info().capabilities.clone();
    let supports = |k: OpKind| caps.supports_kind(k);
    target.prepare(&data.tables).await.expect("prepare pairs");
    assert_eq!(target.load(store, data.initial(0)).await.expect("load pairs"), ROWS);
    assert_eq!(target.count_rows(store).await.expect("count"), ROWS);
    assert_eq!(target.count_rows(fresh).await.expect("count"), 0);
    let mut conn = target.connect().await.expect("connect");
    if supports(OpKind::MultiGet) {
        let keys: Vec<i64> = (0..ROWS).map(|i| data.key_at(0, i)).chain([0, ROWS as i64 + 1]).collect();
        assert_eq!(conn.execute(&Op::MultiGet { table: 0, keys }).await.expect("multi-get").rows, ROWS, "store keys 1..=ROWS");
    }
    if !supports(OpKind::Insert) {
        return target.cleanup().await.expect("cleanup");
    }
    let keys = data.fisher_yates(PAIRS);
    let batch: Vec<Op> = keys.iter().map(|&k| Op::Insert { table: 1, row: data.new_row(1, k as i64) }).collect();
    assert_eq!(conn.execute_batch(&batch).await.expect("one batch of PAIRS inserts").rows, PAIRS);
    assert_eq!(target.count_rows(fresh).await.expect("count"), PAIRS);
    assert_eq!(target.count_rows(store).await.expect("count"), ROWS, "the store is untouched");
    if supports(OpKind::Get) {
        assert_eq!(conn.execute(&Op::Get { table: 1, key: keys[17] as i64 }).await.unwrap().rows, 1);
    }
    if supports(OpKind::MultiGet) {
        let all = Op::MultiGet { table: 1, keys: keys.iter().map(|&k| k as i64).collect() };
        assert_eq!(conn.execute(&all).await.expect("multi-get of PAIRS keys").rows, PAIRS);
    }
    if supports(OpKind::Delete) {
        let some: Vec<Op> = keys[..100].iter().map(|&k| Op::Delete { table: 1, key: k as i64 }).collect();
        assert_eq!(conn.execute_batch(&some).await.expect("batch delete").rows, 100);
        assert_eq!(target.count_rows(fresh).await.expect("count"), PAIRS - 100);
        assert_eq!(conn.execute_batch(&some).await.expect("batch delete again").rows, 0, "deleted keys are not found again");
        let one = Op::Delete { table: 1, key: keys[0] as i64 };
        assert_eq!(conn.execute(&one).await.expect("delete again").rows, 0, "a deleted key is not found again");
    }
    if supports(OpKind::Update) {
        let update = |key: u64| Op::Update { table: 1, key: key as i64, column: 1, value: Value::Int(-5).into() };
        assert_eq!(conn.execute(&update(keys[200])).await.expect("update").rows, 1, "update of a stored key");
        assert_eq!(conn.execute(&update(PAIRS + 10)).await.expect("update of a missing key").rows, 0, "nothing to update");
        assert_eq!(target.count_rows(fresh).await.expect("count"), if supports(OpKind::Delete) { PAIRS - 100 } else { PAIRS });
    }
    if supports(OpKind::FetchAll) {
        let expected = if supports(OpKind::Delete) { PAIRS - 100 } else { PAIRS };
        assert_eq!(conn.execute(&Op::FetchAll { table: 1 }).await.expect("fetch all").rows, expected);
    }
    drop(conn);
    target.cleanup().await.expect("cleanup");
}

/// Ops per measured run, in batches of `BATCH`.
const RUN_OPS: u64 = 40;
const BATCH: usize = 10;
const POINT: Point = Point { clients: 1, batch: BATCH, batched: true, param: None, rate: None };

/// The op stream of a one-point, one-run experiment of `op`.
fn stream(op: ExperimentOp, data: &Dataset) -> OpStream {
    let experiment = Experiment { column: kv::GROUP, max_column: kv::VALUE, ..Experiment::single(&format!("{op:?}"), op, RUN_OPS, POINT) };
    OpStream::new(&experiment, 0, data, SEED, 1)
}

/// One measured run of `op` on `target` through the runner's own client loop: one client,
/// batches of `BATCH`.
async fn measure(target: &Arc<dyn Target>, data: &Dataset, op: ExperimentOp) -> RunMeasurement {
    let job = RunJob {
        target: target.clone(),
        stream: Arc::new(stream(op, data)),
        point: POINT,
        point_index: 0,
        run: 0,
        warmup: false,
        seqs: 0..RUN_OPS,
        clients: POINT.clients,
        timeout: Duration::from_secs(30),
        cancel: Arc::new(AtomicBool::new(false)),
        progress: Arc::new(AtomicU64::new(0)),
        rate: None,
        time_limit: None,
        check_rows: true,
        stop: None,
        cold_call: false,
        budget: None,
        intervals: Some(Duration::from_secs(1)),
    };
    run_once(Arc::new(job)).await
}

/// The key that op `seq` of a measured run of `op` works on.
fn key_of(op: ExperimentOp, data: &Dataset, seq: u64) -> i64 {
    match stream(op, data).op(&POINT, 0, 0, seq) {
        Op::Insert { row, .. } => row[0].as_int().expect("integer keys"),
        Op::Get { key, .. } | Op::Delete { key, .. } => key,
        other => panic!("no key in {other:?}"),
    }
}

/// A failed or short request adds nothing but failed ops or missing rows: checks the
/// accounting of a measured run in which `bad_requests` of its `RUN_OPS / BATCH` requests
/// were bad.
fn assert_only_ok_requests_count(m: &RunMeasurement, kind: OpKind, bad_requests: u64, what: &str) {
    let ok_requests = RUN_OPS / BATCH as u64 - bad_requests;
    assert_eq!((m.ops, m.requests), (RUN_OPS, RUN_OPS / BATCH as u64), "{what}: every op is sent");
    assert_eq!(m.ok_ops, ok_requests * BATCH as u64, "{what}: ok ops {m:?}");
    assert_eq!(m.service.get(&kind).map_or(0, |l| l.count), ok_requests, "{what}: only ok requests are timed");
    assert_eq!(m.rows, ok_requests * BATCH as u64, "{what}: rows of ok requests only");
    assert!(m.is_void() && m.ops_per_sec().is_none(), "{what}: the run has no throughput");
}

/// Measured runs through the runner: a batch of gets over keys deleted under it comes back
/// short and counts missing rows; a batch of inserts the system rejects counts as failed
/// ops and an error. Neither adds ops, rows or time. Leaves dbsweep's (broken) tables for
/// the next `prepare` to replace: run it before `check_target`.
pub async fn check_measured_failures(target: Arc<dyn Target>, fault: Fault) {
    let data = Dataset::new(&DataSpec::Kv { rows: ROWS, payload_bytes: 24 }, SEED);
    let caps = target.info().capabilities.clone();
    target.prepare(&data.tables).await.expect("prepare");
    assert_eq!(target.load(&data.tables[0], data.initial(0)).await.expect("load"), ROWS);

    if caps.supports_kind(OpKind::Get) && caps.supports_kind(OpKind::Delete) {
        // Three keys the run will read are deleted first: two in its first batch, one in
        // its third.
        let mut conn = target.connect().await.expect("connect");
        for seq in [5, 6, 25] {
            let key = key_of(ExperimentOp::Get, &data, seq);
            assert_eq!(conn.execute(&Op::Delete { table: 0, key }).await.expect("delete").rows, 1);
        }
        drop(conn);
        let m = measure(&target, &data, ExperimentOp::Get).await;
        assert_eq!((m.failed_ops, m.short_ops, m.missing_rows), (0, 2 * BATCH as u64, 3), "gets of deleted keys: {m:?}");
        assert_only_ok_requests_count(&m, OpKind::Get, 2, "gets of deleted keys");
    }

    // The run's second batch holds the victim row.
    let victim = key_of(ExperimentOp::Insert, &data, 15);
    let duplicate = matches!(fault, Fault::DuplicateKey);
    match fault {
        Fault::DuplicateKey => {
            assert_eq!(target.load(&data.tables[0], data.new_rows(0, victim..victim + 1)).await.expect("store the victim row"), 1);
        }
        Fault::Custom(break_it) => break_it(target.info().url.clone(), victim).await,
    }
    let m = measure(&target, &data, ExperimentOp::Insert).await;
    let bad = RUN_OPS / BATCH as u64 - m.ok_ops / BATCH as u64;
    assert!(bad >= 1, "the rejected batch is counted as failed: {m:?}");
    if duplicate {
        assert_eq!(bad, 1, "only the batch with the repeated key fails: {m:?}");
    }
    assert_eq!(m.failed_ops, bad * BATCH as u64, "a failed batch fails all of its ops: {m:?}");
    assert_eq!(m.error_count(), bad, "one error per failed request: {m:?}");
    assert!(m.errors.contains_key("server"), "the system's refusal is a server error: {m:?}");
    assert_only_ok_requests_count(&m, OpKind::Insert, bad, "rejected inserts");
}

/// TPC-H SF 0.01 on a target that offers the four queries: every table loads completely
/// and Q1, Q3, Q6 and Q14 agree with the reference answers; cleans up.
pub async fn check_tpch_sf001(target: Arc<dyn Target>) {
    const SF: f64 = 0.01;
    let data = Dataset::new(&DataSpec::Tpch { scale: SF }, 7);
    target.prepare(&data.tables).await.unwrap();
    for (t, def) in data.tables.iter().enumerate() {
        assert_eq!(target.load(def, Box::new(data.initial(t))).await.unwrap(), data.initial_rows(t), "{}", def.name);
        assert_eq!(target.count_rows(def).await.unwrap(), data.initial_rows(t), "{}", def.name);
    }
    let mut conn = target.connect().await.unwrap();
    for q in [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14] {
        let out = conn.execute(&Op::Query(q)).await.unwrap_or_else(|e| panic!("{q:?}: {e:?}"));
        let got = out.answer.expect("a query answers");
        let want = tpch_reference::answer(q, SF);
        assert!(got.agrees_with(&want), "{q:?}:\n got {got:?}\nwant {want:?}");
    }
    drop(conn);
    target.cleanup().await.unwrap();
}
