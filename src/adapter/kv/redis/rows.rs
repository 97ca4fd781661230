//! The kv-vs-relational mapping of a table row onto Redis: the row hash `<prefix><table><pk>`,
//! its primary-key and index sorted sets, and values as field text. Must not send anything
//! (it builds commands; `connection` and the target send them).

use super::dialect::Dialect;
use super::strings;
use crate::adapter::TargetInfo;
use crate::base::op::OpError;
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use crate::error::Result;
use redis::Cmd;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The keys of one table in dbsweep's namespace.
pub(super) struct TableKeys {
    pub(super) def: Arc<TableDef>,
    /// Stored as plain string keys (see [`strings`]) instead of hashes and sorted sets.
    pub(super) strings: bool,
    /// Row hashes are `<row_prefix><pk>`.
    pub(super) row_prefix: String,
    /// Sorted set of all primary keys.
    pub(super) pk_set: String,
    /// Per column: the index sorted set, if the column is indexed.
    pub(super) index_sets: Vec<Option<String>>,
}

impl TableKeys {
    /// `tagged` (Redis Cluster): a hash-mapped table's keys carry the table as their hash
    /// tag (`<prefix>{<table>}<pk>`), so a row's keys and the table's sorted sets share one
    /// slot; plain string keys stay untagged and spread over the slots.
    pub(super) fn new(prefix: &str, def: &Arc<TableDef>, tagged: bool) -> Self {
        let row_prefix =
            if tagged && !strings::applies_to(def) { format!("{prefix}{{{}}}", def.name) } else { format!("{prefix}{}", def.name) };
        let index_sets =
            (0..def.columns.len()).map(|c| def.indexed.contains(&c).then(|| format!("{row_prefix}:idx:{}", def.columns[c].name))).collect();
        TableKeys { def: def.clone(), strings: strings::applies_to(def), pk_set: format!("{row_prefix}:pk"), row_prefix, index_sets }
    }

    pub(super) fn row_key(&self, pk: i64) -> String {
        format!("{}{pk}", self.row_prefix)
    }
}

/// The requests of the hash mapping on `dialect`'s server, for the target's settings.
fn hash_requests(dialect: Dialect) -> [(&'static str, String); 4] {
    let (open, close) = if dialect.has_multi() { ("MULTI, ", ", EXEC") } else { ("one pipeline (no transactions): ", "") };
    let (remove, write) = (dialect.row_delete_name(), dialect.hash_write());
    let batch = if dialect.has_multi() {
        "every row's commands in one MULTI/EXEC (batch=pipeline: one pipeline)"
    } else {
        "every row's commands in one pipeline"
    };
    [
        ("request.insert", format!("hash rows: {open}{remove}, {write} of every column, ZADD to the key set and each index set{close}")),
        ("request.insert_batch", format!("hash rows: {batch}")),
        ("request.multi_get", "hash rows: one pipeline of HGETALL per key".into()),
        ("request.delete", format!("hash rows: {open}{remove}, ZREM from the key set and each index set{close}")),
    ]
}

/// Capabilities, layout and requests of the mappings the prepared tables use. The
/// plain-string mapping offers fewer ops; a target holding a pairs table declares only
/// those (capabilities are per target, and must never promise what one table cannot do).
pub(super) fn describe_mappings(dialect: Dialect, info: &mut TargetInfo, tables: &[Arc<TableDef>]) {
    let strings = tables.iter().any(|t| strings::applies_to(t));
    let hashes = tables.iter().any(|t| !strings::applies_to(t));
    let mut layouts = Vec::new();
    let mut requests: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    if hashes {
        layouts.push(info.settings.get("layout").cloned().unwrap_or_default());
        hash_requests(dialect).into_iter().for_each(|(k, v)| requests.entry(k).or_default().push(v));
    }
    if strings {
        info.capabilities.ops.retain(|k| strings::OPS.contains(k));
        info.capabilities.secondary_indexes = hashes;
        layouts.push(strings::LAYOUT.to_string());
        strings::REQUESTS.into_iter().chain(dialect.string_requests()).for_each(|(k, v)| requests.entry(k).or_default().push(v.into()));
    }
    info.settings.insert("layout".into(), layouts.join("; "));
    for (k, v) in requests {
        info.settings.insert(k.to_string(), v.join("; "));
    }
}

/// A value as stored in a hash field; `None` for NULL (the field is left out).
pub(crate) fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Text(s) => Some(s.to_string()),
        other => Some(other.to_string()),
    }
}

