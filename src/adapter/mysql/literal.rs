//! MariaDB/MySQL statements with literal values: what the `mariadb` command-line client
//! sends, and what the driver sends where a prepared statement cannot carry the request
//! (more than 65,535 `?` placeholders — a 32,768-row insert into a two-column table).
//!
//! Owns the literal form of every value (integers and floats as numbers; decimals and dates,
//! which are made of digits, `-` and `.` only, as quoted strings; text as a hexadecimal
//! string literal, which needs no escaping under any `sql_mode`, so no value can end its
//! literal early) and the split of a long list into statements that each
//! fit `max_allowed_packet`. Must not send anything.

use crate::base::op::OpError;
use crate::base::table::Value;
use std::fmt::Write;

/// The most `?` placeholders one prepared statement may have.
pub const MAX_PLACEHOLDERS: usize = 65_535;

/// Bytes kept free in each statement below `max_allowed_packet` (the packet header and
/// command byte, with room to spare).
const PACKET_MARGIN: usize = 1024;

/// Appends the literal of `v` to `out`.
pub fn push_literal(out: &mut String, v: &Value) -> Result<(), OpError> {
    match v {
        Value::Null => out.push_str("NULL"),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) if f.is_finite() => {
            let _ = write!(out, "{f:?}");
        }
        Value::Float(f) => return Err(OpError::client(format!("MariaDB cannot store the float {f}"))),
        Value::Decimal(d) => {
            let _ = write!(out, "'{d}'");
        }
        Value::Date(d) => {
            let _ = write!(out, "'{}'", d.to_iso());
        }
        Value::Text(s) => push_hex(out, s.as_bytes()),
    }
    Ok(())
}

/// `X'…'`: the bytes as a hexadecimal string literal (stored into a text column in the
/// column's character set).
fn push_hex(out: &mut String, bytes: &[u8]) {
    out.push_str("X'");
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out.push('\'');
}

/// A row as `(v1,v2,…)`.
pub fn row_tuple(row: &[Value]) -> Result<String, OpError> {
    let mut out = String::with_capacity(row.len() * 12 + 2);
    out.push('(');
    for (i, v) in row.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_literal(&mut out, v)?;
    }
    out.push(')');
    Ok(out)
}

/// `prefix item,item,… suffix` statements, as few as fit `max_packet` bytes each (one item
/// per statement at least, however long).
pub fn statements(prefix: &str, suffix: &str, items: impl IntoIterator<Item = String>, max_packet: usize) -> Vec<String> {
    let limit = max_packet.saturating_sub(PACKET_MARGIN).max(prefix.len() + suffix.len() + 1);
    let mut out = Vec::new();
    let mut current = String::from(prefix);
    for item in items {
        let empty = current.len() == prefix.len();
        if !empty && current.len() + 1 + item.len() + suffix.len() > limit {
            current.push_str(suffix);
            out.push(std::mem::replace(&mut current, String::from(prefix)));
        }
        if current.len() > prefix.len() {
            current.push(',');
        }
        current.push_str(&item);
    }
    if current.len() > prefix.len() {
        current.push_str(suffix);
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::{Date, Decimal};

    #[test]
    fn literals_are_numbers_or_hex_strings_that_no_value_can_escape() {
        let row = [Value::Int(-5), Value::Float(0.1), Value::Text("a'b\\c\n".into()), Value::Null];
        assert_eq!(row_tuple(&row).unwrap(), "(-5,0.1,X'6127625c630a',NULL)");
        assert_eq!(row_tuple(&[Value::Decimal(Decimal(1234)), Value::Date(Date(0))]).unwrap(), "('12.34','1970-01-01')");
        assert!(row_tuple(&[Value::Float(f64::NAN)]).is_err());
    }

    #[test]
    fn long_lists_split_into_statements_that_fit_the_packet() {
        let items = (0..1000).map(|i| i.to_string());
        let one = statements("SELECT 1 IN (", ")", items.clone(), 1 << 20);
        assert_eq!(one.len(), 1);
        assert!(one[0].starts_with("SELECT 1 IN (0,1,2,") && one[0].ends_with(",999)"));
        let many = statements("SELECT 1 IN (", ")", items, PACKET_MARGIN + 100);
        assert!(many.len() > 1);
        assert!(many.iter().all(|s| s.len() <= 100 && s.starts_with("SELECT 1 IN (") && s.ends_with(')')));
        let rejoined: Vec<String> =
            many.iter().flat_map(|s| s["SELECT 1 IN (".len()..s.len() - 1].split(',').map(str::to_string).collect::<Vec<_>>()).collect();
        assert_eq!(rejoined, (0..1000).map(|i| i.to_string()).collect::<Vec<_>>());
        assert!(statements("P", "S", Vec::<String>::new(), 10).is_empty());
    }
}
