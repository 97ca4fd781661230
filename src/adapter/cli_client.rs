//! Command-line client adapters (`mysql-cli://`, `redis-cli://`): the same statements as the
//! library adapters, sent through the real `mariadb`/`mysql` and `redis-cli` programs as
//! subprocesses, so the cost of a command-line client (the insert-find study's setup) can be
//! measured against a library driver.
//!
//! Owns only the subprocess `Connection`: by default one long-lived client process per
//! `connect()`, fed statements over stdin and read over stdout (stderr merged in); with
//! `?spawn=per-op` a fresh client per request, as shell scripts do. Each request ends with a
//! unique marker (`SELECT '<marker>';` / `ECHO <marker>`) and is read up to the marker line.
//! `prepare`, `load`, `count_rows` and `cleanup` are delegated to the library adapter for the
//! equivalent `mysql://` / `redis://` URL, so the schema, key layout and ownership marker
//! (DESIGN §5) are exactly the library adapters'. Must not put the password on a command
//! line (it goes in the child's `MYSQL_PWD` / `REDISCLI_AUTH`) nor show it.
//!
//! What each request is: MariaDB gets the library adapter's statements as text with literal
//! values (a batch of inserts is one multi-row `INSERT` + `SELECT ROW_COUNT()`, a multi-get
//! one `IN (...)`), run with `--batch --force` so an error line does not end the client.
//! redis-cli (interactive mode on a pipe, `--no-raw` so every reply element is one quoted
//! line) sends each input line as its own request and waits for the reply. On a pairs table
//! (the library adapter's plain-string mapping) a batch of inserts is one `MSET` line and a
//! multi-get one `MGET` line, as the insert-find paper typed them; on hash rows a batch is
//! one `MULTI`…`EXEC` and a multi-get one `HGETALL` line per key, so N round trips through
//! the client: that is the client's behaviour, not emulated here. The requests are listed
//! in the target's settings (`request.*`). A dead client is an `ErrorClass::Connection`
//! error; the next request starts a new one.

use super::mysql::literal;
use super::redis::strings as redis_strings;
use super::sql::dialect::SqlTable;
use super::sql::dialects::MYSQL;
use super::sql::statement::Statement;
use super::{Capabilities, Connection, Execution, OpenContext, Target, TargetInfo, TargetUrl};
use crate::base::op::{ErrorClass, Op, OpError, OpKind, Outcome};
use crate::base::table::{Row, RowSource, TableDef, Value};
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

/// How long `connect()` waits for the client's first answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    MySql,
    Redis,
}

/// What `CliTarget::new` picks per system: the library adapter, the client program, its
/// arguments, its environment (the password) and the system name.
type Setup = (Arc<dyn Target>, String, Vec<String>, Vec<(String, String)>, &'static str);

/// How to start one client process. The password lives only in `env`.
struct Launch {
    kind: Kind,
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    per_op: bool,
    /// The target's name, for messages.
    name: String,
    /// The library adapters' namespace: MariaDB's database (`dbsweep`) and Redis's key
    /// prefix (`dbsweep:`).
    database: String,
    key_prefix: String,
}

pub struct CliTarget {
    inner: Arc<dyn Target>,
    base: TargetInfo,
    described: OnceLock<TargetInfo>,
    launch: Arc<Launch>,
    tables: RwLock<Arc<Vec<Arc<TableDef>>>>,
}

fn find_program(candidates: &[&str]) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    for c in candidates {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(c);
            if p.is_file() {
                return Some(p.to_string_lossy().into_owned());
            }
        }
    }
    None
}

/// The library adapter's URL for the same server (same user, password, DB and params).
fn inner_url(url: &TargetUrl, scheme: &str) -> Result<TargetUrl> {
    let mut u = url::Url::parse(&format!("{scheme}://localhost/")).map_err(|e| Error::usage(e.to_string()))?;
    let bad = |_| Error::usage(format!("bad URL {}", url.redacted()));
    u.set_host(Some(url.host().unwrap_or("127.0.0.1"))).map_err(|e| Error::usage(format!("bad host in {}: {e}", url.redacted())))?;
    u.set_port(url.port()).map_err(bad)?;
    if let Some(user) = url.username() {
        u.set_username(&user).map_err(bad)?;
    }
    if let Some(pw) = url.password() {
        u.set_password(Some(&pw)).map_err(bad)?;
    }
    u.set_path(&format!("/{}", url.database().unwrap_or_default()));
    let params: Vec<(String, String)> = url.params().into_iter().filter(|(k, _)| k != "spawn").collect();
    if !params.is_empty() {
        u.query_pairs_mut().extend_pairs(params);
    }
    TargetUrl::parse(u.as_str())
}

