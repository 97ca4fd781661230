//! One PostgreSQL client session on a blocking socket of its own: the `Executor` of
//! `sql::SqlConnection` for PostgreSQL's measured clients, with no driver between the
//! client and its socket.
//!
//! Each PostgreSQL client has a thread of its own (`Execution::AsyncThreads`), so a request
//! is one `send` of its messages and the `recv`s of its reply, with no connection task, no
//! reply channel and no reactor in between (tokio-postgres costs an `epoll_wait`, a task
//! switch and a channel per request; see bench/README.md). The messages are the ones
//! tokio-postgres sends for the same statements: Parse + Describe + Sync to prepare (the
//! common statements at connect, pipelined), Bind + Execute + Sync per statement with binary
//! parameters and results, `BEGIN` and `COMMIT` as simple queries pipelined with a batch's
//! statements. Messages are encoded by `postgres_protocol` (tokio-postgres's own encoder);
//! replies are read in place from the receive buffer. Rows that only count are read from
//! CommandComplete's tag; the cells of aggregates and query answers are decoded by
//! `encode::Cell`.
//!
//! The runner's timer cannot cut a blocking read short, so the socket's read and write
//! timeouts are the run's `--timeout`. A request cut off by a timeout or a broken
//! connection leaves the connection mid-reply: the server is asked to cancel what it runs
//! (a CancelRequest, as `pg_cancel_backend` would) and the session logs in again, and
//! prepares again, before its next request, so a late reply is never read as the answer
//! to a later request. Logs in with trust, a cleartext or MD5 password, or SCRAM-SHA-256;
//! no TLS (as the tokio-postgres sessions: `NoTls`). Must not create or drop anything, time
//! anything, or show the password.

mod script;

use super::Flavor;
use super::encode::Cell;
use super::session::{Raw, answer, bind, common_statements, param_types};
use crate::adapter::sql::connection::{Executor, StatementCache};
use crate::adapter::sql::dialect::SqlTable;
use crate::adapter::sql::plan::{Answered, Args, Reply, Step};
use crate::adapter::sql::statement::Statement;
use crate::base::op::{ErrorClass, OpError};
use crate::base::table::Row;
use async_trait::async_trait;
use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::frontend;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};

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
    fn setup_timeout(&self) -> Duration {
        self.connect_timeout.max(self.request_timeout)
    }
}

/// Why opening a session failed: the server refused the login (its SQLSTATE and
/// message), wanted a password it was not given, could not be talked to, or failed the
/// setup or a common statement after the login.
#[derive(Debug)]
pub enum LoginError {
    Refused { code: String, message: String },
    PasswordMissing,
    Unreachable(String),
    Prepare(OpError),
}

impl std::fmt::Display for LoginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoginError::Refused { code, message } => write!(f, "ERROR {code}: {message}"),
            LoginError::PasswordMissing => write!(f, "the server asks for a password and none was given"),
            LoginError::Unreachable(why) => write!(f, "{why}"),
            LoginError::Prepare(e) => write!(f, "{e}"),
        }
    }
}

impl From<io::Error> for LoginError {
    fn from(e: io::Error) -> Self {
        LoginError::Unreachable(e.to_string())
    }
}

/// The socket: TCP, or a Unix socket for a host that is a directory.
enum Stream {
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
    fn set_timeout(&self, timeout: Duration) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(Some(timeout)).and_then(|()| s.set_write_timeout(Some(timeout))),
            Stream::Unix(s) => s.set_read_timeout(Some(timeout)).and_then(|()| s.set_write_timeout(Some(timeout))),
        }
    }
}

/// One backend message, its body borrowed from the receive buffer.
struct Message<'a> {
    tag: u8,
    body: &'a [u8],
}

