//! One client's connection: each op planned into commands (or Lua scripts), sent in one
//! MULTI/EXEC or pipeline, and the replies reduced to an outcome. Must not touch keys
//! outside the target's prefix.

use super::cluster::Conn;
use super::dialect::Dialect;
use super::direct::{self, DirectConnection};
use super::replies::{Reduce, is_non_empty, max_stored, reduce, reduce_direct};
use super::rows::{TableKeys, insert_commands, key_of, score, value_text};
use super::{BatchMode, FETCH_ALL_CHUNK, op_error, strings, tpch};
use crate::adapter::Connection;
use crate::base::op::{ErrorClass, Op, OpError, OpKind, Outcome, RangeAgg};
use crate::base::table::{ColumnType, Row, TableId};
use crate::error::Result;
use async_trait::async_trait;
use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, Script};
use std::sync::Arc;

/// Writes one column of an existing row; returns 1, or 0 when the row does not exist.
/// KEYS[1] row hash, KEYS[2] (optional) the column's index set; ARGV: field, text value,
/// pk (index member), score, '1' when the new value is NULL.
pub(super) const UPDATE_LUA: &str = r"
if redis.call('HLEN', KEYS[1]) == 0 then return 0 end
if ARGV[5] == '1' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  if KEYS[2] then redis.call('ZREM', KEYS[2], ARGV[3]) end
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  if KEYS[2] then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3]) end
end
return 1
";

/// MAX of a column over the rows whose indexed value lies in [lo, hi]; returns the stored
/// text of the maximum, or nil when nothing matches. KEYS[1] index set; ARGV: lo, hi,
/// row-key prefix, field, 'num' (compare as numbers) or 'str' (compare as text).
pub(super) const MAX_LUA: &str = r"
local members = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[2])
local best, best_text = nil, false
for _, pk in ipairs(members) do
  local v = redis.call('HGET', ARGV[3] .. pk, ARGV[4])
  if v then
    local cmp = v
    if ARGV[5] == 'num' then cmp = tonumber(v) end
    if cmp ~= nil and (best == nil or cmp > best) then best = cmp; best_text = v end
  end
end
return best_text
";

/// An op compiled to commands that need one round trip.
pub(super) struct Planned {
    pub(super) cmds: Vec<Cmd>,
    /// When executed alone, wrap the commands in MULTI/EXEC (a row and its index entries).
    pub(super) atomic: bool,
    pub(super) reduce: Reduce,
    /// Sent in a second round trip when the op found no row (0 rows): takes back what its
    /// unconditional writes created (LedisDB's updates, which have no `XX` and send no
    /// scripts; see `dialect`). Empty for every other op.
    pub(super) undo: Vec<Cmd>,
}

impl Planned {
    /// One command, not in a transaction, with nothing to take back.
    pub(super) fn one(cmd: Cmd, reduce: Reduce) -> Planned {
        Planned { cmds: vec![cmd], atomic: false, reduce, undo: Vec::new() }
    }
}

