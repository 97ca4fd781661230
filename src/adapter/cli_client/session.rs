//! One client's command-line process (`mariadb` or `redis-cli`): requests written to its
//! stdin, replies parsed from its stdout line by line. Must not write anything the
//! dialect or the redis mapping did not produce.

use super::server_time;
use super::text::{redis_quote, redis_reply_value, score, with_literals};
use super::{Kind, Launch};
use crate::adapter::Connection;
use crate::adapter::kv::redis::strings as redis_strings;
use crate::adapter::sql::connection::{returns_rows, writes};
use crate::adapter::sql::dialect::SqlTable;
use crate::adapter::sql::dialects::MYSQL;
use crate::adapter::sql::plan::{Args, Planner};
use crate::base::op::{ErrorClass, Op, OpError, OpKind, Outcome};
use crate::base::table::{Row, TableDef, Value};
use crate::error::Result;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

/// One running client process; stdout and stderr share one pipe so errors stay in order.
pub(super) struct Proc {
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) out: BufReader<tokio::net::unix::pipe::Receiver>,
}

impl Launch {
    pub(super) fn spawn(&self) -> Result<Proc, OpError> {
        let conn_err = |what: &str, e: std::io::Error| OpError::new(ErrorClass::Connection, format!("{}: {what}: {e}", self.program));
        let (reader, writer) = std::io::pipe().map_err(|e| conn_err("pipe", e))?;
        let writer2 = writer.try_clone().map_err(|e| conn_err("pipe", e))?;
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::piped())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer2))
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| conn_err("spawn", e))?;
        drop(cmd);
        let stdin = child.stdin.take();
        let rx = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(|e| conn_err("pipe", e))?;
        Ok(Proc { child, stdin, out: BufReader::new(rx) })
    }
}

/// How a request's output lines become a row count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Parse {
    /// Nothing to count (echo).
    Zero,
    /// Every output line is a row (mysql SELECT).
    Lines,
    /// Every output line is an integer to add up (mysql `SELECT ROW_COUNT()`).
    SumInts,
    /// A fixed count, after checking for errors (redis inserts).
    Fixed(u64),
    /// Non-empty HGETALL replies: top-level lines starting with `1) `.
    RedisHashes,
    /// DEL replies inside EXEC: lines `1) (integer) N`.
    RedisFirstInts,
    /// GET or MGET replies: the lines holding a (quoted) value, not `(nil)`.
    RedisNonNil,
    /// Top-level integer replies: lines `(integer) N`, added up.
    RedisInts,
}

pub struct CliConn {
    pub(super) launch: Arc<Launch>,
    pub(super) tables: Arc<Vec<Arc<TableDef>>>,
    /// The tables as the `mariadb` dialect names them (MariaDB only).
    pub(super) sql_tables: Vec<SqlTable>,
    pub(super) proc: Option<Proc>,
    pub(super) nonce: String,
    pub(super) seq: u64,
}

impl CliConn {
    pub(super) fn table(&self, id: usize) -> Result<&TableDef, OpError> {
        self.tables.get(id).map(|t| t.as_ref()).ok_or_else(|| OpError::client(format!("no table #{id} (was prepare called?)")))
    }

    /// Sends `script` followed by an end marker; returns the output lines before the marker.
    pub(super) async fn request(&mut self, script: &str) -> Result<Vec<String>, OpError> {
        self.seq += 1;
        let marker = format!("{}x{}", self.nonce, self.seq);
        let (tail, expect) = match self.launch.kind {
            Kind::MySql => (format!("SELECT '{marker}';\n"), marker.clone()),
            Kind::Redis => (format!("ECHO {marker}\n"), format!("\"{marker}\"")),
        };
        let mut text = String::with_capacity(script.len() + tail.len());
        text.push_str(script);
        text.push_str(&tail);
        if self.proc.is_none() {
            self.proc = Some(self.launch.spawn()?);
        }
        let result = self.exchange(&text, &expect).await;
        if (result.is_err() || self.launch.per_op)
            && let Some(mut p) = self.proc.take()
        {
            drop(p.stdin.take());
            if result.is_err() {
                let _ = p.child.start_kill();
            }
            let _ = p.child.wait().await;
        }
        result
    }

