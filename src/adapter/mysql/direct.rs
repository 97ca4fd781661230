//! One MariaDB/MySQL client connection on a blocking socket of its own, with no driver
//! between the client and its socket: the login, prepared statements (prepare, execute,
//! close) and text queries that `session::MySession` sends for a measured client.
//!
//! Each MariaDB client has a thread of its own (`Execution::AsyncThreads`), so a request is
//! one `send` of its packets and the `recv`s of its reply, read in place from the receive
//! buffer. The packets are the ones the `mysql` driver sent for the same statements:
//! COM_STMT_PREPARE, COM_STMT_EXECUTE with binary parameters (64-bit integers, doubles,
//! strings; long strings as COM_STMT_SEND_LONG_DATA when a request would outgrow the
//! server's `max_allowed_packet`), COM_STMT_CLOSE and COM_QUERY, with the same capability
//! flags (among them CLIENT_FOUND_ROWS, and MariaDB's cached result metadata). Rows that
//! only count are counted, not decoded; rows kept are decoded by `mysql_common` (the
//! drivers' own packet library), which also parses the handshake and column definitions
//! and computes the login's password scrambles.
//!
//! Logs in with `mysql_native_password` or `caching_sha2_password` (its full
//! authentication over RSA, with the server's public key, as there is no TLS). Must not
//! create or drop anything, time anything, or show the password.

use mysql_common::Value as MyValue;
use mysql_common::constants::{CapabilityFlags, MariadbCapabilities, StatusFlags};
use mysql_common::io::ParseBuf;
use mysql_common::packets::{AuthPlugin, AuthSwitchRequest, Column, HandshakePacket, HandshakeResponse};
use mysql_common::proto::{Binary, MySerialize, Text};
use mysql_common::row::RowDeserializer;
use mysql_common::value::ServerSide;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

/// How a connection reaches and logs in to the server; shared by a target's sessions.
pub struct Login {
    pub host: String,
    pub port: u16,
    pub user: String,
    /// Never printed.
    pub password: Option<String>,
    pub connect_timeout: Duration,
    /// The run's `--timeout`: the socket's read and write timeout once the session is set
    /// up (see [`Connection::set_timeout`]).
    pub request_timeout: Duration,
}

impl Login {
    /// The socket's timeout while a connection logs in and its session prepares the common
    /// statements: at least the connect timeout, so that a short `--timeout` does not fail
    /// a slow login on a busy server.
    pub fn setup_timeout(&self) -> Duration {
        self.connect_timeout.max(self.request_timeout)
    }
}

/// Why a request or a login failed.
#[derive(Debug)]
pub enum WireError {
    /// The server's ERR packet.
    Server { code: u16, state: String, message: String },
    /// The socket failed or timed out.
    Io(io::Error),
    /// The server sent what this client does not understand or support.
    Protocol(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Server { code, state, message } => write!(f, "ERROR {code} ({state}): {message}"),
            WireError::Io(e) => write!(f, "{e}"),
            WireError::Protocol(why) => write!(f, "protocol error: {why}"),
        }
    }
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        WireError::Io(e)
    }
}

fn protocol(why: impl Into<String>) -> WireError {
    WireError::Protocol(why.into())
}

/// A statement prepared on one connection.
#[derive(Debug)]
pub struct Prepared {
    id: u32,
    params: usize,
    /// The result's columns as prepared (for decoding rows when an execute's reply leaves
    /// them out, MariaDB's cached metadata).
    columns: Arc<[Column]>,
}

/// What to do with a result's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    Count,
    Keep,
    /// Kept, from a text query (a user's script): each cell as the server's text.
    KeepText,
}

/// A request's reply: an OK packet's affected rows, or the rows of a result set (counted,
/// or kept as values).
#[derive(Debug, PartialEq)]
pub enum Reply {
    Done { affected: u64 },
    Counted(u64),
    Kept(Vec<Vec<MyValue>>),
}

const COM_QUIT: u8 = 0x01;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_SEND_LONG_DATA: u8 = 0x18;
const COM_STMT_CLOSE: u8 = 0x19;
/// The longest payload of one packet; a longer one continues in the next.
const MAX_PAYLOAD: usize = 0xFF_FFFF;
/// The receive buffer's first size; a longer packet grows it.
const RECEIVE_BUFFER: usize = 64 * 1024;
/// The `max_allowed_packet` the client announces (the server's own limit still applies).
const CLIENT_MAX_PACKET: u32 = 1 << 30;

