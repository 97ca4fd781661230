//! The answer of a user's statements as systems agree on it: the rows of each read, as a
//! digest that ignores row order within a read, numeric types (an integer, a float, a
//! decimal and text of the same number agree) and trailing blanks, and rounds other numbers
//! to 12 significant digits (engines sum floats in different orders). Scripts
//! (`--sql-file`) and custom operations of every family digest their rows here, so a SQL
//! engine's answer and a Redis Lua script's compare.
//!
//! Owns that digest only. Must not know a system or run anything.

use crate::base::rng::{hash_str, mix};
use crate::base::table::Value;

/// Where the digest of a pass's reads starts.
pub const READS_SEED: u64 = 0x005C_21B7;
const ROWS_SEED: u64 = READS_SEED;

/// `digest` with the rows of the pass's read number `ordinal` (0 for the first read) added.
pub fn add_read(digest: u64, ordinal: u64, rows: &[Vec<Value>]) -> u64 {
    mix(digest, mix(ordinal, rows_digest(rows)))
}

/// The digest of a pass's reads, in order.
pub fn reads_digest<'a>(reads: impl IntoIterator<Item = &'a [Vec<Value>]>) -> u64 {
    reads.into_iter().enumerate().fold(READS_SEED, |digest, (ordinal, rows)| add_read(digest, ordinal as u64, rows))
}

/// The digest of one statement's rows, whatever their order: a sum of the rows' digests,
/// mixed with their count.
pub fn rows_digest(rows: &[Vec<Value>]) -> u64 {
    let sum = rows.iter().fold(0u64, |sum, row| sum.wrapping_add(row.iter().fold(ROWS_SEED, |h, v| mix(h, cell_digest(v)))));
    mix(sum, rows.len() as u64)
}

/// One cell, as systems agree on it: numbers by value (text that reads as a number too),
/// text without trailing blanks, a date as its ISO text (Redis keeps dates as text).
fn cell_digest(value: &Value) -> u64 {
    let number = match value {
        Value::Null => return 0x4E55_4C4C,
        Value::Int(i) => *i as f64,
        Value::Float(x) => *x,
        Value::Decimal(d) => d.0 as f64 / 100.0,
        Value::Date(d) => return hash_str(&d.to_iso()),
        Value::Text(t) => match t.trim().parse::<f64>() {
            Ok(x) if !t.trim().is_empty() => x,
            _ => return hash_str(t.trim_end()),
        },
    };
    if number.fract() == 0.0 && number.abs() < 9e15 { mix(0x1A7, number as i64 as u64) } else { hash_str(&format!("{number:.11e}")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_agree_whatever_their_order_type_or_padding() {
        let a = vec![vec![Value::Int(3), Value::Text("x  ".into())], vec![Value::Float(2.5), Value::Null]];
        let b = vec![
            vec![Value::Text("2.5".into()), Value::Null],
            vec![Value::Decimal(crate::base::table::Decimal(300)), Value::Text("x".into())],
        ];
        assert_eq!(rows_digest(&a), rows_digest(&b));
        let c = vec![vec![Value::Int(4), Value::Text("x".into())], vec![Value::Float(2.5), Value::Null]];
        assert_ne!(rows_digest(&a), rows_digest(&c), "a different number");
        assert_ne!(rows_digest(&a), rows_digest(&a[..1]), "a row fewer");
        assert_eq!(rows_digest(&[vec![Value::Float(0.1 + 0.2)]]), rows_digest(&[vec![Value::Float(0.3)]]), "within float noise");
        let date = crate::base::table::Date(0);
        assert_eq!(rows_digest(&[vec![Value::Date(date)]]), rows_digest(&[vec![Value::Text(date.to_iso().into())]]));
        assert_ne!(reads_digest([a.as_slice(), c.as_slice()]), reads_digest([c.as_slice(), a.as_slice()]), "reads in order");
    }
}