/// How a client reaches its server: a connection of its own to one server (see
/// [`direct`]), or the redis crate's cluster client.
pub(super) enum Link {
    Direct(DirectConnection),
    Cluster(Conn),
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, redis::Value> {
        match self {
            Link::Direct(c) => c.req_packed_command(cmd),
            Link::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(&'a mut self, pipeline: &'a Pipeline, offset: usize, count: usize) -> RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Link::Direct(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Link::Direct(c) => c.get_db(),
            Link::Cluster(c) => c.get_db(),
        }
    }
}

pub struct RedisConnection {
    pub(super) conn: Link,
    /// The cluster's masters, for listing a table's plain string keys; empty for one
    /// server, where `conn` itself lists them.
    pub(super) nodes: Vec<Conn>,
    pub(super) dialect: Dialect,
    pub(super) tables: Arc<Vec<TableKeys>>,
    pub(super) batch: BatchMode,
    pub(super) update_script: Arc<Script>,
    pub(super) max_script: Arc<Script>,
    pub(super) query_scripts: Arc<tpch::Scripts>,
    /// The namespace's key prefix (`dbsweep:`), for a custom command's `${prefix}`.
    pub(super) prefix: String,
}

impl RedisConnection {
    pub(super) fn table(&self, id: TableId) -> Result<&TableKeys, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("redis: no table #{id} (was prepare called?)")))
    }

    pub(super) fn index_set<'a>(&self, t: &'a TableKeys, column: usize) -> Result<&'a str, OpError> {
        t.index_sets.get(column).and_then(Option::as_deref).ok_or_else(|| {
            OpError::new(ErrorClass::Unsupported, format!("redis: column {column} of {} has no index sorted set", t.def.name))
        })
    }

    /// Compiles an op on a plain-string table (see [`strings`]); `None` for fetch-all,
    /// which needs several round trips.
    pub(super) fn plan_strings(&self, t: &TableKeys, op: &Op) -> Result<Option<Planned>, OpError> {
        let one = |cmd: Cmd, reduce| Some(Planned::one(cmd, reduce));
        Ok(match op {
            Op::Insert { row, .. } => {
                one(redis::cmd("SET").arg(t.row_key(key_of(row)?)).arg(strings::value_text(row)?).clone(), Reduce::Fixed(1))
            }
            Op::Get { key, .. } => one(redis::cmd("GET").arg(t.row_key(*key)).clone(), Reduce::NonNil),
            Op::MultiGet { keys, .. } if keys.is_empty() => one(redis::cmd("ECHO").arg("dbsweep").clone(), Reduce::Fixed(0)),
            Op::MultiGet { keys, .. } => {
                one(redis::cmd("MGET").arg(keys.iter().map(|k| t.row_key(*k)).collect::<Vec<_>>()).clone(), Reduce::NonNil)
            }
            Op::Delete { key, .. } => Some(self.dialect.string_delete(vec![t.row_key(*key)])),
            Op::Update { key, column: 1, value, .. } => {
                let text = value_text(value).ok_or_else(|| OpError::client("redis: a pairs value cannot be NULL"))?;
                Some(self.dialect.string_update(t.row_key(*key), text))
            }
            Op::FetchAll { .. } => None,
            other => {
                return Err(OpError::new(
                    ErrorClass::Unsupported,
                    format!("redis: {} is not offered on {} (plain string keys keep no order or index)", other.kind(), t.def.name),
                ));
            }
        })
    }

    /// One command for a batch of inserts, gets or deletes on one plain-string table:
    /// `MSET`, `MGET` or `DEL` of every key. `None` for other batches.
    pub(super) fn strings_batch(&self, ops: &[Op]) -> Result<Option<Planned>, OpError> {
        let Some(table) = ops.first().and_then(Op::table) else { return Ok(None) };
        let t = self.table(table)?;
        if !t.strings || ops.iter().any(|op| op.table() != Some(table) || op.kind() != ops[0].kind()) {
            return Ok(None);
        }
        let planned = |cmd: Cmd, reduce| Some(Planned::one(cmd, reduce));
        let keys = |f: &dyn Fn(&Op) -> Vec<i64>| ops.iter().flat_map(f).map(|k| t.row_key(k)).collect::<Vec<_>>();
        Ok(match ops[0].kind() {
            OpKind::Insert => {
                let rows = ops.iter().filter_map(|op| if let Op::Insert { row, .. } = op { Some(row) } else { None });
                planned(strings::mset(|k| t.row_key(k), rows)?, Reduce::Fixed(ops.len() as u64))
            }
            OpKind::Get | OpKind::MultiGet => {
                let keys = keys(&|op| match op {
                    Op::Get { key, .. } => vec![*key],
                    Op::MultiGet { keys, .. } => keys.clone(),
                    _ => Vec::new(),
                });
                if keys.is_empty() {
                    return Ok(None);
                }
                planned(redis::cmd("MGET").arg(keys).clone(), Reduce::NonNil)
            }
            OpKind::Delete => {
                let keys = keys(&|op| if let Op::Delete { key, .. } = op { vec![*key] } else { Vec::new() });
                Some(self.dialect.string_delete(keys))
            }
            _ => None,
        })
    }

    /// Compiles a one-round-trip op; `None` for ops that need two (Scan, RangeRows, RMW).
    pub(super) fn plan(&self, op: &Op) -> Result<Option<Planned>, OpError> {
        if let Some(table) = op.table()
            && let t = self.table(table)?
            && t.strings
        {
            return self.plan_strings(t, op);
        }
        let one = |cmd: Cmd, reduce| Some(Planned::one(cmd, reduce));
        Ok(match op {
            Op::Echo => one(redis::cmd("ECHO").arg("dbsweep").clone(), Reduce::Fixed(0)),
            Op::Insert { table, row } => {
                let mut cmds = Vec::new();
                insert_commands(self.dialect, self.table(*table)?, row, &mut cmds)?;
                Some(Planned { cmds, atomic: true, reduce: Reduce::Fixed(1), undo: Vec::new() })
            }
            Op::Get { table, key } => one(redis::cmd("HGETALL").arg(self.table(*table)?.row_key(*key)).clone(), Reduce::NonEmptyHashes),
            Op::MultiGet { table, keys } => {
                let t = self.table(*table)?;
                let cmds = keys.iter().map(|k| redis::cmd("HGETALL").arg(t.row_key(*k)).clone()).collect();
                Some(Planned { cmds, atomic: false, reduce: Reduce::NonEmptyHashes, undo: Vec::new() })
            }
            Op::Delete { table, key } => {
                let t = self.table(*table)?;
                let mut cmds = vec![self.dialect.row_delete(&t.row_key(*key)), redis::cmd("ZREM").arg(&t.pk_set).arg(*key).clone()];
                // Index members are pks, so removing needs no read of the old values.
                for set in t.index_sets.iter().flatten() {
                    cmds.push(redis::cmd("ZREM").arg(set).arg(*key).clone());
                }
                Some(Planned { cmds, atomic: true, reduce: Reduce::Existed, undo: Vec::new() })
            }
            Op::Update { table, key, column, value } => {
                let t = self.table(*table)?;
                if *column == 0 || *column >= t.def.columns.len() {
                    return Err(OpError::client(format!("redis: cannot update column {column} of {}", t.def.name)));
                }
                let index = t.index_sets[*column].as_deref();
                let field = &t.def.columns[*column].name;
                let text = value_text(value);
                if self.dialect == Dialect::LedisDb {
                    return Ok(Some(ledis_row_update(t, *key, field, text, score(value), index)));
                }
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(self.update_script.get_hash());
                cmd.arg(if index.is_some() { 2 } else { 1 }).arg(t.row_key(*key));
                if let Some(set) = index {
                    cmd.arg(set);
                }
                cmd.arg(field)
                    .arg(text.as_deref().unwrap_or(""))
                    .arg(*key)
                    .arg(score(value).unwrap_or_else(|| "0".into()))
                    .arg(if text.is_none() { "1" } else { "0" });
                one(cmd, Reduce::FirstInt)
            }
            Op::Range { table, column, lo, hi, agg: RangeAgg::Count } => {
                let t = self.table(*table)?;
                one(redis::cmd("ZCOUNT").arg(self.index_set(t, *column)?).arg(*lo).arg(*hi).clone(), Reduce::Count)
            }
            // LedisDB reads the range's rows instead (`two_step`): see `ledis_row_update`.
            Op::Range { agg: RangeAgg::Max { .. }, .. } if self.dialect == Dialect::LedisDb => None,
            Op::Range { table, column, lo, hi, agg: RangeAgg::Max { column: of } } => {
                let t = self.table(*table)?;
                let set = self.index_set(t, *column)?;
                let of_col = t.def.columns.get(*of).ok_or_else(|| OpError::client(format!("redis: no column {of} in {}", t.def.name)))?;
                let mode = match of_col.ty {
                    ColumnType::Int | ColumnType::Float | ColumnType::Decimal => "num",
                    ColumnType::Text | ColumnType::Date => "str",
                };
                let cmd = redis::cmd("EVALSHA")
                    .arg(self.max_script.get_hash())
                    .arg(1)
                    .arg(set)
                    .arg(*lo)
                    .arg(*hi)
                    .arg(&t.row_prefix)
                    .arg(&of_col.name)
                    .arg(mode)
                    .clone();
                one(cmd, Reduce::Max(of_col.ty))
            }
            Op::Scan { .. } | Op::Range { agg: RangeAgg::Rows, .. } | Op::ReadModifyWrite { .. } | Op::FetchAll { .. } => None,
            Op::Script { .. } => return Err(OpError::unsupported(op.kind(), "redis")),
            Op::Custom { .. } => None,
            Op::Query(q) => {
                let unsupported = || OpError::new(ErrorClass::Unsupported, format!("redis does not run {q:?}"));
                let t = self.tables.iter().find(|t| t.def.name == tpch::LINEITEM).ok_or_else(|| {
                    OpError::client(format!("redis: {q:?} needs the TPC-H {} table (prepare the tpch dataset)", tpch::LINEITEM))
                })?;
                let cmd = self.query_scripts.command(*q, &t.row_prefix, &t.pk_set).ok_or_else(unsupported)?;
                one(cmd, Reduce::Query(*q))
            }
        })
    }

    /// Gets of rows of hash-mapped tables on a direct connection: one HGETALL per op,
    /// encoded straight into the connection's buffer (the bytes `plan` would send) and
    /// counted from the replies' shapes, in one round trip: in MULTI/EXEC when `atomic` (a
    /// batch with batch=multi, as `execute_batch` frames any batch), else plain. `None` when
    /// `ops` are not all such gets, or the connection is the cluster's.
    async fn direct_gets(&mut self, ops: &[Op], atomic: bool) -> Option<Result<u64, OpError>> {
        let Link::Direct(conn) = &mut self.conn else { return None };
        let tables = &self.tables;
        let row_prefix = |op: &Op| match op {
            Op::Get { table, key } => tables.get(*table).filter(|t| !t.strings).map(|t| (t.row_prefix.as_str(), *key)),
            _ => None,
        };
        if ops.is_empty() || !ops.iter().all(|op| row_prefix(op).is_some()) {
            return None;
        }
        let encode = |out: &mut Vec<u8>| {
            for (prefix, key) in ops.iter().filter_map(row_prefix) {
                direct::put_key_command(out, "HGETALL", prefix, key);
            }
        };
        Some(
            exchange(conn, self.dialect, ops.len(), atomic, encode)
                .await
                .map(|()| conn.replies().iter().filter(|f| f.non_empty_array()).count() as u64),
        )
    }

    /// Inserts into hash-mapped tables on a direct connection: each row's commands
    /// (`insert_commands`) encoded straight into bytes, without `Cmd`s, in one round trip:
    /// in MULTI/EXEC when `atomic` (one insert, or a batch with batch=multi), else plain.
    /// `None` when `ops` are not all such inserts, or the connection is the cluster's.
    async fn direct_inserts(&mut self, ops: &[Op], atomic: bool) -> Option<Result<u64, OpError>> {
        let Link::Direct(conn) = &mut self.conn else { return None };
        let tables = &self.tables;
        fn row_of<'a>(tables: &'a [TableKeys], op: &'a Op) -> Option<(&'a TableKeys, &'a Row)> {
            match op {
                Op::Insert { table, row } => tables.get(*table).filter(|t| !t.strings).map(|t| (t, row)),
                _ => None,
            }
        }
        if ops.is_empty() || !ops.iter().all(|op| row_of(tables, op).is_some()) {
            return None;
        }
        let mut encoder = direct::Encoder::new();
        for (t, row) in ops.iter().filter_map(|op| row_of(tables, op)) {
            if let Err(e) = insert_commands(self.dialect, t, row, &mut encoder) {
                return Some(Err(e));
            }
        }
        let (bytes, commands) = encoder.finish();
        Some(exchange(conn, self.dialect, commands, atomic, |out| out.extend_from_slice(&bytes)).await.map(|()| ops.len() as u64))
    }

    /// Sends commands in one round trip and returns one reply per command.
    pub(super) async fn send(&mut self, cmds: Vec<Cmd>, atomic: bool) -> Result<Vec<redis::Value>, OpError> {
        let dialect = self.dialect;
        if let Link::Direct(conn) = &mut self.conn {
            send_direct(conn, dialect, &cmds, atomic).await?;
            return conn.replies().iter().map(|f| conn.value(*f).map_err(|e| op_error(dialect, e))).collect();
        }
        // Without MULTI/EXEC (LedisDB) the commands still share one round trip.
        let atomic = atomic && self.dialect.has_multi();
        let replies = if cmds.len() == 1 && !atomic {
            vec![cmds[0].query_async::<redis::Value>(&mut self.conn).await.map_err(|e| op_error(self.dialect, e))?]
        } else {
            let mut pipe = Pipeline::with_capacity(cmds.len());
            if atomic {
                pipe.atomic();
            }
            for cmd in cmds {
                pipe.add_command(cmd);
            }
            pipe.query_async::<Vec<redis::Value>>(&mut self.conn).await.map_err(|e| op_error(self.dialect, e))?
        };
        replies.into_iter().map(|r| r.extract_error().map_err(|e| op_error(self.dialect, e))).collect()
    }

    /// The primary keys whose score in the sorted set `set` lies in `lo..=hi` (a secondary-index range).
    async fn range_members(&mut self, set: String, lo: i64, hi: i64) -> Result<Vec<i64>, OpError> {
        redis::cmd("ZRANGEBYSCORE").arg(set).arg(lo).arg(hi).query_async(&mut self.conn).await.map_err(|e| op_error(self.dialect, e))
    }

    /// Fetches row hashes in one pipeline; returns how many exist.
    pub(super) async fn fetch_rows(&mut self, t_prefix: &str, pks: &[i64]) -> Result<u64, OpError> {
        if pks.is_empty() {
            return Ok(0);
        }
        let cmds = pks.iter().map(|pk| redis::cmd("HGETALL").arg(format!("{t_prefix}{pk}")).clone()).collect();
        let replies = self.send(cmds, false).await?;
        Ok(replies.iter().filter(|r| is_non_empty(r)).count() as u64)
    }

    pub(super) async fn two_step(&mut self, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::FetchAll { table } if self.table(*table)?.strings => {
                // The table's keys a page at a time, one MGET per page of keys not seen yet.
                let prefix = self.table(*table)?.row_prefix.clone();
                let (mut rows, mut seen) = (0u64, std::collections::HashSet::new());
                for node in 0..self.nodes.len().max(1) {
                    let mut cursor = Some(self.dialect.first_cursor().to_string());
                    while let Some(at) = cursor {
                        let page = match self.nodes.get_mut(node) {
                            Some(master) => self.dialect.string_key_page(master, &prefix, &at).await,
                            None => self.dialect.string_key_page(&mut self.conn, &prefix, &at).await,
                        };
                        let (next, keys) = page.map_err(|e| op_error(self.dialect, e))?;
                        let ours: Vec<String> =
                            keys.into_iter().filter(|k| strings::is_row_key(&prefix, k) && seen.insert(k.clone())).collect();
                        if !ours.is_empty() {
                            let reply = redis::cmd("MGET").arg(ours).query_async::<redis::Value>(&mut self.conn).await;
                            rows += strings::non_nil(&reply.map_err(|e| op_error(self.dialect, e))?);
                        }
                        cursor = next;
                    }
                }
                Ok(Outcome::rows(rows))
            }
            Op::FetchAll { table } => {
                // Every pk from the table's key set, then the hashes in pipelines of
                // FETCH_ALL_CHUNK, so the client never holds more than one chunk of rows.
                let t = self.table(*table)?;
                let (set, prefix) = (t.pk_set.clone(), t.row_prefix.clone());
                let pks: Vec<i64> = redis::cmd("ZRANGE")
                    .arg(set)
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut self.conn)
                    .await
                    .map_err(|e| op_error(self.dialect, e))?;
                let mut rows = 0;
                for chunk in pks.chunks(FETCH_ALL_CHUNK) {
                    rows += self.fetch_rows(&prefix, chunk).await?;
                }
                Ok(Outcome::rows(rows))
            }
            Op::Scan { table, start, count } => {
                let t = self.table(*table)?;
                let (set, prefix) = (t.pk_set.clone(), t.row_prefix.clone());
                let pks: Vec<i64> = redis::cmd("ZRANGEBYSCORE")
                    .arg(set)
                    .arg(*start)
                    .arg("+inf")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(*count)
                    .query_async(&mut self.conn)
                    .await
                    .map_err(|e| op_error(self.dialect, e))?;
                Ok(Outcome::rows(self.fetch_rows(&prefix, &pks).await?))
            }
            Op::Range { table, column, lo, hi, agg: RangeAgg::Rows } => {
                let t = self.table(*table)?;
                let set = self.index_set(t, *column)?.to_string();
                let prefix = t.row_prefix.clone();
                let pks = self.range_members(set, *lo, *hi).await?;
                Ok(Outcome::rows(self.fetch_rows(&prefix, &pks).await?))
            }
            Op::Range { table, column, lo, hi, agg: RangeAgg::Max { column: of } } => {
                // LedisDB: the range's members, then the column of each row in one pipeline;
                // the maximum is taken here as the max script takes it on Redis.
                let t = self.table(*table)?;
                let set = self.index_set(t, *column)?.to_string();
                let of_col = t.def.columns.get(*of).ok_or_else(|| OpError::client(format!("redis: no column {of} in {}", t.def.name)))?;
                let (ty, field, prefix) = (of_col.ty, of_col.name.clone(), t.row_prefix.clone());
                let pks = self.range_members(set, *lo, *hi).await?;
                let cmds = pks.iter().map(|pk| redis::cmd("HGET").arg(format!("{prefix}{pk}")).arg(&field).clone()).collect();
                let values = if pks.is_empty() { Vec::new() } else { self.send(cmds, false).await? };
                reduce(Reduce::Max(ty), &[max_stored(ty, &values)])
            }
            Op::ReadModifyWrite { table, key, column, value } => {
                let t = self.table(*table)?;
                if *column == 0 || *column >= t.def.columns.len() {
                    return Err(OpError::client(format!("redis: cannot update column {column} of {}", t.def.name)));
                }
                let row_key = t.row_key(*key);
                let field = t.def.columns[*column].name.clone();
                let index = t.index_sets[*column].clone();
                let current = redis::cmd("HGETALL")
                    .arg(&row_key)
                    .query_async::<redis::Value>(&mut self.conn)
                    .await
                    .map_err(|e| op_error(self.dialect, e))?;
                if !is_non_empty(&current) {
                    return Ok(Outcome::rows(0));
                }
                let mut cmds = Vec::new();
                match value_text(value) {
                    Some(text) => cmds.push(redis::cmd("HSET").arg(&row_key).arg(&field).arg(text).clone()),
                    None => cmds.push(redis::cmd("HDEL").arg(&row_key).arg(&field).clone()),
                }
                if let Some(set) = index {
                    match score(value) {
                        Some(s) => cmds.push(redis::cmd("ZADD").arg(set).arg(s).arg(*key).clone()),
                        None => cmds.push(redis::cmd("ZREM").arg(set).arg(*key).clone()),
                    }
                }
                let atomic = cmds.len() > 1;
                self.send(cmds, atomic).await?;
                Ok(Outcome::rows(1))
            }
            other => Err(OpError::client(format!("redis: {} is not a two-step op", other.kind()))),
        }
    }
}