impl CliTarget {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let kind = match url.scheme() {
            "mysql-cli" | "mariadb-cli" => Kind::MySql,
            "redis-cli" => Kind::Redis,
            other => return Err(Error::usage(format!("target '{name}': not a command-line client scheme: {other}"))),
        };
        let per_op = match url.param("spawn").as_deref() {
            None | Some("per-connection") => false,
            Some("per-op") => true,
            Some(other) => return Err(Error::usage(format!("target '{name}': spawn must be 'per-connection' or 'per-op', got '{other}'"))),
        };
        let host = url.host().unwrap_or("127.0.0.1").to_string();
        let (inner, program, args, env, system): Setup = match kind {
            Kind::MySql => {
                let inner = super::mysql::MySql::new(name, &inner_url(url, "mysql")?, ctx)?;
                let program = find_program(&["mariadb", "mysql"]).ok_or_else(|| {
                    Error::Missing(format!("target '{name}': no `mariadb` or `mysql` client on PATH; install mariadb-client"))
                })?;
                let port = url.port().unwrap_or(3306);
                let user = url.username().unwrap_or_else(|| "root".into());
                let args = [
                    "--no-defaults",
                    "--batch",
                    "--skip-column-names",
                    "--unbuffered",
                    "--force",
                    "--protocol=TCP",
                    "--default-character-set=utf8mb4",
                ]
                .iter()
                .map(|s| s.to_string())
                .chain(["-h".into(), host.clone(), "-P".into(), port.to_string(), "-u".into(), user])
                .collect();
                let mut env = Vec::new();
                if let Some(pw) = super::mysql::password(url) {
                    env.push(("MYSQL_PWD".to_string(), pw));
                }
                (Arc::new(inner), program, args, env, "mariadb-cli")
            }
            Kind::Redis => {
                let inner = super::redis::Redis::new(name, &inner_url(url, "redis")?, ctx)?;
                let program = find_program(&["redis-cli"])
                    .ok_or_else(|| Error::Missing(format!("target '{name}': no `redis-cli` on PATH; install redis-tools")))?;
                let port = url.port().unwrap_or(6379);
                let db = url.database().unwrap_or_else(|| "0".into());
                let mut args: Vec<String> =
                    vec!["-h".into(), host.clone(), "-p".into(), port.to_string(), "-n".into(), db, "--no-raw".into()];
                if let Some(user) = url.username() {
                    args.extend(["--user".into(), user]);
                }
                let mut env = Vec::new();
                if let Some(pw) = super::redis::password(url) {
                    env.push(("REDISCLI_AUTH".to_string(), pw));
                }
                (Arc::new(inner), program, args, env, "redis-cli")
            }
        };
        let client_version = std::process::Command::new(&program)
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let mut settings = BTreeMap::new();
        settings.insert(
            "spawn".to_string(),
            if per_op {
                "per-op (a new client process per request)"
            } else {
                "per-connection (one long-lived client process, statements over stdin)"
            }
            .to_string(),
        );
        settings.insert("client".to_string(), format!("{program} ({client_version})"));
        let ops = vec![OpKind::Echo, OpKind::Insert, OpKind::Get, OpKind::MultiGet, OpKind::Delete];
        let base = TargetInfo {
            name: name.to_string(),
            system: system.into(),
            url: url.redacted(),
            execution: Execution::Async,
            capabilities: Capabilities { ops, queries: vec![], native_batch: true, secondary_indexes: true },
            version: "unknown (not prepared yet)".into(),
            settings,
        };
        let launch = Arc::new(Launch {
            kind,
            program,
            args,
            env,
            per_op,
            name: name.to_string(),
            database: ctx.namespace.name().to_string(),
            key_prefix: ctx.namespace.key_prefix(),
        });
        Ok(CliTarget { inner, base, described: OnceLock::new(), launch, tables: RwLock::new(Arc::new(Vec::new())) })
    }
}

