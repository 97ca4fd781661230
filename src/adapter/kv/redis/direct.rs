//! One client's own connection to one Redis-protocol server, for the request loop: a TCP
//! stream that the client's task writes and reads itself, with each reply framed in place
//! in a reused buffer and turned into a `redis::Value` (by the crate's parser) only when an
//! op reads its content. Owns the stream, its buffers and which replies are still owed; must
//! not send anything its caller did not encode, and must never show the password.
//!
//! Why not the crate's `MultiplexedConnection` here (the project prefers well-kept crates):
//! measured on `bench/redis` (bench/README.md, "2026-11-25, Redis client CPU per op"), it
//! made dbsweep's client the bottleneck in pipelines, at 4.5x redis-benchmark's CPU per op.
//! Every request crossed to the connection's driver task (a channel, a oneshot and a
//! wake-up, often of another worker thread), and every reply went through the crate's
//! combinator parser into owned values (the largest single cost in the profile, with the
//! allocations it makes), where a get only needs "was the hash non-empty". This
//! connection sends what the crate encodes (`Cmd::write_packed_command`, or the same bytes
//! for HGETALL, checked by a test), still parses every reply whose content is read with the
//! crate's parser, and the crate keeps setup, scripts and Redis Cluster.
//!
//! Cancellation: the runner drops a request that times out. Everything a request needs to
//! finish later is kept here (bytes not yet written, replies not yet read), so the next
//! request first completes the write and skips the abandoned replies, in order, as the
//! multiplexed connection's driver would.

use super::rows::CommandSink;
use crate::base::table::Value as TableValue;
use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Bytes read ahead of the first request; the buffer grows when one request's replies need
/// more.
const INPUT_START: usize = 64 * 1024;

/// One complete RESP2 reply in the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Frame {
    /// Where it starts and ends in the input buffer.
    start: usize,
    end: usize,
    /// Its type byte: `+`, `-`, `:`, `$` or `*`.
    pub(super) kind: u8,
    /// An array's element count or a bulk string's length (-1: nil); 0 for other kinds.
    pub(super) len: i64,
    /// An error reply, or an array holding one at any depth.
    pub(super) error: bool,
}

impl Frame {
    /// A non-empty array (an HGETALL of a row that exists).
    pub(super) fn non_empty_array(&self) -> bool {
        self.kind == b'*' && self.len > 0
    }
}

/// A reply the protocol does not allow; the stream cannot be read further.
fn protocol_error(what: &str) -> RedisError {
    RedisError::from((ErrorKind::Parse, "malformed reply", what.to_string()))
}

/// The reply starting at `buf[at]`, when all of it is in `buf`; `Ok(None)` when more bytes
/// are needed. Only RESP2 (dbsweep never asks for RESP3).
pub(super) fn scan(buf: &[u8], at: usize) -> RedisResult<Option<Frame>> {
    let Some(kind) = buf.get(at).copied() else { return Ok(None) };
    let Some(newline) = buf[at..].iter().position(|&b| b == b'\n').map(|i| at + i) else { return Ok(None) };
    if newline < at + 2 || buf[newline - 1] != b'\r' {
        return Err(protocol_error("a reply line does not end in CRLF"));
    }
    let line = &buf[at + 1..newline - 1];
    let mut end = newline + 1;
    let mut frame = Frame { start: at, end, kind, len: 0, error: kind == b'-' };
    match kind {
        b'+' | b'-' | b':' => {}
        b'$' => {
            frame.len = number(line)?;
            if frame.len >= 0 {
                end = end.checked_add(frame.len as usize + 2).ok_or_else(|| protocol_error("a bulk string is too long"))?;
                if buf.len() < end {
                    return Ok(None);
                }
                if &buf[end - 2..end] != b"\r\n" {
                    return Err(protocol_error("a bulk string does not end in CRLF"));
                }
            }
        }
        b'*' => {
            frame.len = number(line)?;
            for _ in 0..frame.len.max(0) {
                let Some(item) = scan(buf, end)? else { return Ok(None) };
                frame.error |= item.error;
                end = item.end;
            }
        }
        _ => return Err(protocol_error(&format!("unknown reply type byte {kind:#04x}"))),
    }
    frame.end = end;
    Ok(Some(frame))
}

