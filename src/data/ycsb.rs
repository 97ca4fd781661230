//! The YCSB `usertable`: one Int key column `ycsb_key` and `fieldcount` Text fields.
//!
//! Owns the table definition, the key of the i-th record (YCSB's `insertorder`: `hashed`
//! maps a record number through FNV-64, `ordered` keeps it), the length of field values
//! (YCSB's `fieldlengthdistribution`) and the content of a row, a pure function of (seed,
//! key). Must not decide which records an operation touches (that is `workload::ycsb`).

use crate::base::rng::{Stream, mix};
use crate::base::table::{Column, ColumnType, Row, TableDef, Value};
use crate::base::zipfian::{ZIPFIAN_CONSTANT, Zeta, Zipfian};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Name of the table, as in YCSB.
pub const TABLE: &str = "usertable";

/// Stream id of field contents.
const FIELD_STREAM: u64 = 0x7963_7362;
/// Stream id of field lengths (only drawn when they are not constant).
const LENGTH_STREAM: u64 = 0x7963_736c;

/// YCSB's `fieldlengthdistribution` (`histogram`, read from a file, is not offered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldLengths {
    /// Every value is `fieldlength` bytes (YCSB's default).
    #[default]
    Constant,
    /// Uniform in `minfieldlength..=fieldlength`.
    Uniform,
    /// Zipfian over `minfieldlength..=fieldlength`, favouring short values.
    Zipfian,
}

impl FieldLengths {
    pub fn parse(s: &str) -> Option<FieldLengths> {
        match s {
            "constant" => Some(FieldLengths::Constant),
            "uniform" => Some(FieldLengths::Uniform),
            "zipfian" => Some(FieldLengths::Zipfian),
            _ => None,
        }
    }
}

/// What a record looks like: how many fields, and how long each value is.
#[derive(Debug, Clone)]
pub struct Shape {
    pub fieldcount: usize,
    lengths: FieldLengths,
    /// Longest (or constant) value length.
    max: usize,
    min: usize,
    zipf: Option<Zipfian>,
}

impl Shape {
    /// Values of `lengths` between `min` and `max` bytes (`min` only matters when they vary).
    pub fn new(fieldcount: usize, lengths: FieldLengths, min: usize, max: usize) -> Result<Shape, String> {
        if lengths != FieldLengths::Constant && !(1..=max).contains(&min) {
            return Err(format!("minfieldlength must be between 1 and fieldlength ({max}), got {min}"));
        }
        let zipf = (lengths == FieldLengths::Zipfian).then(|| Zipfian::new((max - min + 1) as u64, &Zeta::new(ZIPFIAN_CONSTANT)));
        Ok(Shape { fieldcount, lengths, max, min, zipf })
    }

    /// `fieldcount` values of `fieldlength` bytes each.
    pub fn constant(fieldcount: usize, fieldlength: usize) -> Shape {
        Shape { fieldcount, lengths: FieldLengths::Constant, max: fieldlength, min: fieldlength, zipf: None }
    }

    /// The length of the value drawn at (`seq`, `lane`) of `stream`; constant lengths draw
    /// nothing.
    pub fn length(&self, stream: &Stream, seq: u64, lane: u64) -> usize {
        let span = (self.max - self.min + 1) as u64;
        match (self.lengths, &self.zipf) {
            (FieldLengths::Constant, _) => self.max,
            (FieldLengths::Zipfian, Some(z)) => self.min + z.from_unit(stream.unit(seq, lane)) as usize,
            _ => self.min + stream.below(seq, lane, span) as usize,
        }
    }
}

/// YCSB's `insertorder`: how a record number becomes a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InsertOrder {
    /// `hashed` (YCSB's default): key = FNV-64 of the record number, made non-negative,
    /// so consecutive records are scattered over the key space.
    #[default]
    Hashed,
    /// `ordered`: key = record number.
    Ordered,
}

impl InsertOrder {
    pub fn parse(s: &str) -> Option<InsertOrder> {
        match s {
            "hashed" => Some(InsertOrder::Hashed),
            "ordered" => Some(InsertOrder::Ordered),
            _ => None,
        }
    }

    /// The key of record number `keynum`.
    pub fn key(self, keynum: u64) -> i64 {
        match self {
            InsertOrder::Hashed => hashed_key(keynum),
            InsertOrder::Ordered => ordered_key(keynum),
        }
    }
}