/// A logged-in connection: the socket, what is to be sent, and what was received and not
/// yet read.
struct Socket {
    stream: Stream,
    out: BytesMut,
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
    fn log_in(login: &Login) -> Result<Socket, LoginError> {
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
    fn send(&mut self) -> io::Result<()> {
        let sent = self.stream.write_all(&self.out);
        self.out.clear();
        sent
    }

    /// The next message, read from the socket when the buffer holds no whole one.
    fn receive(&mut self) -> io::Result<Message<'_>> {
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
    fn reply(&mut self, columns: Option<&[Option<Type>]>) -> io::Result<Result<Raw, OpError>> {
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

    /// Asks the server, on a connection of its own, to cancel what this session runs.
    fn cancel(&self, login: &Login) {
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

/// Reads big-endian fields off a message body.
struct Body<'a>(&'a [u8]);

impl<'a> Body<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a message shorter than its fields"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn i16(&mut self) -> io::Result<i16> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("two bytes")))
    }

    fn i32(&mut self) -> io::Result<i32> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    /// A NUL-terminated string's bytes.
    fn cstr(&mut self) -> io::Result<&'a [u8]> {
        let end =
            self.0.iter().position(|b| *b == 0).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "an unterminated string"))?;
        let text = self.take(end)?;
        self.take(1)?;
        Ok(text)
    }
}

/// The fields of an ErrorResponse: SQLSTATE and message.
fn error_fields(body: &[u8]) -> (String, String, String) {
    let (mut severity, mut code, mut message) = (String::from("ERROR"), String::new(), String::new());
    let mut body = Body(body);
    while let Ok(&[kind]) = body.take(1) {
        if kind == 0 {
            break;
        }
        let Ok(value) = body.cstr() else { break };
        let value = String::from_utf8_lossy(value).into_owned();
        match kind {
            b'V' => severity = value,
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
    }
    (severity, code, message)
}

/// An ErrorResponse as a request's error, worded as `pgwire::describe` words the driver's.
fn server_error(body: &[u8]) -> OpError {
    let (severity, code, message) = error_fields(body);
    OpError::new(ErrorClass::Server, format!("{severity} {code}: {message}"))
}

/// An ErrorResponse during login.
fn refused(body: &[u8]) -> LoginError {
    let (_, code, message) = error_fields(body);
    LoginError::Refused { code, message }
}

/// The rows a CommandComplete names (`SELECT 3`, `INSERT 0 3`, `DELETE 3`); `None` for tags
/// without a count (`BEGIN`).
fn rows_in_tag(body: &[u8]) -> Option<u64> {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|b| *b == b' ').next()?;
    std::str::from_utf8(last).ok()?.parse().ok()
}

/// One DataRow's cells as values of the columns' types.
fn decode_row(body: &[u8], columns: &[Option<Type>]) -> Result<Row, OpError> {
    let malformed = |e: io::Error| OpError::client(format!("a malformed row: {e}"));
    let mut body = Body(body);
    let n = body.i16().map_err(malformed)? as usize;
    if n != columns.len() {
        return Err(OpError::client(format!("a row of {n} cells where the statement describes {}", columns.len())));
    }
    let mut row = Vec::with_capacity(n);
    for column in columns {
        let length = body.i32().map_err(malformed)?;
        if length < 0 {
            row.push(crate::base::table::Value::Null);
            continue;
        }
        let raw = body.take(length as usize).map_err(malformed)?;
        let ty = column.as_ref().ok_or_else(|| OpError::client("a result column of a type dbsweep does not read"))?;
        let Cell(value) = Cell::from_sql(ty, raw).map_err(|e| OpError::client(format!("reading a {ty} cell: {e}")))?;
        row.push(value);
    }
    Ok(row)
}

/// A statement prepared on this session's connection.
struct Prepared {
    name: String,
    /// Parameter types, as the server described them.
    params: Vec<Type>,
    /// Result columns' types (`None`: a type the session does not decode).
    columns: Vec<Option<Type>>,
}

/// Whether a reply's cells are read (aggregates and answers), or its rows only counted.
fn reads_cells(reply: Reply) -> bool {
    matches!(reply, Reply::Count | Reply::Max(_) | Reply::Answer(_))
}

