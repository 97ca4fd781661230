//! Memcached adapter: one item per row, spoken in memcached's text protocol over a tokio
//! `TcpStream` (one socket per client).
//!
//! Why not a client crate: the best-kept async one (async-memcached) covers get, multi-get,
//! add, set, delete and version, but its text-protocol API has no `gets`/`cas` and deletes
//! can only be pipelined as `noreply`, which cannot say how many rows a batch deleted. The
//! subset dbsweep needs (get, gets, add, set, cas, delete, version, stats, lru_crawler
//! metadump) is a few lines each, and speaking it ourselves lets a batch be one write.
//!
//! Mapping: key `dbsweep:<table><pk>` (e.g. `dbsweep:kv17`); the value holds the row's
//! non-key columns in order, each as `<byte length>:<text>,` (netstring-like, so any text
//! is safe), or `-,` for NULL; text as in the Redis adapter (Decimal `12.34`, Date ISO).
//! Example: `2:42,5:12.25,3:abc,` is (grp 42, val 12.25, payload "abc").
//!
//! Ops: Insert = `add` (an existing key is a server error, like a duplicate key in SQL),
//! Get, MultiGet (one `get k1 k2 ...`), Delete, Update (`gets` + `cas`, 0 rows when missing),
//! ReadModifyWrite (`get` then `set`), Echo (`version`). No Scan, Range or Query: memcached
//! cannot enumerate or order keys cheaply. Batches are pipelined in one write with no
//! atomicity (memcached has no transactions); gets are one multi-get.
//!
//! Safety: only keys with the namespace's prefix (`dbsweep:`, or `dbsweep_NAME:` with
//! `--namespace NAME`), and only once the marker item `<prefix>owner` (= "dbsweep") says
//! they are ours. The run's lease record is the item `<prefix>lease` (taken with `add`,
//! renewed with `gets`/`cas`, removed by a `cas` that expires it; see [`LeaseStore`]);
//! like any item it could be evicted from a server short of memory, which would let a
//! second run in: give memcached room for the data. `count_rows`, `prepare` and `cleanup`
//! enumerate keys with `lru_crawler metadump hash` (else `all`, memcached 1.4.31+; keys come
//! URL-encoded), which walks the live server: under concurrent writes it
//! can miss or repeat an item, so counts are exact only on a quiet server (repeats are
//! de-duplicated). `load` fails if the server evicted items meanwhile (too little `-m`).
//! The server's version and settings are read by `prepare`. This module must never send
//! `flush_all`.

use super::lease::LeaseStore;
use super::{Capabilities, Connection, Execution, OpenContext, RowSource, Target, TargetInfo, TargetUrl};
use crate::adapter::redis::value_text;
use crate::base::op::{ErrorClass, Op, OpError, OpKind, Outcome};
use crate::base::table::{ColumnType, Row, TableDef, TableId, Value};
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

/// The marker item (after the namespace's prefix) and its value.
const MARKER_KEY: &str = "owner";
const MARKER_VALUE: &str = "dbsweep";
/// The lease record's item, after the prefix.
const LEASE_KEY: &str = "lease";
/// Rows per write when bulk loading.
const LOAD_CHUNK: usize = 1000;
/// How often `cas` is retried when another client changed the item in between.
const CAS_RETRIES: usize = 16;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Memcached {
    /// Filled in by `prepare` with the server's version and settings.
    probed: OnceLock<TargetInfo>,
    base: TargetInfo,
    /// `host:port`, for connecting and for messages.
    address: String,
    /// The namespace's key prefix (`dbsweep:`), the marker item and the lease item.
    prefix: String,
    marker_key: String,
    lease_key: String,
    tables: RwLock<Arc<Vec<Arc<TableDef>>>>,
}

