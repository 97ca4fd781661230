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
//! statements. Messages are encoded by `postgres_protocol` (tokio-postgres's own encoder,
//! `wire`); replies are read in place from the receive buffer (`socket`). Rows that only
//! count are read from CommandComplete's tag; the cells of aggregates and query answers are
//! decoded by `encode::Cell`.
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
mod socket;
mod wire;

pub use self::socket::Login;
use self::socket::Socket;
use self::wire::write_bind;
use super::Flavor;
use super::session::{Raw, answer, bind, common_statements, param_types};
use crate::adapter::sql::connection::{Executor, StatementCache};
use crate::adapter::sql::dialect::SqlTable;
use crate::adapter::sql::plan::{Answered, Args, Reply, Step};
use crate::adapter::sql::statement::Statement;
use crate::base::op::{ErrorClass, OpError};
use async_trait::async_trait;
use bytes::BytesMut;
use postgres_protocol::message::frontend;
use std::io;
use std::sync::Arc;
use tokio_postgres::types::{ToSql, Type};

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

    /// Sends what was written and reads its one reply (its cells read in `columns`' types
    /// when given): a single statement's request, with nothing to collect.
    fn exchange_one(&mut self, columns: Option<&[Option<Type>]>) -> Result<Raw, OpError> {
        let socket = self.socket.as_mut().expect("logged in");
        match socket.send().and_then(|()| socket.reply(columns)) {
            Ok(result) => result,
            Err(e) => Err(self.cut_off(e)),
        }
    }

    /// Runs a simple query (transaction control, setup).
    fn simple(&mut self, sql: &str) -> Result<(), OpError> {
        self.socket()?;
        frontend::query(sql, self.out()).map_err(OpError::client)?;
        self.exchange_one(None).map(drop)
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
            names.into_iter().map(|name| socket.description(name)).collect()
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

#[async_trait]
impl Executor for DirectSession {
    async fn run(&mut self, step: &Step<'_>) -> Result<Answered, OpError> {
        self.socket()?;
        let prepared = self.prepared(step.statement)?;
        self.write_step(step, &prepared)?;
        let columns = reads_cells(step.reply).then_some(prepared.columns.as_slice());
        let raw = self.exchange_one(columns)?;
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
