//! A row as one memcached value: its fields encoded and decoded, one field replaced.
//! Must not send anything.

use crate::adapter::kv::redis::value_text;
use crate::base::op::OpError;
use crate::base::table::{Row, Value};
use crate::error::Result;

/// The item value of a row: its non-key columns, each `<len>:<text>,` or `-,` for NULL.
pub(super) fn encode_row(row: &Row) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    for v in row.iter().skip(1) {
        push_field(&mut out, value_text(v).as_deref());
    }
    out
}

fn push_field(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(t) => {
            out.extend_from_slice(t.len().to_string().as_bytes());
            out.push(b':');
            out.extend_from_slice(t.as_bytes());
            out.push(b',');
        }
        None => out.extend_from_slice(b"-,"),
    }
}

/// Splits an item value into its fields (`None` = NULL); `None` when malformed.
pub(super) fn decode_fields(mut data: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
    let mut fields = Vec::new();
    while !data.is_empty() {
        if let Some(rest) = data.strip_prefix(b"-,") {
            fields.push(None);
            data = rest;
            continue;
        }
        let colon = data.iter().position(|&b| b == b':')?;
        let len: usize = std::str::from_utf8(&data[..colon]).ok()?.parse().ok()?;
        let body = data.get(colon + 1..colon + 1 + len)?;
        if data.get(colon + 1 + len) != Some(&b',') {
            return None;
        }
        fields.push(Some(body.to_vec()));
        data = &data[colon + 2 + len..];
    }
    Some(fields)
}

/// `data` with non-key column `column` replaced by `value`.
pub(super) fn replace_field(data: &[u8], column: usize, value: &Value) -> Result<Vec<u8>, OpError> {
    let mut fields = decode_fields(data).ok_or_else(|| OpError::server("memcached: stored row is malformed"))?;
    let slot = fields.get_mut(column - 1).ok_or_else(|| OpError::server("memcached: stored row has too few columns"))?;
    *slot = value_text(value).map(String::into_bytes);
    let mut out = Vec::with_capacity(data.len() + 8);
    for f in &fields {
        push_field(&mut out, f.as_deref().map(|b| std::str::from_utf8(b).unwrap_or("")));
    }
    Ok(out)
}

pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
