//! The connection of one direct session: connecting and logging in, sending what the
//! session wrote, and reading the backend's messages in place from a reused receive buffer
//! (a statement's reply, a Parse + Describe's description).
//!
//! The socket blocks its client's thread (`Execution::AsyncThreads`): a request is one
//! `send` and the `recv`s of its reply. Reads and writes time out after the socket's
//! timeout: the login's setup timeout while logging in and preparing, then the run's
//! `--timeout`. Must not time anything, or show the password.

use super::wire::{Body, decode_row, refused, rows_in_tag, server_error};
use super::{LoginError, Prepared};
use crate::adapter::pgwire::session::Raw;
use crate::base::op::OpError;
use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::frontend;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;
use tokio_postgres::types::Type;

/// How a session reaches and logs in to the server; shared by a target's sessions.
pub struct Login {
    /// A host name or address, or a Unix-socket directory (starting with `/`).
    pub host: String,
    pub port: u16,
    pub user: String,
    pub database: String,
    /// Never printed.
    pub password: Option<String>,
    pub connect_timeout: Duration,
    /// The run's `--timeout`: the socket's read and write timeout once the session is set
    /// up.
    pub request_timeout: Duration,
}

impl Login {
    /// The socket's timeout while a session logs in and prepares its common statements: at
    /// least the connect timeout, so that a short `--timeout` does not fail a slow login (a
    /// busy server's first statements on a fresh backend).
    pub(super) fn setup_timeout(&self) -> Duration {
        self.connect_timeout.max(self.request_timeout)
    }
}

/// The socket: TCP, or a Unix socket for a host that is a directory.
pub(super) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    /// Connects to `host`'s `port`; reads and writes time out after `io_timeout`.
    fn open(host: &str, port: u16, connect_timeout: Duration, io_timeout: Duration) -> io::Result<Stream> {
        let stream = if host.starts_with('/') {
            let stream = UnixStream::connect(format!("{host}/.s.PGSQL.{port}"))?;
            stream.set_read_timeout(Some(io_timeout))?;
            stream.set_write_timeout(Some(io_timeout))?;
            Stream::Unix(stream)
        } else {
            let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} resolves to no address"));
            let mut connected = None;
            for addr in (host, port).to_socket_addrs()? {
                match TcpStream::connect_timeout(&addr, connect_timeout) {
                    Ok(stream) => {
                        connected = Some(stream);
                        break;
                    }
                    Err(e) => last = e,
                }
            }
            let stream = connected.ok_or(last)?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(io_timeout))?;
            stream.set_write_timeout(Some(io_timeout))?;
            Stream::Tcp(stream)
        };
        Ok(stream)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
        }
    }

    /// Reads and writes time out after `timeout` from now on.
    pub fn set_timeout(&self, timeout: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(Some(timeout)).and_then(|()| s.set_write_timeout(Some(timeout))),
            Stream::Unix(s) => s.set_read_timeout(Some(timeout)).and_then(|()| s.set_write_timeout(Some(timeout))),
        }
    }
}

/// One backend message, its body borrowed from the receive buffer.
pub(super) struct Message<'a> {
    pub tag: u8,
    pub body: &'a [u8],
}

/// A logged-in connection: the socket, what is to be sent, and what was received and not
/// yet read.
pub(super) struct Socket {
    pub stream: Stream,
    pub out: BytesMut,
    received: Vec<u8>,
    /// Unread bytes are `received[read..filled]`.
    read: usize,
    filled: usize,
    /// The backend's process id and secret key, for a CancelRequest.
    backend_key: Option<(i32, i32)>,
}

/// The receive buffer's first size; a longer message grows it.
const RECEIVE_BUFFER: usize = 64 * 1024;