/// LedisDB's update of one column of a row hash, without a script: `HLEN` of the row, then
/// the write (`HSET`, or `HDEL` for NULL) and its index entry, in one pipeline; the row
/// count is whether `HLEN` found the row. A row that was not there gets no half row: the
/// `undo` removes what the writes created. Not isolated (LedisDB has no transactions);
/// within one point no other client writes the same row's existence.
fn ledis_row_update(t: &TableKeys, key: i64, field: &str, text: Option<String>, score: Option<String>, index: Option<&str>) -> Planned {
    let row = t.row_key(key);
    let mut cmds = vec![redis::cmd("HLEN").arg(&row).clone()];
    cmds.push(match &text {
        Some(text) => redis::cmd("HSET").arg(&row).arg(field).arg(text).clone(),
        None => redis::cmd("HDEL").arg(&row).arg(field).clone(),
    });
    let mut undo = vec![redis::cmd("HCLEAR").arg(&row).clone()];
    if let Some(set) = index {
        cmds.push(match score {
            Some(score) => redis::cmd("ZADD").arg(set).arg(score).arg(key).clone(),
            None => redis::cmd("ZREM").arg(set).arg(key).clone(),
        });
        undo.push(redis::cmd("ZREM").arg(set).arg(key).clone());
    }
    Planned { cmds, atomic: false, reduce: Reduce::Existed, undo }
}