    /// Writes `text` while reading the output up to the `expect` line. Writing and reading
    /// run together: a large request (a 10000-row MULTI) makes the client answer before it
    /// has read all of it, and a full output pipe would otherwise stall both sides.
    pub(super) async fn exchange(&mut self, text: &str, expect: &str) -> Result<Vec<String>, OpError> {
        let program = self.launch.program.clone();
        let p = self.proc.as_mut().expect("spawned");
        let dead = |what: String| OpError::new(ErrorClass::Connection, format!("{program}: {what}"));
        let stdin = p.stdin.as_mut().ok_or_else(|| dead("stdin closed".into()))?;
        let out = &mut p.out;
        let write = async {
            stdin.write_all(text.as_bytes()).await.map_err(|e| dead(format!("writing to the client: {e}")))?;
            stdin.flush().await.map_err(|e| dead(format!("writing to the client: {e}")))
        };
        let read = async {
            let mut lines = Vec::new();
            let mut line = String::new();
            loop {
                line.clear();
                let n = out.read_line(&mut line).await.map_err(|e| dead(format!("reading from the client: {e}")))?;
                if n == 0 {
                    let last = lines.iter().rev().take(3).rev().cloned().collect::<Vec<_>>().join(" | ");
                    return Err(dead(format!("the client exited{}", if last.is_empty() { String::new() } else { format!(": {last}") })));
                }
                let l = line.trim_end_matches(['\n', '\r']);
                if l == expect {
                    return Ok(lines);
                }
                lines.push(l.to_string());
            }
        };
        let ((), lines) = tokio::try_join!(write, read)?;
        Ok(lines)
    }

    pub(super) async fn run(&mut self, script: String, parse: Parse) -> Result<Outcome, OpError> {
        let kind = self.launch.kind;
        let (lines, server_time) = match self.launch.server_timing.then(|| server_time::wrap(kind, &script)).flatten() {
            Some(timed) => server_time::unwrap(kind, self.request(&timed).await?),
            None => (self.request(&script).await?, None),
        };
        if let Some(err) = lines.iter().find(|l| is_error_line(kind, l)) {
            let class = if err.starts_with("Could not connect") || err.starts_with("AUTH failed") || err.contains("Can't connect") {
                ErrorClass::Connection
            } else {
                ErrorClass::Server
            };
            return Err(OpError::new(class, format!("{}: {err}", self.launch.program)));
        }
        let int = |s: &str| s.trim().parse::<i64>().map_err(|_| OpError::client(format!("unexpected client output: {s}")));
        let rows = match parse {
            Parse::Zero => 0,
            Parse::Fixed(n) => {
                if lines.iter().any(|l| l == "(nil)") {
                    return Err(OpError::new(ErrorClass::Server, "redis-cli: EXEC aborted the transaction"));
                }
                n
            }
            Parse::Lines => lines.len() as u64,
            Parse::SumInts => lines.iter().map(|l| int(l)).sum::<Result<i64, _>>()?.max(0) as u64,
            Parse::RedisHashes => lines.iter().filter(|l| l.starts_with("1) ")).count() as u64,
            Parse::RedisFirstInts => {
                lines.iter().filter_map(|l| l.strip_prefix("1) (integer) ")).map(int).sum::<Result<i64, _>>()?.max(0) as u64
            }
            Parse::RedisNonNil => lines.iter().filter(|l| redis_reply_value(l).is_some_and(|v| v.starts_with('"'))).count() as u64,
            Parse::RedisInts => lines.iter().filter_map(|l| l.strip_prefix("(integer) ")).map(int).sum::<Result<i64, _>>()?.max(0) as u64,
        };
        Ok(Outcome { server_time, ..Outcome::rows(rows) })
    }

    /// The script and parse rule for a batch of ops of one kind (or a single op).
    pub(super) fn plan(&self, ops: &[Op]) -> Result<(String, Parse), OpError> {
        let Some(first) = ops.first() else { return Ok((String::new(), Parse::Zero)) };
        let kind = first.kind();
        if let Some(bad) = ops.iter().find(|o| o.kind() != kind) {
            return Err(OpError::client(format!("a batch must hold ops of one kind, got {kind} and {}", bad.kind())));
        }
        match self.launch.kind {
            Kind::MySql => self.plan_sql(ops, kind),
            Kind::Redis => self.plan_redis(ops, kind),
        }
    }

