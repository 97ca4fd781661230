//! A table in CQL: its statements (create, insert, get, delete, update, ranges) and the
//! conversion of row values to and from CQL values. Must not execute anything.

use super::TABLE_COMMENT;
use crate::base::op::{ErrorClass, OpError};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use crate::error::Result;
use scylla::value::{CqlDate, CqlValue};
use std::sync::Arc;

/// CQL text of one table's statements, built once by `prepare`.
#[derive(Debug)]
pub(super) struct TableCql {
    pub(super) def: Arc<TableDef>,
    pub(super) insert: String,
    pub(super) get: String,
    pub(super) multi_get: String,
    pub(super) exists: String,
    pub(super) delete: String,
    pub(super) delete_lwt: String,
    /// Per column (None for the key).
    pub(super) update: Vec<Option<String>>,
    pub(super) update_lwt: Vec<Option<String>>,
    pub(super) fetch_all: String,
    /// Per indexed column: rows, count.
    pub(super) range_rows: Vec<Option<String>>,
    pub(super) range_count: Vec<Option<String>>,
}

/// `"name"`, with inner quotes doubled.
pub(super) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn cql_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Int | ColumnType::Decimal => "bigint",
        ColumnType::Float => "double",
        ColumnType::Text => "text",
        ColumnType::Date => "date",
    }
}

impl TableCql {
    pub(super) fn new(ks: &str, def: &Arc<TableDef>) -> Self {
        let t = format!("{}.{}", quote(ks), quote(&def.name));
        let key = quote(&def.columns[0].name);
        let names: Vec<String> = def.columns.iter().map(|c| quote(&c.name)).collect();
        let marks = vec!["?"; names.len()].join(", ");
        let update_of = |lwt: bool| {
            (0..def.columns.len())
                .map(|c| (c > 0).then(|| format!("UPDATE {t} SET {} = ? WHERE {key} = ?{}", names[c], if lwt { " IF EXISTS" } else { "" })))
                .collect()
        };
        let per_index = |what: &str| {
            (0..def.columns.len())
                .map(|c| def.indexed.contains(&c).then(|| format!("SELECT {what} FROM {t} WHERE {} >= ? AND {} <= ?", names[c], names[c])))
                .collect()
        };
        TableCql {
            def: def.clone(),
            insert: format!("INSERT INTO {t} ({}) VALUES ({marks})", names.join(", ")),
            get: format!("SELECT * FROM {t} WHERE {key} = ?"),
            multi_get: format!("SELECT * FROM {t} WHERE {key} IN ?"),
            exists: format!("SELECT {key} FROM {t} WHERE {key} = ?"),
            delete: format!("DELETE FROM {t} WHERE {key} = ?"),
            delete_lwt: format!("DELETE FROM {t} WHERE {key} = ? IF EXISTS"),
            update: update_of(false),
            update_lwt: update_of(true),
            fetch_all: format!("SELECT * FROM {t}"),
            range_rows: per_index("*"),
            range_count: per_index("COUNT(*)"),
        }
    }

    pub(super) fn create(&self, ks: &str) -> Vec<String> {
        let def = &self.def;
        let t = format!("{}.{}", quote(ks), quote(&def.name));
        let columns: Vec<String> = def
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{} {}{}", quote(&c.name), cql_type(c.ty), if i == 0 { " PRIMARY KEY" } else { "" }))
            .collect();
        let mut out = vec![format!("CREATE TABLE {t} ({}) WITH comment = '{TABLE_COMMENT}'", columns.join(", "))];
        for &c in &def.indexed {
            let index = quote(&format!("{}_{}_sai", def.name, def.columns[c].name));
            out.push(format!("CREATE INDEX {index} ON {t} ({}) USING 'sai'", quote(&def.columns[c].name)));
        }
        out
    }

