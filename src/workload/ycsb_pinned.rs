//! Pins what the YCSB generator sends: keys, fields, value bytes, scan lengths and loaded
//! rows for fixed seeds, as digests taken from the generator before it was optimized.
//! A change here means different operations for the same seed, i.e. results that are no
//! longer comparable with earlier runs: only ever update these numbers deliberately.

use super::ycsb::{OpGen, Workload};
use crate::base::op::Op;
use crate::base::table::Value;

/// FNV-1a 64 over a byte stream: stable across platforms and Rust versions.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn int(&mut self, v: i64) {
        self.bytes(&v.to_le_bytes());
    }

    fn value(&mut self, v: &Value) {
        match v {
            Value::Int(i) => self.int(*i),
            Value::Text(s) => self.bytes(s.as_bytes()),
            other => panic!("unexpected value {other:?}"),
        }
    }
}

/// Everything an op sends, in a fixed order, whatever other fields `Op` grows.
fn feed(h: &mut Fnv, op: &Op) {
    match op {
        Op::Get { key, .. } => {
            h.bytes(b"R");
            h.int(*key);
        }
        Op::Update { key, column, value, .. } => {
            h.bytes(b"U");
            h.int(*key);
            h.int(*column as i64);
            h.value(value);
        }
        Op::ReadModifyWrite { key, column, value, .. } => {
            h.bytes(b"M");
            h.int(*key);
            h.int(*column as i64);
            h.value(value);
        }
        Op::Insert { row, .. } => {
            h.bytes(b"I");
            row.iter().for_each(|v| h.value(v));
        }
        Op::Scan { start, count, .. } => {
            h.bytes(b"S");
            h.int(*start);
            h.int(*count as i64);
        }
        other => panic!("unexpected op {other:?}"),
    }
}

fn ops_digest(letter: char, seed: u64, recordcount: u64, n: u64) -> u64 {
    let w = Workload { recordcount, operationcount: n, ..Workload::core(letter).unwrap() };
    let g = OpGen::new(&w, seed, 0).unwrap();
    let mut h = Fnv::new();
    for seq in 0..n {
        feed(&mut h, &g.op(seq));
    }
    h.0
}

#[test]
fn ops_are_the_pinned_ones() {
    let cases = [
        ('a', 42, 1000, 0xec41_cc50_44e9_876b_u64),
        ('b', 42, 1000, 0xfef7_8fab_5c29_eaec),
        ('c', 42, 1000, 0x456b_404a_0b16_14a3),
        ('d', 42, 1000, 0xe1a7_e863_ed6c_2331),
        ('e', 42, 1000, 0xda9f_940a_83b0_d9f1),
        ('f', 42, 1000, 0xa541_ee19_631b_8bbb),
        ('a', 7, 10_000, 0x2346_a0a1_f87a_783e),
        ('c', 7, 10_000, 0x4ba8_d5d3_5c81_d48b),
    ];
    let got: Vec<(char, u64, u64, u64)> = cases.iter().map(|&(l, s, rc, _)| (l, s, rc, ops_digest(l, s, rc, 20_000))).collect();
    assert_eq!(got, cases.to_vec(), "the YCSB generator sends different operations for the same seed");
}

#[test]
fn first_ops_of_workload_a_are_the_pinned_ones() {
    let g = OpGen::new(&Workload::core('a').unwrap(), 42, 0).unwrap();
    let got: Vec<String> = (0..6)
        .map(|seq| match g.op(seq) {
            Op::Get { key, .. } => format!("READ {key}"),
            Op::Update { key, column, value, .. } => match &*value {
                Value::Text(v) => format!("UPDATE {key} field{} {}", column - 1, &v[..12]),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            "READ 8753546815431210873",
            "READ 3478864142300894949",
            "UPDATE 5701465539935650431 field0 R#xth(!ThZ,5",
            "READ 4192898967708895389",
            "READ 8637665132542722587",
            "READ 7707045408439829514"
        ]
    );
}

#[test]
fn loaded_rows_are_the_pinned_ones() {
    let g = OpGen::new(&Workload::core('a').unwrap(), 42, 0).unwrap();
    let mut h = Fnv::new();
    for row in g.load_rows() {
        row.iter().for_each(|v| h.value(v));
    }
    assert_eq!(h.0, 0x873c_69e3_c8c0_76cc);
}