/// Parses a stored field back into a value of the column's type.
pub(crate) fn parse_value(ty: ColumnType, text: &str) -> Option<Value> {
    Some(match ty {
        ColumnType::Int => Value::Int(text.parse().ok()?),
        ColumnType::Float => Value::Float(text.parse().ok()?),
        ColumnType::Decimal => Value::Decimal(parse_decimal(text)?),
        ColumnType::Date => Value::Date(Date::from_iso(text)?),
        ColumnType::Text => Value::Text(text.into()),
    })
}

/// Parses `-12.34`, `12.3` or `12` into hundredths.
pub(super) fn parse_decimal(text: &str) -> Option<Decimal> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > 2 || !frac.bytes().all(|b| b.is_ascii_digit()) || whole.is_empty() {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let frac: i64 = if frac.is_empty() { 0 } else { format!("{frac:0<2}").parse().ok()? };
    let abs = whole.checked_mul(100)?.checked_add(frac)?;
    Some(Decimal(if negative { -abs } else { abs }))
}

/// The sorted-set score of an indexed value, in the units of `Op::Range` bounds, as the
/// text sent to the server: whole numbers without a fraction (LedisDB's scores are
/// integers and refuse `3.0`), floats in their shortest exact form.
pub(super) fn score(v: &Value) -> Option<String> {
    match v {
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Decimal(d) => Some(d.0.to_string()),
        Value::Date(d) => Some(d.0.to_string()),
        Value::Null | Value::Text(_) => None,
    }
}

pub(super) fn key_of(row: &Row) -> Result<i64, OpError> {
    row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("redis: the key column must be an integer"))
}

/// Where the row mapping's commands go: built as the crate's `Cmd`s (`Vec<Cmd>`), or
/// encoded straight into a direct connection's buffer (`direct::Encoder`), the same bytes.
pub(super) trait CommandSink {
    /// Starts the next command.
    fn command(&mut self, name: &str);
    fn arg(&mut self, bytes: &[u8]);
    /// A row key, `<row_prefix><pk>`.
    fn key_arg(&mut self, row_prefix: &str, pk: i64);
    fn int_arg(&mut self, i: i64);
    /// A value's field text ([`value_text`]); never called with NULL.
    fn value_arg(&mut self, v: &Value);
}

impl CommandSink for Vec<Cmd> {
    fn command(&mut self, name: &str) {
        self.push(redis::cmd(name));
    }

    fn arg(&mut self, bytes: &[u8]) {
        self.last_mut().expect("a command was started").arg(bytes);
    }

    fn key_arg(&mut self, row_prefix: &str, pk: i64) {
        self.arg(format!("{row_prefix}{pk}").as_bytes());
    }

    fn int_arg(&mut self, i: i64) {
        self.last_mut().expect("a command was started").arg(i);
    }

    fn value_arg(&mut self, v: &Value) {
        self.arg(value_text(v).unwrap_or_default().as_bytes());
    }
}

/// The commands that store one row (after clearing any previous version of it).
pub(super) fn insert_commands(dialect: Dialect, t: &TableKeys, row: &Row, out: &mut impl CommandSink) -> Result<(), OpError> {
    let pk = key_of(row)?;
    out.command(dialect.row_delete_name());
    out.key_arg(&t.row_prefix, pk);
    write_row(dialect, t, pk, row, out);
    out.command("ZADD");
    out.arg(t.pk_set.as_bytes());
    out.int_arg(pk);
    out.int_arg(pk);
    for (c, set) in t.index_sets.iter().enumerate() {
        if let Some(set) = set {
            match row.get(c).and_then(score) {
                Some(s) => {
                    out.command("ZADD");
                    out.arg(set.as_bytes());
                    out.arg(s.as_bytes());
                }
                None => {
                    out.command("ZREM");
                    out.arg(set.as_bytes());
                }
            }
            out.int_arg(pk);
        }
    }
    Ok(())
}

/// The command that writes row `pk`'s non-NULL columns into its hash.
pub(super) fn write_row(dialect: Dialect, t: &TableKeys, pk: i64, row: &Row, out: &mut impl CommandSink) {
    out.command(dialect.hash_write());
    out.key_arg(&t.row_prefix, pk);
    for (c, v) in row.iter().enumerate() {
        if !matches!(v, Value::Null) {
            out.arg(t.def.columns[c].name.as_bytes());
            out.value_arg(v);
        }
    }
}
