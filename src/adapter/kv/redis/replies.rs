//! How the replies of an op's commands become its outcome: row counts, scalars and
//! decoded answers, from the redis crate's values or a direct connection's frames. Must not
//! send anything.

use super::direct::{self, DirectConnection};
use super::rows::parse_value;
use super::{strings, tpch};
use crate::base::op::{Answer, OpError, Outcome, QueryId};
use crate::base::table::{ColumnType, Value};

/// How the replies of an op's commands become its outcome.
#[derive(Debug, Clone, Copy)]
pub(super) enum Reduce {
    /// A fixed row count (inserts: 1, echo: 0).
    Fixed(u64),
    /// The first reply is the row count (the update script).
    FirstInt,
    /// The first reply is > 0 when the row existed (DEL, HCLEAR: removed fields; LedisDB's
    /// HLEN or EXISTS before a write): 1 or 0.
    Existed,
    /// The first `n` replies are LedisDB's `EXISTS` of the keys a `DEL` then removes: rows =
    /// how many existed.
    ExistedOfFirst(usize),
    /// Every reply is an HGETALL; rows = the non-empty ones.
    NonEmptyHashes,
    /// A GET or MGET reply; rows = the non-nil values.
    NonNil,
    /// `SET … XX`: 1 when it wrote (`OK`), 0 when the key did not exist (nil).
    Written,
    /// ZCOUNT: an `Answer::Scalar(Int)`.
    Count,
    /// The max script's text reply, decoded to the column's type.
    Max(ColumnType),
    /// A TPC-H query script's reply, decoded to the query's answer table.
    Query(QueryId),
}

/// An op's outcome from its replies on a direct connection: counted from the replies'
/// shapes where that is all the op needs (inserts, gets), else read as the crate's values.
pub(super) fn reduce_direct(how: Reduce, conn: &DirectConnection, replies: &[direct::Frame]) -> Result<Outcome, OpError> {
    match how {
        Reduce::Fixed(n) => Ok(Outcome::rows(n)),
        Reduce::NonEmptyHashes => Ok(Outcome::rows(replies.iter().filter(|f| f.non_empty_array()).count() as u64)),
        other => {
            let values = replies.iter().map(|f| conn.value(*f)).collect::<redis::RedisResult<Vec<_>>>();
            reduce(other, &values.map_err(|e| OpError::server(format!("redis: {e}")))?)
        }
    }
}

pub(super) fn is_non_empty(reply: &redis::Value) -> bool {
    match reply {
        redis::Value::Array(items) | redis::Value::Set(items) => !items.is_empty(),
        redis::Value::Map(pairs) => !pairs.is_empty(),
        _ => false,
    }
}

fn reply_int(reply: &redis::Value) -> Result<i64, OpError> {
    match reply {
        redis::Value::Int(i) => Ok(*i),
        other => Err(OpError::server(format!("redis: expected an integer reply, got {other:?}"))),
    }
}

pub(super) fn reduce(reduce: Reduce, replies: &[redis::Value]) -> Result<Outcome, OpError> {
    Ok(match reduce {
        Reduce::Fixed(n) => Outcome::rows(n),
        Reduce::FirstInt => Outcome::rows(reply_int(replies.first().unwrap_or(&redis::Value::Nil))?.max(0) as u64),
        Reduce::Existed => Outcome::rows(u64::from(reply_int(replies.first().unwrap_or(&redis::Value::Nil))? > 0)),
        Reduce::ExistedOfFirst(n) => {
            let mut existed = 0;
            for reply in replies.iter().take(n) {
                existed += u64::from(reply_int(reply)? > 0);
            }
            Outcome::rows(existed)
        }
        Reduce::NonEmptyHashes => Outcome::rows(replies.iter().filter(|r| is_non_empty(r)).count() as u64),
        Reduce::NonNil => Outcome::rows(replies.iter().map(strings::non_nil).sum()),
        Reduce::Written => Outcome::rows(replies.iter().filter(|r| !matches!(r, redis::Value::Nil)).count() as u64),
        Reduce::Count => Outcome::answer(1, Answer::Scalar(Value::Int(reply_int(replies.first().unwrap_or(&redis::Value::Nil))?))),
        Reduce::Max(ty) => {
            let value = match replies.first() {
                None | Some(redis::Value::Nil) => Value::Null,
                Some(redis::Value::BulkString(bytes)) => {
                    let text = std::str::from_utf8(bytes).map_err(|_| OpError::server("redis: max is not UTF-8"))?;
                    parse_value(ty, text).ok_or_else(|| OpError::server(format!("redis: max '{text}' is not a {ty:?}")))?
                }
                Some(other) => return Err(OpError::server(format!("redis: unexpected max reply {other:?}"))),
            };
            Outcome::answer(1, Answer::Scalar(value))
        }
        Reduce::Query(q) => {
            let answer = tpch::decode(q, replies.first().unwrap_or(&redis::Value::Nil))?;
            let rows = match &answer {
                Answer::Table(rows) => rows.len() as u64,
                Answer::Scalar(_) => 1,
            };
            Outcome::answer(rows, answer)
        }
    })
}

/// The greatest of stored column values (HGET replies; nil ones skipped), compared as
/// numbers for numeric columns and as text otherwise, as the max script compares them; nil
/// when there is none.
pub(super) fn max_stored(ty: ColumnType, values: &[redis::Value]) -> redis::Value {
    let numeric = matches!(ty, ColumnType::Int | ColumnType::Float | ColumnType::Decimal);
    let texts = values.iter().filter_map(|v| match v {
        redis::Value::BulkString(bytes) => Some(bytes),
        _ => None,
    });
    let best = if numeric {
        let number = |b: &Vec<u8>| std::str::from_utf8(b).ok().and_then(|t| t.trim().parse::<f64>().ok());
        texts.filter_map(|b| number(b).map(|n| (n, b))).max_by(|a, b| a.0.total_cmp(&b.0)).map(|(_, b)| b)
    } else {
        texts.max()
    };
    best.map_or(redis::Value::Nil, |b| redis::Value::BulkString(b.clone()))
}
