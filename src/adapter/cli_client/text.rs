//! The texts a command-line client is sent: SQL with literals in place of parameters,
//! redis-cli commands with quoted arguments, and reply values read back. Must not start
//! processes.

use super::Kind;
use crate::adapter::kv::redis::strings as redis_strings;
use crate::adapter::mysql::literal;
use crate::base::op::OpError;
use crate::base::table::{TableDef, Value};
use crate::error::Result;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What an insert, a batch of inserts, a multi-get and a delete send through the client
/// for these tables (the target's `request.*` settings).
pub(super) fn requests(kind: Kind, tables: &[Arc<TableDef>]) -> Vec<(&'static str, String)> {
    match kind {
        Kind::MySql => vec![
            ("request.insert", "INSERT INTO <table> (<columns>) VALUES (<literals>); SELECT ROW_COUNT();".into()),
            ("request.insert_batch", "one multi-row INSERT with literal values; SELECT ROW_COUNT();".into()),
            ("request.multi_get", "one SELECT * FROM <table> WHERE <key> IN (<literal keys>)".into()),
            ("request.delete", "DELETE … WHERE <key> = <literal>; SELECT ROW_COUNT(); (a batch: in one transaction)".into()),
        ],
        Kind::Redis => {
            let pairs = tables.iter().any(|t| redis_strings::applies_to(t));
            let hashes = tables.iter().any(|t| !redis_strings::applies_to(t));
            let mut out: BTreeMap<&'static str, Vec<&str>> = BTreeMap::new();
            if pairs {
                out.entry("request.insert").or_default().push("pairs: a SET line");
                out.entry("request.insert_batch").or_default().push("pairs: one MSET line");
                out.entry("request.multi_get").or_default().push("pairs: one MGET line");
                out.entry("request.delete").or_default().push("pairs: a DEL line (a batch: one DEL line of every key)");
            }
            if hashes {
                out.entry("request.insert").or_default().push("hash rows: MULTI, DEL, HSET, ZADD lines, EXEC");
                out.entry("request.insert_batch").or_default().push("hash rows: one MULTI … EXEC of every row's lines");
                out.entry("request.multi_get").or_default().push("hash rows: one HGETALL line per key (a round trip each)");
                out.entry("request.delete").or_default().push("hash rows: MULTI, DEL, ZREM lines, EXEC");
            }
            out.into_iter().map(|(k, v)| (k, v.join("; "))).collect()
        }
    }
}

/// The value of one reply line: `"v"`, `(nil)` or `(integer) 3` at top level, or the same
/// after an array index (`  12) "v"`); `None` for other lines — `OK`, and the `(0.51s)`
/// redis-cli prints after a command that took longer than half a second.
pub(super) fn redis_reply_value(line: &str) -> Option<&str> {
    let l = line.trim_start();
    let rest = match l.split_once(") ") {
        Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => l,
    };
    let value = rest.starts_with('"') || rest == "(nil)" || rest.starts_with("(integer) ") || rest.starts_with("(error)");
    value.then_some(rest)
}

/// A statement with each `?` placeholder (outside quotes) replaced by the next value as
/// a literal, in order.
pub(super) fn with_literals(text: &str, values: &[&Value]) -> Result<String, OpError> {
    let mut out = String::with_capacity(text.len() + values.len() * 8);
    let (mut values, mut quote) = (values.iter(), None);
    for c in text.chars() {
        match (c, quote) {
            ('`' | '\'', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            ('?', None) => {
                let value = values.next().ok_or_else(|| OpError::client("more placeholders than values"))?;
                literal::push_literal(&mut out, value)?;
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    if values.next().is_some() {
        return Err(OpError::client("more values than placeholders"));
    }
    Ok(out)
}

/// One argument in redis-cli's input syntax: double-quoted, `\"` `\\`, other bytes `\xHH`.
pub(super) fn redis_quote(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('"');
    for &b in arg.as_bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

/// The sorted-set score of an indexed value (as the library adapter computes it).
pub(super) fn score(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Decimal(d) => Some(d.0 as f64),
        Value::Date(d) => Some(f64::from(d.0)),
        Value::Null | Value::Text(_) => None,
    }
}