#[async_trait]
impl Target for CliTarget {
    fn info(&self) -> &TargetInfo {
        self.described.get().unwrap_or(&self.base)
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        self.inner.prepare(tables).await?;
        *self.tables.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tables.to_vec());
        if self.described.get().is_none() {
            let lib = self.inner.info();
            let mut info = self.base.clone();
            info.version = lib.version.clone();
            for (k, v) in requests(self.launch.kind, tables) {
                info.settings.insert(k.to_string(), v);
            }
            for (k, v) in &lib.settings {
                info.settings.entry(k.clone()).or_insert_with(|| v.clone());
            }
            let _ = self.described.set(info);
        }
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        self.inner.load(table, rows).await
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        static NONCE: AtomicU64 = AtomicU64::new(0);
        let n = NONCE.fetch_add(1, Ordering::Relaxed);
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let mut conn = CliConn {
            launch: self.launch.clone(),
            tables: self.tables.read().unwrap_or_else(|e| e.into_inner()).clone(),
            proc: None,
            nonce: format!("dbsweepend{}x{t:x}x{n}", std::process::id()),
            seq: 0,
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, conn.execute(&Op::Echo)).await {
            Ok(Ok(_)) => Ok(Box::new(conn)),
            Ok(Err(e)) => Err(Error::unreachable(
                &self.launch.name,
                format!(
                    "{} could not reach the server ({}); start the server or fix host/port/credentials in the URL",
                    self.launch.program, e.message
                ),
            )),
            Err(_) => Err(Error::unreachable(&self.launch.name, format!("{} did not answer within 10 s", self.launch.program))),
        }
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        self.inner.count_rows(table).await
    }

    async fn cleanup(&self) -> Result<()> {
        self.inner.cleanup().await
    }

    /// The library adapter's lease: the same namespace on the same server.
    fn lease(self: Arc<Self>) -> Option<Arc<dyn super::lease::LeaseStore>> {
        self.inner.clone().lease()
    }
}

/// One running client process; stdout and stderr share one pipe so errors stay in order.
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<tokio::net::unix::pipe::Receiver>,
}

impl Launch {
    fn spawn(&self) -> Result<Proc, OpError> {
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

/// What an insert, a batch of inserts, a multi-get and a delete send through the client
/// for these tables (the target's `request.*` settings).
fn requests(kind: Kind, tables: &[Arc<TableDef>]) -> Vec<(&'static str, String)> {
    match kind {
        Kind::MySql => vec![
            ("request.insert", "INSERT INTO <table> (<columns>) VALUES (<literals>); SELECT ROW_COUNT();".into()),
            ("request.insert_batch", "one multi-row INSERT with literal values; SELECT ROW_COUNT();".into()),
            ("request.multi_get", "one SELECT * FROM <table> WHERE <key> IN (<literal keys>)".into()),
            ("request.delete", "DELETE … WHERE <key> = <literal>; SELECT ROW_COUNT(); (a batch: in one transaction)".into()),
        ],
        Kind::Redis => {
            let pairs = tables.iter().any(|t| redis_strings::applies_to(t));
            let hashes = tables.iter().any(|t| !redis_strings::applies_to(t));
            let mut out: BTreeMap<&'static str, Vec<&str>> = BTreeMap::new();
            if pairs {
                out.entry("request.insert").or_default().push("pairs: a SET line");
                out.entry("request.insert_batch").or_default().push("pairs: one MSET line");
                out.entry("request.multi_get").or_default().push("pairs: one MGET line");
                out.entry("request.delete").or_default().push("pairs: a DEL line (a batch: one DEL line of every key)");
            }
            if hashes {
                out.entry("request.insert").or_default().push("hash rows: MULTI, DEL, HSET, ZADD lines, EXEC");
                out.entry("request.insert_batch").or_default().push("hash rows: one MULTI … EXEC of every row's lines");
                out.entry("request.multi_get").or_default().push("hash rows: one HGETALL line per key (a round trip each)");
                out.entry("request.delete").or_default().push("hash rows: MULTI, DEL, ZREM lines, EXEC");
            }
            out.into_iter().map(|(k, v)| (k, v.join("; "))).collect()
        }
    }
}

/// How a request's output lines become a row count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
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
    launch: Arc<Launch>,
    tables: Arc<Vec<Arc<TableDef>>>,
    proc: Option<Proc>,
    nonce: String,
    seq: u64,
}

impl CliConn {
    fn table(&self, id: usize) -> Result<&TableDef, OpError> {
        self.tables.get(id).map(|t| t.as_ref()).ok_or_else(|| OpError::client(format!("no table #{id} (was prepare called?)")))
    }

