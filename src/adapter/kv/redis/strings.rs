//! The plain-string mapping of a two-column table without secondary indexes (the `pairs`
//! table of the insert-find and in-memory studies): each row is one string key
//! `dbsweep:<table><key>` holding the value column's text — what those papers stored with
//! `SET`/`GET`/`MSET`/`MGET`. No sorted set keeps the keys, so nothing but the row is
//! written: an insert is one `SET` (a batch one `MSET`), a get one `GET`, a multi-get (or a
//! batch of gets) one `MGET`, a delete one `DEL` (a batch one `DEL` of every key), an
//! update `SET … XX` (only an existing key). Scans and ranges need ordered keys, which this
//! mapping does not keep: they are not offered. Counting and fetch-all walk the table's
//! keys (Redis `SCAN`, LedisDB `XSCAN KV`: [`super::dialect`]), keeping only keys whose rest
//! after `dbsweep:<table>` is an integer.
//!
//! Owns the command text of this mapping only; the connection, batching and ownership rules
//! are the Redis adapter's. Must not write anything outside the table's keys.

use crate::base::op::{OpError, OpKind};
use crate::base::table::{Row, TableDef, Value};
use redis::Cmd;

/// The op kinds this mapping executes.
pub const OPS: [OpKind; 7] =
    [OpKind::Echo, OpKind::Insert, OpKind::Get, OpKind::MultiGet, OpKind::Delete, OpKind::Update, OpKind::FetchAll];

/// What a target's settings say about this mapping.
pub const LAYOUT: &str = "two-column tables without indexes (pairs): a plain string key per row";

/// The requests of this mapping, for the target's settings.
/// (The delete and update requests differ by server: see [`super::dialect`].)
pub const REQUESTS: [(&str, &str); 3] = [
    ("request.insert", "pairs: SET dbsweep:<table><key> <value>"),
    ("request.insert_batch", "pairs: one MSET <key> <value> <key> <value> …"),
    ("request.multi_get", "pairs: one MGET <key> <key> …"),
];

/// True for the tables this mapping stores: a key and one value, no secondary index.
pub fn applies_to(def: &TableDef) -> bool {
    def.columns.len() == 2 && def.indexed.is_empty()
}

/// The stored text of a row's value.
pub fn value_text(row: &Row) -> Result<String, OpError> {
    match row.get(1) {
        Some(Value::Null) | None => Err(OpError::client("redis: a pairs row needs a non-NULL value")),
        Some(v) => Ok(super::value_text(v).expect("not NULL")),
    }
}

/// `MSET` of rows: key and value text per row.
pub fn mset<'a>(row_key: impl Fn(i64) -> String, rows: impl Iterator<Item = &'a Row>) -> Result<Cmd, OpError> {
    let mut cmd = redis::cmd("MSET");
    for row in rows {
        cmd.arg(row_key(super::key_of(row)?)).arg(value_text(row)?);
    }
    Ok(cmd)
}

/// Whether `key` is a row key of the table with `row_prefix` (the rest is an integer), so a
/// table named `pairs` never counts the keys of a table named `pairs_new`.
pub fn is_row_key(row_prefix: &str, key: &str) -> bool {
    key.strip_prefix(row_prefix).is_some_and(|rest| rest.parse::<i64>().is_ok())
}

/// Why two tables cannot both use the `<table><key>` naming: one's keys would read as the
/// other's (`t` key 12 and `t1` key 2 are both `dbsweep:t12`).
pub fn ambiguous_names(tables: &[&str]) -> Option<(String, String)> {
    for a in tables {
        for b in tables {
            if a != b && b.strip_prefix(a).is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '-')) {
                return Some((a.to_string(), b.to_string()));
            }
        }
    }
    None
}

/// Counts the non-nil elements of a `GET` or `MGET` reply.
pub fn non_nil(reply: &redis::Value) -> u64 {
    match reply {
        redis::Value::Nil => 0,
        redis::Value::Array(items) => items.iter().filter(|v| !matches!(v, redis::Value::Nil)).count() as u64,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::pairs::{PairValue, table_def};

    #[test]
    fn only_plain_pairs_use_the_mapping() {
        assert!(applies_to(&table_def("pairs", PairValue::Int)));
        assert!(!applies_to(&crate::data::kv::table_def()));
    }

    #[test]
    fn row_keys_are_told_apart_by_their_integer_rest() {
        assert!(is_row_key("dbsweep:pairs", "dbsweep:pairs17"));
        assert!(is_row_key("dbsweep:pairs", "dbsweep:pairs-3"));
        assert!(!is_row_key("dbsweep:pairs", "dbsweep:pairs_new17"));
        assert!(!is_row_key("dbsweep:pairs", "dbsweep:pairs"));
        assert_eq!(ambiguous_names(&["pairs", "pairs_new"]), None);
        assert_eq!(ambiguous_names(&["t", "t1"]), Some(("t".into(), "t1".into())));
    }

    #[test]
    fn mset_pairs_keys_with_value_text() {
        let rows = [vec![Value::Int(1), Value::Int(10)], vec![Value::Int(2), Value::Text("x y".into())]];
        let cmd = mset(|k| format!("p{k}"), rows.iter()).unwrap();
        let args: Vec<String> = cmd.args_iter().map(|a| format!("{a:?}")).collect();
        assert_eq!(args.len(), 5, "{args:?}");
        assert!(value_text(&vec![Value::Int(1), Value::Null]).is_err());
    }
}
