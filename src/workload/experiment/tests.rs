//! Unit tests of `workload::experiment`.

use super::*;
use crate::data::DataSpec;

fn experiment(op: ExperimentOp) -> Experiment {
    let point = Point { clients: 1, batch: 1, batched: false, param: Some(5), rate: None };
    Experiment {
        column: crate::data::kv::GROUP,
        max_column: crate::data::kv::VALUE,
        runs: 3,
        warmup: 1,
        ..Experiment::single(&format!("{op:?}"), op, 100, point)
    }
}

fn dataset() -> Dataset {
    Dataset::new(&DataSpec::Kv { rows: 1000, payload_bytes: 10 }, 1)
}

#[test]
fn time_based_reads_send_the_fixed_ops_stream_and_go_on_past_it() {
    let fixed = experiment(ExperimentOp::Get);
    let timed = Experiment { duration_secs: Some(2.0), ..fixed.clone() };
    let (a, b) = (OpStream::new(&fixed, 0, &dataset(), 9, 4), OpStream::new(&timed, 0, &dataset(), 9, 4));
    let p = fixed.points[0];
    assert_eq!((a.seqs_per_run(&p), b.seqs_per_run(&p)), (100, TIME_BASED_READ_SEQS));
    let first: Vec<Op> = (0..100).map(|seq| a.op(&p, 0, 1, seq)).collect();
    assert_eq!(first, (0..100).map(|seq| b.op(&p, 0, 1, seq)).collect::<Vec<_>>());
    // Past the fixed run's ops, reads keep finding loaded keys.
    for seq in [100, 5_000, 1 << 40] {
        let planned = b.planned(&p, 0, 1, seq);
        assert!(matches!(planned.op, Op::Get { key, .. } if (0..1000).contains(&key)) && planned.expected_rows == 1);
    }
}

#[test]
fn time_based_inserts_never_repeat_a_key_within_or_across_runs() {
    let timed = Experiment { duration_secs: Some(2.0), ..experiment(ExperimentOp::Insert) };
    let s = OpStream::new(&timed, 0, &dataset(), 9, 4);
    let p = timed.points[0];
    // One point, four runs: a quarter of the experiment's key space each.
    assert_eq!(s.seqs_per_run(&p), (EXPERIMENT_STRIDE / 4) as u64);
    let mut keys = std::collections::HashSet::new();
    for run in 0..4 {
        // Far more than the fixed run's 100 ops, and the run's last sequence number.
        let keys_of_run = s.inserted_keys(&p, 0, run, 5_000);
        assert_eq!(keys_of_run.len(), 5_000);
        keys.extend(keys_of_run);
        let last = s.op(&p, 0, run, s.seqs_per_run(&p) - 1);
        assert!(matches!(last, Op::Insert { row, .. } if s.write_keys(0, run).contains(&row[0].as_int().unwrap())));
    }
    assert_eq!(keys.len(), 20_000, "no key twice");
    assert!(keys.iter().all(|&k| (EXPERIMENT_STRIDE..2 * EXPERIMENT_STRIDE).contains(&k)), "above the preloaded keys");
}

#[test]
fn same_spec_gives_same_ops_and_reads_repeat_across_runs() {
    let e = experiment(ExperimentOp::Get);
    let a = OpStream::new(&e, 0, &dataset(), 9, 4);
    let b = OpStream::new(&e, 0, &dataset(), 9, 4);
    let p = e.points[0];
    let run1: Vec<Op> = (0..100).map(|s| a.op(&p, 0, 1, s)).collect();
    assert_eq!(run1, (0..100).map(|s| b.op(&p, 0, 1, s)).collect::<Vec<_>>());
    assert_eq!(run1, (0..100).map(|s| a.op(&p, 0, 2, s)).collect::<Vec<_>>(), "reads repeat per run");
    let other_seed = OpStream::new(&e, 0, &dataset(), 10, 4);
    assert_ne!(run1, (0..100).map(|s| other_seed.op(&p, 0, 1, s)).collect::<Vec<_>>());
}