/// One PostgreSQL client session (see the module).
pub struct DirectSession {
    login: Arc<Login>,
    /// SQL run after each login (the hstore layout's `search_path`).
    setup: Option<String>,
    flavor: &'static Flavor,
    /// `None` after a request was cut off: log in again before the next.
    socket: Option<Socket>,
    statements: StatementCache<Arc<Prepared>>,
    /// Statements prepared on the current connection, for their names.
    prepared: u32,
}

impl DirectSession {
    /// A logged-in session with its common statements prepared.
    pub fn open(login: Arc<Login>, setup: Option<String>, flavor: &'static Flavor, tables: Arc<Vec<SqlTable>>) -> Result<Self, LoginError> {
        let mut session =
            DirectSession { login, setup, flavor, socket: None, statements: StatementCache::new(flavor.dialect, tables), prepared: 0 };
        session.reconnect()?;
        Ok(session)
    }

    /// Logs in (again), runs the setup and prepares the common statements.
    fn reconnect(&mut self) -> Result<(), LoginError> {
        self.socket = None;
        self.statements.take_all();
        self.prepared = 0;
        self.socket = Some(Socket::log_in(&self.login)?);
        if let Some(setup) = self.setup.clone() {
            self.simple(&setup).map_err(LoginError::Prepare)?;
        }
        let common = common_statements(self.flavor, &self.statements);
        self.prepare_all(&common).map_err(LoginError::Prepare)?;
        let timeout = self.login.request_timeout;
        self.socket.as_ref().expect("logged in").stream.set_timeout(timeout).map_err(LoginError::from)
    }

    /// What is to be sent on the current connection.
    fn out(&mut self) -> &mut BytesMut {
        &mut self.socket.as_mut().expect("logged in").out
    }

    /// The connection, logged in again first if the last request was cut off.
    fn socket(&mut self) -> Result<&mut Socket, OpError> {
        if self.socket.is_none() {
            self.reconnect().map_err(|e| match e {
                LoginError::Prepare(e) => e,
                e => OpError::connection(format!("logging in again after a cut-off request: {e}")),
            })?;
        }
        Ok(self.socket.as_mut().expect("logged in"))
    }

