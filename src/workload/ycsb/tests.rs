//! Unit tests of `workload::ycsb`.

use super::*;
use crate::base::table::Value;
use std::collections::HashSet;

fn kind_counts(g: &OpGen, n: u64) -> [u64; 5] {
    let mut c = [0u64; 5];
    for seq in 0..n {
        let i = match g.op(seq).kind() {
            OpKind::Get => 0,
            OpKind::Update => 1,
            OpKind::Insert => 2,
            OpKind::Scan => 3,
            OpKind::ReadModifyWrite => 4,
            k => panic!("unexpected {k:?}"),
        };
        c[i] += 1;
    }
    c
}

#[test]
fn core_proportions_hold() {
    let n = 100_000u64;
    for letter in ['a', 'b', 'c', 'd', 'e', 'f'] {
        let w = Workload::core(letter).unwrap();
        let g = OpGen::new(&w, 42, 0).unwrap();
        let c = kind_counts(&g, n);
        let props = [w.readproportion, w.updateproportion, w.insertproportion, w.scanproportion, w.readmodifywriteproportion];
        for (i, p) in props.iter().enumerate() {
            let expect = n as f64 * p;
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((c[i] as f64 - expect).abs() <= 4.0 * sd, "workload {letter}: kind {i} count {} expected {expect} (sd {sd})", c[i]);
        }
    }
}

#[test]
fn core_workload_values() {
    let d = Workload::core('d').unwrap();
    assert_eq!(d.requestdistribution, RequestDistribution::Latest);
    assert_eq!((d.readproportion, d.insertproportion), (0.95, 0.05));
    let e = Workload::core('E').unwrap();
    assert_eq!((e.scanproportion, e.insertproportion, e.maxscanlength), (0.95, 0.05, 100));
    assert_eq!(e.requestdistribution, RequestDistribution::Zipfian);
    let f = Workload::core('f').unwrap();
    assert_eq!((f.readproportion, f.readmodifywriteproportion), (0.5, 0.5));
    assert_eq!((f.recordcount, f.operationcount, f.fieldcount, f.fieldlength), (1000, 1000, 10, 100));
    assert!(Workload::core('g').is_err());
}

/// Replays ops in order, tracking which keys exist.
fn check_keys_exist(w: &Workload, seed: u64, n: u64) {
    let g = OpGen::new(w, seed, 3).unwrap();
    let mut live: HashSet<i64> = (0..w.recordcount).map(|k| g.key_of(k)).collect();
    assert_eq!(live.len() as u64, w.recordcount);
    let mut inserted_keys = 0;
    for seq in 0..n {
        match g.op(seq) {
            Op::Insert { table, row } => {
                assert_eq!(table, 3);
                assert_eq!(row.len(), w.fieldcount + 1);
                let key = row[0].as_int().unwrap();
                assert!(live.insert(key), "seq {seq}: insert of existing key {key}");
                inserted_keys += 1;
            }
            Op::Get { key, .. } | Op::Update { key, .. } | Op::ReadModifyWrite { key, .. } => {
                assert!(live.contains(&key), "seq {seq}: key {key} does not exist");
            }
            Op::Scan { start, count, .. } => {
                assert!(live.contains(&start), "seq {seq}: scan start {start} does not exist");
                assert!((w.minscanlength..=w.maxscanlength).contains(&(count as u64)));
            }
            op => panic!("unexpected {op:?}"),
        }
    }
    if w.insertproportion > 0.0 {
        assert!(inserted_keys > 0);
    }
}

#[test]
fn keys_exist_for_every_core_workload_and_distribution() {
    for letter in ['a', 'b', 'c', 'd', 'e', 'f'] {
        check_keys_exist(&Workload::core(letter).unwrap(), 7, 20_000);
    }
    for dist in [
        RequestDistribution::Uniform,
        RequestDistribution::Zipfian,
        RequestDistribution::Latest,
        RequestDistribution::Hotspot,
        RequestDistribution::Exponential,
    ] {
        for order in [InsertOrder::Hashed, InsertOrder::Ordered] {
            let w = Workload {
                recordcount: 100,
                operationcount: 5000,
                readproportion: 0.4,
                updateproportion: 0.2,
                insertproportion: 0.2,
                scanproportion: 0.1,
                readmodifywriteproportion: 0.1,
                requestdistribution: dist,
                scanlengthdistribution: ScanLengthDistribution::Zipfian,
                maxscanlength: 50,
                insertorder: order,
                ..Workload::default()
            };
            check_keys_exist(&w, 9, 5000);
        }
    }
}