#[test]
fn gets_never_repeat_a_key_within_a_batch_window() {
    let e = experiment(ExperimentOp::Get);
    let s = OpStream::new(&e, 0, &dataset(), 3, 4);
    let keys: std::collections::HashSet<i64> = (0..1000)
        .map(|seq| match s.op(&e.points[0], 0, 0, seq) {
            Op::Get { key, .. } => key,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(keys.len(), 1000);
}

#[test]
fn writes_use_disjoint_keys_per_run_and_point() {
    let e = experiment(ExperimentOp::Insert);
    let s = OpStream::new(&e, 0, &dataset(), 3, 4);
    let mut all = std::collections::HashSet::new();
    for point in 0..3 {
        for run in 0..4 {
            for seq in 0..100 {
                let Op::Insert { row, .. } = s.op(&e.points[0], point, run, seq) else { unreachable!() };
                assert!(all.insert(row[0].as_int().unwrap()), "key reused");
            }
        }
    }
    assert!(all.iter().all(|k| *k >= 1000), "writes collide with preloaded keys");
}

#[test]
fn lifecycle_phases_write_all_keys_then_read_and_delete_among_them() {
    let n = 1000u64;
    let phase = |op| Experiment {
        lifecycle: true,
        ops: 30,
        points: vec![Point { clients: 1, batch: 1, batched: false, param: Some(n), rate: None }],
        ..experiment(op)
    };
    let data = Dataset::new(
        &DataSpec::Pairs {
            rows: 0,
            value: crate::data::pairs::PairValue::Text,
            value_bytes: 20,
            keys: crate::data::pairs::KeyOrder::Sequential,
            empty_table: None,
        },
        1,
    );
    let stream = |op| {
        let e = phase(op);
        (OpStream::new(&e, 1, &data, 7, 3), e.points[0])
    };
    let (writes, p) = stream(ExperimentOp::Insert);
    assert_eq!(writes.ops_at(&p), n, "write-all writes N pairs");
    let keys: Vec<i64> = (0..n)
        .map(|seq| match writes.op(&p, 0, 2, seq) {
            Op::Insert { row, .. } => row[0].as_int().unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys, (0..n as i64).collect::<Vec<_>>(), "keys 0..N, the same in every run");
    let (reads, p) = stream(ExperimentOp::Get);
    assert_eq!(reads.ops_at(&p), 30);
    assert!((0..30).all(|seq| matches!(reads.op(&p, 0, 0, seq), Op::Get { key, .. } if (0..n as i64).contains(&key))));
    let (deletes, p) = stream(ExperimentOp::Delete);
    let deleted: std::collections::HashSet<i64> = (0..deletes.ops_at(&p))
        .map(|seq| match deletes.op(&p, 0, 0, seq) {
            Op::Delete { key, .. } => key,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(deleted.len(), 30, "distinct keys");
    assert!(deleted.iter().all(|k| (0..n as i64).contains(k)));
    let (fetch, p) = stream(ExperimentOp::FetchAll);
    assert_eq!(fetch.ops_at(&p), 1);
    assert_eq!(fetch.op(&p, 0, 0, 0), Op::FetchAll { table: 0 });
}

#[test]
fn a_lifecycle_delete_phase_leaves_nine_tenths_of_the_keys_to_fetch() {
    let at = |ops: u64, n: u64| {
        let point = Point { clients: 1, batch: 1, batched: false, param: Some(n), rate: None };
        let phase = |op| Experiment { lifecycle: true, ops, points: vec![point], ..experiment(op) };
        let plan = [phase(ExperimentOp::Insert), phase(ExperimentOp::Delete), phase(ExperimentOp::FetchAll)];
        let streams = streams(&plan, &dataset(), 7);
        (streams[1].ops_at(&point), streams[2].planned(&point, 0, 0, 0).expected_rows)
    };
    // The in-memory study's 1,000 ops at N = 1,000 once deleted every key.
    assert_eq!(at(1000, 1000), (100, 900));
    assert_eq!(at(1000, 100_000), (1000, 99_000));
    assert_eq!(at(30, 1000), (30, 970));
    assert_eq!(at(1000, 5), (1, 4));
}

#[test]
fn shuffled_pairs_insert_the_papers_keys_and_find_them_in_file_order() {
    use crate::data::pairs::{KeyOrder, PairValue};
    let spec = DataSpec::Pairs {
        rows: 1000,
        value: PairValue::Int,
        value_bytes: 0,
        keys: KeyOrder::Shuffled,
        empty_table: Some("pairs_new".into()),
    };
    let data = Dataset::new(&spec, 0);
    let sized = |op, table, n| Experiment {
        sized: op == ExperimentOp::Insert,
        table,
        ops: n,
        points: vec![Point { clients: 1, batch: n as usize, batched: true, param: Some(n), rate: None }],
        ..experiment(op)
    };
    // insert-all at N = 300 into the empty table: `gen keys 300`'s keys, in its order,
    // the same in every run.
    let e = sized(ExperimentOp::Insert, 1, 300);
    let s = OpStream::new(&e, 1, &data, 0, 6);
    let keys = |run| -> Vec<u64> {
        (0..300)
            .map(|seq| match s.op(&e.points[0], 0, run, seq) {
                Op::Insert { table: 1, row } => row[0].as_int().unwrap() as u64,
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(keys(0), crate::data::keys::shuffled(300, 0));
    assert_eq!(keys(0), keys(4), "the paper re-inserted the same input in every repeat");
    // find at N = 200: the first 200 keys of the 1,000-key store, as loaded.
    let e = sized(ExperimentOp::MultiGet, 0, 200);
    let s = OpStream::new(&e, 2, &data, 0, 6);
    let Op::MultiGet { keys, .. } = s.op(&e.points[0], 0, 3, 0) else { panic!("multi-get") };
    let store = crate::data::keys::shuffled(1000, 0);
    assert_eq!(keys, store[..200].iter().map(|&k| k as i64).collect::<Vec<_>>());
    let loaded: Vec<i64> = data.initial(0).map(|row| row[0].as_int().unwrap()).collect();
    assert_eq!(loaded, store.iter().map(|&k| k as i64).collect::<Vec<_>>());
    assert_eq!(data.initial_rows(1), 0, "the inserts' table starts empty");
}

#[test]
fn ops_carry_the_rows_the_plan_knows_they_must_find() {
    let data = dataset();
    let expected = |op: ExperimentOp, point: Point| {
        let e = Experiment { points: vec![point], ..experiment(op) };
        let s = OpStream::new(&e, 0, &data, 3, 4);
        (0..20).map(|seq| s.planned(&point, 0, 1, seq)).collect::<Vec<_>>()
    };
    let one = Point { clients: 2, batch: 1, batched: false, param: Some(5), rate: None };
    assert!(expected(ExperimentOp::Get, one).iter().all(|p| p.expected_rows == 1));
    assert!(expected(ExperimentOp::Insert, one).iter().all(|p| p.expected_rows == 1));
    assert!(expected(ExperimentOp::Delete, one).iter().all(|p| p.expected_rows == 1));
    assert!(
        expected(ExperimentOp::MultiGet, one)
            .iter()
            .all(|p| matches!(&p.op, Op::MultiGet { keys, .. } if keys.len() == 5) && p.expected_rows == 5)
    );
    assert!(expected(ExperimentOp::Echo, one).iter().all(|p| p.expected_rows == 0));
    assert!(expected(ExperimentOp::RangeMax, one).iter().all(|p| p.expected_rows == 0), "a MAX is checked by its answer");
    assert!(expected(ExperimentOp::FetchAll, one).iter().all(|p| p.expected_rows == 1000));
    // Ranges over kv groups expect exactly the preloaded rows in the range.
    let generator = crate::data::kv::KvGen::new(1, 1000, 10);
    for op in [ExperimentOp::RangeRows, ExperimentOp::RangeCount] {
        for p in expected(op, one) {
            let Op::Range { lo, hi, .. } = p.op else { unreachable!() };
            let rows = (0..1000).filter(|k| (lo..=hi).contains(&generator.group_of(*k))).count() as u64;
            assert_eq!(p.expected_rows, rows, "{op:?} {lo}..={hi}");
        }
    }
    // A batch of COUNTs carries no counts to check.
    let batched = Point { batched: true, batch: 4, ..one };
    assert!(expected(ExperimentOp::RangeCount, batched).iter().all(|p| p.expected_rows == 0));
    // Where the generator does not define a range's rows cheaply, nothing is guessed.
    let tpch = Dataset::new(&DataSpec::Tpch { scale: 0.01 }, 1);
    let orders = tpch.table_id("orders").unwrap();
    let custkey = tpch.tables[orders].columns.iter().position(|c| c.name == "o_custkey").unwrap();
    let e = Experiment { table: orders, column: custkey, ..experiment(ExperimentOp::RangeCount) };
    let s = OpStream::new(&e, 0, &tpch, 3, 4);
    assert!((0..20).all(|seq| s.planned(&one, 0, 0, seq).expected_rows == 0));
    // op() is planned() without the expectation.
    let e = experiment(ExperimentOp::MultiGet);
    let s = OpStream::new(&e, 0, &data, 3, 4);
    assert!((0..20).all(|seq| s.op(&one, 0, 2, seq) == s.planned(&one, 0, 2, seq).op));
}

#[test]
fn lifecycle_reads_after_a_delete_phase_expect_only_the_keys_left() {
    let n = 1000u64;
    let point = Point { clients: 1, batch: 1, batched: false, param: Some(n), rate: None };
    let phase = |op, name: &str| Experiment { name: name.into(), lifecycle: true, ops: 30, points: vec![point], ..experiment(op) };
    let spec = DataSpec::Pairs {
        rows: 0,
        value: crate::data::pairs::PairValue::Text,
        value_bytes: 20,
        keys: crate::data::pairs::KeyOrder::Sequential,
        empty_table: None,
    };
    let data = Dataset::new(&spec, 1);
    let plan = [
        phase(ExperimentOp::Insert, "write"),
        phase(ExperimentOp::Get, "read-before"),
        phase(ExperimentOp::Delete, "delete"),
        phase(ExperimentOp::Delete, "delete-again"),
        phase(ExperimentOp::Get, "read-after"),
        phase(ExperimentOp::FetchAll, "fetch"),
    ];
    let streams = streams(&plan, &data, 7);
    let planned = |i: usize, seq: u64| streams[i].planned(&point, 0, 0, seq);
    let deleted: std::collections::HashSet<i64> = (0..30)
        .map(|seq| match planned(2, seq).op {
            Op::Delete { key, .. } => key,
            other => panic!("{other:?}"),
        })
        .collect();
    assert!((0..30).all(|seq| planned(2, seq).expected_rows == 1), "the first delete finds every key");
    assert!((0..30).all(|seq| planned(3, seq).expected_rows == 0), "the second delete of the same keys finds none");
    assert!((0..100).all(|seq| planned(1, seq).expected_rows == 1), "before the delete every key is there");
    for seq in 0..100 {
        let p = planned(4, seq);
        let Op::Get { key, .. } = p.op else { unreachable!() };
        assert_eq!(p.expected_rows, u64::from(!deleted.contains(&key)), "key {key}");
    }
    // Two delete phases are counted twice: a lower bound, never more than is there.
    assert_eq!(planned(5, 0).expected_rows, n - 60);
    assert!(planned(5, 0).expected_rows <= n - deleted.len() as u64);
}

#[test]
fn ranges_have_the_point_width() {
    let e = experiment(ExperimentOp::RangeCount);
    let s = OpStream::new(&e, 0, &dataset(), 3, 4);
    for seq in 0..100 {
        let Op::Range { lo, hi, .. } = s.op(&e.points[0], 0, 0, seq) else { unreachable!() };
        assert_eq!(hi - lo + 1, 5);
        assert!(lo >= 0 && hi < 100);
    }
}

#[test]
fn tpch_experiments_run_their_query_and_need_it_declared() {
    let ops = [ExperimentOp::TpchQ1, ExperimentOp::TpchQ3, ExperimentOp::TpchQ6, ExperimentOp::TpchQ14];
    let ids = [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14];
    for (op, id) in ops.into_iter().zip(ids) {
        assert_eq!(op.query(), Some(id));
        assert_eq!(op.kind(), OpKind::Query);
        assert!(!op.writes() && !op.is_range());
        let e = experiment(op);
        let s = OpStream::new(&e, 0, &dataset(), 3, 4);
        assert!((0..5).all(|seq| s.op(&e.points[0], 0, 1, seq) == Op::Query(id)), "{op:?}");
    }
    let q14: ExperimentOp = serde_json::from_str("\"tpch_q14\"").unwrap();
    assert_eq!(q14, ExperimentOp::TpchQ14);
    // Each query experiment needs its own query (a system may run Q1 but not Q14).
    assert_eq!(ExperimentOp::TpchQ14.needs(None), Needs::Query(QueryId::TpchQ14));
    assert_eq!(ExperimentOp::Get.needs(None), Needs::Kinds(vec![OpKind::Get]));
}

#[test]
fn range_counts_wait_for_a_run_and_match_the_rows_either_way() {
    let e = experiment(ExperimentOp::RangeRows);
    let data = dataset();
    let lazy = OpStream::new(&e, 0, &data, 9, 4);
    assert!(lazy.range_counter.get().is_none(), "a plan or an estimate walks no rows");
    let counted = OpStream::new(&e, 0, &data, 9, 4).with_range_counts();
    assert!(counted.range_counter.get().is_some_and(Option::is_some), "a run's streams count them first");
    let groups: Vec<i64> = data.initial(0).map(|row| row[crate::data::kv::GROUP].as_int().unwrap()).collect();
    assert_eq!(groups.len(), 1000);
    let p = e.points[0];
    for seq in 0..50 {
        let (a, b) = (lazy.planned(&p, 0, 1, seq), counted.planned(&p, 0, 1, seq));
        assert_eq!(a.expected_rows, b.expected_rows, "seq {seq}");
        let Op::Range { lo, hi, .. } = a.op else { panic!("{:?}", a.op) };
        let rows = groups.iter().filter(|g| (lo..=hi).contains(*g)).count();
        assert_eq!(a.expected_rows, rows as u64, "seq {seq}: the rows whose group is in {lo}..={hi}");
    }
}