/// The decimal number of a `$` or `*` header line (a length, or -1).
fn number(line: &[u8]) -> RedisResult<i64> {
    let not_a_number = || protocol_error("a length is not a number");
    let (negative, digits) = match line.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, line),
    };
    if digits.is_empty() || digits.len() > 18 {
        return Err(not_a_number());
    }
    let mut n = 0i64;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(not_a_number());
        }
        n = n * 10 + i64::from(d - b'0');
    }
    Ok(if negative { -n } else { n })
}

/// Appends `*<n>\r\n`, then each `$<len>\r\n<part>\r\n` of one argument made of `parts`
/// (RESP2 arrays of bulk strings: the crate's encoding of a `Cmd`).
fn put_array_header(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

fn put_bulk(out: &mut Vec<u8>, parts: &[&[u8]]) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(parts.iter().map(|p| p.len()).sum::<usize>()).as_bytes());
    out.extend_from_slice(b"\r\n");
    parts.iter().for_each(|p| out.extend_from_slice(p));
    out.extend_from_slice(b"\r\n");
}

/// Appends `<command> <key_prefix><pk>` (e.g. `HGETALL dbsweep:kv17`) as the crate would
/// encode it, without building a `Cmd` or formatting the key into a `String`.
pub(super) fn put_key_command(out: &mut Vec<u8>, command: &str, key_prefix: &str, pk: i64) {
    put_array_header(out, 2);
    put_bulk(out, &[command.as_bytes()]);
    put_bulk(out, &[key_prefix.as_bytes(), itoa::Buffer::new().format(pk).as_bytes()]);
}

/// Appends MULTI or EXEC, as the crate frames an atomic pipeline.
pub(super) fn put_multi(out: &mut Vec<u8>) {
    out.extend_from_slice(b"*1\r\n$5\r\nMULTI\r\n");
}

pub(super) fn put_exec(out: &mut Vec<u8>) {
    out.extend_from_slice(b"*1\r\n$4\r\nEXEC\r\n");
}

/// Encodes the row mapping's commands (see [`CommandSink`]) as the crate would pack them,
/// without building `Cmd`s: each command's arguments are gathered, then written after its
/// `*<count>` header.
pub(super) struct Encoder {
    out: Vec<u8>,
    /// The current command's encoded arguments, and how many.
    args: Vec<u8>,
    count: usize,
    /// Commands written, the current one included.
    commands: usize,
    /// Field text of a value being formatted.
    text: String,
}

impl Encoder {
    pub(super) fn new() -> Encoder {
        Encoder { out: Vec::with_capacity(1024), args: Vec::with_capacity(512), count: 0, commands: 0, text: String::new() }
    }

    fn end_command(&mut self) {
        if self.count > 0 {
            put_array_header(&mut self.out, self.count);
            self.out.append(&mut self.args);
            self.count = 0;
        }
    }

    /// The encoded commands, and how many.
    pub(super) fn finish(mut self) -> (Vec<u8>, usize) {
        self.end_command();
        (self.out, self.commands)
    }
}

impl CommandSink for Encoder {
    fn command(&mut self, name: &str) {
        self.end_command();
        self.commands += 1;
        self.arg(name.as_bytes());
    }

    fn arg(&mut self, bytes: &[u8]) {
        put_bulk(&mut self.args, &[bytes]);
        self.count += 1;
    }

    fn key_arg(&mut self, row_prefix: &str, pk: i64) {
        put_bulk(&mut self.args, &[row_prefix.as_bytes(), itoa::Buffer::new().format(pk).as_bytes()]);
        self.count += 1;
    }

    fn int_arg(&mut self, i: i64) {
        self.arg(itoa::Buffer::new().format(i).as_bytes());
    }

    fn value_arg(&mut self, v: &TableValue) {
        match v {
            TableValue::Text(s) => self.arg(s.as_bytes()),
            TableValue::Int(i) => self.int_arg(*i),
            other => {
                use std::fmt::Write;
                let mut text = std::mem::take(&mut self.text);
                text.clear();
                write!(text, "{other}").expect("formatting into a String");
                self.arg(text.as_bytes());
                self.text = text;
            }
        }
    }
}