impl Socket {
    /// Connects and logs in; the session's parameters are set and the server is ready.
    pub fn log_in(login: &Login) -> Result<Socket, LoginError> {
        let mut socket = Socket {
            stream: Stream::open(&login.host, login.port, login.connect_timeout, login.setup_timeout())?,
            out: BytesMut::with_capacity(4096),
            received: vec![0; RECEIVE_BUFFER],
            read: 0,
            filled: 0,
            backend_key: None,
        };
        let parameters = [
            ("client_encoding", "UTF8"),
            ("user", login.user.as_str()),
            ("database", login.database.as_str()),
            ("application_name", "dbsweep"),
        ];
        frontend::startup_message(parameters, &mut socket.out)?;
        socket.send()?;
        socket.authenticate(login)?;
        loop {
            let message = socket.receive()?;
            match message.tag {
                b'K' => {
                    let mut body = Body(message.body);
                    socket.backend_key = Some((body.i32()?, body.i32()?));
                }
                b'E' => return Err(refused(message.body)),
                b'Z' => return Ok(socket),
                _ => {} // ParameterStatus, NoticeResponse
            }
        }
    }

    /// Answers the server's authentication requests until it accepts the login.
    fn authenticate(&mut self, login: &Login) -> Result<(), LoginError> {
        let password = || login.password.as_deref().map(str::as_bytes).ok_or(LoginError::PasswordMissing);
        let mut scram: Option<ScramSha256> = None;
        loop {
            let message = self.receive()?;
            if message.tag == b'E' {
                return Err(refused(message.body));
            }
            if message.tag != b'R' {
                return Err(LoginError::Unreachable(format!("unexpected message '{}' while logging in", message.tag as char)));
            }
            let mut body = Body(message.body);
            match body.i32()? {
                0 => return Ok(()),
                3 => frontend::password_message(password()?, &mut self.out)?,
                5 => {
                    let salt: [u8; 4] = body.take(4)?.try_into().expect("four bytes");
                    let hashed = md5_hash(login.user.as_bytes(), password()?, salt);
                    frontend::password_message(hashed.as_bytes(), &mut self.out)?;
                }
                10 => {
                    let mechanisms = body.0.split(|b| *b == 0).filter(|m| !m.is_empty());
                    if !mechanisms.into_iter().any(|m| m == SCRAM_SHA_256.as_bytes()) {
                        return Err(LoginError::Unreachable("the server offers no SASL mechanism but SCRAM-SHA-256-PLUS (TLS)".into()));
                    }
                    let started = ScramSha256::new(password()?, ChannelBinding::unsupported());
                    frontend::sasl_initial_response(SCRAM_SHA_256, started.message(), &mut self.out)?;
                    scram = Some(started);
                }
                11 => {
                    let scram = scram.as_mut().ok_or_else(|| LoginError::Unreachable("SASL continue before SASL start".into()))?;
                    scram.update(body.0)?;
                    frontend::sasl_response(scram.message(), &mut self.out)?;
                }
                12 => {
                    let scram = scram.as_mut().ok_or_else(|| LoginError::Unreachable("SASL final before SASL start".into()))?;
                    scram.finish(body.0)?;
                    continue;
                }
                other => {
                    return Err(LoginError::Unreachable(format!(
                        "the server asks for an authentication dbsweep does not speak (code {other})"
                    )));
                }
            }
            self.send()?;
        }
    }

    /// Sends what was written to `out`.
    pub fn send(&mut self) -> io::Result<()> {
        let sent = self.stream.write_all(&self.out);
        self.out.clear();
        sent
    }