/// The capabilities this client asks for (those the server also has are used): the ones the
/// `mysql` driver asked for, less LOCAL INFILE and multi-statements, which sessions never
/// send, plus CLIENT_FOUND_ROWS (an UPDATE to the same value counts its row).
fn wanted_capabilities() -> CapabilityFlags {
    CapabilityFlags::CLIENT_PROTOCOL_41
        | CapabilityFlags::CLIENT_SECURE_CONNECTION
        | CapabilityFlags::CLIENT_LONG_PASSWORD
        | CapabilityFlags::CLIENT_LONG_FLAG
        | CapabilityFlags::CLIENT_TRANSACTIONS
        | CapabilityFlags::CLIENT_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PS_MULTI_RESULTS
        | CapabilityFlags::CLIENT_PLUGIN_AUTH
        | CapabilityFlags::CLIENT_FOUND_ROWS
}

/// A logged-in connection: the socket, the packets to send, and what was received and not
/// yet read.
pub struct Connection {
    stream: TcpStream,
    /// A command's payload as it is built, then framed into `out`.
    payload: Vec<u8>,
    out: Vec<u8>,
    received: Vec<u8>,
    /// Unread bytes are `received[read..filled]`.
    read: usize,
    filled: usize,
    /// A packet longer than `MAX_PAYLOAD`, joined from its parts.
    joined: Vec<u8>,
    /// The next packet's sequence id.
    seq: u8,
    /// The server leaves unchanged column definitions out of an execute's reply.
    cached_metadata: bool,
    /// The server's `max_allowed_packet`: the longest request it accepts.
    max_packet: usize,
}

impl Connection {
    /// Connects and logs in; reads the server's `max_allowed_packet`. Reads and writes
    /// time out after the login's setup timeout until [`Connection::set_timeout`].
    pub fn open(login: &Login) -> Result<Connection, WireError> {
        let stream = connect(&login.host, login.port, login.connect_timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(login.setup_timeout()))?;
        stream.set_write_timeout(Some(login.setup_timeout()))?;
        let mut connection = Connection {
            stream,
            payload: Vec::with_capacity(256),
            out: Vec::with_capacity(256),
            received: vec![0; RECEIVE_BUFFER],
            read: 0,
            filled: 0,
            joined: Vec::new(),
            seq: 0,
            cached_metadata: false,
            max_packet: 4 << 20,
        };
        connection.log_in(login)?;
        let max_packet = connection.query_first("SELECT @@max_allowed_packet")?;
        if let Some(max) = max_packet.and_then(|m| m.parse::<usize>().ok()) {
            connection.max_packet = max;
        }
        Ok(connection)
    }

    /// Reads and writes time out after `timeout` from now on.
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<(), WireError> {
        self.stream.set_read_timeout(Some(timeout))?;
        self.stream.set_write_timeout(Some(timeout))?;
        Ok(())
    }

    /// The server's `max_allowed_packet`.
    pub fn max_packet(&self) -> usize {
        self.max_packet
    }