/// A TCP connection to `host:port` within `timeout`. With `segment`, `TCP_MAXSEG` is set
/// before connecting, so that neither side sends segments larger than that (LedisDB's
/// small receive buffer stalls on larger ones: see `Dialect::segment_size`).
pub(super) async fn connect_tcp(host: &str, port: u16, timeout: Duration, segment: Option<u32>) -> RedisResult<TcpStream> {
    let connect = async {
        let mut failed = None;
        for address in tokio::net::lookup_host((host, port)).await? {
            let socket = if address.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
            if let Some(segment) = segment {
                socket2::SockRef::from(&socket).set_tcp_mss(segment)?;
            }
            match socket.connect(address).await {
                Ok(stream) => return Ok(stream),
                Err(e) => failed = Some(e),
            }
        }
        Err(failed.unwrap_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, format!("{host} has no address"))))
    };
    match tokio::time::timeout(timeout, connect).await {
        Ok(connected) => Ok(connected?),
        Err(_) => Err(RedisError::from((ErrorKind::Io, "connection timed out"))),
    }
}

pub(super) struct DirectConnection {
    stream: TcpStream,
    db: i64,
    /// Encoded requests; `out[..sent]` is written.
    out: Vec<u8>,
    sent: usize,
    /// Bytes read; `input[read..filled]` is not yet framed.
    input: Vec<u8>,
    read: usize,
    filled: usize,
    /// The current request's replies (a transaction's: the EXEC reply's elements).
    replies: Vec<Frame>,
    /// Replies the current request still waits for.
    owed: usize,
    /// Replies of abandoned requests still to be read and skipped.
    skip: usize,
    /// Set once the stream broke or fell out of step; every later request fails with it.
    broken: Option<RedisError>,
}