    /// The library adapter's statements (the `mariadb` dialect, planned by `sql::plan`) with
    /// literal values: a batch of inserts is one multi-row `INSERT` per table, gets and
    /// multi-gets one statement per op, and several deletes one transaction; every write is
    /// followed by `SELECT ROW_COUNT()`.
    pub(super) fn plan_sql(&self, ops: &[Op], kind: OpKind) -> Result<(String, Parse), OpError> {
        let planner = Planner { dialect: &MYSQL, tables: &self.sql_tables };
        let steps = match kind {
            OpKind::Echo => return Ok((String::new(), Parse::Zero)),
            OpKind::Insert => {
                let mut groups: BTreeMap<usize, Vec<&Row>> = BTreeMap::new();
                for op in ops {
                    if let Op::Insert { table, row } = op {
                        groups.entry(*table).or_default().push(row);
                    }
                }
                let mut steps = Vec::new();
                for (table, rows) in groups {
                    steps.extend(planner.insert(table, rows)?);
                }
                steps
            }
            OpKind::Get | OpKind::MultiGet | OpKind::Delete => planner.ops(ops)?,
            other => {
                return Err(OpError::new(ErrorClass::Unsupported, format!("{other} is not offered by the command-line client adapter")));
            }
        };
        let transaction = kind == OpKind::Delete && steps.len() > 1;
        let mut s = String::new();
        if transaction {
            s.push_str("START TRANSACTION;\n");
        }
        for step in &steps {
            let keys: Vec<Value>;
            let values: Vec<&Value> = match &step.args {
                Args::Key(key) => {
                    keys = vec![Value::Int(*key)];
                    keys.iter().collect()
                }
                Args::Keys(list) => {
                    keys = list.iter().map(|k| Value::Int(*k)).collect();
                    keys.iter().collect()
                }
                Args::Rows(rows) => rows.iter().flat_map(|row| row.iter()).collect(),
                other => return Err(OpError::client(format!("the command-line client cannot send {other:?}"))),
            };
            let table = step.statement.table().and_then(|id| self.sql_tables.get(id));
            let text = table.ok_or_else(|| OpError::client("no such table (was prepare called?)"))?.text(&MYSQL, step.statement);
            s.push_str(&with_literals(&text, &values)?);
            s.push_str(";\n");
            if !returns_rows(step.reply) {
                s.push_str("SELECT ROW_COUNT();\n");
            }
        }
        if transaction {
            s.push_str("COMMIT;\n");
        }
        Ok((s, if writes(kind) { Parse::SumInts } else { Parse::Lines }))
    }