/// Sends commands on a direct connection in one round trip (in MULTI/EXEC when `atomic`
/// and the dialect has it); the replies, one per command, are left in `conn`. Fails on the
/// first error reply, as `send` does.
async fn send_direct(conn: &mut DirectConnection, dialect: Dialect, cmds: &[Cmd], atomic: bool) -> Result<(), OpError> {
    exchange(conn, dialect, cmds.len(), atomic, |out| cmds.iter().for_each(|c| c.write_packed_command(out))).await
}

/// One round trip on a direct connection: the `commands` that `encode` appends, in
/// MULTI/EXEC when `atomic` and the dialect has it. Leaves one reply per command in `conn`
/// and fails on the first error reply (at any depth, in a transaction also a command that
/// was not queued), as the crate's connection and `send` do.
async fn exchange(
    conn: &mut DirectConnection,
    dialect: Dialect,
    commands: usize,
    atomic: bool,
    encode: impl FnOnce(&mut Vec<u8>),
) -> Result<(), OpError> {
    let atomic = atomic && dialect.has_multi();
    let failed = |e| op_error(dialect, e);
    if atomic {
        let framed = |out: &mut Vec<u8>| {
            direct::put_multi(out);
            encode(out);
            direct::put_exec(out);
        };
        conn.exchange(framed, commands + 2).await.map_err(failed)?;
        conn.unwrap_transaction(commands).map_err(failed)?;
    } else {
        conn.exchange(encode, commands).await.map_err(failed)?;
    }
    match conn.replies().iter().find(|f| f.error) {
        Some(error) => Err(failed(conn.error_of(*error))),
        None => Ok(()),
    }
}

