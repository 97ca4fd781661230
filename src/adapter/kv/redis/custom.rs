//! A custom operation's Redis commands (a study's `redis = [...]`): each argument written
//! from its template (the pass's values, the namespace's key prefix, a table's row-key
//! prefix or key set), the commands sent in one round trip, and the last reply turned into
//! rows for the answer that is compared with the other systems'.
//!
//! Owns how a reply reads as rows: nil is no row; a flat array is one row of its items
//! (`HMGET`); an array of arrays is one row per inner array (a Lua script's result set);
//! an empty array is no row; anything else is one row of one cell. Numbers and text
//! compare by value (`base::digest`), so a Lua script returns fractions as text (Redis
//! truncates Lua numbers to integers). Must not check templates (`plan::custom` does,
//! before anything runs) or send anything outside the namespace's keys itself.

use super::connection::RedisConnection;
use crate::base::custom::{CommandTemplate, CustomOp, Piece};
use crate::base::digest::reads_digest;
use crate::base::op::{Answer, OpError, Outcome};
use crate::base::script::ScriptValue;
use crate::base::table::Value;

impl RedisConnection {
    /// Runs one op of `op` with `values` (by slot).
    pub(super) async fn custom(&mut self, op: &CustomOp, values: &[ScriptValue]) -> Result<Outcome, OpError> {
        let cmds = op.redis.iter().map(|c| self.custom_command(c, values)).collect::<Result<Vec<_>, _>>()?;
        if cmds.is_empty() {
            return Err(OpError::unsupported(crate::base::op::OpKind::Custom, "redis (no redis statement for this experiment)"));
        }
        let replies = self.send(cmds, false).await?;
        let rows = replies.last().map(reply_rows).unwrap_or_default();
        Ok(match op.reads {
            true => Outcome::answer(rows.len() as u64, Answer::Scalar(Value::Int(reads_digest([rows.as_slice()]) as i64))),
            false => Outcome::rows(rows.len() as u64),
        })
    }

    fn custom_command(&self, command: &CommandTemplate, values: &[ScriptValue]) -> Result<redis::Cmd, OpError> {
        let mut args = command.args.iter().map(|arg| self.custom_arg(arg, values));
        let mut cmd = redis::cmd(&args.next().ok_or_else(|| OpError::client("an empty redis command"))??);
        for arg in args {
            cmd.arg(arg?);
        }
        Ok(cmd)
    }

    fn custom_arg(&self, pieces: &[Piece], values: &[ScriptValue]) -> Result<String, OpError> {
        let table = |name: &str| {
            self.tables.iter().find(|t| t.def.name == name).ok_or_else(|| OpError::client(format!("redis: no table {name} in this run")))
        };
        let mut out = String::new();
        for piece in pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Variable(slot) => out.push_str(&values[*slot].raw()),
                Piece::Prefix => out.push_str(&self.prefix),
                Piece::RowPrefix(name) => out.push_str(&table(name)?.row_prefix),
                Piece::KeySet(name) => out.push_str(&table(name)?.pk_set),
                Piece::DocumentId(_) => return Err(OpError::client("redis: a placeholder of another family")),
            }
        }
        Ok(out)
    }
}

/// A reply as rows (see the module comment).
fn reply_rows(reply: &redis::Value) -> Vec<Vec<Value>> {
    match reply {
        redis::Value::Nil => Vec::new(),
        redis::Value::Array(items) | redis::Value::Set(items) if items.iter().all(|i| matches!(i, redis::Value::Array(_))) => items
            .iter()
            .map(|row| if let redis::Value::Array(cells) = row { cells.iter().map(cell).collect() } else { Vec::new() })
            .collect(),
        redis::Value::Array(items) | redis::Value::Set(items) => vec![items.iter().map(cell).collect()],
        other => vec![vec![cell(other)]],
    }
}

fn cell(value: &redis::Value) -> Value {
    match value {
        redis::Value::Nil => Value::Null,
        redis::Value::Int(i) => Value::Int(*i),
        redis::Value::Double(x) => Value::Float(*x),
        redis::Value::BulkString(bytes) => Value::Text(String::from_utf8_lossy(bytes).as_ref().into()),
        redis::Value::SimpleString(s) => Value::Text(s.as_str().into()),
        redis::Value::Okay => Value::Text("OK".into()),
        redis::Value::Boolean(b) => Value::Int(i64::from(*b)),
        other => Value::Text(format!("{other:?}").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value as R;

    #[test]
    fn replies_read_as_rows() {
        let text = |s: &str| R::BulkString(s.as_bytes().to_vec());
        assert!(reply_rows(&R::Nil).is_empty());
        assert!(reply_rows(&R::Array(vec![])).is_empty());
        assert_eq!(reply_rows(&text("7")), [vec![Value::Text("7".into())]]);
        assert_eq!(reply_rows(&R::Array(vec![text("a"), R::Int(2)])), [vec![Value::Text("a".into()), Value::Int(2)]]);
        let rows = reply_rows(&R::Array(vec![R::Array(vec![text("A"), text("1.5")]), R::Array(vec![text("N"), R::Nil])]));
        assert_eq!(rows, [vec![Value::Text("A".into()), Value::Text("1.5".into())], vec![Value::Text("N".into()), Value::Null]]);
    }
}