    /// A connection error: the request is cut off; a timeout also asks the server to
    /// cancel it. The connection is dropped (a new one is opened for the next request).
    fn cut_off(&mut self, e: io::Error) -> OpError {
        let timed_out = matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut);
        if let Some(socket) = self.socket.take()
            && timed_out
        {
            socket.cancel(&self.login);
        }
        if timed_out {
            OpError::new(ErrorClass::Timeout, format!("no reply within {:.1}s", self.login.request_timeout.as_secs_f64()))
        } else {
            OpError::connection(e)
        }
    }

    /// Sends what was written and reads `replies` replies (cells read where `columns`
    /// says); every reply is read, the first error is returned.
    fn exchange(&mut self, columns: &[Option<Arc<Prepared>>]) -> Result<Vec<Raw>, OpError> {
        let socket = self.socket.as_mut().expect("logged in");
        let mut outcome = || -> io::Result<Result<Vec<Raw>, OpError>> {
            socket.send()?;
            let mut raws = Vec::with_capacity(columns.len());
            let mut first_error = None;
            for prepared in columns {
                match socket.reply(prepared.as_ref().map(|p| p.columns.as_slice()))? {
                    Ok(raw) => raws.push(raw),
                    Err(e) => first_error = first_error.or(Some(e)),
                }
            }
            Ok(first_error.map_or(Ok(raws), Err))
        };
        match outcome() {
            Ok(result) => result,
            Err(e) => Err(self.cut_off(e)),
        }
    }

    /// Runs a simple query (transaction control, setup).
    fn simple(&mut self, sql: &str) -> Result<(), OpError> {
        self.socket()?;
        frontend::query(sql, self.out()).map_err(OpError::client)?;
        self.exchange(&[None]).map(drop)
    }

    /// Prepares statements not yet prepared on this connection, pipelined.
    fn prepare_all(&mut self, statements: &[Statement]) -> Result<(), OpError> {
        let missing: Vec<Statement> = statements.iter().filter(|s| self.statements.get(s).is_none()).copied().collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut names = Vec::with_capacity(missing.len());
        for statement in &missing {
            let text = self.statements.text(*statement)?;
            let types = param_types(&self.statements, self.flavor, *statement)?;
            let name = format!("s{}", self.prepared);
            self.prepared += 1;
            let out = self.out();
            frontend::parse(&name, &text, types.iter().map(Type::oid), out).map_err(OpError::client)?;
            frontend::describe(b'S', &name, out).map_err(OpError::client)?;
            frontend::sync(out);
            names.push(name);
        }
        let socket = self.socket.as_mut().expect("logged in");
        let described = (|| -> io::Result<Vec<Result<Prepared, OpError>>> {
            socket.send()?;
            names.into_iter().map(|name| read_description(socket, name)).collect()
        })();
        let described = match described {
            Ok(described) => described,
            Err(e) => return Err(self.cut_off(e)),
        };
        let mut first_error = None;
        for (statement, prepared) in missing.into_iter().zip(described) {
            match prepared {
                Ok(prepared) => self.statements.insert(statement, Arc::new(prepared)),
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// A prepared statement, prepared on first use.
    fn prepared(&mut self, statement: Statement) -> Result<Arc<Prepared>, OpError> {
        if let Some(prepared) = self.statements.get(&statement) {
            return Ok(prepared);
        }
        self.prepare_all(&[statement])?;
        Ok(self.statements.get(&statement).expect("just prepared"))
    }

    /// Writes one step's Bind, Execute and Sync.
    fn write_step(&mut self, step: &Step<'_>, prepared: &Prepared) -> Result<(), OpError> {
        match step.args {
            // A one-key statement (get, delete) binds its key as it is: nothing to allocate.
            Args::Key(key) => write_bind(self.out(), prepared, &[&key]),
            _ => {
                let params = bind(&self.statements, self.flavor, step)?;
                let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)).collect();
                write_bind(self.out(), prepared, &params)
            }
        }
    }

    /// Sends steps back to back and reads their replies; `framed`: between a `BEGIN` and
    /// a `COMMIT` sent with them.
    fn send_steps(&mut self, steps: &[Step<'_>], framed: bool) -> Result<Vec<Answered>, OpError> {
        self.socket()?;
        let statements: Vec<Statement> = steps.iter().map(|s| s.statement).collect();
        self.prepare_all(&statements)?;
        let mut replies = Vec::with_capacity(steps.len() + 2);
        if framed {
            frontend::query("BEGIN", self.out()).map_err(OpError::client)?;
            replies.push(None);
        }
        for step in steps {
            let prepared = self.statements.get(&step.statement).expect("prepared above");
            if let Err(e) = self.write_step(step, &prepared) {
                self.out().clear();
                return Err(e);
            }
            replies.push(reads_cells(step.reply).then_some(prepared));
        }
        if framed {
            frontend::query("COMMIT", self.out()).map_err(OpError::client)?;
            replies.push(None);
        }
        let mut raws = self.exchange(&replies)?;
        if framed {
            raws.pop();
            raws.remove(0);
        }
        steps.iter().zip(raws).map(|(step, raw)| answer(step, raw)).collect()
    }
}

/// Reads one Parse + Describe + Sync reply: the statement's parameter and column types, or
/// the server's error.
fn read_description(socket: &mut Socket, name: String) -> io::Result<Result<Prepared, OpError>> {
    let (mut params, mut columns, mut error) = (Vec::new(), Vec::new(), None);
    loop {
        let message = socket.receive()?;
        let mut body = Body(message.body);
        match message.tag {
            b't' => {
                for _ in 0..body.i16()? {
                    let oid = body.u32()?;
                    match Type::from_oid(oid) {
                        Some(ty) => params.push(ty),
                        None => error = error.or(Some(OpError::client(format!("a parameter of a type dbsweep does not bind (oid {oid})")))),
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

/// Bind (binary parameters, binary results), Execute and Sync of a prepared statement.
fn write_bind(out: &mut BytesMut, prepared: &Prepared, params: &[&(dyn ToSql + Sync)]) -> Result<(), OpError> {
    if params.len() != prepared.params.len() {
        return Err(OpError::client(format!("{} parameters for a statement of {}", params.len(), prepared.params.len())));
    }
    let formats = params.iter().zip(&prepared.params).map(|(p, ty)| p.encode_format(ty) as i16);
    let bound = frontend::bind(
        "",
        &prepared.name,
        formats,
        params.iter().zip(&prepared.params),
        |(param, ty), buf| match param.to_sql_checked(ty, buf)? {
            IsNull::Yes => Ok(postgres_protocol::IsNull::Yes),
            IsNull::No => Ok(postgres_protocol::IsNull::No),
        },
        Some(1),
        out,
    );
    if let Err(e) = bound {
        out.clear();
        return Err(OpError::client(match e {
            frontend::BindError::Conversion(e) => format!("binding a parameter: {e}"),
            frontend::BindError::Serialization(e) => format!("binding a parameter: {e}"),
        }));
    }
    frontend::execute("", 0, out).map_err(OpError::client)?;
    frontend::sync(out);
    Ok(())
}

#[async_trait]
impl Executor for DirectSession {
    async fn run(&mut self, step: &Step<'_>) -> Result<Answered, OpError> {
        self.socket()?;
        let prepared = self.prepared(step.statement)?;
        self.write_step(step, &prepared)?;
        let columns = reads_cells(step.reply).then_some(prepared);
        let raw = self.exchange(std::slice::from_ref(&columns))?.pop().expect("one reply");
        answer(step, raw)
    }

    /// Every statement sent before the first reply is read; every reply is read even
    /// after an error (the first error is reported).
    async fn run_all(&mut self, steps: &[Step<'_>]) -> Result<Vec<Answered>, OpError> {
        self.send_steps(steps, false)
    }

    async fn control(&mut self, sql: &str) -> Result<(), OpError> {
        self.simple(sql)
    }

    async fn run_text(&mut self, sql: &str, reads: bool) -> Result<Answered, OpError> {
        self.simple_rows(sql, reads)
    }

    /// `BEGIN; ...; COMMIT` as one pipeline: after a failed statement COMMIT only rolls
    /// back, and the first error is reported.
    async fn transaction(&mut self, steps: &[Step<'_>], _writes: bool) -> Result<Vec<Answered>, OpError> {
        self.send_steps(steps, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tags_name_their_rows() {
        assert_eq!(rows_in_tag(b"SELECT 3\0"), Some(3));
        assert_eq!(rows_in_tag(b"INSERT 0 12\0"), Some(12));
        assert_eq!(rows_in_tag(b"DELETE 0\0"), Some(0));
        assert_eq!(rows_in_tag(b"BEGIN\0"), None);
    }

    #[test]
    fn an_error_response_reads_as_severity_code_and_message() {
        let body = b"SERROR\0VERROR\0C23505\0Mduplicate key value\0\0";
        let e = server_error(body);
        assert_eq!(e.class, ErrorClass::Server);
        assert_eq!(e.message, "ERROR 23505: duplicate key value");
    }

    #[test]
    fn a_data_row_decodes_in_its_columns_types_and_nulls_stay_null() {
        use crate::base::table::Value;
        let mut body = Vec::new();
        body.extend(3i16.to_be_bytes());
        body.extend(8i32.to_be_bytes());
        body.extend(42i64.to_be_bytes());
        body.extend((-1i32).to_be_bytes());
        body.extend(2i32.to_be_bytes());
        body.extend(b"hi");
        let columns = [Some(Type::INT8), Some(Type::FLOAT8), Some(Type::TEXT)];
        assert_eq!(decode_row(&body, &columns).unwrap(), vec![Value::Int(42), Value::Null, Value::Text("hi".into())]);
        assert!(decode_row(&body, &columns[..2]).is_err(), "a row wider than its description is an error");
    }
}
