//! The safe MonetDBe binding's connections: opening the process's one database, connecting
//! clients on their threads, running SQL text and prepared statements, appending columns,
//! and MonetDB's errors. Every `unsafe` call keeps a rule of the library listed in `ffi`
//! (rules 1-7). Must not know dbsweep's tables, statements or ops, and must not time
//! anything.

use super::ffi as sys;
use super::values::{AppendColumn, Bound, Param, Rows};
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::fmt;
use std::path::Path;
use std::ptr;
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};

/// The version of libmonetdbe (MonetDBe's own numbering; the wheel is MonetDB 11.41).
pub fn library_version() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string.
    unsafe { CStr::from_ptr(sys::monetdbe_version()) }.to_string_lossy().into_owned()
}

/// An error MonetDB reported (`Type:function:SQLSTATE!message`, as MonetDB writes them), or
/// one found before calling it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonetError {
    pub message: String,
}

impl MonetError {
    pub(super) fn new(message: impl Into<String>) -> Self {
        MonetError { message: message.into() }
    }

    /// Copies an error string of the library; `None` for a null pointer (success).
    ///
    /// SAFETY: `raw` is null or a NUL-terminated string that stays valid during this call.
    pub(super) unsafe fn from_raw(raw: *const c_char) -> Option<Self> {
        (!raw.is_null()).then(|| MonetError::new(unsafe { CStr::from_ptr(raw) }.to_string_lossy().trim_end().to_string()))
    }

    /// The SQLSTATE MonetDB put before `!`, if any (`40000` for a transaction that had to
    /// roll back, `42S02` for a missing table...).
    pub fn sqlstate(&self) -> Option<&str> {
        let (head, _) = self.message.split_once('!')?;
        let state = head.rsplit(':').next()?;
        (state.len() == 5 && state.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(state)
    }

    /// True when MonetDB aborted the transaction because a concurrent one wrote the same
    /// data first (optimistic concurrency control); retrying the transaction is the cure.
    pub fn is_conflict(&self) -> bool {
        self.message.contains("concurrency conflict")
    }
}

impl fmt::Display for MonetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MonetError {}

/// Where the database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// In memory, gone when the last connection closes.
    Memory,
    /// A database directory (created when missing).
    Directory(std::path::PathBuf),
}

/// Start-up settings (they apply when the first connection starts the database).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Worker threads of one query; 0 lets MonetDB use every core.
    pub threads: u32,
    /// Memory limit in MiB; 0 for MonetDB's default.
    pub memory_limit_mib: u32,
}

/// The process's one open database: its location while any connection is open.
static OPEN_DATABASE: Mutex<Option<Location>> = Mutex::new(None);

/// Holds the process-wide slot for as long as any connection to the database lives.
struct Claim {
    location: Location,
    url: Option<CString>,
    options: Options,
}