    fn log_in(&mut self, login: &Login) -> Result<(), WireError> {
        let handshake = self.packet()?.to_vec();
        if handshake.first() == Some(&0xFF) {
            return Err(server_error(&handshake));
        }
        let handshake: HandshakePacket = ParseBuf(&handshake).parse(())?;
        if handshake.protocol_version() != 10 || !handshake.capabilities().contains(CapabilityFlags::CLIENT_PROTOCOL_41) {
            return Err(protocol(format!("server speaks protocol {} without 4.1 packets", handshake.protocol_version())));
        }
        let capabilities = handshake.capabilities() & wanted_capabilities();
        let mariadb = handshake.mariadb_ext_capabilities() & MariadbCapabilities::MARIADB_CLIENT_CACHE_METADATA;
        self.cached_metadata = mariadb.contains(MariadbCapabilities::MARIADB_CLIENT_CACHE_METADATA);
        let mut nonce = handshake.scramble_1_ref().to_vec();
        nonce.extend_from_slice(handshake.scramble_2_ref().unwrap_or_default());
        nonce.resize(20, 0);
        let mut plugin = match handshake.auth_plugin() {
            Some(AuthPlugin::CachingSha2Password) => AuthPlugin::CachingSha2Password,
            _ => AuthPlugin::MysqlNativePassword,
        };
        let password = login.password.as_deref();
        let scramble = plugin.gen_data(password, &nonce).map(|d| {
            let mut bytes = Vec::new();
            d.serialize(&mut bytes);
            bytes
        });
        let response = HandshakeResponse::new(
            scramble.as_deref(),
            handshake.server_version_parsed().unwrap_or((0, 0, 0)),
            Some(login.user.as_bytes()),
            None::<&[u8]>,
            Some(plugin.clone()),
            capabilities,
            None,
            CLIENT_MAX_PACKET,
        )
        .with_mariadb_ext_capabilities(mariadb);
        self.payload.clear();
        response.serialize(&mut self.payload);
        self.send_payload()?;
        let mut switched = false;
        loop {
            let reply = self.packet()?.to_vec();
            match (reply.first(), &plugin) {
                (Some(0x00), _) => return Ok(()),
                (Some(0xFF), _) => return Err(server_error(&reply)),
                (Some(0xFE), _) if !switched => {
                    switched = true;
                    let switch: AuthSwitchRequest = ParseBuf(&reply).parse(())?;
                    plugin = match switch.auth_plugin() {
                        AuthPlugin::CachingSha2Password => AuthPlugin::CachingSha2Password,
                        AuthPlugin::MysqlNativePassword => AuthPlugin::MysqlNativePassword,
                        other => {
                            let name = String::from_utf8_lossy(other.as_bytes()).into_owned();
                            return Err(protocol(format!(
                                "the server asks for authentication plugin {name}; dbsweep logs in with mysql_native_password or caching_sha2_password"
                            )));
                        }
                    };
                    nonce = switch.plugin_data().to_vec();
                    self.payload.clear();
                    if let Some(data) = plugin.gen_data(password, &nonce) {
                        data.serialize(&mut self.payload);
                    }
                    self.send_payload()?;
                }
                // caching_sha2_password: fast authentication done, the OK packet follows.
                (Some(0x01), AuthPlugin::CachingSha2Password) if reply.get(1) == Some(&0x03) => {}
                // caching_sha2_password: full authentication; no TLS, so the password goes
                // RSA-encrypted with the server's public key (asked for with 0x02).
                (Some(0x01), AuthPlugin::CachingSha2Password) if reply.get(1) == Some(&0x04) => {
                    self.payload.clear();
                    self.payload.push(0x02);
                    self.send_payload()?;
                    let key = self.packet()?.to_vec();
                    let key = key.strip_prefix(&[0x01]).ok_or_else(|| protocol("no public key from the server"))?;
                    let mut secret = password.unwrap_or_default().as_bytes().to_vec();
                    secret.push(0);
                    for (i, b) in secret.iter_mut().enumerate() {
                        *b ^= nonce[i % nonce.len()];
                    }
                    self.payload = mysql_common::crypto::encrypt(&secret, key);
                    self.send_payload()?;
                }
                _ => return Err(protocol(format!("unexpected packet {:02x?} while logging in", reply.first()))),
            }
        }
    }

    /// Prepares `sql`.
    pub fn prepare(&mut self, sql: &str) -> Result<Prepared, WireError> {
        self.command(COM_STMT_PREPARE, sql.as_bytes())?;
        let reply = self.packet()?;
        match reply.first() {
            Some(0x00) if reply.len() >= 9 => {}
            Some(0xFF) => return Err(server_error(reply)),
            _ => return Err(protocol("unexpected reply to COM_STMT_PREPARE")),
        }
        let id = u32::from_le_bytes(reply[1..5].try_into().expect("4 bytes"));
        let columns = usize::from(u16::from_le_bytes([reply[5], reply[6]]));
        let params = usize::from(u16::from_le_bytes([reply[7], reply[8]]));
        if params > 0 {
            for _ in 0..params {
                self.packet()?;
            }
            self.packet()?; // EOF
        }
        let mut defs = Vec::with_capacity(columns);
        if columns > 0 {
            for _ in 0..columns {
                defs.push(ParseBuf(self.packet()?).parse::<Column>(())?);
            }
            self.packet()?; // EOF
        }
        Ok(Prepared { id, params, columns: defs.into() })
    }

    /// Closes a prepared statement (the server does not reply).
    pub fn close(&mut self, statement: &Prepared) -> Result<(), WireError> {
        self.command(COM_STMT_CLOSE, &statement.id.to_le_bytes())
    }