impl DirectConnection {
    /// Connects to `host:port` (within `timeout`, with segments of at most `segment` bytes
    /// when given: see [`connect_tcp`]) and logs in as `login` says: AUTH when it has a
    /// password, SELECT when its DB is not 0.
    pub(super) async fn connect(
        host: &str,
        port: u16,
        login: &redis::RedisConnectionInfo,
        timeout: Duration,
        segment: Option<u32>,
    ) -> RedisResult<DirectConnection> {
        let stream = connect_tcp(host, port, timeout, segment).await?;
        stream.set_nodelay(true)?;
        let mut conn = DirectConnection {
            stream,
            db: login.db(),
            out: Vec::with_capacity(4096),
            sent: 0,
            input: vec![0; INPUT_START],
            read: 0,
            filled: 0,
            replies: Vec::with_capacity(64),
            owed: 0,
            skip: 0,
            broken: None,
        };
        let mut setup = Vec::new();
        if let Some(password) = login.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = login.username() {
                auth.arg(user);
            }
            setup.push(auth.arg(password).take());
        }
        if login.db() != 0 {
            setup.push(redis::cmd("SELECT").arg(login.db()).take());
        }
        if !setup.is_empty() {
            conn.exchange(|out| setup.iter().for_each(|c| c.write_packed_command(out)), setup.len()).await?;
            if let Some(failed) = conn.replies.iter().find(|f| f.error) {
                return Err(conn.error_of(*failed));
            }
        }
        Ok(conn)
    }

    /// Sends what `encode` appends (after anything an abandoned request left unwritten)
    /// and reads `replies` replies into [`Self::replies`].
    pub(super) async fn exchange(&mut self, encode: impl FnOnce(&mut Vec<u8>), replies: usize) -> RedisResult<()> {
        if let Some(broken) = &self.broken {
            return Err(broken.clone());
        }
        self.out.drain(..self.sent);
        self.sent = 0;
        encode(&mut self.out);
        self.skip += self.owed;
        self.owed = replies;
        self.replies.clear();
        if self.read == self.filled {
            (self.read, self.filled) = (0, 0);
        }
        let done = self.write_and_read().await;
        if let Err(e) = &done {
            // Broken, or out of step with the server: nothing later can be trusted.
            self.broken = Some(e.clone());
        }
        done
    }

    async fn write_and_read(&mut self) -> RedisResult<()> {
        while self.sent < self.out.len() {
            let n = self.stream.write(&self.out[self.sent..]).await?;
            if n == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into());
            }
            self.sent += n;
        }
        while self.skip > 0 {
            self.next_frame().await?;
            self.skip -= 1;
        }
        while self.owed > 0 {
            let frame = self.next_frame().await?;
            self.replies.push(frame);
            self.owed -= 1;
        }
        Ok(())
    }

    async fn next_frame(&mut self) -> RedisResult<Frame> {
        loop {
            if let Some(frame) = scan(&self.input[..self.filled], self.read)? {
                self.read = frame.end;
                return Ok(frame);
            }
            if self.filled == self.input.len() {
                if self.replies.is_empty() && self.read > 0 {
                    // No frame of this request points into the buffer yet: move the
                    // partial reply to the front instead of growing.
                    self.input.copy_within(self.read..self.filled, 0);
                    (self.read, self.filled) = (0, self.filled - self.read);
                } else {
                    self.input.resize(self.input.len() * 2, 0);
                }
            }
            let n = self.stream.read(&mut self.input[self.filled..]).await?;
            if n == 0 {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the server closed the connection").into());
            }
            self.filled += n;
        }
    }

    /// The last exchange's replies.
    pub(super) fn replies(&self) -> &[Frame] {
        &self.replies
    }

    /// Replaces the replies of a transaction (`MULTI`, `commands` queued, `EXEC`) with its
    /// EXEC reply's elements. Fails as the crate's connection does when a command was not
    /// queued or EXEC failed, and when EXEC returned nil (a transaction aborted).
    pub(super) fn unwrap_transaction(&mut self, commands: usize) -> RedisResult<()> {
        if self.replies.len() != commands + 2 {
            return Err(protocol_error("a transaction got another number of replies than it sent commands"));
        }
        if let Some(failed) = self.replies.iter().find(|f| f.error) {
            return Err(self.error_of(*failed));
        }
        let exec = self.replies[commands + 1];
        if exec.kind != b'*' || exec.len < 0 {
            return Err(RedisError::from((ErrorKind::Client, "transaction aborted: EXEC returned no replies")));
        }
        if exec.len as usize != commands {
            return Err(protocol_error("EXEC returned another number of replies than commands were queued"));
        }
        self.replies.clear();
        let mut at = self.input[exec.start..exec.end].iter().position(|&b| b == b'\n').map_or(exec.end, |i| exec.start + i + 1);
        while at < exec.end {
            let item = scan(&self.input[..exec.end], at)?.ok_or_else(|| protocol_error("EXEC's reply ended early"))?;
            self.replies.push(item);
            at = item.end;
        }
        Ok(())
    }

    /// A reply as the crate's parser reads it.
    pub(super) fn value(&self, frame: Frame) -> RedisResult<Value> {
        redis::parse_redis_value(&self.input[frame.start..frame.end])
    }

    /// The error an error reply (or an array holding one) stands for.
    pub(super) fn error_of(&self, frame: Frame) -> RedisError {
        match self.value(frame).and_then(Value::extract_error) {
            Err(e) => e,
            Ok(_) => protocol_error("an error reply without an error"),
        }
    }
}