    pub(super) fn range_max(&self, ks: &str, column: usize, of: usize) -> String {
        let c = quote(&self.def.columns[column].name);
        format!(
            "SELECT MAX({}) FROM {}.{} WHERE {c} >= ? AND {c} <= ?",
            quote(&self.def.columns[of].name),
            quote(ks),
            quote(&self.def.name)
        )
    }
}

/// Days since 1970-01-01 in CQL's encoding (2^31 = the epoch).
pub(super) fn cql_date(days: i64) -> CqlDate {
    CqlDate((days + (1i64 << 31)) as u32)
}

/// A value for a column of type `ty` (numbers are converted between the numeric types).
pub(super) fn to_cql(ty: ColumnType, v: &Value) -> Result<Option<CqlValue>, OpError> {
    let bad = || OpError::client(format!("cassandra: {v:?} does not fit a {ty:?} column"));
    Ok(Some(match (ty, v) {
        (_, Value::Null) => return Ok(None),
        (ColumnType::Int, Value::Int(i)) => CqlValue::BigInt(*i),
        (ColumnType::Decimal, Value::Decimal(d)) => CqlValue::BigInt(d.0),
        (ColumnType::Decimal, Value::Int(i)) => CqlValue::BigInt(i.checked_mul(100).ok_or_else(bad)?),
        (ColumnType::Float, Value::Float(f)) => CqlValue::Double(*f),
        (ColumnType::Float, Value::Int(i)) => CqlValue::Double(*i as f64),
        (ColumnType::Float, Value::Decimal(d)) => CqlValue::Double(d.0 as f64 / 100.0),
        (ColumnType::Text, Value::Text(s)) => CqlValue::Text(s.to_string()),
        (ColumnType::Date, Value::Date(d)) => CqlValue::Date(cql_date(i64::from(d.0))),
        _ => return Err(bad()),
    }))
}

/// A range bound (in the units of `Op::Range`) for an indexed column of type `ty`.
pub(super) fn bound(ty: ColumnType, v: i64) -> Result<CqlValue, OpError> {
    Ok(match ty {
        ColumnType::Int | ColumnType::Decimal => CqlValue::BigInt(v),
        ColumnType::Float => CqlValue::Double(v as f64),
        ColumnType::Date => CqlValue::Date(cql_date(v)),
        ColumnType::Text => return Err(OpError::new(ErrorClass::Unsupported, "cassandra: no numeric range over a text column")),
    })
}

/// A stored value back into the column's type.
pub(super) fn from_cql(ty: ColumnType, v: Option<CqlValue>) -> Result<Value, OpError> {
    Ok(match (ty, v) {
        (_, None) => Value::Null,
        (ColumnType::Int, Some(CqlValue::BigInt(i))) => Value::Int(i),
        (ColumnType::Decimal, Some(CqlValue::BigInt(i))) => Value::Decimal(Decimal(i)),
        (ColumnType::Float, Some(CqlValue::Double(f))) => Value::Float(f),
        (ColumnType::Text, Some(CqlValue::Text(s))) => Value::Text(s.into()),
        (ColumnType::Date, Some(CqlValue::Date(d))) => Value::Date(Date((i64::from(d.0) - (1i64 << 31)) as i32)),
        (ty, Some(other)) => return Err(OpError::server(format!("cassandra: a {ty:?} column returned {other:?}"))),
    })
}

pub(super) fn row_values(def: &TableDef, row: &Row) -> Result<Vec<Option<CqlValue>>, OpError> {
    if row.len() != def.columns.len() {
        return Err(OpError::client(format!("cassandra: a row of {} values for {} columns of {}", row.len(), def.columns.len(), def.name)));
    }
    def.columns.iter().zip(row).map(|(c, v)| to_cql(c.ty, v)).collect()
}

/// Bytes a row's values take in a request, roughly.
pub(super) fn value_bytes(values: &[Option<CqlValue>]) -> usize {
    values
        .iter()
        .map(|v| match v {
            Some(CqlValue::Text(t)) => t.len() + 4,
            _ => 12,
        })
        .sum()
}