#[test]
fn reads_expect_their_record_only_once_its_insert_has_settled() {
    for letter in ['a', 'd', 'e', 'f'] {
        let w = Workload { recordcount: 100, operationcount: 4000, ..Workload::core(letter).unwrap() };
        let g = OpGen::new(&w, 9, 0).unwrap();
        let run_start = 2000;
        for seq in 0..4000 {
            // One client: every earlier insert is done, so every read finds its record.
            let alone = g.planned(seq, seq, &(0..0));
            assert_eq!(alone.op, g.op(seq));
            // Several clients: only records loaded or inserted before the run started.
            let shared = g.planned(seq, seq.min(run_start), &(0..0));
            assert_eq!(shared.op, alone.op);
            let keynum = match &alone.op {
                Op::Insert { .. } => {
                    assert_eq!((alone.expected_rows, shared.expected_rows), (1, 1), "an insert writes its record");
                    continue;
                }
                _ => g.keynum(seq),
            };
            assert_eq!(alone.expected_rows, 1, "workload {letter} seq {seq}");
            let settled = keynum < w.recordcount || keynum - w.recordcount < seq.min(run_start);
            assert_eq!(shared.expected_rows, u64::from(settled), "workload {letter} seq {seq} keynum {keynum}");
        }
    }
}

#[test]
fn a_workers_share_reads_only_records_inserted_before_the_run_or_by_itself() {
    // A run of 3,000 sequence numbers from 6,000 on, of which this worker sends the
    // last third: the first two thirds are other workers' and unseen.
    let (run_start, share_start, end) = (6000u64, 8000u64, 9000u64);
    let unseen = run_start..share_start;
    for letter in ['d', 'e'] {
        let w = Workload { recordcount: 500, operationcount: 10_000, ..Workload::core(letter).unwrap() };
        let rc = w.recordcount;
        let g = OpGen::new(&w, 3, 0).unwrap();
        let (mut reads, mut own) = (0, 0);
        for seq in share_start..end {
            let planned = g.planned(seq, seq, &unseen);
            if matches!(planned.op, Op::Insert { .. }) {
                continue;
            }
            let keynum = g.keynum_seen(seq, &unseen);
            reads += 1;
            assert!(keynum < rc + run_start || (rc + share_start..rc + seq).contains(&keynum), "workload {letter} seq {seq}: {keynum}");
            assert!(g.exists(keynum, seq), "workload {letter} seq {seq}: {keynum} was never inserted");
            assert_eq!(planned.expected_rows, 1, "one client: every record it reads is there");
            own += u64::from(keynum >= rc + share_start);
        }
        if letter == 'd' {
            // "Latest": the worker's own recent inserts are still the most read.
            assert!(own as f64 > 0.4 * reads as f64, "{own} of {reads}");
        }
    }
    // With nothing unseen, one process's records.
    let w = Workload { recordcount: 500, operationcount: 10_000, ..Workload::core('d').unwrap() };
    let g = OpGen::new(&w, 3, 0).unwrap();
    assert!((share_start..end).all(|seq| g.keynum_seen(seq, &(0..0)) == g.keynum(seq) && g.planned(seq, seq, &(0..0)).op == g.op(seq)));
}

#[test]
fn latest_reads_recent_inserts() {
    let w = Workload { recordcount: 1000, operationcount: 20_000, ..Workload::core('d').unwrap() };
    let g = OpGen::new(&w, 5, 0).unwrap();
    let mut recent = 0;
    let mut reads = 0;
    for seq in 10_000..20_000 {
        if g.kind(seq) == OpKind::Get {
            reads += 1;
            // Within the last ~100 inserts (2,000 sequence numbers at 5%).
            if g.keynum(seq) + 2000 >= w.recordcount + seq {
                recent += 1;
            }
        }
    }
    assert!(recent as f64 > 0.4 * reads as f64, "{recent} of {reads}");
}

#[test]
fn zipfian_reads_are_skewed() {
    let g = OpGen::new(&Workload::core('c').unwrap(), 1, 0).unwrap();
    let mut c = vec![0u64; 1000];
    for seq in 0..100_000 {
        c[g.keynum(seq) as usize] += 1;
    }
    c.sort_unstable_by(|a, b| b.cmp(a));
    let top10: u64 = c[..10].iter().sum();
    // Uniform would give 1,000 (1%); the scrambled zipfian gives over 10x that.
    assert!(top10 > 10_000, "{top10}");
}