    /// The next message, read from the socket when the buffer holds no whole one.
    pub fn receive(&mut self) -> io::Result<Message<'_>> {
        loop {
            let unread = self.filled - self.read;
            let mut needed = 5;
            if unread >= 5 {
                let header = &self.received[self.read..self.read + 5];
                let length = u32::from_be_bytes(header[1..5].try_into().expect("four bytes")) as usize;
                if length < 4 {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "a message shorter than its length field"));
                }
                needed = 1 + length;
                if unread >= needed {
                    let (tag, start) = (header[0], self.read + 5);
                    self.read += needed;
                    return Ok(Message { tag, body: &self.received[start..self.read] });
                }
            }
            // Make room: unread bytes to the front, and a buffer that holds the message.
            if self.read > 0 {
                self.received.copy_within(self.read..self.filled, 0);
                self.filled -= self.read;
                self.read = 0;
            }
            if needed > self.received.len() - self.read || self.filled == self.received.len() {
                let size = needed.max(self.received.len() * 2);
                self.received.resize(size, 0);
            }
            let n = self.stream.read(&mut self.received[self.filled..])?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the server closed the connection"));
            }
            self.filled += n;
        }
    }

    /// Reads one statement's or simple query's reply, up to its ReadyForQuery: the rows it
    /// returned (their cells in `columns`' types when `columns` is given), or the server's
    /// error. The outer error is the connection's (the reply may be unread).
    pub fn reply(&mut self, columns: Option<&[Option<Type>]>) -> io::Result<Result<Raw, OpError>> {
        let mut rows = Vec::new();
        let (mut counted, mut tagged) = (0u64, None);
        let mut error = None;
        loop {
            let message = self.receive()?;
            match message.tag {
                b'D' => match columns {
                    Some(columns) if error.is_none() => match decode_row(message.body, columns) {
                        Ok(row) => rows.push(row),
                        Err(e) => error = Some(e),
                    },
                    _ => counted += 1,
                },
                b'C' => tagged = rows_in_tag(message.body),
                b'E' => error = error.or(Some(server_error(message.body))),
                b'Z' => break,
                _ => {} // BindComplete, EmptyQueryResponse, notices, parameter changes
            }
        }
        Ok(match (error, columns) {
            (Some(e), _) => Err(e),
            (None, Some(_)) => Ok(Raw::Rows(rows)),
            (None, None) => Ok(Raw::Count(tagged.unwrap_or(counted))),
        })
    }

    /// Reads one Parse + Describe + Sync reply: the statement's parameter and column
    /// types, or the server's error.
    pub fn description(&mut self, name: String) -> io::Result<Result<Prepared, OpError>> {
        let (mut params, mut columns, mut error) = (Vec::new(), Vec::new(), None);
        loop {
            let message = self.receive()?;
            let mut body = Body(message.body);
            match message.tag {
                b't' => {
                    for _ in 0..body.i16()? {
                        let oid = body.u32()?;
                        match Type::from_oid(oid) {
                            Some(ty) => params.push(ty),
                            None => {
                                error = error.or(Some(OpError::client(format!("a parameter of a type dbsweep does not bind (oid {oid})"))))
                            }
                        }
                    }
                }
                b'T' => {
                    for _ in 0..body.i16()? {
                        body.cstr()?;
                        body.take(6)?; // table oid, column number
                        let oid = body.u32()?;
                        body.take(8)?; // size, modifier, format
                        columns.push(Type::from_oid(oid));
                    }
                }
                b'E' => error = error.or(Some(server_error(message.body))),
                b'Z' => break,
                _ => {} // ParseComplete, NoData, notices
            }
        }
        Ok(match error {
            Some(e) => Err(e),
            None => Ok(Prepared { name, params, columns }),
        })
    }

    /// Asks the server, on a connection of its own, to cancel what this session runs.
    pub fn cancel(&self, login: &Login) {
        let Some((process_id, secret_key)) = self.backend_key else { return };
        let mut request = BytesMut::with_capacity(16);
        frontend::cancel_request(process_id, secret_key, &mut request);
        let quick = Duration::from_secs(1);
        if let Ok(mut stream) = Stream::open(&login.host, login.port, quick, quick) {
            let _ = stream.write_all(&request);
        }
    }
}

impl Drop for Socket {
    /// Says goodbye (Terminate), so the server does not log a lost connection.
    fn drop(&mut self) {
        self.out.clear();
        frontend::terminate(&mut self.out);
        let _ = self.send();
    }
}