    /// Executes a prepared statement with `params`.
    pub fn execute(&mut self, statement: &Prepared, params: &[MyValue], rows: Rows) -> Result<Reply, WireError> {
        if params.len() != statement.params {
            return Err(protocol(format!("statement takes {} parameters, {} given", statement.params, params.len())));
        }
        let long_data = 14 + params.len() * 3 + params.iter().map(|p| p.bin_len() as usize).sum::<usize>() > self.max_packet;
        if long_data {
            for (i, param) in params.iter().enumerate() {
                if let MyValue::Bytes(bytes) = param {
                    self.payload.clear();
                    self.payload.push(COM_STMT_SEND_LONG_DATA);
                    self.payload.extend_from_slice(&statement.id.to_le_bytes());
                    self.payload.extend_from_slice(&(i as u16).to_le_bytes());
                    self.payload.extend_from_slice(bytes);
                    self.seq = 0;
                    self.send_payload()?;
                }
            }
        }
        self.payload.clear();
        write_execute(&mut self.payload, statement.id, params, long_data)?;
        self.seq = 0;
        self.send_payload()?;
        self.result(Some(&statement.columns), rows)
    }

    /// Sends `sql` as a text query: its affected rows, or its rows counted.
    pub fn query(&mut self, sql: &str) -> Result<Reply, WireError> {
        self.command(COM_QUERY, sql.as_bytes())?;
        self.result(None, Rows::Count)
    }

    /// Sends `sql` as a text query: its affected rows, or its rows kept as text cells.
    pub fn query_rows(&mut self, sql: &str) -> Result<Reply, WireError> {
        self.command(COM_QUERY, sql.as_bytes())?;
        self.result(None, Rows::KeepText)
    }

    /// The first column of the first row of a text query, `None` for NULL or no row.
    fn query_first(&mut self, sql: &str) -> Result<Option<String>, WireError> {
        self.command(COM_QUERY, sql.as_bytes())?;
        let cached_metadata = self.cached_metadata;
        let first = self.packet()?;
        match first.first() {
            Some(0xFF) => return Err(server_error(first)),
            Some(0x00) => return Ok(None),
            _ => {}
        }
        let (columns, at) = lenenc(first, 0).ok_or_else(|| protocol("bad column count"))?;
        let metadata = !cached_metadata || first.get(at).copied() != Some(0);
        if metadata {
            for _ in 0..columns {
                self.packet()?;
            }
        }
        self.packet()?; // EOF
        let mut value = None;
        loop {
            let row = self.packet()?;
            match row.first() {
                Some(0xFE) if row.len() < 9 => return Ok(value),
                Some(0xFF) => return Err(server_error(row)),
                Some(0xFB) => {}
                _ if value.is_none() => {
                    let (len, start) = lenenc(row, 0).ok_or_else(|| protocol("bad text row"))?;
                    let bytes = row.get(start..start + len as usize).ok_or_else(|| protocol("short text row"))?;
                    value = Some(String::from_utf8_lossy(bytes).into_owned());
                }
                _ => {}
            }
        }
    }