/// YCSB's `Utils.fnvhash64`: FNV-1 over the 8 little-endian bytes of `val`, then
/// `Math.abs` of the signed result. (`Math.abs(i64::MIN)` stays negative in Java; here that
/// single value maps to 0 so every key is non-negative.)
pub fn fnv_hash64(val: u64) -> u64 {
    const OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 1_099_511_628_211;
    let mut v = val;
    let mut h = OFFSET;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(PRIME);
        v >>= 8;
    }
    let s = h as i64;
    if s == i64::MIN { 0 } else { s.unsigned_abs() }
}

/// Key of record `keynum` under `insertorder=hashed`: a non-negative i64.
pub fn hashed_key(keynum: u64) -> i64 {
    fnv_hash64(keynum) as i64
}

/// Key of record `keynum` under `insertorder=ordered`.
pub fn ordered_key(keynum: u64) -> i64 {
    keynum as i64
}

/// Column name of field `i` (column `i + 1`).
pub fn field_name(i: usize) -> String {
    format!("field{i}")
}

/// `usertable` with `fieldcount` Text fields after the key; no secondary indexes.
pub fn table_def(fieldcount: usize) -> TableDef {
    let mut columns = vec![Column { name: "ycsb_key".into(), ty: ColumnType::Int }];
    columns.extend((0..fieldcount).map(|i| Column { name: field_name(i), ty: ColumnType::Text }));
    TableDef { name: TABLE.into(), columns, indexed: vec![] }
}

/// The row stored under `key`: the key, then `fieldcount` printable-ASCII fields whose
/// lengths follow `shape`. Pure in (seed, key).
pub fn row(seed: u64, key: i64, shape: &Shape) -> Row {
    let stream = Stream::new(seed, FIELD_STREAM);
    let lengths = Stream::new(seed, LENGTH_STREAM);
    let mut row = Vec::with_capacity(shape.fieldcount + 1);
    row.push(Value::Int(key));
    for f in 0..shape.fieldcount {
        let len = shape.length(&lengths, key as u64, f as u64);
        row.push(Value::Text(ascii(stream.u64(key as u64, f as u64), len)));
    }
    row
}

/// Values up to this long are built on the stack, then copied once into their `Arc`.
const STACK_VALUE: usize = 256;

/// A printable ASCII string (0x21..=0x7e) of `len` bytes derived from `bits`. On the
/// client's hot path (every update builds one): one allocation, eight bytes per hash.
pub fn ascii(bits: u64, len: usize) -> Arc<str> {
    if len <= STACK_VALUE {
        let mut buf = [0u8; STACK_VALUE];
        fill_ascii(bits, &mut buf[..len]);
        Arc::from(std::str::from_utf8(&buf[..len]).expect("printable ASCII"))
    } else {
        let mut buf = vec![0u8; len];
        fill_ascii(bits, &mut buf);
        Arc::from(String::from_utf8(buf).expect("printable ASCII"))
    }
}

/// The text value `ascii(bits, len)`: an update's new field value, made when an adapter
/// first reads it (see `LazyValue`).
pub fn text_value(bits: u64, len: usize) -> Value {
    Value::Text(ascii(bits, len))
}

/// Fills `out` with printable ASCII: chunk `i` (8 bytes) comes from `mix(bits, 8 * i)`,
/// each of its bytes `b` (lowest first) mapped to `0x21 + (b * 94) / 256`.
fn fill_ascii(bits: u64, out: &mut [u8]) {
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mapped = printable(mix(bits, 8 * i as u64)).to_le_bytes();
        chunk.copy_from_slice(&mapped[..chunk.len()]);
    }
}