#[test]
fn ops_are_pure_and_seeded() {
    for letter in ['a', 'd', 'e', 'f'] {
        let w = Workload::core(letter).unwrap();
        let a = OpGen::new(&w, 1, 0).unwrap();
        let b = OpGen::new(&w, 1, 0).unwrap();
        let c = OpGen::new(&w, 2, 0).unwrap();
        let oa: Vec<Op> = (0..500).map(|s| a.op(s)).collect();
        // Out of order, as another client would.
        let ob: Vec<Op> = (0..500).rev().map(|s| b.op(s)).collect::<Vec<_>>().into_iter().rev().collect();
        let oc: Vec<Op> = (0..500).map(|s| c.op(s)).collect();
        assert_eq!(oa, ob);
        assert_ne!(oa, oc);
    }
}

#[test]
fn updates_write_one_field_with_a_fresh_value() {
    let g = OpGen::new(&Workload::core('a').unwrap(), 3, 0).unwrap();
    let mut columns = HashSet::new();
    for seq in 0..2000 {
        if let Op::Update { key, column, value, .. } = g.op(seq) {
            assert!((1..=10).contains(&column));
            columns.insert(column);
            let Value::Text(s) = &*value else { panic!() };
            assert_eq!(s.len(), 100);
            assert_ne!(*value, g.row(key)[column]);
        }
    }
    assert_eq!(columns.len(), 10);
}

#[test]
fn keys_from_the_table_and_beyond_it_are_insertorder_keys() {
    let w = Workload { recordcount: KEY_TABLE_MAX + 10, ..Workload::core('a').unwrap() };
    let g = OpGen::new(&w, 1, 0).unwrap();
    assert_eq!(g.key_table.len() as u64, KEY_TABLE_MAX);
    for keynum in [0, 1, 999, KEY_TABLE_MAX - 1, KEY_TABLE_MAX, KEY_TABLE_MAX + 9, KEY_TABLE_MAX + 10 + 7] {
        assert_eq!(g.key_of(keynum), crate::data::ycsb::hashed_key(keynum), "keynum {keynum}");
    }
    let ordered = OpGen::new(&Workload { insertorder: InsertOrder::Ordered, ..w }, 1, 0).unwrap();
    assert!(ordered.key_table.is_empty());
    assert_eq!(ordered.key_of(5), 5);
}

#[test]
fn load_rows_stream_recordcount_rows() {
    let w = Workload { recordcount: 50, ..Workload::core('a').unwrap() };
    let g = OpGen::new(&w, 4, 0).unwrap();
    let rows: Vec<Row> = g.load_rows().collect();
    assert_eq!(rows.len(), 50);
    assert_eq!(rows[7][0], Value::Int(crate::data::ycsb::hashed_key(7)));
    assert_eq!(rows[7], g.row(g.key_of(7)));
    assert_eq!(g.table_def().columns.len(), 11);
    let ordered = OpGen::new(&Workload { insertorder: InsertOrder::Ordered, ..w }, 4, 0).unwrap();
    let keys: Vec<i64> = ordered.load_rows().map(|r| r[0].as_int().unwrap()).collect();
    assert_eq!(keys, (0..50).collect::<Vec<_>>());
}

#[test]
fn sequential_walks_the_records_and_varying_lengths_reach_updates() {
    let w = Workload {
        recordcount: 7,
        requestdistribution: RequestDistribution::Sequential,
        fieldlengthdistribution: FieldLengths::Uniform,
        minfieldlength: 3,
        fieldlength: 9,
        ..Workload::core('a').unwrap()
    };
    let g = OpGen::new(&w, 2, 0).unwrap();
    let keynums: Vec<u64> = (0..10).map(|seq| g.keynum(seq)).collect();
    assert_eq!(keynums, [0, 1, 2, 3, 4, 5, 6, 0, 1, 2]);
    let mut lengths = HashSet::new();
    for seq in 0..500 {
        if let Op::Update { value, .. } = g.op(seq)
            && let Value::Text(v) = &*value
        {
            lengths.insert(v.len());
        }
    }
    assert_eq!(lengths, (3..=9).collect::<HashSet<usize>>());
    let bad = Workload { minfieldlength: 10, ..w };
    assert!(OpGen::new(&bad, 2, 0).unwrap_err().contains("minfieldlength"));
}