    /// Reads a command's reply: an OK packet, or a result set (binary rows when `prepared`
    /// is given, text rows otherwise), and any result sets that follow it.
    fn result(&mut self, prepared: Option<&Arc<[Column]>>, rows: Rows) -> Result<Reply, WireError> {
        let mut counted = 0;
        let mut kept = Vec::new();
        let mut outcome = None;
        let cached_metadata = self.cached_metadata;
        loop {
            let first = self.packet()?;
            let more = match first.first() {
                Some(0x00) => {
                    let (affected, status) = ok_packet(first).ok_or_else(|| protocol("bad OK packet"))?;
                    outcome = Some(outcome.unwrap_or(Reply::Done { affected }));
                    status.contains(StatusFlags::SERVER_MORE_RESULTS_EXISTS)
                }
                Some(0xFF) => return Err(server_error(first)),
                Some(0xFB) => return Err(protocol("the server asks for a local file; sessions never send LOAD DATA LOCAL")),
                _ => {
                    let (count, at) = lenenc(first, 0).ok_or_else(|| protocol("bad column count"))?;
                    let metadata = !cached_metadata || first.get(at).copied() != Some(0);
                    let mut columns = prepared.cloned();
                    if metadata {
                        let mut defs = Vec::with_capacity(count as usize);
                        for _ in 0..count {
                            let packet = self.packet()?;
                            if rows != Rows::Count {
                                defs.push(ParseBuf(packet).parse::<Column>(())?);
                            }
                        }
                        if rows != Rows::Count {
                            columns = Some(defs.into());
                        }
                    }
                    self.packet()?; // EOF after the column definitions
                    let status = loop {
                        let row = self.packet()?;
                        match row.first() {
                            Some(0xFE) if row.len() < 9 => break eof_status(row),
                            Some(0xFF) => return Err(server_error(row)),
                            _ if rows == Rows::KeepText => {
                                let columns = columns.clone().ok_or_else(|| protocol("a text result without its columns"))?;
                                let row: RowDeserializer<ServerSide, Text> = ParseBuf(row).parse(columns)?;
                                kept.push(row.into_inner().unwrap());
                            }
                            _ if rows == Rows::Keep => {
                                let columns = columns.clone().ok_or_else(|| protocol("text rows are only counted"))?;
                                let row: RowDeserializer<ServerSide, Binary> = ParseBuf(row).parse(columns)?;
                                kept.push(row.into_inner().unwrap());
                            }
                            _ => counted += 1,
                        }
                    };
                    if outcome.is_none() {
                        outcome = Some(Reply::Counted(0));
                    }
                    status.contains(StatusFlags::SERVER_MORE_RESULTS_EXISTS)
                }
            };
            if !more {
                break;
            }
        }
        Ok(match outcome {
            Some(Reply::Counted(_)) if rows != Rows::Count => Reply::Kept(kept),
            Some(Reply::Counted(_)) => Reply::Counted(counted),
            other => other.unwrap_or(Reply::Done { affected: 0 }),
        })
    }

    /// Sends one command with its argument, starting a new sequence.
    fn command(&mut self, command: u8, argument: &[u8]) -> Result<(), WireError> {
        self.payload.clear();
        self.payload.push(command);
        self.payload.extend_from_slice(argument);
        self.seq = 0;
        self.send_payload()
    }

    /// Frames `payload` into packets (a payload of `MAX_PAYLOAD` bytes or more continues in
    /// the next packet, and one that ends on a packet's end is followed by an empty one) and
    /// sends them.
    fn send_payload(&mut self) -> Result<(), WireError> {
        self.out.clear();
        for chunk in self.payload.chunks(MAX_PAYLOAD) {
            self.out.extend_from_slice(&(chunk.len() as u32).to_le_bytes()[..3]);
            self.out.push(self.seq);
            self.seq = self.seq.wrapping_add(1);
            self.out.extend_from_slice(chunk);
        }
        if self.payload.len().is_multiple_of(MAX_PAYLOAD) {
            self.out.extend_from_slice(&[0, 0, 0, self.seq]);
            self.seq = self.seq.wrapping_add(1);
        }
        self.stream.write_all(&self.out)?;
        Ok(())
    }

    /// Makes at least `n` unread bytes available.
    fn fill(&mut self, n: usize) -> io::Result<()> {
        while self.filled - self.read < n {
            if self.received.len() - self.read < n {
                self.received.copy_within(self.read..self.filled, 0);
                self.filled -= self.read;
                self.read = 0;
                if self.received.len() < n {
                    self.received.resize(n.max(2 * self.received.len()), 0);
                }
            }
            let got = self.stream.read(&mut self.received[self.filled..])?;
            if got == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
            }
            self.filled += got;
        }
        Ok(())
    }

    /// The next packet's payload (joined from its parts when it is longer than one packet).
    fn packet(&mut self) -> io::Result<&[u8]> {
        let mut joined = false;
        loop {
            self.fill(4)?;
            let header = &self.received[self.read..self.read + 4];
            let len = usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
            self.seq = header[3].wrapping_add(1);
            self.fill(4 + len)?;
            let start = self.read + 4;
            self.read = start + len;
            if !joined && len < MAX_PAYLOAD {
                return Ok(&self.received[start..start + len]);
            }
            if !joined {
                self.joined.clear();
                joined = true;
            }
            self.joined.extend_from_slice(&self.received[start..start + len]);
            if len < MAX_PAYLOAD {
                return Ok(&self.joined);
            }
        }
    }
}

impl Drop for Connection {
    /// Says goodbye (COM_QUIT), as the drivers do, so that the server does not count and log
    /// an aborted connection; a connection already broken is closed all the same.
    fn drop(&mut self) {
        let _ = self.stream.write_all(&[1, 0, 0, 0, COM_QUIT]);
    }
}

