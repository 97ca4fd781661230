//! The memcached text protocol on one socket: storage commands, gets, deletes, stats and
//! the metadump key listing, with their replies parsed. Must not decide what to send.

use super::CONNECT_TIMEOUT;
use super::rows::percent_decode;
use crate::base::op::OpError;
use crate::error::Result;
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufStream};
use tokio::net::TcpStream;

/// One text-protocol socket. Requests are written whole and replies read in order.
pub(super) struct Wire {
    pub(super) io: BufStream<TcpStream>,
}

pub(super) fn io_error(e: std::io::Error) -> OpError {
    OpError::connection(format!("memcached: {e}"))
}

/// The reply to a storage command.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum StoreReply {
    Stored,
    NotStored,
    Exists,
    NotFound,
}

impl Wire {
    pub(super) async fn connect(address: &str) -> std::io::Result<Wire> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(address))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out"))??;
        stream.set_nodelay(true)?;
        Ok(Wire { io: BufStream::new(stream) })
    }

    pub(super) async fn send(&mut self, request: &[u8]) -> Result<(), OpError> {
        self.io.write_all(request).await.map_err(io_error)?;
        self.io.flush().await.map_err(io_error)
    }

    /// One reply line without its `\r\n`; server error lines become `Server` errors.
    pub(super) async fn line(&mut self) -> Result<String, OpError> {
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

    pub(super) async fn stored(&mut self) -> Result<StoreReply, OpError> {
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
    pub(super) async fn values(&mut self) -> Result<Vec<(String, Vec<u8>, Option<u64>)>, OpError> {
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

    pub(super) async fn get_multi(&mut self, keys: &[String]) -> Result<Vec<(String, Vec<u8>, Option<u64>)>, OpError> {
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

    pub(super) async fn version(&mut self) -> Result<String, OpError> {
        self.send(b"version\r\n").await?;
        let line = self.line().await?;
        line.strip_prefix("VERSION ").map(str::to_string).ok_or_else(|| OpError::server(format!("memcached: unexpected reply '{line}'")))
    }

    pub(super) async fn stats(&mut self, group: &str) -> Result<BTreeMap<String, String>, OpError> {
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
    pub(super) async fn metadump(&mut self) -> Result<Vec<String>, OpError> {
        match self.metadump_of(b"lru_crawler metadump hash\r\n").await {
            Err(e) if e.message.contains("ERROR") => self.metadump_of(b"lru_crawler metadump all\r\n").await,
            other => other,
        }
    }

    pub(super) async fn metadump_of(&mut self, request: &[u8]) -> Result<Vec<String>, OpError> {
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

/// Appends a storage command (`add`, `set`, `cas ... <unique>`).
pub(super) fn push_store(req: &mut Vec<u8>, verb: &str, key: &str, data: &[u8], cas: Option<u64>) {
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