    /// The lines for ops on pairs tables (the plain-string mapping): one SET/MSET, GET/MGET
    /// or DEL line for the whole batch.
    pub(super) fn plan_redis_pairs(&self, ops: &[Op], kind: OpKind) -> Result<(String, Parse), OpError> {
        let row_key = |table: usize, key: i64| -> Result<String, OpError> {
            Ok(format!("{}{}{key}", self.launch.key_prefix, self.table(table)?.name))
        };
        let mut args: Vec<String> = Vec::new();
        let parse = match kind {
            OpKind::Insert => {
                args.push(if ops.len() == 1 { "SET" } else { "MSET" }.into());
                for op in ops {
                    let Op::Insert { table, row } = op else { unreachable!("checked kind") };
                    let pk = row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("the key column must be an integer"))?;
                    args.push(row_key(*table, pk)?);
                    args.push(redis_strings::value_text(row)?);
                }
                Parse::Fixed(ops.len() as u64)
            }
            OpKind::Get | OpKind::MultiGet => {
                args.push("MGET".into());
                for op in ops {
                    match op {
                        Op::Get { table, key } => args.push(row_key(*table, *key)?),
                        Op::MultiGet { table, keys } => {
                            for k in keys {
                                args.push(row_key(*table, *k)?);
                            }
                        }
                        _ => unreachable!("checked kind"),
                    }
                }
                if args.len() == 1 {
                    return Ok((String::new(), Parse::Zero));
                }
                Parse::RedisNonNil
            }
            OpKind::Delete => {
                args.push("DEL".into());
                for op in ops {
                    let Op::Delete { table, key } = op else { unreachable!("checked kind") };
                    args.push(row_key(*table, *key)?);
                }
                Parse::RedisInts
            }
            other => {
                return Err(OpError::new(ErrorClass::Unsupported, format!("{other} is not offered by the command-line client adapter")));
            }
        };
        let quoted: Vec<String> = args.iter().map(|a| redis_quote(a)).collect();
        Ok((quoted.join(" ") + "\n", parse))
    }

    pub(super) fn plan_redis(&self, ops: &[Op], kind: OpKind) -> Result<(String, Parse), OpError> {
        if let Some(table) = ops.first().and_then(Op::table)
            && redis_strings::applies_to(self.table(table)?)
        {
            if ops.iter().any(|op| op.table() != Some(table)) {
                return Err(OpError::client("a batch must stay in one table"));
            }
            return self.plan_redis_pairs(ops, kind);
        }
        let mut s = String::new();
        let line = |s: &mut String, args: &[&str]| {
            let quoted: Vec<String> = args.iter().map(|a| redis_quote(a)).collect();
            s.push_str(&quoted.join(" "));
            s.push('\n');
        };
        match kind {
            OpKind::Echo => Ok((s, Parse::Zero)),
            OpKind::Insert => {
                s.push_str("MULTI\n");
                for op in ops {
                    let Op::Insert { table, row } = op else { unreachable!("checked kind") };
                    let def = self.table(*table)?;
                    let pk = row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("the key column must be an integer"))?;
                    let prefix = format!("{}{}", self.launch.key_prefix, def.name);
                    let key = format!("{prefix}{pk}");
                    let pk_text = pk.to_string();
                    line(&mut s, &["DEL", &key]);
                    let mut hset = vec!["HSET".to_string(), key.clone()];
                    for (c, v) in row.iter().enumerate() {
                        if let Some(text) = crate::adapter::kv::redis::value_text(v) {
                            hset.push(def.columns[c].name.clone());
                            hset.push(text);
                        }
                    }
                    line(&mut s, &hset.iter().map(String::as_str).collect::<Vec<_>>());
                    line(&mut s, &["ZADD", &format!("{prefix}:pk"), &pk_text, &pk_text]);
                    for &c in &def.indexed {
                        let set = format!("{prefix}:idx:{}", def.columns[c].name);
                        match row.get(c).and_then(score) {
                            Some(sc) => line(&mut s, &["ZADD", &set, &sc.to_string(), &pk_text]),
                            None => line(&mut s, &["ZREM", &set, &pk_text]),
                        }
                    }
                }
                s.push_str("EXEC\n");
                Ok((s, Parse::Fixed(ops.len() as u64)))
            }
            OpKind::Get | OpKind::MultiGet => {
                for op in ops {
                    let (table, keys): (usize, Vec<i64>) = match op {
                        Op::Get { table, key } => (*table, vec![*key]),
                        Op::MultiGet { table, keys } => (*table, keys.clone()),
                        _ => unreachable!("checked kind"),
                    };
                    let def = self.table(table)?;
                    for k in keys {
                        line(&mut s, &["HGETALL", &format!("{}{}{k}", self.launch.key_prefix, def.name)]);
                    }
                }
                Ok((s, Parse::RedisHashes))
            }
            OpKind::Delete => {
                for op in ops {
                    let Op::Delete { table, key } = op else { unreachable!("checked kind") };
                    let def = self.table(*table)?;
                    let prefix = format!("{}{}", self.launch.key_prefix, def.name);
                    let pk = key.to_string();
                    s.push_str("MULTI\n");
                    line(&mut s, &["DEL", &format!("{prefix}{key}")]);
                    line(&mut s, &["ZREM", &format!("{prefix}:pk"), &pk]);
                    for &c in &def.indexed {
                        line(&mut s, &["ZREM", &format!("{prefix}:idx:{}", def.columns[c].name), &pk]);
                    }
                    s.push_str("EXEC\n");
                }
                Ok((s, Parse::RedisFirstInts))
            }
            other => Err(OpError::new(ErrorClass::Unsupported, format!("{other} is not offered by the command-line client adapter"))),
        }
    }
}

#[async_trait]
impl Connection for CliConn {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        let (script, parse) = self.plan(std::slice::from_ref(op))?;
        self.run(script, parse).await
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let (script, parse) = self.plan(ops)?;
        self.run(script, parse).await
    }
}

impl Drop for CliConn {
    fn drop(&mut self) {
        if let Some(p) = self.proc.as_mut() {
            // Closing stdin ends the client; kill_on_drop covers a stuck one.
            drop(p.stdin.take());
        }
    }
}

pub(super) fn is_error_line(kind: Kind, l: &str) -> bool {
    match kind {
        // Data rows start with the integer primary key, so an ERROR line is the client's.
        Kind::MySql => l.starts_with("ERROR ") || l.starts_with("ERROR:"),
        Kind::Redis => {
            l.starts_with("(error)")
                || l.starts_with("Could not connect")
                || l.starts_with("AUTH failed")
                || l.split_once(") ").is_some_and(|(n, rest)| n.trim().bytes().all(|b| b.is_ascii_digit()) && rest.starts_with("(error)"))
        }
    }
}