/// A TCP connection to the first of `host`'s addresses that answers.
fn connect(host: &str, port: u16, timeout: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} resolves to no address"));
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// A COM_STMT_EXECUTE payload: no cursor, one iteration, the parameters' types and binary
/// values (the values of strings sent as long data left out).
fn write_execute(out: &mut Vec<u8>, id: u32, params: &[MyValue], long_data: bool) -> Result<(), WireError> {
    use mysql_common::constants::ColumnType as T;
    out.push(COM_STMT_EXECUTE);
    out.extend_from_slice(&id.to_le_bytes());
    out.push(0); // CURSOR_TYPE_NO_CURSOR
    out.extend_from_slice(&1u32.to_le_bytes());
    if params.is_empty() {
        return Ok(());
    }
    let bitmap = out.len();
    out.resize(bitmap + params.len().div_ceil(8), 0);
    out.push(1); // new parameters bound: their types follow
    for (i, param) in params.iter().enumerate() {
        let (ty, unsigned) = match param {
            MyValue::NULL => {
                out[bitmap + i / 8] |= 1 << (i % 8);
                (T::MYSQL_TYPE_NULL, false)
            }
            MyValue::Int(_) => (T::MYSQL_TYPE_LONGLONG, false),
            MyValue::UInt(_) => (T::MYSQL_TYPE_LONGLONG, true),
            MyValue::Float(_) => (T::MYSQL_TYPE_FLOAT, false),
            MyValue::Double(_) => (T::MYSQL_TYPE_DOUBLE, false),
            MyValue::Bytes(_) => (T::MYSQL_TYPE_VAR_STRING, false),
            other => return Err(protocol(format!("dbsweep does not send {other:?} as a parameter"))),
        };
        out.extend_from_slice(&[ty as u8, if unsigned { 0x80 } else { 0 }]);
    }
    for param in params {
        match param {
            MyValue::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
            MyValue::UInt(v) => out.extend_from_slice(&v.to_le_bytes()),
            MyValue::Float(v) => out.extend_from_slice(&v.to_le_bytes()),
            MyValue::Double(v) => out.extend_from_slice(&v.to_le_bytes()),
            MyValue::Bytes(b) if !long_data => {
                put_lenenc(out, b.len() as u64);
                out.extend_from_slice(b);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Appends a length-encoded integer.
fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// The length-encoded integer at `at` and the offset after it.
fn lenenc(bytes: &[u8], at: usize) -> Option<(u64, usize)> {
    let first = *bytes.get(at)?;
    let wide = |n: usize| -> Option<(u64, usize)> {
        let raw = bytes.get(at + 1..at + 1 + n)?;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(raw);
        Some((u64::from_le_bytes(le), at + 1 + n))
    };
    match first {
        0..=250 => Some((u64::from(first), at + 1)),
        0xFC => wide(2),
        0xFD => wide(3),
        0xFE => wide(8),
        _ => None,
    }
}

/// An OK packet's affected rows and status flags.
fn ok_packet(body: &[u8]) -> Option<(u64, StatusFlags)> {
    let (affected, at) = lenenc(body, 1)?;
    let (_, at) = lenenc(body, at)?;
    let status = u16::from_le_bytes(body.get(at..at + 2)?.try_into().ok()?);
    Some((affected, StatusFlags::from_bits_truncate(status)))
}

/// An EOF packet's status flags.
fn eof_status(body: &[u8]) -> StatusFlags {
    let status = body.get(3..5).map_or(0, |s| u16::from_le_bytes([s[0], s[1]]));
    StatusFlags::from_bits_truncate(status)
}

/// An ERR packet: its code, SQLSTATE and message.
fn server_error(body: &[u8]) -> WireError {
    let code = body.get(1..3).map_or(0, |c| u16::from_le_bytes([c[0], c[1]]));
    let rest = body.get(3..).unwrap_or_default();
    let (state, message) = match rest.strip_prefix(b"#") {
        Some(tail) if tail.len() >= 5 => (String::from_utf8_lossy(&tail[..5]).into_owned(), &tail[5..]),
        _ => ("HY000".to_string(), rest),
    };
    WireError::Server { code, state, message: String::from_utf8_lossy(message).into_owned() }
}

#[cfg(test)]
mod tests;