impl Memcached {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        if url.password().is_some() || url.username().is_some() {
            return Err(Error::usage(format!(
                "target '{name}': memcached's text protocol has no login here; drop the user/password from the URL"
            )));
        }
        let address = format!("{}:{}", url.host().unwrap_or("127.0.0.1"), url.port().unwrap_or(11211));
        let mut settings = BTreeMap::new();
        settings.insert("batch".into(), "pipelined, no atomicity".into());
        settings.insert("request.insert".into(), "add <key> (refused if present)".into());
        settings.insert("request.insert_batch".into(), "one pipeline of add commands".into());
        settings.insert("request.multi_get".into(), "one get <key> <key> …".into());
        settings.insert("layout".into(), "one item per row; value = non-key columns, length-prefixed text".into());
        settings.insert("count_rows".into(), "lru_crawler metadump (exact only on a quiet server)".into());
        let base = TargetInfo {
            name: name.to_string(),
            system: "memcached".into(),
            url: url.redacted(),
            execution: Execution::Async,
            capabilities: Capabilities {
                ops: vec![
                    OpKind::Echo,
                    OpKind::Insert,
                    OpKind::Get,
                    OpKind::MultiGet,
                    OpKind::Delete,
                    OpKind::Update,
                    OpKind::ReadModifyWrite,
                ],
                queries: vec![],
                native_batch: true,
                secondary_indexes: false,
            },
            version: "unknown (not yet connected)".into(),
            settings,
        };
        let prefix = ctx.namespace.key_prefix();
        Ok(Memcached {
            probed: OnceLock::new(),
            base,
            address,
            marker_key: format!("{prefix}{MARKER_KEY}"),
            lease_key: format!("{prefix}{LEASE_KEY}"),
            prefix,
            tables: RwLock::new(Arc::new(Vec::new())),
        })
    }

    fn name(&self) -> &str {
        &self.base.name
    }

    async fn admin(&self) -> Result<Wire> {
        Wire::connect(&self.address).await.map_err(|e| {
            Error::unreachable(
                self.name(),
                format!("cannot connect to memcached at {}: {e}; start the server or fix the URL", self.address),
            )
        })
    }

    fn setup_error(&self, what: &str, e: OpError) -> Error {
        match e.class {
            ErrorClass::Connection | ErrorClass::Timeout => {
                Error::unreachable(self.name(), format!("lost memcached at {} during {what}: {}", self.address, e.message))
            }
            _ => Error::runtime(format!("target '{}': memcached {what} failed: {}", self.name(), e.message)),
        }
    }

    async fn probe(&self, wire: &mut Wire) {
        if self.probed.get().is_some() {
            return;
        }
        let mut info = self.base.clone();
        if let Ok(v) = wire.version().await {
            info.version = v;
        }
        if let Ok(stats) = wire.stats("settings").await {
            for key in ["maxbytes", "evictions", "cas_enabled", "item_size_max", "num_threads", "lru_segmented"] {
                if let Some(v) = stats.get(key) {
                    info.settings.insert(key.to_string(), v.clone());
                }
            }
        }
        let _ = self.probed.set(info);
    }

    /// All keys with our prefix (the marker too, not the lease record), from a fresh
    /// connection's metadump.
    async fn our_keys(&self) -> Result<Vec<String>> {
        let mut wire = self.admin().await?;
        let keys = wire.metadump().await.map_err(|e| self.setup_error("lru_crawler metadump", e))?;
        Ok(keys.into_iter().filter(|k| k.starts_with(&self.prefix) && *k != self.lease_key).collect())
    }

    /// Whether the prefixed keys are ours; `Err(NotOwned)` when some exist without our marker.
    async fn check_owned(&self, wire: &mut Wire, keys: &[String]) -> Result<bool> {
        let (marker_key, prefix) = (&self.marker_key, &self.prefix);
        let marker = wire.get_multi(std::slice::from_ref(marker_key)).await.map_err(|e| self.setup_error("get", e))?;
        match marker.first().map(|(_, v, _)| v.as_slice()) {
            Some(v) if v == MARKER_VALUE.as_bytes() => Ok(true),
            Some(_) => Err(Error::not_owned(
                self.name(),
                format!(
                    "item '{marker_key}' in memcached at {} was not written by dbsweep; delete the '{prefix}*' items yourself or use another server",
                    self.address
                ),
            )),
            None => match keys.first() {
                Some(key) => Err(Error::not_owned(
                    self.name(),
                    format!(
                        "item '{key}' in memcached at {} has dbsweep's prefix but no '{marker_key}' marker, so dbsweep did not create it; delete the '{prefix}*' items yourself or use another server",
                        self.address
                    ),
                )),
                None => Ok(false),
            },
        }
    }

    fn table_prefix(&self, table: &TableDef) -> Result<String> {
        if self.tables.read().unwrap().iter().any(|t| t.name == table.name) {
            Ok(format!("{}{}", self.prefix, table.name))
        } else {
            Err(Error::runtime(format!("target '{}': table {} was not prepared", self.name(), table.name)))
        }
    }
}