/// Maps each byte `b` of `word` to `0x21 + (b * 94 >> 8)`, all eight at once: the even
/// and the odd bytes are multiplied as four 16-bit lanes each (at most 255 * 94 < 2^16,
/// so no lane carries into the next) and the high byte of every lane kept.
fn printable(word: u64) -> u64 {
    const LOW_BYTES: u64 = 0x00FF_00FF_00FF_00FF;
    let even = (((word & LOW_BYTES) * 94) >> 8) & LOW_BYTES;
    let odd = (((word >> 8) & LOW_BYTES) * 94) & !LOW_BYTES;
    (even | odd) + 0x2121_2121_2121_2121
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn table_shape() {
        let t = table_def(10);
        assert_eq!(t.name, "usertable");
        assert_eq!(t.columns.len(), 11);
        assert_eq!(t.columns[0].name, "ycsb_key");
        assert_eq!(t.columns[0].ty, ColumnType::Int);
        assert_eq!(t.columns[10].name, "field9");
        assert!(t.columns[1..].iter().all(|c| c.ty == ColumnType::Text));
        assert!(t.indexed.is_empty());
    }

    #[test]
    fn rows_are_pure_printable_and_sized() {
        let shape = Shape::constant(10, 100);
        let r = row(7, 12345, &shape);
        assert_eq!(r, row(7, 12345, &shape));
        assert_ne!(r, row(8, 12345, &shape));
        assert_eq!(r[0], Value::Int(12345));
        for v in &r[1..] {
            let Value::Text(s) = v else { panic!("{v:?}") };
            assert_eq!(s.len(), 100);
            assert!(s.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{s}");
        }
        assert_ne!(r[1], r[2]);
        // Characters are spread over the alphabet.
        let distinct: HashSet<u8> = r[1..]
            .iter()
            .flat_map(|v| match v {
                Value::Text(s) => s.bytes().collect::<Vec<_>>(),
                _ => vec![],
            })
            .collect();
        assert!(distinct.len() > 80, "{}", distinct.len());
    }

    /// The definition `fill_ascii` computes eight bytes at a time.
    fn ascii_bytewise(bits: u64, len: usize) -> String {
        let mut bytes = Vec::with_capacity(len);
        let mut i = 0u64;
        while bytes.len() < len {
            let mut b = mix(bits, i);
            for _ in 0..(len - bytes.len()).min(8) {
                bytes.push(0x21 + (((b & 0xff) * 94) >> 8) as u8);
                b >>= 8;
            }
            i += 8;
        }
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn ascii_maps_every_byte_as_its_definition() {
        for len in [0, 1, 7, 8, 9, 100, 255, 256, 257, 1000] {
            for bits in [0, 1, u64::MAX, 0x0123_4567_89ab_cdef] {
                assert_eq!(&*ascii(bits, len), ascii_bytewise(bits, len), "len {len} bits {bits:x}");
            }
        }
        // Every byte value of a word, including the extremes 0x00 and 0xff.
        for b in 0..=255u64 {
            let word = b * 0x0101_0101_0101_0101;
            assert_eq!(printable(word), (0x21 + ((b * 94) >> 8)) * 0x0101_0101_0101_0101, "byte {b:#x}");
        }
    }

    #[test]
    fn varying_lengths_stay_in_bounds_and_zipfian_favours_short_values() {
        let uniform = Shape::new(10, FieldLengths::Uniform, 5, 50).unwrap();
        let zipfian = Shape::new(10, FieldLengths::Zipfian, 5, 50).unwrap();
        let lengths = |shape: &Shape| -> Vec<usize> {
            (0..2000)
                .flat_map(|key| row(3, key, shape).into_iter().skip(1))
                .map(|v| match v {
                    Value::Text(s) => s.len(),
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        let u = lengths(&uniform);
        assert!(u.iter().all(|l| (5..=50).contains(l)));
        let mean = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len() as f64;
        assert!((mean(&u) - 27.5).abs() < 1.0, "{}", mean(&u));
        assert!(u.contains(&5) && u.contains(&50));
        let z = lengths(&zipfian);
        assert!(z.iter().all(|l| (5..=50).contains(l)));
        assert!(mean(&z) < 20.0, "{}", mean(&z));
        assert!(Shape::new(10, FieldLengths::Uniform, 0, 50).is_err());
        assert!(Shape::new(10, FieldLengths::Uniform, 51, 50).is_err());
        assert_eq!(FieldLengths::parse("histogram"), None);
    }

    #[test]
    fn fnv_matches_ycsb() {
        // FNV-1 64 of eight zero bytes, computed by hand from the definition.
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(1_099_511_628_211);
        }
        assert_eq!(fnv_hash64(0), (h as i64).unsigned_abs());
        assert_eq!(ordered_key(42), 42);
        assert_eq!(InsertOrder::Ordered.key(42), 42);
        assert_eq!(InsertOrder::Hashed.key(42), hashed_key(42));
    }

    #[test]
    fn hashed_keys_are_non_negative_and_unique() {
        let mut seen = HashSet::new();
        for k in 0..200_000u64 {
            let key = hashed_key(k);
            assert!(key >= 0);
            assert!(seen.insert(key), "collision at {k}");
        }
    }
}
