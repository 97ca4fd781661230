//! Rows and index keys as redb bytes: a tagged value encoding, and index keys that sort by
//! value then primary key. Must not open the database.

use crate::base::op::OpError;
use crate::base::table::{Date, Decimal, Row, Value};
use crate::error::Result;
use std::cmp::Ordering;

/// The value an index is keyed by, or `None` for NULL (not indexed).
pub(super) fn index_key(value: &Value) -> Option<i64> {
    match value {
        Value::Int(v) | Value::Decimal(Decimal(v)) => Some(*v),
        Value::Date(Date(d)) => Some(i64::from(*d)),
        Value::Null | Value::Float(_) | Value::Text(_) => None,
    }
}

pub(super) fn key_of(row: &Row) -> Result<i64, OpError> {
    row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("redb: key column must be an integer"))
}

/// Orders two non-null values of one column type.
pub(super) fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.total_cmp(y),
        (Value::Decimal(x), Value::Decimal(y)) => x.cmp(y),
        (Value::Date(x), Value::Date(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}

// Row encoding: for each value a tag byte, then Int/Decimal/Date as a zigzag LEB128 varint,
// Float as 8 little-endian bytes, Text as a varint byte length and the UTF-8 bytes; Null
// has no payload. Small keys and groups take 1-3 bytes instead of 8; the encoding is
// self-describing, so decoding needs no schema. Hand-written because it is 60 lines and
// keeps the stored bytes under dbsweep's control (no serde format to pin).
const TAG_NULL: u8 = 0;

const TAG_INT: u8 = 1;

const TAG_FLOAT: u8 = 2;

const TAG_DECIMAL: u8 = 3;

const TAG_TEXT: u8 = 4;

const TAG_DATE: u8 = 5;

/// Encodes a row into `buf` (cleared first).
pub fn encode_row(row: &[Value], buf: &mut Vec<u8>) {
    fn varint(buf: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        buf.push(v as u8);
    }
    fn zigzag(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }
    buf.clear();
    for value in row {
        match value {
            Value::Null => buf.push(TAG_NULL),
            Value::Int(v) => {
                buf.push(TAG_INT);
                varint(buf, zigzag(*v));
            }
            Value::Float(v) => {
                buf.push(TAG_FLOAT);
                buf.extend_from_slice(&v.to_le_bytes());
            }
            Value::Decimal(d) => {
                buf.push(TAG_DECIMAL);
                varint(buf, zigzag(d.0));
            }
            Value::Date(d) => {
                buf.push(TAG_DATE);
                varint(buf, zigzag(d.0.into()));
            }
            Value::Text(s) => {
                buf.push(TAG_TEXT);
                varint(buf, s.len() as u64);
                buf.extend_from_slice(s.as_bytes());
            }
        }
    }
}

/// Decodes a row written by [`encode_row`].
pub fn decode_row(mut bytes: &[u8]) -> Result<Row, OpError> {
    fn corrupt() -> OpError {
        OpError::server("redb: stored row is not in dbsweep's encoding")
    }
    fn varint(bytes: &mut &[u8]) -> Result<u64, OpError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = bytes.split_first().ok_or_else(corrupt)?;
            *bytes = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(corrupt())
    }
    fn signed(bytes: &mut &[u8]) -> Result<i64, OpError> {
        let v = varint(bytes)?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }
    let mut row = Vec::new();
    while let Some((&tag, rest)) = bytes.split_first() {
        bytes = rest;
        row.push(match tag {
            TAG_NULL => Value::Null,
            TAG_INT => Value::Int(signed(&mut bytes)?),
            TAG_DECIMAL => Value::Decimal(Decimal(signed(&mut bytes)?)),
            TAG_DATE => Value::Date(Date(i32::try_from(signed(&mut bytes)?).map_err(|_| corrupt())?)),
            TAG_FLOAT => {
                let (head, rest) = bytes.split_first_chunk::<8>().ok_or_else(corrupt)?;
                bytes = rest;
                Value::Float(f64::from_le_bytes(*head))
            }
            TAG_TEXT => {
                let len = usize::try_from(varint(&mut bytes)?).map_err(|_| corrupt())?;
                if bytes.len() < len {
                    return Err(corrupt());
                }
                let (text, rest) = bytes.split_at(len);
                bytes = rest;
                Value::Text(std::str::from_utf8(text).map_err(|_| corrupt())?.into())
            }
            _ => return Err(corrupt()),
        });
    }
    Ok(row)
}