impl Drop for Claim {
    fn drop(&mut self) {
        *OPEN_DATABASE.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// One MonetDBe connection (a MonetDB client) with its prepared statements.
pub struct Connection {
    /// Null after a failed reopen (the next call tries again).
    pub(super) handle: sys::monetdbe_database,
    /// The thread that opened `handle`: the only one that may use it.
    thread: ThreadId,
    /// Prepared statements by SQL text; cleaned up before the handle closes.
    statements: HashMap<String, *mut sys::monetdbe_statement>,
    /// Dropped after `handle` is closed (see `Drop`): frees the process slot last.
    claim: Arc<Claim>,
}

// SAFETY: the handle is used only on the thread that opened it (`handle()` reopens it on
// any other thread), and `&mut self` on every call keeps calls from overlapping. Closing
// and cleaning up from another thread is what the library allows (it takes its own lock).
unsafe impl Send for Connection {}

impl Connection {
    /// Opens the process's database at `location` and a first connection to it. Refused
    /// while another database (or another `open` of any location) holds the process.
    pub fn open(location: Location, options: Options) -> Result<Connection, MonetError> {
        let mut open = OPEN_DATABASE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(other) = open.as_ref() {
            return Err(MonetError::new(format!(
                "MonetDBe runs one database per process and {} is already open; use one monetdb target per run",
                describe(other)
            )));
        }
        let url = match &location {
            Location::Memory => None,
            Location::Directory(dir) => Some(path_cstring(dir)?),
        };
        let handle = open_handle(url.as_ref(), options)?;
        *open = Some(location.clone());
        // The claim frees the slot when dropped: made only once the slot is taken.
        let claim = Arc::new(Claim { location, url, options });
        Ok(Connection { handle, thread: thread::current().id(), statements: HashMap::new(), claim })
    }

    /// A handle that opens more connections to this database, from any thread.
    pub fn database(&self) -> Database {
        Database { claim: self.claim.clone() }
    }

    /// Where this connection's database lives.
    pub fn location(&self) -> &Location {
        &self.claim.location
    }

    /// The handle, valid on this thread. A MonetDB client belongs to the thread that
    /// opened it (it checks stack depth against that thread's stack: elsewhere queries
    /// fail with "running out of stack space" or unknown identifiers), so a connection that
    /// moved is closed and opened again here; one that moved inside a transaction reports
    /// the lost transaction instead.
    fn handle(&mut self) -> Result<sys::monetdbe_database, MonetError> {
        let here = thread::current().id();
        if self.thread == here && !self.handle.is_null() {
            return Ok(self.handle);
        }
        // SAFETY: reads the client's transaction flag (no stack check involved).
        let lost = !self.handle.is_null() && unsafe { sys::monetdbe_in_transaction(self.handle) } != 0;
        // The new client first: closing the only one would shut the database down.
        let fresh = open_handle(self.claim.url.as_ref(), self.claim.options)?;
        self.close();
        self.handle = fresh;
        self.thread = here;
        if lost {
            return Err(MonetError::new(
                "the MonetDBe connection moved to another thread inside a transaction; the transaction was rolled back",
            ));
        }
        Ok(self.handle)
    }

    /// Drops the cached statements without cleaning them up: a schema change (any
    /// statement run by `query` may be one) and a failed execution free the statements'
    /// plans in MonetDB, and `monetdbe_cleanup_statement` would free them again. The small
    /// statement records are leaked instead.
    fn forget_statements(&mut self) {
        self.statements.clear();
    }

    /// Cleans up the statements and closes the handle (it becomes null).
    fn close(&mut self) {
        if self.handle.is_null() {
            return;
        }
        for (_, stmt) in self.statements.drain() {
            // SAFETY: prepared on this still-open handle, cleaned up exactly once.
            unsafe { sys::monetdbe_cleanup_statement(self.handle, stmt) };
        }
        // SAFETY: no result of this handle is alive (`Rows` borrows the connection), so it
        // can close; it is never used again.
        unsafe { sys::monetdbe_close(self.handle) };
        self.handle = ptr::null_mut();
    }

    /// Runs SQL text without parameters; `Rows` holds the result set, if any.
    pub fn query(&mut self, sql: &str) -> Result<Rows<'_>, MonetError> {
        let text = sql_cstring(sql)?;
        let handle = self.handle()?;
        let (mut result, mut affected) = (ptr::null_mut(), -1);
        // SAFETY: a live handle of this thread, a NUL-terminated text that outlives the
        // call, out-pointers to locals; the error string is copied before any other call.
        let error = unsafe { MonetError::from_raw(sys::monetdbe_query(handle, text.as_ptr().cast_mut(), &mut result, &mut affected)) };
        // A failed COMMIT (a concurrency conflict) rolls back and frees the plans too.
        if !is_transaction_control(sql) || error.is_some() {
            self.forget_statements();
        }
        self.rows(error, result, affected)
    }

    /// Runs SQL text that returns no rows (DDL, transaction control); rows changed.
    pub fn execute(&mut self, sql: &str) -> Result<i64, MonetError> {
        Ok(self.query(sql)?.affected())
    }

    /// Runs a statement prepared once per connection and text (kept until the connection
    /// closes), with `params` bound in the types the statement declares.
    pub fn prepared(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Rows<'_>, MonetError> {
        let handle = self.handle()?;
        let stmt = self.statement(handle, sql)?;
        // SAFETY: `stmt` came from `monetdbe_prepare` on this connection and is not cleaned
        // up before the connection closes; `nparam` and `type_` describe its parameters.
        let types: Vec<c_int> = unsafe {
            let s = &*stmt;
            if s.nparam == 0 { Vec::new() } else { std::slice::from_raw_parts(s.type_, s.nparam).to_vec() }
        };
        if types.len() != params.len() {
            return Err(MonetError::new(format!("statement takes {} parameters, {} given: {sql}", types.len(), params.len())));
        }
        // Every bound value lives here until `monetdbe_execute` returns (strings are bound
        // by pointer).
        let mut bound: Vec<Bound> = Vec::with_capacity(params.len());
        for (i, (param, ty)) in params.iter().zip(types).enumerate() {
            bound.push(Bound::new(param, ty).map_err(|e| MonetError::new(format!("parameter {}: {}", i + 1, e.message)))?);
        }
        for (i, value) in bound.iter_mut().enumerate() {
            let data = if let Bound::Nil(ty) = value {
                // SAFETY: a live handle; the null value is static in the library, and
                // `monetdbe_bind` copies fixed-size values.
                unsafe { sys::monetdbe_null(handle, *ty) }.cast_mut()
            } else {
                value.as_ptr()
            };
            // SAFETY: `i < nparam`; `data` points to a value of the declared type that
            // outlives the execution (it is in `bound`).
            if let Some(e) = unsafe { MonetError::from_raw(sys::monetdbe_bind(stmt, data, i)) } {
                return Err(e);
            }
        }
        let (mut result, mut affected) = (ptr::null_mut(), -1);
        // SAFETY: every parameter is bound to live values; out-pointers to locals.
        let error = unsafe { MonetError::from_raw(sys::monetdbe_execute(stmt, &mut result, &mut affected)) };
        drop(bound);
        if error.is_some() {
            // A failed execution leaves MonetDB's plan freed: running it again crashes.
            self.forget_statements();
        }
        self.rows(error, result, affected)
    }

    /// Appends rows to `schema.table` (every column, in table order, same row count).
    pub fn append(&mut self, schema: &str, table: &str, columns: &[AppendColumn]) -> Result<(), MonetError> {
        let count = columns.first().map_or(0, AppendColumn::len);
        if columns.iter().any(|c| c.len() != count) {
            return Err(MonetError::new("append: columns of different lengths"));
        }
        if count == 0 {
            return Ok(());
        }
        let (schema, table) = (sql_cstring(schema)?, sql_cstring(table)?);
        let handle = self.handle()?;
        // Text columns as `char*` arrays pointing into `columns`, a null pointer for NULL
        // (MonetDB copies the strings).
        let text_pointers: Vec<Vec<*const c_char>> = columns
            .iter()
            .map(|c| match c {
                AppendColumn::Text(values) => values.iter().map(|v| v.as_deref().map_or(ptr::null(), CStr::as_ptr)).collect(),
                _ => Vec::new(),
            })
            .collect();
        let mut raw: Vec<sys::monetdbe_column> = columns
            .iter()
            .zip(&text_pointers)
            .map(|(c, texts)| {
                let (type_, data) = match c {
                    AppendColumn::Int64(v) => (sys::INT64, v.as_ptr().cast::<c_void>()),
                    AppendColumn::Double(v) => (sys::DOUBLE, v.as_ptr().cast()),
                    AppendColumn::Text(_) => (sys::STR, texts.as_ptr().cast()),
                    AppendColumn::Date(v) => (sys::DATE, v.as_ptr().cast()),
                };
                sys::monetdbe_column { type_, data: data.cast_mut(), count, name: ptr::null_mut() }
            })
            .collect();
        let mut pointers: Vec<*mut sys::monetdbe_column> = raw.iter_mut().map(|c| c as *mut _).collect();
        // SAFETY: a live handle; every column array has `count` elements of the declared
        // type and outlives the call (MonetDB copies the values into the table).
        let error = unsafe { sys::monetdbe_append(handle, schema.as_ptr(), table.as_ptr(), pointers.as_mut_ptr(), pointers.len()) };
        // SAFETY: null or this connection's error string, copied before the next call.
        unsafe { MonetError::from_raw(error) }.map_or(Ok(()), Err)
    }

    /// The statement prepared for `sql` on `handle` (this connection's, on this thread).
    fn statement(&mut self, handle: sys::monetdbe_database, sql: &str) -> Result<*mut sys::monetdbe_statement, MonetError> {
        if let Some(&stmt) = self.statements.get(sql) {
            return Ok(stmt);
        }
        let text = sql_cstring(sql)?;
        let mut stmt = ptr::null_mut();
        // SAFETY: a live handle, a NUL-terminated text, an out-pointer to a local.
        if let Some(e) = unsafe { MonetError::from_raw(sys::monetdbe_prepare(handle, text.as_ptr().cast_mut(), &mut stmt)) } {
            return Err(e);
        }
        if stmt.is_null() {
            return Err(MonetError::new(format!("MonetDB prepared no statement for: {sql}")));
        }
        self.statements.insert(sql.to_string(), stmt);
        Ok(stmt)
    }

    fn rows(&mut self, error: Option<MonetError>, result: *mut sys::monetdbe_result, affected: i64) -> Result<Rows<'_>, MonetError> {
        let rows = Rows { conn: self, result, affected };
        match error {
            Some(e) => Err(e),
            None => Ok(rows),
        }
    }
}