/// The item value of a row: its non-key columns, each `<len>:<text>,` or `-,` for NULL.
fn encode_row(row: &Row) -> Vec<u8> {
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
fn decode_fields(mut data: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
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
fn replace_field(data: &[u8], column: usize, value: &Value) -> Result<Vec<u8>, OpError> {
    let mut fields = decode_fields(data).ok_or_else(|| OpError::server("memcached: stored row is malformed"))?;
    let slot = fields.get_mut(column - 1).ok_or_else(|| OpError::server("memcached: stored row has too few columns"))?;
    *slot = value_text(value).map(String::into_bytes);
    let mut out = Vec::with_capacity(data.len() + 8);
    for f in &fields {
        push_field(&mut out, f.as_deref().map(|b| std::str::from_utf8(b).unwrap_or("")));
    }
    Ok(out)
}

/// One text-protocol socket. Requests are written whole and replies read in order.
struct Wire {
    io: BufStream<TcpStream>,
}

fn io_error(e: std::io::Error) -> OpError {
    OpError::connection(format!("memcached: {e}"))
}

/// The reply to a storage command.
#[derive(Debug, PartialEq, Eq)]
enum StoreReply {
    Stored,
    NotStored,
    Exists,
    NotFound,
}

impl Wire {
    async fn connect(address: &str) -> std::io::Result<Wire> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
        stream.set_nodelay(true)?;
        Ok(Wire { io: BufStream::new(stream) })
    }

    async fn send(&mut self, request: &[u8]) -> Result<(), OpError> {
        self.io.write_all(request).await.map_err(io_error)?;
        self.io.flush().await.map_err(io_error)
    }

    /// One reply line without its `\r\n`; server error lines become `Server` errors.
    async fn line(&mut self) -> Result<String, OpError> {
        let mut buf = Vec::with_capacity(64);
        let n = self.io.read_until(b'\n', &mut buf).await.map_err(io_error)?;
        if n == 0 {
            return Err(OpError::connection("memcached: the server closed the connection"));
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        let line = String::from_utf8_lossy(&buf).into_owned();
        if line == "ERROR" || line.starts_with("CLIENT_ERROR") || line.starts_with("SERVER_ERROR") {
            return Err(OpError::server(format!("memcached: {line}")));
        }
        Ok(line)
    }

    async fn stored(&mut self) -> Result<StoreReply, OpError> {
        let line = self.line().await?;
        match line.as_str() {
            "STORED" => Ok(StoreReply::Stored),
            "NOT_STORED" => Ok(StoreReply::NotStored),
            "EXISTS" => Ok(StoreReply::Exists),
            "NOT_FOUND" => Ok(StoreReply::NotFound),
            other => Err(OpError::server(format!("memcached: unexpected reply '{other}'"))),
        }
    }

    /// Reads `VALUE` blocks up to `END`: (key, data, cas).
    async fn values(&mut self) -> Result<Vec<(String, Vec<u8>, Option<u64>)>, OpError> {
        let mut out = Vec::new();
        loop {
            let line = self.line().await?;
            if line == "END" {
                return Ok(out);
            }
            let mut parts = line.split(' ');
            let bad = || OpError::connection(format!("memcached: protocol out of step at '{line}'"));
            if parts.next() != Some("VALUE") {
                return Err(bad());
            }
            let key = parts.next().ok_or_else(bad)?.to_string();
            let _flags = parts.next().ok_or_else(bad)?;
            let len: usize = parts.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
            let cas = parts.next().and_then(|n| n.parse().ok());
            let mut data = vec![0; len + 2];
            self.io.read_exact(&mut data).await.map_err(io_error)?;
            data.truncate(len);
            out.push((key, data, cas));
        }
    }

    async fn get_multi(&mut self, keys: &[String]) -> Result<Vec<(String, Vec<u8>, Option<u64>)>, OpError> {
        let mut req = Vec::with_capacity(8 + keys.len() * 16);
        req.extend_from_slice(b"get");
        for k in keys {
            req.push(b' ');
            req.extend_from_slice(k.as_bytes());
        }
        req.extend_from_slice(b"\r\n");
        self.send(&req).await?;
        self.values().await
    }

    async fn version(&mut self) -> Result<String, OpError> {
        self.send(b"version\r\n").await?;
        let line = self.line().await?;
        line.strip_prefix("VERSION ").map(str::to_string).ok_or_else(|| OpError::server(format!("memcached: unexpected reply '{line}'")))
    }

    async fn stats(&mut self, group: &str) -> Result<BTreeMap<String, String>, OpError> {
        let request = if group.is_empty() { "stats\r\n".to_string() } else { format!("stats {group}\r\n") };
        self.send(request.as_bytes()).await?;
        let mut out = BTreeMap::new();
        loop {
            let line = self.line().await?;
            if line == "END" {
                return Ok(out);
            }
            let mut parts = line.splitn(3, ' ');
            if let (Some("STAT"), Some(k), Some(v)) = (parts.next(), parts.next(), parts.next()) {
                out.insert(k.to_string(), v.to_string());
            }
        }
    }

    /// Every key the LRU crawler finds, URL-decoded and de-duplicated. The crawler runs one
    /// request at a time server-wide, so a busy crawler is waited for.
    ///
    /// `metadump hash` walks the hash table, so it sees every item even while the LRU
    /// maintainer moves items between LRU segments (`metadump all` walks the LRUs and was
    /// seen to skip a just-read item); older servers without `hash` fall back to `all`.
    async fn metadump(&mut self) -> Result<Vec<String>, OpError> {
        match self.metadump_of(b"lru_crawler metadump hash\r\n").await {
            Err(e) if e.message.contains("ERROR") => self.metadump_of(b"lru_crawler metadump all\r\n").await,
            other => other,
        }
    }

    async fn metadump_of(&mut self, request: &[u8]) -> Result<Vec<String>, OpError> {
        for _ in 0..200 {
            self.send(request).await?;
            let mut keys = HashSet::new();
            let mut busy = false;
            loop {
                let line = match self.line().await {
                    Ok(l) => l,
                    Err(e) if e.message.contains("BUSY") => {
                        busy = true;
                        break;
                    }
                    Err(e) => return Err(e),
                };
                if line == "END" {
                    break;
                }
                if line.starts_with("BUSY") {
                    busy = true;
                    break;
                }
                if let Some(encoded) = line.strip_prefix("key=").and_then(|r| r.split(' ').next()) {
                    keys.insert(percent_decode(encoded));
                }
            }
            if !busy {
                return Ok(keys.into_iter().collect());
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        Err(OpError::server("memcached: the LRU crawler stayed busy; try again"))
    }
}

fn percent_decode(s: &str) -> String {
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

/// Appends a storage command (`add`, `set`, `cas ... <unique>`).
fn push_store(req: &mut Vec<u8>, verb: &str, key: &str, data: &[u8], cas: Option<u64>) {
    req.extend_from_slice(verb.as_bytes());
    req.push(b' ');
    req.extend_from_slice(key.as_bytes());
    match cas {
        Some(c) => req.extend_from_slice(format!(" 0 0 {} {c}\r\n", data.len()).as_bytes()),
        None => req.extend_from_slice(format!(" 0 0 {}\r\n", data.len()).as_bytes()),
    }
    req.extend_from_slice(data);
    req.extend_from_slice(b"\r\n");
}

pub struct MemcachedConnection {
    address: String,
    wire: Option<Wire>,
    /// Key prefix per `TableId`: `dbsweep:<table>`.
    prefixes: Arc<Vec<String>>,
    columns: Arc<Vec<usize>>,
}

impl MemcachedConnection {
    fn key(&self, table: TableId, pk: i64) -> Result<String, OpError> {
        let prefix =
            self.prefixes.get(table).ok_or_else(|| OpError::client(format!("memcached: no table #{table} (was prepare called?)")))?;
        Ok(format!("{prefix}{pk}"))
    }

    fn check_column(&self, table: TableId, column: usize) -> Result<(), OpError> {
        let n = self.columns.get(table).copied().unwrap_or(0);
        if column == 0 || column >= n {
            return Err(OpError::client(format!("memcached: cannot update column {column}")));
        }
        Ok(())
    }

    /// The socket, reconnecting when a cancelled op may have left a reply unread.
    async fn wire(&mut self) -> Result<&mut Wire, OpError> {
        if self.wire.is_none() {
            self.wire = Some(Wire::connect(&self.address).await.map_err(io_error)?);
        }
        Ok(self.wire.as_mut().expect("just set"))
    }

    /// Runs a request on the socket; the socket is dropped unless the request finished
    /// cleanly, so a cancelled or failed request never desynchronises the next one.
    async fn run(&mut self, op: &Op) -> Result<Outcome, OpError> {
        let mut wire = match self.wire.take() {
            Some(w) => w,
            None => {
                self.wire().await?;
                self.wire.take().expect("connected")
            }
        };
        let result = self.apply(&mut wire, op).await;
        if !matches!(&result, Err(e) if e.class == ErrorClass::Connection) {
            self.wire = Some(wire);
        }
        result
    }

    async fn apply(&self, wire: &mut Wire, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::Echo => {
                wire.version().await?;
                Ok(Outcome::rows(0))
            }
            Op::Insert { table, row } => {
                let pk = row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("memcached: key must be an integer"))?;
                let key = self.key(*table, pk)?;
                let mut req = Vec::new();
                push_store(&mut req, "add", &key, &encode_row(row), None);
                wire.send(&req).await?;
                match wire.stored().await? {
                    StoreReply::Stored => Ok(Outcome::rows(1)),
                    _ => Err(OpError::server(format!("memcached: duplicate key {pk} (add refused)"))),
                }
            }
            Op::Get { table, key } => Ok(Outcome::rows(wire.get_multi(&[self.key(*table, *key)?]).await?.len() as u64)),
            Op::MultiGet { table, keys } => {
                let keys = keys.iter().map(|k| self.key(*table, *k)).collect::<Result<Vec<_>, _>>()?;
                Ok(Outcome::rows(wire.get_multi(&keys).await?.len() as u64))
            }
            Op::Delete { table, key } => {
                wire.send(format!("delete {}\r\n", self.key(*table, *key)?).as_bytes()).await?;
                deleted(wire).await.map(Outcome::rows)
            }
            Op::Update { table, key, column, value } => {
                self.check_column(*table, *column)?;
                let key = self.key(*table, *key)?;
                for _ in 0..CAS_RETRIES {
                    wire.send(format!("gets {key}\r\n").as_bytes()).await?;
                    let Some((_, data, Some(cas))) = wire.values().await?.into_iter().next() else {
                        return Ok(Outcome::rows(0));
                    };
                    let mut req = Vec::new();
                    push_store(&mut req, "cas", &key, &replace_field(&data, *column, value)?, Some(cas));
                    wire.send(&req).await?;
                    match wire.stored().await? {
                        StoreReply::Stored => return Ok(Outcome::rows(1)),
                        StoreReply::NotFound => return Ok(Outcome::rows(0)),
                        StoreReply::Exists | StoreReply::NotStored => continue,
                    }
                }
                Err(OpError::server(format!("memcached: cas on {key} lost {CAS_RETRIES} races in a row")))
            }
            Op::ReadModifyWrite { table, key, column, value } => {
                self.check_column(*table, *column)?;
                let key = self.key(*table, *key)?;
                let Some((_, data, _)) = wire.get_multi(std::slice::from_ref(&key)).await?.into_iter().next() else {
                    return Ok(Outcome::rows(0));
                };
                let mut req = Vec::new();
                push_store(&mut req, "set", &key, &replace_field(&data, *column, value)?, None);
                wire.send(&req).await?;
                match wire.stored().await? {
                    StoreReply::Stored => Ok(Outcome::rows(1)),
                    other => Err(OpError::server(format!("memcached: set answered {other:?}"))),
                }
            }
            other => Err(OpError::unsupported(other.kind(), "memcached")),
        }
    }

    async fn apply_batch(&self, wire: &mut Wire, ops: &[Op]) -> Result<Outcome, OpError> {
        let mut req = Vec::new();
        match ops.first() {
            Some(Op::Insert { .. }) => {
                for op in ops {
                    let Op::Insert { table, row } = op else { return Err(OpError::client("memcached: mixed batch")) };
                    let pk = row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("memcached: key must be an integer"))?;
                    push_store(&mut req, "add", &self.key(*table, pk)?, &encode_row(row), None);
                }
                wire.send(&req).await?;
                // Read every reply before failing, so the socket stays in step.
                let mut stored = 0;
                let mut first_error = None;
                for _ in ops {
                    match wire.stored().await {
                        Ok(StoreReply::Stored) => stored += 1,
                        Ok(_) => {}
                        Err(e) if e.class == ErrorClass::Connection => return Err(e),
                        Err(e) => first_error = first_error.or(Some(e)),
                    }
                }
                if let Some(e) = first_error {
                    return Err(e);
                }
                if stored < ops.len() as u64 {
                    return Err(OpError::server(format!(
                        "memcached: {} of {} adds refused (duplicate keys)",
                        ops.len() as u64 - stored,
                        ops.len()
                    )));
                }
                Ok(Outcome::rows(stored))
            }
            Some(Op::Delete { .. }) => {
                for op in ops {
                    let Op::Delete { table, key } = op else { return Err(OpError::client("memcached: mixed batch")) };
                    req.extend_from_slice(format!("delete {}\r\n", self.key(*table, *key)?).as_bytes());
                }
                wire.send(&req).await?;
                let mut rows = 0;
                let mut first_error = None;
                for _ in ops {
                    match deleted(wire).await {
                        Ok(n) => rows += n,
                        Err(e) if e.class == ErrorClass::Connection => return Err(e),
                        Err(e) => first_error = first_error.or(Some(e)),
                    }
                }
                match first_error {
                    Some(e) => Err(e),
                    None => Ok(Outcome::rows(rows)),
                }
            }
            Some(Op::Get { .. }) => {
                let keys = ops
                    .iter()
                    .map(|op| match op {
                        Op::Get { table, key } => self.key(*table, *key),
                        _ => Err(OpError::client("memcached: mixed batch")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Outcome::rows(wire.get_multi(&keys).await?.len() as u64))
            }
            _ => {
                let mut rows = 0;
                for op in ops {
                    rows += self.apply(wire, op).await?.rows;
                }
                Ok(Outcome::rows(rows))
            }
        }
    }
}

async fn deleted(wire: &mut Wire) -> Result<u64, OpError> {
    match wire.line().await?.as_str() {
        "DELETED" => Ok(1),
        "NOT_FOUND" => Ok(0),
        other => Err(OpError::server(format!("memcached: unexpected reply '{other}'"))),
    }
}

#[async_trait]
impl Connection for MemcachedConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        self.run(op).await
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let mut wire = match self.wire.take() {
            Some(w) => w,
            None => {
                self.wire().await?;
                self.wire.take().expect("connected")
            }
        };
        let result = self.apply_batch(&mut wire, ops).await;
        if !matches!(&result, Err(e) if e.class == ErrorClass::Connection) {
            self.wire = Some(wire);
        }
        result
    }
}

#[async_trait]
impl Target for Memcached {
    fn info(&self) -> &TargetInfo {
        self.probed.get().unwrap_or(&self.base)
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        for t in tables {
            if t.columns.first().map(|c| c.ty) != Some(ColumnType::Int) {
                return Err(Error::runtime(format!("memcached: table {}: column 0 must be an Int key", t.name)));
            }
        }
        let mut wire = self.admin().await?;
        self.probe(&mut wire).await;
        let keys = self.our_keys().await?;
        self.check_owned(&mut wire, &keys).await?;
        delete_keys(&mut wire, keys.iter().filter(|k| **k != self.marker_key)).await.map_err(|e| self.setup_error("delete", e))?;
        let mut req = Vec::new();
        push_store(&mut req, "set", &self.marker_key, MARKER_VALUE.as_bytes(), None);
        wire.send(&req).await.map_err(|e| self.setup_error("set", e))?;
        if wire.stored().await.map_err(|e| self.setup_error("set", e))? != StoreReply::Stored {
            return Err(Error::runtime(format!("target '{}': memcached did not store the marker", self.name())));
        }
        *self.tables.write().unwrap() = Arc::new(tables.to_vec());
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let prefix = self.table_prefix(table)?;
        let mut wire = self.admin().await?;
        let evictions_before = evictions(&mut wire).await.map_err(|e| self.setup_error("stats", e))?;
        let mut loaded = 0u64;
        let mut rows = rows.peekable();
        while rows.peek().is_some() {
            let mut req = Vec::with_capacity(LOAD_CHUNK * 160);
            let mut n = 0;
            for row in rows.by_ref().take(LOAD_CHUNK) {
                let pk = row.first().and_then(Value::as_int).ok_or_else(|| Error::runtime("memcached: key must be an integer"))?;
                push_store(&mut req, "set", &format!("{prefix}{pk}"), &encode_row(&row), None);
                n += 1;
            }
            wire.send(&req).await.map_err(|e| self.setup_error("load", e))?;
            for _ in 0..n {
                match wire.stored().await.map_err(|e| self.setup_error("load", e))? {
                    StoreReply::Stored => loaded += 1,
                    other => {
                        return Err(Error::runtime(format!("target '{}': memcached refused a row while loading: {other:?}", self.name())));
                    }
                }
            }
        }
        // An evicted row would turn later gets into misses: a wrong benchmark, not a slow one.
        let evicted = evictions(&mut wire).await.map_err(|e| self.setup_error("stats", e))?.saturating_sub(evictions_before);
        if evicted > 0 {
            return Err(Error::runtime(format!(
                "target '{}': memcached at {} evicted {evicted} items while loading {loaded} rows; give it more memory (memcached -m MB)",
                self.name(),
                self.address
            )));
        }
        Ok(loaded)
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let wire = self.admin().await?;
        let tables = self.tables.read().unwrap().clone();
        Ok(Box::new(MemcachedConnection {
            address: self.address.clone(),
            wire: Some(wire),
            prefixes: Arc::new(tables.iter().map(|t| format!("{}{}", self.prefix, t.name)).collect()),
            columns: Arc::new(tables.iter().map(|t| t.columns.len()).collect()),
        }))
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let prefix = self.table_prefix(table)?;
        let keys = self.our_keys().await?;
        Ok(keys.iter().filter(|k| k.strip_prefix(&prefix).is_some_and(|pk| pk.parse::<i64>().is_ok())).count() as u64)
    }

    /// `stats bytes`: the bytes the items occupy (keys, values, item headers); the slab
    /// memory memcached has taken from the OS is the process's resident memory.
    async fn engine_memory(&self) -> Result<Option<super::EngineMemory>> {
        let mut wire = self.admin().await?;
        let stats = wire.stats("").await.map_err(|e| self.setup_error("stats", e))?;
        Ok(stats.get("bytes").and_then(|v| v.parse().ok()).map(|bytes| super::EngineMemory { bytes, source: "stats bytes".into() }))
    }

    async fn cleanup(&self) -> Result<()> {
        let mut wire = self.admin().await?;
        let mut keys = self.our_keys().await?;
        if self.check_owned(&mut wire, &keys).await? {
            // A crawl can miss items that move between LRU segments while it runs, so crawl
            // again until no row of ours is listed (bounded). The marker goes last, so an
            // interrupted cleanup still owns what is left.
            for _ in 0..5 {
                let rows: Vec<&String> = keys.iter().filter(|k| **k != self.marker_key).collect();
                if rows.is_empty() {
                    break;
                }
                delete_keys(&mut wire, rows.into_iter()).await.map_err(|e| self.setup_error("delete", e))?;
                keys = self.our_keys().await?;
            }
            delete_keys(&mut wire, std::iter::once(&self.marker_key)).await.map_err(|e| self.setup_error("delete", e))?;
        }
        Ok(())
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn LeaseStore>> {
        Some(self)
    }
}

#[async_trait]
impl LeaseStore for Memcached {
    fn place(&self) -> String {
        format!("key prefix '{}' in memcached at {}", self.prefix, self.address)
    }

    fn alternatives(&self) -> String {
        "point the URL at another memcached server, or add --namespace NAME to run side by side under another key prefix".into()
    }

    async fn read(&self) -> Result<Option<String>> {
        let mut wire = self.admin().await?;
        let found = wire.get_multi(std::slice::from_ref(&self.lease_key)).await.map_err(|e| self.setup_error("get", e))?;
        Ok(found.into_iter().next().map(|(_, value, _)| String::from_utf8_lossy(&value).into_owned()))
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let mut wire = self.admin().await?;
        let mut req = Vec::new();
        match current {
            None => {
                // A namespace with foreign items is refused before anything is written.
                let keys = self.our_keys().await?;
                self.check_owned(&mut wire, &keys).await?;
                let Some(next) = next else { return Ok(self.read().await?.is_none()) };
                push_store(&mut req, "add", &self.lease_key, next.as_bytes(), None);
            }
            Some(current) => {
                wire.send(format!("gets {}\r\n", self.lease_key).as_bytes()).await.map_err(|e| self.setup_error("gets", e))?;
                let found = wire.values().await.map_err(|e| self.setup_error("gets", e))?;
                let Some((_, value, Some(cas))) = found.into_iter().next() else { return Ok(false) };
                if value != current.as_bytes() {
                    return Ok(false);
                }
                match next {
                    Some(next) => push_store(&mut req, "cas", &self.lease_key, next.as_bytes(), Some(cas)),
                    // A negative expiry time expires the item at once: a removal only if unchanged.
                    None => req.extend_from_slice(format!("cas {} 0 -1 1 {cas}\r\n-\r\n", self.lease_key).as_bytes()),
                }
            }
        }
        wire.send(&req).await.map_err(|e| self.setup_error("lease", e))?;
        Ok(wire.stored().await.map_err(|e| self.setup_error("lease", e))? == StoreReply::Stored)
    }
}

/// The server's eviction counter.
async fn evictions(wire: &mut Wire) -> Result<u64, OpError> {
    let stats = wire.stats("").await?;
    Ok(stats.get("evictions").and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// Deletes keys in pipelined chunks; missing keys are fine.
async fn delete_keys<'a>(wire: &mut Wire, keys: impl Iterator<Item = &'a String>) -> Result<(), OpError> {
    let keys: Vec<&String> = keys.collect();
    for chunk in keys.chunks(LOAD_CHUNK) {
        let mut req = Vec::new();
        for k in chunk {
            req.extend_from_slice(format!("delete {k}\r\n").as_bytes());
        }
        wire.send(&req).await?;
        for _ in chunk {
            deleted(wire).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::Decimal;

    #[test]
    fn rows_encode_as_length_prefixed_text_and_fields_can_be_replaced() {
        let row = vec![Value::Int(17), Value::Int(42), Value::Float(12.25), Value::Text("a,b:c".into()), Value::Null];
        let data = encode_row(&row);
        assert_eq!(data, b"2:42,5:12.25,5:a,b:c,-,");
        assert_eq!(decode_fields(&data).unwrap(), vec![Some(b"42".to_vec()), Some(b"12.25".to_vec()), Some(b"a,b:c".to_vec()), None]);
        let changed = replace_field(&data, 2, &Value::Float(7.5)).unwrap();
        assert_eq!(changed, b"2:42,3:7.5,5:a,b:c,-,");
        assert_eq!(replace_field(&data, 4, &Value::Decimal(Decimal(1234))).unwrap(), b"2:42,5:12.25,5:a,b:c,5:12.34,");
        assert!(decode_fields(b"3:ab,").is_none());
    }

    #[test]
    fn metadump_keys_are_url_decoded() {
        assert_eq!(percent_decode("dbsweep%3Akv17"), "dbsweep:kv17");
        assert_eq!(percent_decode("a%2520b"), "a%20b");
        assert_eq!(percent_decode("plain%"), "plain%");
    }

    #[test]
    fn credentials_in_memcached_urls_are_refused_without_echoing_them() {
        let err =
            Memcached::new("m", &TargetUrl::parse("memcached://u:canary@127.0.0.1:1").unwrap(), &OpenContext::new("/tmp")).err().unwrap();
        assert_eq!(err.exit_code(), 2);
        assert!(!err.to_string().contains("canary"));
    }
}
