//! A custom operation's Memcached commands (a study's `memcached = [...]`): each argument
//! written from its template (the pass's values, the namespace's prefix, a table's item
//! prefix), sent as one text-protocol request (storage commands with flags and expiry 0),
//! and the last reply turned into rows for the answer compared with the other systems'.
//!
//! Owns how a reply reads as rows: each item a `get`/`gets` finds is a row; an item of a
//! loaded row (`dbsweep:kv17`) reads as the row itself (key, then its columns, as SQL's
//! `SELECT *` and Redis' `HMGET` of every column), any other item as one cell of its text
//! (as Redis' `GET`); `incr`/`decr` a row of the new number, `NOT_FOUND` no row; storage
//! and delete replies one cell of their word. Must not check templates (`plan::custom` does)
//! or touch keys outside the prefix itself.

use super::connection::MemcachedConnection;
use super::rows::decode_fields;
use super::wire::{StoreReply, Wire, push_store};
use crate::base::custom::{CommandTemplate, CustomOp, Piece};
use crate::base::digest::reads_digest;
use crate::base::op::{Answer, OpError, OpKind, Outcome};
use crate::base::script::ScriptValue;
use crate::base::table::Value;

impl MemcachedConnection {
    /// Runs one op of `op` with `values` (by slot): every command in order, the last one's
    /// reply the answer.
    pub(super) async fn custom(&self, wire: &mut Wire, op: &CustomOp, values: &[ScriptValue]) -> Result<Outcome, OpError> {
        if op.memcached.is_empty() {
            return Err(OpError::unsupported(OpKind::Custom, "memcached (no memcached statement for this experiment)"));
        }
        let mut rows = Vec::new();
        for command in &op.memcached {
            rows = self.custom_command(wire, command, values).await?;
        }
        Ok(match op.reads {
            true => Outcome::answer(rows.len() as u64, Answer::Scalar(Value::Int(reads_digest([rows.as_slice()]) as i64))),
            false => Outcome::rows(rows.len() as u64),
        })
    }

    async fn custom_command(&self, wire: &mut Wire, command: &CommandTemplate, values: &[ScriptValue]) -> Result<Vec<Vec<Value>>, OpError> {
        let args = command.args.iter().map(|a| self.custom_arg(a, values)).collect::<Result<Vec<_>, _>>()?;
        let (name, rest) = args.split_first().ok_or_else(|| OpError::client("memcached: an empty command"))?;
        let keys = if matches!(name.as_str(), "get" | "gets") { rest } else { &rest[..1] };
        if let Some(bad) = keys.iter().find(|k| k.len() > 250 || k.bytes().any(|b| b <= b' ' || b == 0x7f)) {
            return Err(OpError::client(format!("memcached: '{bad}' is not a key (at most 250 bytes, no spaces or control characters)")));
        }
        match name.as_str() {
            "get" | "gets" => {
                wire.send(format!("{name} {}\r\n", rest.join(" ")).as_bytes()).await?;
                Ok(wire.values().await?.into_iter().map(|(key, data, _)| self.item_row(&key, &data)).collect())
            }
            "incr" | "decr" | "delete" => {
                wire.send(format!("{name} {}\r\n", rest.join(" ")).as_bytes()).await?;
                Ok(match wire.line().await? {
                    found if found == "NOT_FOUND" => Vec::new(),
                    number if name != "delete" => vec![vec![number.parse().map(Value::Int).unwrap_or(Value::Text(number.into()))]],
                    word => vec![vec![Value::Text(word.into())]],
                })
            }
            _ => {
                let mut req = Vec::new();
                push_store(&mut req, name, &rest[0], rest[1].as_bytes(), None);
                wire.send(&req).await?;
                let word = match wire.stored().await? {
                    StoreReply::Stored => "STORED",
                    StoreReply::NotStored => "NOT_STORED",
                    StoreReply::Exists => "EXISTS",
                    StoreReply::NotFound => "NOT_FOUND",
                };
                Ok(vec![vec![Value::Text(word.into())]])
            }
        }
    }

    fn custom_arg(&self, pieces: &[Piece], values: &[ScriptValue]) -> Result<String, OpError> {
        let mut out = String::new();
        for piece in pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Variable(slot) => out.push_str(&values[*slot].raw()),
                Piece::Prefix => out.push_str(&self.key_prefix),
                Piece::RowPrefix(name) => match self.table_names.iter().position(|t| t == name) {
                    Some(id) => out.push_str(&self.prefixes[id]),
                    None => return Err(OpError::client(format!("memcached: no table {name} in this run"))),
                },
                Piece::KeySet(_) | Piece::DocumentId(_) => return Err(OpError::client("memcached: a placeholder of another family")),
            }
        }
        Ok(out)
    }

    /// An item as a row (see the module comment).
    fn item_row(&self, key: &str, data: &[u8]) -> Vec<Value> {
        let loaded_row = self.prefixes.iter().find_map(|prefix| key.strip_prefix(prefix.as_str())?.parse::<i64>().ok());
        if let (Some(pk), Some(fields)) = (loaded_row, decode_fields(data)) {
            let cells =
                fields.into_iter().map(|f| f.map_or(Value::Null, |bytes| Value::Text(String::from_utf8_lossy(&bytes).as_ref().into())));
            return std::iter::once(Value::Int(pk)).chain(cells).collect();
        }
        vec![Value::Text(String::from_utf8_lossy(data).as_ref().into())]
    }
}