impl ConnectionLike for DirectConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            self.exchange(|out| cmd.write_packed_command(out), 1).await?;
            self.value(self.replies[0])
        })
    }

    fn req_packed_commands<'a>(&'a mut self, pipeline: &'a Pipeline, offset: usize, count: usize) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            self.exchange(|out| out.extend_from_slice(&pipeline.get_packed_pipeline()), offset + count).await?;
            // A transaction's skipped replies (MULTI's OK, each QUEUED): an error there
            // fails it, as on the crate's connection.
            if pipeline.is_transaction()
                && let Some(failed) = self.replies[..offset].iter().find(|f| f.error)
            {
                return Err(self.error_of(*failed));
            }
            self.replies[offset..].iter().map(|f| self.value(*f)).collect()
        })
    }

    fn get_db(&self) -> i64 {
        self.db
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(buf: &[u8]) -> Vec<Frame> {
        let mut at = 0;
        let mut out = Vec::new();
        while let Some(f) = scan(buf, at).unwrap() {
            at = f.end;
            out.push(f);
        }
        out
    }

    #[test]
    fn replies_are_framed_whole_or_not_at_all() {
        let hash = b"*4\r\n$1\r\nk\r\n$2\r\n17\r\n$3\r\ngrp\r\n$0\r\n\r\n";
        let f = scan(hash, 0).unwrap().unwrap();
        assert_eq!((f.kind, f.len, f.end, f.error, f.non_empty_array()), (b'*', 4, hash.len(), false, true));
        for cut in 0..hash.len() {
            assert_eq!(scan(&hash[..cut], 0).unwrap(), None, "{cut} bytes");
        }
        let replies = b"+OK\r\n:42\r\n$-1\r\n*0\r\n*-1\r\n-ERR no\r\n";
        let kinds: Vec<(u8, i64, bool)> = frames(replies).iter().map(|f| (f.kind, f.len, f.error)).collect();
        assert_eq!(kinds, [(b'+', 0, false), (b':', 0, false), (b'$', -1, false), (b'*', 0, false), (b'*', -1, false), (b'-', 0, true)]);
        assert!(!frames(b"*0\r\n")[0].non_empty_array());
    }

    #[test]
    fn an_error_inside_an_array_marks_the_array() {
        let exec = b"*2\r\n:1\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
        let f = scan(exec, 0).unwrap().unwrap();
        assert!(f.error && f.end == exec.len());
    }

    #[test]
    fn lengths_are_decimal_numbers() {
        assert_eq!(
            [number(b"0"), number(b"17"), number(b"-1"), number(b"999999999999999999")].map(Result::unwrap),
            [0, 17, -1, 999_999_999_999_999_999]
        );
        for bad in [&b""[..], b"-", b"1x", b"+1", b" 1", b"1234567890123456789"] {
            assert!(number(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn malformed_replies_are_errors() {
        for bad in [&b"?x\r\n"[..], b"$3\r\nabcd\r\n", b"*x\r\n", b"+OK\n"] {
            assert!(scan(bad, 0).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn frames_read_as_the_crates_values() {
        let buf = b"*2\r\n$1\r\na\r\n:5\r\n";
        let f = scan(buf, 0).unwrap().unwrap();
        let value = redis::parse_redis_value(&buf[f.start..f.end]).unwrap();
        assert_eq!(value, Value::Array(vec![Value::BulkString(b"a".to_vec()), Value::Int(5)]));
    }

    #[test]
    fn encoded_inserts_are_the_bytes_of_the_crates_commands() {
        use super::super::dialect::Dialect;
        use super::super::rows::{TableKeys, insert_commands};
        use crate::base::table::{Date, Decimal};
        let def = crate::data::kv::shared_def();
        let rows = [
            vec![TableValue::Int(17), TableValue::Int(3), TableValue::Float(12.5), TableValue::Text("payload é".into())],
            vec![TableValue::Int(-4), TableValue::Null, TableValue::Float(0.1), TableValue::Null],
            vec![
                TableValue::Int(5),
                TableValue::Decimal(Decimal(-1234)),
                TableValue::Date(Date::from_iso("1998-12-01").unwrap()),
                TableValue::Text(String::new().into()),
            ],
        ];
        for dialect in [Dialect::Redis, Dialect::LedisDb] {
            for tagged in [false, true] {
                let t = TableKeys::new("dbsweep:", &def, tagged);
                let (mut cmds, mut encoder) = (Vec::new(), Encoder::new());
                for row in &rows {
                    insert_commands(dialect, &t, row, &mut cmds).unwrap();
                    insert_commands(dialect, &t, row, &mut encoder).unwrap();
                }
                let (bytes, count) = encoder.finish();
                assert_eq!(count, cmds.len());
                let packed: Vec<u8> = cmds.iter().flat_map(Cmd::get_packed_command).collect();
                assert_eq!(String::from_utf8_lossy(&bytes), String::from_utf8_lossy(&packed));
            }
        }
    }

    #[test]
    fn key_commands_are_the_bytes_the_crate_sends() {
        for pk in [0, 17, -3, i64::MAX] {
            let mut out = Vec::new();
            put_key_command(&mut out, "HGETALL", "dbsweep:kv", pk);
            assert_eq!(out, redis::cmd("HGETALL").arg(format!("dbsweep:kv{pk}")).get_packed_command(), "{pk}");
        }
        let mut pipe = redis::pipe();
        pipe.atomic().add_command(redis::cmd("HGETALL").arg("dbsweep:kv1").take());
        let mut out = Vec::new();
        put_multi(&mut out);
        put_key_command(&mut out, "HGETALL", "dbsweep:kv", 1);
        put_exec(&mut out);
        assert_eq!(out, pipe.get_packed_pipeline());
    }
}
