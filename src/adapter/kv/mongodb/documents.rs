//! A row as a BSON document `{_id, fields}` and back, and the BSON values of key ranges.
//! Must not talk to the server.

use crate::base::op::OpError;
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use crate::error::Result;
use mongodb::bson::{Bson, DateTime, Document, doc};

pub(super) const MILLIS_PER_DAY: i64 = 86_400_000;

/// The `_id` of a key: its decimal digits zero-padded to 19 (the width of `i64::MAX`), so
/// string order is numeric order; a negative key is `-` and the 19 digits of its distance
/// from `i64::MIN` (`-` sorts before every digit).
pub(super) fn key_id(key: i64) -> String {
    if key >= 0 { format!("{key:019}") } else { format!("-{:019}", i128::from(key) - i128::from(i64::MIN)) }
}

pub(super) fn ids(keys: &[i64]) -> Vec<String> {
    keys.iter().map(|k| key_id(*k)).collect()
}

/// A value as stored in a document; `None` for NULL (the field is left out).
pub(super) fn to_bson(v: &Value) -> Option<Bson> {
    Some(match v {
        Value::Null => return None,
        Value::Int(i) => Bson::Int64(*i),
        Value::Float(f) => Bson::Double(*f),
        Value::Decimal(d) => Bson::Int64(d.0),
        Value::Text(s) => Bson::String(s.to_string()),
        Value::Date(d) => Bson::DateTime(DateTime::from_millis(i64::from(d.0) * MILLIS_PER_DAY)),
    })
}

/// A stored field read back as a value of the column's type.
pub(super) fn from_bson(ty: ColumnType, b: &Bson) -> Option<Value> {
    Some(match (ty, b) {
        (_, Bson::Null) => Value::Null,
        (ColumnType::Int, Bson::Int64(i)) => Value::Int(*i),
        (ColumnType::Int, Bson::Int32(i)) => Value::Int(i64::from(*i)),
        (ColumnType::Float, Bson::Double(f)) => Value::Float(*f),
        (ColumnType::Float, Bson::Int64(i)) => Value::Float(*i as f64),
        (ColumnType::Float, Bson::Int32(i)) => Value::Float(f64::from(*i)),
        (ColumnType::Decimal, Bson::Int64(i)) => Value::Decimal(Decimal(*i)),
        (ColumnType::Decimal, Bson::Int32(i)) => Value::Decimal(Decimal(i64::from(*i))),
        (ColumnType::Text, Bson::String(s)) => Value::Text(s.as_str().into()),
        (ColumnType::Date, Bson::DateTime(d)) => Value::Date(Date(i32::try_from(d.timestamp_millis().div_euclid(MILLIS_PER_DAY)).ok()?)),
        _ => return None,
    })
}

/// A range bound (in the units of `Op::Range`: integers, hundredths, days) as stored.
pub(super) fn bound(ty: ColumnType, v: i64) -> Option<Bson> {
    Some(match ty {
        ColumnType::Int | ColumnType::Decimal => Bson::Int64(v),
        ColumnType::Float => Bson::Double(v as f64),
        ColumnType::Date => Bson::DateTime(DateTime::from_millis(v.checked_mul(MILLIS_PER_DAY)?)),
        ColumnType::Text => return None,
    })
}

pub(super) fn row_document(table: &TableDef, row: &Row) -> Result<Document, OpError> {
    let key = row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("mongodb: the key column must be an integer"))?;
    let mut document = doc! {"_id": key_id(key)};
    for (column, value) in table.columns.iter().zip(row).skip(1) {
        if let Some(b) = to_bson(value) {
            document.insert(column.name.clone(), b);
        }
    }
    Ok(document)
}

pub(super) fn bson_u64(b: &Bson) -> Option<u64> {
    match b {
        Bson::Int32(i) => u64::try_from(*i).ok(),
        Bson::Int64(i) => u64::try_from(*i).ok(),
        Bson::Double(f) if *f >= 0.0 => Some(*f as u64),
        _ => None,
    }
}