impl Drop for Connection {
    /// `claim` drops after this, freeing the process slot when no connection remains.
    fn drop(&mut self) {
        self.close();
    }
}

/// Opens connections to the claimed database (keeps it claimed, not open).
#[derive(Clone)]
pub struct Database {
    claim: Arc<Claim>,
}

impl Database {
    /// A new connection, bound to the calling thread.
    pub fn connect(&self) -> Result<Connection, MonetError> {
        let handle = open_handle(self.claim.url.as_ref(), self.claim.options)?;
        Ok(Connection { handle, thread: thread::current().id(), statements: HashMap::new(), claim: self.claim.clone() })
    }
}

fn open_handle(url: Option<&CString>, options: Options) -> Result<sys::monetdbe_database, MonetError> {
    let int = |v: u32| c_int::try_from(v).map_err(|_| MonetError::new(format!("option {v} out of range")));
    let mut options = sys::monetdbe_options {
        memorylimit: int(options.memory_limit_mib)?,
        querytimeout: 0,
        sessiontimeout: 0,
        nr_threads: int(options.threads)?,
        remote: ptr::null_mut(),
        mapi_server: ptr::null_mut(),
        trace_file: ptr::null(),
    };
    let url = url.map_or(ptr::null_mut(), |u| u.as_ptr().cast_mut());
    let mut handle = ptr::null_mut();
    // SAFETY: `url` is null (in memory) or a NUL-terminated path that outlives the call;
    // the options struct matches the header and is only read.
    let rc = unsafe { sys::monetdbe_open(&mut handle, url, &mut options) };
    if rc == 0 {
        return Ok(handle);
    }
    // SAFETY: on failure the handle (when set) still carries the error; it is closed after
    // the message is copied.
    let message = unsafe {
        let e = if handle.is_null() { None } else { MonetError::from_raw(sys::monetdbe_error(handle)) };
        if !handle.is_null() {
            sys::monetdbe_close(handle);
        }
        e
    };
    Err(message.unwrap_or_else(|| MonetError::new(format!("monetdbe_open failed ({rc})"))))
}

/// Statements that only open or end a transaction (they leave the query cache alone).
fn is_transaction_control(sql: &str) -> bool {
    let sql = sql.trim();
    ["START TRANSACTION", "BEGIN", "COMMIT", "ROLLBACK"].iter().any(|c| sql.eq_ignore_ascii_case(c))
}

fn describe(location: &Location) -> String {
    match location {
        Location::Memory => "an in-memory database".to_string(),
        Location::Directory(dir) => format!("the database in {}", dir.display()),
    }
}

fn sql_cstring(text: &str) -> Result<CString, MonetError> {
    CString::new(text).map_err(|_| MonetError::new("SQL text with a NUL byte"))
}

fn path_cstring(path: &Path) -> Result<CString, MonetError> {
    let text = path.to_str().ok_or_else(|| MonetError::new(format!("{} is not UTF-8", path.display())))?;
    CString::new(text).map_err(|_| MonetError::new(format!("{} has a NUL byte", path.display())))
}

/// Serializes the unit tests that open a database (one per process).
#[cfg(test)]
pub(crate) fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static TESTS: Mutex<()> = Mutex::new(());
    TESTS.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