#[async_trait]
impl Connection for RedisConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        if let Op::Custom { op, values } = op {
            return self.custom(op, values).await;
        }
        if let Some(rows) = self.direct_gets(std::slice::from_ref(op), false).await {
            return rows.map(Outcome::rows);
        }
        if let Some(rows) = self.direct_inserts(std::slice::from_ref(op), true).await {
            return rows.map(Outcome::rows);
        }
        match self.plan(op)? {
            Some(planned) => {
                let outcome = if let Link::Direct(conn) = &mut self.conn {
                    send_direct(conn, self.dialect, &planned.cmds, planned.atomic).await?;
                    reduce_direct(planned.reduce, conn, conn.replies())?
                } else {
                    let replies = self.send(planned.cmds, planned.atomic).await?;
                    reduce(planned.reduce, &replies)?
                };
                if outcome.rows == 0 && !planned.undo.is_empty() {
                    self.send(planned.undo, false).await?;
                }
                Ok(outcome)
            }
            None => self.two_step(op).await,
        }
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        if ops.first().is_some_and(|op| op.kind() == OpKind::Custom) {
            return crate::adapter::one_by_one(self, ops).await;
        }
        if let Some(rows) = self.direct_gets(ops, self.batch == BatchMode::Multi).await {
            return rows.map(Outcome::rows);
        }
        if let Some(rows) = self.direct_inserts(ops, self.batch == BatchMode::Multi).await {
            return rows.map(Outcome::rows);
        }
        if let Some(planned) = self.strings_batch(ops)? {
            let replies = self.send(planned.cmds, false).await?;
            return reduce(planned.reduce, &replies);
        }
        if matches!(self.conn, Link::Cluster(_))
            && ops.first().and_then(Op::table).is_some_and(|t| self.tables.get(t).is_some_and(|t| t.strings))
        {
            // Plain string keys spread over the cluster's slots, and one pipeline reaches
            // one slot: a batch that is not one MSET, MGET or DEL goes op by op.
            let mut rows = 0;
            for op in ops {
                rows += self.execute(op).await?.rows;
            }
            return Ok(Outcome::rows(rows));
        }
        let mut plans = Vec::with_capacity(ops.len());
        for op in ops {
            match self.plan(op)? {
                Some(p) => plans.push(p),
                // Two-step ops cannot share one round trip: one request each.
                None => {
                    let mut rows = 0;
                    for op in ops {
                        rows += self.two_step(op).await?.rows;
                    }
                    return Ok(Outcome::rows(rows));
                }
            }
        }
        let mut cmds = Vec::new();
        let mut shapes = Vec::with_capacity(plans.len());
        for p in plans {
            shapes.push((p.cmds.len(), p.reduce, p.undo));
            cmds.extend(p.cmds);
        }
        let atomic = self.batch == BatchMode::Multi;
        let (mut rows, mut at, mut undo) = (0, 0, Vec::new());
        if let Link::Direct(conn) = &mut self.conn {
            send_direct(conn, self.dialect, &cmds, atomic).await?;
            let replies = conn.replies();
            for (n, r, op_undo) in shapes {
                let slice = replies.get(at..at + n).ok_or_else(|| OpError::server("redis: fewer replies than commands"))?;
                let found = reduce_direct(r, conn, slice)?.rows;
                if found == 0 {
                    undo.extend(op_undo);
                }
                rows += found;
                at += n;
            }
        } else {
            let replies = self.send(cmds, atomic).await?;
            for (n, r, op_undo) in shapes {
                let slice = replies.get(at..at + n).ok_or_else(|| OpError::server("redis: fewer replies than commands"))?;
                let found = reduce(r, slice)?.rows;
                if found == 0 {
                    undo.extend(op_undo);
                }
                rows += found;
                at += n;
            }
        }
        if !undo.is_empty() {
            self.send(undo, false).await?;
        }
        Ok(Outcome::rows(rows))
    }
}