    /// Sends `script` followed by an end marker; returns the output lines before the marker.
    async fn request(&mut self, script: &str) -> Result<Vec<String>, OpError> {
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
    async fn exchange(&mut self, text: &str, expect: &str) -> Result<Vec<String>, OpError> {
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

    async fn run(&mut self, script: String, parse: Parse) -> Result<Outcome, OpError> {
        let lines = self.request(&script).await?;
        let kind = self.launch.kind;
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
        Ok(Outcome::rows(rows))
    }

    /// The script and parse rule for a batch of ops of one kind (or a single op).
    fn plan(&self, ops: &[Op]) -> Result<(String, Parse), OpError> {
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

    /// The library adapter's statements (the `mariadb` dialect) with literal values.
    fn plan_sql(&self, ops: &[Op], kind: OpKind) -> Result<(String, Parse), OpError> {
        let mut s = String::new();
        let statement = |table: usize, statement: Statement, values: &[&Value]| -> Result<String, OpError> {
            let text = SqlTable::in_schema(&MYSQL, Arc::new(self.table(table)?.clone()), &self.launch.database).text(&MYSQL, statement);
            Ok(format!("{};\n", with_literals(&text, values)?))
        };
        let parse = match kind {
            OpKind::Echo => Parse::Zero,
            OpKind::Insert => {
                let mut groups: BTreeMap<usize, Vec<&Row>> = BTreeMap::new();
                for op in ops {
                    if let Op::Insert { table, row } = op {
                        groups.entry(*table).or_default().push(row);
                    }
                }
                for (table, rows) in groups {
                    let def = self.table(table)?;
                    if let Some(row) = rows.iter().find(|r| r.len() != def.columns.len()) {
                        let (name, got, width) = (&def.name, row.len(), def.columns.len());
                        return Err(OpError::client(format!("{name}: row has {got} values, table has {width} columns")));
                    }
                    let values: Vec<&Value> = rows.iter().flat_map(|row| row.iter()).collect();
                    s.push_str(&statement(table, Statement::Insert { table, rows: rows.len() }, &values)?);
                    s.push_str("SELECT ROW_COUNT();\n");
                }
                Parse::SumInts
            }
            OpKind::Get | OpKind::MultiGet => {
                for op in ops {
                    let (table, keys): (usize, Vec<Value>) = match op {
                        Op::Get { table, key } => (*table, vec![Value::Int(*key)]),
                        Op::MultiGet { table, keys } => (*table, keys.iter().map(|k| Value::Int(*k)).collect()),
                        _ => unreachable!("checked kind"),
                    };
                    let keys: Vec<&Value> = keys.iter().collect();
                    match keys.len() {
                        0 => {}
                        1 => s.push_str(&statement(table, Statement::Get { table }, &keys)?),
                        n => s.push_str(&statement(table, Statement::GetMany { table, keys: n }, &keys)?),
                    }
                }
                Parse::Lines
            }
            OpKind::Delete => {
                let multi = ops.len() > 1;
                if multi {
                    s.push_str("START TRANSACTION;\n");
                }
                for op in ops {
                    if let Op::Delete { table, key } = op {
                        s.push_str(&statement(*table, Statement::Delete { table: *table }, &[&Value::Int(*key)])?);
                        s.push_str("SELECT ROW_COUNT();\n");
                    }
                }
                if multi {
                    s.push_str("COMMIT;\n");
                }
                Parse::SumInts
            }
            other => {
                return Err(OpError::new(ErrorClass::Unsupported, format!("{other} is not offered by the command-line client adapter")));
            }
        };
        Ok((s, parse))
    }

    /// The lines for ops on pairs tables (the plain-string mapping): one SET/MSET, GET/MGET
    /// or DEL line for the whole batch.
    fn plan_redis_pairs(&self, ops: &[Op], kind: OpKind) -> Result<(String, Parse), OpError> {
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

    fn plan_redis(&self, ops: &[Op], kind: OpKind) -> Result<(String, Parse), OpError> {
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
                        if let Some(text) = super::redis::value_text(v) {
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

fn is_error_line(kind: Kind, l: &str) -> bool {
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

/// The value of one reply line: `"v"`, `(nil)` or `(integer) 3` at top level, or the same
/// after an array index (`  12) "v"`); `None` for other lines — `OK`, and the `(0.51s)`
/// redis-cli prints after a command that took longer than half a second.
fn redis_reply_value(line: &str) -> Option<&str> {
    let l = line.trim_start();
    let rest = match l.split_once(") ") {
        Some((n, rest)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => l,
    };
    let value = rest.starts_with('"') || rest == "(nil)" || rest.starts_with("(integer) ") || rest.starts_with("(error)");
    value.then_some(rest)
}

/// A statement with each `?` placeholder (outside quotes) replaced by the next value as
/// a literal, in order.
fn with_literals(text: &str, values: &[&Value]) -> Result<String, OpError> {
    let mut out = String::with_capacity(text.len() + values.len() * 8);
    let (mut values, mut quote) = (values.iter(), None);
    for c in text.chars() {
        match (c, quote) {
            ('`' | '\'', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            ('?', None) => {
                let value = values.next().ok_or_else(|| OpError::client("more placeholders than values"))?;
                literal::push_literal(&mut out, value)?;
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    if values.next().is_some() {
        return Err(OpError::client("more values than placeholders"));
    }
    Ok(out)
}

/// One argument in redis-cli's input syntax: double-quoted, `\"` `\\`, other bytes `\xHH`.
fn redis_quote(arg: &str) -> String {
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('"');
    for &b in arg.as_bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

/// The sorted-set score of an indexed value (as the library adapter computes it).
fn score(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Decimal(d) => Some(d.0 as f64),
        Value::Date(d) => Some(f64::from(d.0)),
        Value::Null | Value::Text(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_outside_quotes_become_literals() {
        let text = "SELECT * FROM `d`.`t?` WHERE `k` IN (?, ?)";
        assert_eq!(
            with_literals(text, &[&Value::Int(1), &Value::Text("a'b".into())]).unwrap(),
            "SELECT * FROM `d`.`t?` WHERE `k` IN (1, X'612762')"
        );
        assert!(with_literals(text, &[&Value::Int(1)]).is_err());
        assert!(with_literals(text, &[&Value::Int(1), &Value::Int(2), &Value::Int(3)]).is_err());
    }

    #[test]
    fn redis_args_are_quoted_byte_exactly() {
        assert_eq!(redis_quote("a b\"c\\"), "\"a b\\\"c\\\\\"");
        assert_eq!(redis_quote("x\ny\u{e9}"), "\"x\\x0ay\\xc3\\xa9\"");
    }

    #[test]
    fn redis_reply_values_are_read_at_top_level_and_in_arrays() {
        assert_eq!(redis_reply_value("\"42\""), Some("\"42\""));
        assert_eq!(redis_reply_value("(nil)"), Some("(nil)"));
        assert_eq!(redis_reply_value("   12) (nil)"), Some("(nil)"));
        assert_eq!(redis_reply_value("1) \"(nil)\""), Some("\"(nil)\""));
        assert_eq!(redis_reply_value("OK"), None);
        assert_eq!(redis_reply_value("(0.51s)"), None, "the client's timing line");
    }

    #[test]
    fn error_lines_are_recognised() {
        assert!(is_error_line(Kind::Redis, "(error) ERR wrong"));
        assert!(is_error_line(Kind::Redis, "2) (error) WRONGTYPE"));
        assert!(!is_error_line(Kind::Redis, "2) \"(error) in a value\""));
        assert!(is_error_line(Kind::MySql, "ERROR 1062 (23000) at line 1: Duplicate entry"));
        assert!(!is_error_line(Kind::MySql, "17\tERROR x"));
    }

    #[test]
    fn urls_pick_the_library_equivalent_and_keep_the_password_off_argv() {
        let url = TargetUrl::parse("mysql-cli://root:s3cr%40t@127.0.0.1:3307/?spawn=per-op").unwrap();
        let inner = inner_url(&url, "mysql").unwrap();
        assert_eq!(inner.scheme(), "mysql");
        assert_eq!(inner.password().as_deref(), Some("s3cr@t"));
        assert_eq!(inner.param("spawn"), None);
        if let Ok(t) = CliTarget::new("x", &url, &OpenContext::new("/tmp")) {
            assert!(t.launch.per_op);
            assert!(!t.launch.args.iter().any(|a| a.contains("s3cr")));
            assert!(!t.info().url.contains("s3cr"));
        }
    }
}
