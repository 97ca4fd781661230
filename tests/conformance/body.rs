//! The one conformance body every adapter must pass: it checks stored and returned values
//! against the generator, so an adapter that drops, duplicates or misreads rows fails.

use dbsweep::adapter::Target;
use dbsweep::base::op::{Answer, Op, OpKind, RangeAgg};
use dbsweep::base::table::{TableDef, Value};
use dbsweep::data::kv::{self, KvGen};
use std::sync::Arc;

pub const ROWS: u64 = 1_000;
pub const SEED: u64 = 7;

/// Runs one body per adapter as its own `#[test]` with a multi-threaded runtime.
/// `$make` is an async expression yielding `(Arc<dyn Target>, guard)`; the guard (e.g. a
/// spawned server) lives until the body ends.
#[macro_export]
macro_rules! conformance {
    ($name:ident, $make:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let (target, _guard) = $make.await;
            $crate::body::check_target(target).await;
        }
    };
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
        let op = Op::Update { table: 0, key: 40, column: kv::VALUE, value: Value::Float(123456.5) };
        assert_eq!(conn.execute(&op).await.unwrap().rows, 1, "update");
        if supports(OpKind::RangeMax) {
            let g = rowgen.group_of(40);
            let max = Op::Range { table: 0, column: kv::GROUP, lo: g, hi: g, agg: RangeAgg::Max { column: kv::VALUE } };
            assert_eq!(as_f64(&scalar(conn.execute(&max).await.unwrap())), 123456.5, "updated value is read back");
        }
        let missing = Op::Update { table: 0, key: ROWS as i64 * 10, column: kv::VALUE, value: Value::Float(1.0) };
        assert_eq!(conn.execute(&missing).await.unwrap().rows, 0, "update of a missing key");
    }
    if supports(OpKind::ReadModifyWrite) {
        let op = Op::ReadModifyWrite { table: 0, key: 41, column: kv::VALUE, value: Value::Float(7.25) };
        assert_eq!(conn.execute(&op).await.unwrap().rows, 1, "read-modify-write");
    }
    drop(conn);

    target.cleanup().await.expect("cleanup");
}
