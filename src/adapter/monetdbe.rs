//! The MonetDBe binding: embedded MonetDB 11.41 (Jul2021) through `libmonetdbe`'s C API, as
//! the PyPI wheel `monetdbe` 0.11 ships it (`scripts/setup-embedded` installs it, `build.rs`
//! links it). No Rust crate exists; the dozen functions used are declared here from the
//! wheel's sdist (`monetdbe/_cffi/embed.h.j2`, rendered for Jul2021 with 128-bit integers,
//! which this build has: `monetdbe_int128_t` shifts every later type code by one).
//!
//! Owns every `unsafe` of the MonetDB adapter and the library's rules, kept by the types:
//! - One database per process. `monetdbe_open` with another location while one is open
//!   fails, and every open of the same location joins the same database (two throwaway
//!   in-memory "databases" would share tables). `Connection::open` therefore claims a
//!   process-wide slot and refuses while it is held; `Database::connect` opens further
//!   connections to the claimed database. The slot is freed when the last connection
//!   closes, which is also when MonetDB shuts the database down (an in-memory one is gone).
//! - A connection (a MonetDB client) belongs to the thread that opened it: used from
//!   another thread its queries fail (it measures stack depth against the opener's stack).
//!   `Connection` checks the thread on every call and opens itself again on a new one
//!   (reporting a transaction lost on the way); the runner gives each embedded client one
//!   thread, so runs never move. It serves one call at a time: `Send`, not `Sync`, `&mut
//!   self` on every call. Connections on different threads run at once (the library locks
//!   what it shares).
//! - An error string belongs to the connection and is freed by its next call: it is copied
//!   into `MonetError` at once.
//! - A result set stays valid until `monetdbe_cleanup_result` on the connection that made
//!   it; its columns (and their strings) live as long as the result. `Rows` borrows the
//!   connection mutably for its whole life (no other call can run meanwhile), `Column` and
//!   `Cell` borrow the `Rows`, and dropping `Rows` cleans the result up.
//! - A prepared statement belongs to its connection: `Connection` owns them (cached by
//!   text) and cleans them up before it closes. A schema change (DDL) frees the plans of
//!   the connection's prepared statements; executing one then crashes, so every statement
//!   run through `query` (other than transaction control) forgets the cache; so does a
//!   failed execution (which frees the plans as well). `monetdbe_bind` of a string keeps the
//!   pointer, not a copy: the bound strings live in the call until `monetdbe_execute`
//!   returns. Every parameter is bound before each execution, in the type the statement
//!   declares (`monetdbe_statement.type`).
//! - `monetdbe_append` reads plain arrays of the column's storage type (`int64_t` for
//!   `BIGINT` and `DECIMAL(15,2)` as its unscaled value, `double`, `char*`, the date struct);
//!   the arrays live until it returns. In 11.41 it refuses tables with key constraints (add
//!   the key after the load). A `NULL` parameter is bound as the library's nil value
//!   (`monetdbe_null`; a null pointer for strings).
//!
//! Must not know dbsweep's tables, statements or ops (the adapter does), and must not time
//! anything.

use crate::base::table::Date;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::fmt;
use std::path::Path;
use std::ptr;
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};

/// The raw C API of libmonetdbe (Jul2021, `HAVE_HGE`).
#[allow(non_camel_case_types)]
mod sys {
    use std::ffi::{c_char, c_int, c_void};

    pub type monetdbe_database = *mut c_void;
    pub type monetdbe_cnt = i64;

    // `monetdbe_types`, as this build numbers them.
    pub const BOOL: c_int = 0;
    pub const INT8: c_int = 1;
    pub const INT16: c_int = 2;
    pub const INT32: c_int = 3;
    pub const INT64: c_int = 4;
    pub const INT128: c_int = 5;
    pub const SIZE_T: c_int = 6;
    pub const FLOAT: c_int = 7;
    pub const DOUBLE: c_int = 8;
    pub const STR: c_int = 9;
    pub const DATE: c_int = 11;

    #[repr(C)]
    pub struct monetdbe_result {
        pub nrows: monetdbe_cnt,
        pub ncols: usize,
        pub name: *mut c_char,
        pub last_id: monetdbe_cnt,
    }

    /// `monetdbe_column_<type>`: the generic `monetdbe_column` (type, data, count, name)
    /// followed by the typed null value, the decimal scale (10^digits) and a null test.
    #[repr(C)]
    pub struct monetdbe_column_typed<T> {
        pub type_: c_int,
        pub data: *mut T,
        pub count: usize,
        pub name: *mut c_char,
        pub null_value: T,
        pub scale: f64,
        pub is_null: Option<unsafe extern "C" fn(*mut T) -> c_int>,
    }

    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct monetdbe_data_date {
        pub day: u8,
        pub month: u8,
        pub year: i16,
    }

    #[repr(C)]
    pub struct monetdbe_statement {
        pub nparam: usize,
        pub type_: *mut c_int,
    }

    #[repr(C)]
    pub struct monetdbe_options {
        pub memorylimit: c_int,
        pub querytimeout: c_int,
        pub sessiontimeout: c_int,
        pub nr_threads: c_int,
        pub remote: *mut c_void,
        pub mapi_server: *mut c_void,
        pub trace_file: *const c_char,
    }

    /// The column handed to `monetdbe_append` (the generic `monetdbe_column`).
    #[repr(C)]
    pub struct monetdbe_column {
        pub type_: c_int,
        pub data: *mut c_void,
        pub count: usize,
        pub name: *mut c_char,
    }

    #[link(name = "monetdbe")]
    unsafe extern "C" {
        pub fn monetdbe_version() -> *const c_char;
        pub fn monetdbe_open(db: *mut monetdbe_database, url: *mut c_char, opts: *mut monetdbe_options) -> c_int;
        pub fn monetdbe_close(db: monetdbe_database) -> c_int;
        pub fn monetdbe_error(db: monetdbe_database) -> *mut c_char;
        pub fn monetdbe_in_transaction(db: monetdbe_database) -> c_int;
        pub fn monetdbe_query(
            db: monetdbe_database,
            query: *mut c_char,
            result: *mut *mut monetdbe_result,
            affected_rows: *mut monetdbe_cnt,
        ) -> *mut c_char;
        pub fn monetdbe_result_fetch(result: *mut monetdbe_result, column: *mut *mut c_void, index: usize) -> *mut c_char;
        pub fn monetdbe_cleanup_result(db: monetdbe_database, result: *mut monetdbe_result) -> *mut c_char;
        pub fn monetdbe_prepare(db: monetdbe_database, query: *mut c_char, stmt: *mut *mut monetdbe_statement) -> *mut c_char;
        pub fn monetdbe_bind(stmt: *mut monetdbe_statement, data: *mut c_void, index: usize) -> *mut c_char;
        pub fn monetdbe_execute(
            stmt: *mut monetdbe_statement,
            result: *mut *mut monetdbe_result,
            affected_rows: *mut monetdbe_cnt,
        ) -> *mut c_char;
        pub fn monetdbe_cleanup_statement(db: monetdbe_database, stmt: *mut monetdbe_statement) -> *mut c_char;
        pub fn monetdbe_append(
            db: monetdbe_database,
            schema: *const c_char,
            table: *const c_char,
            input: *mut *mut monetdbe_column,
            column_count: usize,
        ) -> *mut c_char;
        pub fn monetdbe_null(db: monetdbe_database, type_: c_int) -> *const c_void;
    }
}

/// MonetDB's string nil (what `NULL` is inside a string column).
const STR_NIL: &CStr = c"\u{80}";

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
    fn new(message: impl Into<String>) -> Self {
        MonetError { message: message.into() }
    }

    /// Copies an error string of the library; `None` for a null pointer (success).
    ///
    /// SAFETY: `raw` is null or a NUL-terminated string that stays valid during this call.
    unsafe fn from_raw(raw: *const c_char) -> Option<Self> {
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
    handle: sys::monetdbe_database,
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

/// A value to bind to a statement parameter; it is converted to the type the statement
/// declares for that parameter (an integer to a narrower integer when it fits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Param<'a> {
    Null,
    /// Also a decimal's unscaled value (hundredths for `DECIMAL(15,2)`).
    Int(i64),
    Double(f64),
    Text(&'a str),
    Date(Date),
}

/// A parameter value in the parameter's C type, alive until the statement ran.
enum Bound {
    Nil(c_int),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    I128(i128),
    F32(f32),
    F64(f64),
    Text(CString),
    Date(sys::monetdbe_data_date),
}

impl Bound {
    fn new(param: &Param<'_>, ty: c_int) -> Result<Bound, MonetError> {
        let narrow = |v: i64| MonetError::new(format!("{v} does not fit the parameter's integer type"));
        Ok(match (*param, ty) {
            (Param::Null, ty) => Bound::Nil(ty),
            (Param::Int(v), sys::INT8 | sys::BOOL) => Bound::I8(i8::try_from(v).map_err(|_| narrow(v))?),
            (Param::Int(v), sys::INT16) => Bound::I16(i16::try_from(v).map_err(|_| narrow(v))?),
            (Param::Int(v), sys::INT32) => Bound::I32(i32::try_from(v).map_err(|_| narrow(v))?),
            (Param::Int(v), sys::INT64) => Bound::I64(v),
            (Param::Int(v), sys::INT128) => Bound::I128(i128::from(v)),
            (Param::Int(v), sys::DOUBLE) => Bound::F64(v as f64),
            (Param::Double(v), sys::DOUBLE) => Bound::F64(v),
            (Param::Double(v), sys::FLOAT) => Bound::F32(v as f32),
            (Param::Text(s), sys::STR) => Bound::Text(CString::new(s).map_err(|_| MonetError::new("text with a NUL byte"))?),
            (Param::Date(d), sys::DATE) => Bound::Date(date_struct(d)?),
            (param, ty) => return Err(MonetError::new(format!("cannot bind {param:?} to a parameter of MonetDB type {ty}"))),
        })
    }

    fn as_ptr(&mut self) -> *mut c_void {
        match self {
            Bound::Nil(_) => ptr::null_mut(),
            Bound::I8(v) => (v as *mut i8).cast(),
            Bound::I16(v) => (v as *mut i16).cast(),
            Bound::I32(v) => (v as *mut i32).cast(),
            Bound::I64(v) => (v as *mut i64).cast(),
            Bound::I128(v) => (v as *mut i128).cast(),
            Bound::F32(v) => (v as *mut f32).cast(),
            Bound::F64(v) => (v as *mut f64).cast(),
            Bound::Text(s) => s.as_ptr().cast_mut().cast(),
            Bound::Date(d) => (d as *mut sys::monetdbe_data_date).cast(),
        }
    }
}

fn date_struct(date: Date) -> Result<sys::monetdbe_data_date, MonetError> {
    let (year, month, day) = date.to_civil();
    let year = i16::try_from(year).map_err(|_| MonetError::new(format!("date {} out of MonetDB's range", date.to_iso())))?;
    Ok(sys::monetdbe_data_date { day: day as u8, month: month as u8, year })
}

/// One column for `Connection::append`; `None` is SQL `NULL`.
#[derive(Debug, Clone, PartialEq)]
pub enum AppendColumn {
    /// `BIGINT`, or a `DECIMAL(15,2)` as unscaled hundredths (`i64::MIN` is MonetDB's nil).
    Int64(Vec<i64>),
    /// `DOUBLE` (NaN is MonetDB's nil).
    Double(Vec<f64>),
    Text(Vec<Option<CString>>),
    Date(Vec<AppendDate>),
}

/// A date in an append column (MonetDB's date struct); `AppendDate::NULL` is nil.
#[derive(Clone, Copy)]
pub struct AppendDate(sys::monetdbe_data_date);

impl AppendDate {
    /// MonetDB's nil date in the struct form (`date_nil` converted by MonetDBe).
    pub const NULL: AppendDate = AppendDate(sys::monetdbe_data_date { day: 0, month: 0, year: i16::MIN });

    pub fn new(date: Date) -> Result<AppendDate, MonetError> {
        date_struct(date).map(AppendDate)
    }
}

impl fmt::Debug for AppendDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.0.year, self.0.month, self.0.day)
    }
}

impl PartialEq for AppendDate {
    fn eq(&self, other: &Self) -> bool {
        (self.0.year, self.0.month, self.0.day) == (other.0.year, other.0.month, other.0.day)
    }
}

impl AppendColumn {
    pub fn len(&self) -> usize {
        match self {
            AppendColumn::Int64(v) => v.len(),
            AppendColumn::Double(v) => v.len(),
            AppendColumn::Text(v) => v.len(),
            AppendColumn::Date(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The outcome of one statement: its result set (none for DDL and changes) and the rows
/// changed. Borrows the connection until dropped, which frees the result.
pub struct Rows<'c> {
    conn: &'c mut Connection,
    result: *mut sys::monetdbe_result,
    affected: i64,
}

impl Rows<'_> {
    /// Rows changed by an insert, update or delete (-1 when the statement reports none).
    pub fn affected(&self) -> i64 {
        self.affected
    }

    /// Rows in the result set (0 without one).
    pub fn len(&self) -> usize {
        // SAFETY: a result of this connection, alive until `drop`.
        if self.result.is_null() { 0 } else { usize::try_from(unsafe { (*self.result).nrows }).unwrap_or(0) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Columns in the result set (0 without one).
    pub fn width(&self) -> usize {
        // SAFETY: as in `len`.
        if self.result.is_null() { 0 } else { unsafe { (*self.result).ncols } }
    }

    /// Column `index` of the result set (converted by MonetDB on first fetch).
    pub fn column(&self, index: usize) -> Result<Column<'_>, MonetError> {
        if index >= self.width() {
            return Err(MonetError::new(format!("column {index} of a result with {} columns", self.width())));
        }
        let mut raw: *mut c_void = ptr::null_mut();
        // SAFETY: a live result and an index in range; the column belongs to the result
        // and lives until it is cleaned up, which `Column`'s borrow of `self` outlasts.
        if let Some(e) = unsafe { MonetError::from_raw(sys::monetdbe_result_fetch(self.result, &mut raw, index)) } {
            return Err(e);
        }
        if raw.is_null() {
            return Err(MonetError::new(format!("MonetDB returned no column {index}")));
        }
        // SAFETY: every `monetdbe_column_<type>` starts with the type code.
        let ty = unsafe { *raw.cast::<c_int>() };
        Ok(Column { raw, ty, len: self.len(), _rows: std::marker::PhantomData })
    }
}

impl Drop for Rows<'_> {
    fn drop(&mut self) {
        if !self.result.is_null() {
            // SAFETY: made by this connection, cleaned up once; no `Column` outlives `self`.
            unsafe { sys::monetdbe_cleanup_result(self.conn.handle, self.result) };
        }
    }
}

/// One column of a result set.
pub struct Column<'r> {
    raw: *mut c_void,
    ty: c_int,
    len: usize,
    _rows: std::marker::PhantomData<&'r ()>,
}

/// One value of a result set, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'r> {
    Null,
    /// Any integer type; `scale` is the number of decimal digits (2 for `DECIMAL(15,2)`,
    /// 0 for integers), `value` the unscaled number.
    Int {
        value: i128,
        scale: u32,
    },
    Double(f64),
    Text(&'r str),
    Date(Date),
}

impl<'r> Column<'r> {
    /// Reads row `row`; `None` past the end or for a type dbsweep never reads (blobs,
    /// times, timestamps).
    pub fn get(&self, row: usize) -> Option<Cell<'r>> {
        if row >= self.len {
            return None;
        }
        // SAFETY (every arm): `raw` is a `monetdbe_column_<type>` of the type code `ty`,
        // whose `data` has `len` elements (the result's row count) alive as long as the
        // result, which outlives `'r`.
        unsafe {
            Some(match self.ty {
                sys::BOOL | sys::INT8 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i8>>(), row),
                sys::INT16 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i16>>(), row),
                sys::INT32 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i32>>(), row),
                sys::INT64 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i64>>(), row),
                sys::INT128 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i128>>(), row),
                sys::SIZE_T => int_cell(self.raw.cast::<sys::monetdbe_column_typed<usize>>(), row),
                sys::FLOAT => {
                    let v = *(*self.raw.cast::<sys::monetdbe_column_typed<f32>>()).data.add(row);
                    if v.is_nan() { Cell::Null } else { Cell::Double(f64::from(v)) }
                }
                sys::DOUBLE => {
                    let v = *(*self.raw.cast::<sys::monetdbe_column_typed<f64>>()).data.add(row);
                    if v.is_nan() { Cell::Null } else { Cell::Double(v) }
                }
                sys::STR => {
                    let column = &*self.raw.cast::<sys::monetdbe_column_typed<*mut c_char>>();
                    let s = *column.data.add(row);
                    if s.is_null() {
                        return Some(Cell::Null);
                    }
                    let bytes = CStr::from_ptr(s).to_bytes();
                    if bytes == STR_NIL.to_bytes() {
                        Cell::Null
                    } else {
                        // MonetDB stores UTF-8 only (it validates text on the way in).
                        Cell::Text(std::str::from_utf8(bytes).unwrap_or("\u{fffd}"))
                    }
                }
                sys::DATE => {
                    let column = &*self.raw.cast::<sys::monetdbe_column_typed<sys::monetdbe_data_date>>();
                    let d = *column.data.add(row);
                    let null = column.null_value;
                    if (d.year, d.month, d.day) == (null.year, null.month, null.day) {
                        Cell::Null
                    } else {
                        Date::from_civil(i64::from(d.year), u32::from(d.month), u32::from(d.day)).map_or(Cell::Null, Cell::Date)
                    }
                }
                _ => return None,
            })
        }
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// An integer cell: nil (the type's null value) is `Null`.
///
/// SAFETY: `column` is a live `monetdbe_column_<T>` with more than `row` values.
unsafe fn int_cell<'r, T: Copy + PartialEq + Into<Wide>>(column: *const sys::monetdbe_column_typed<T>, row: usize) -> Cell<'r> {
    let column = unsafe { &*column };
    let v = unsafe { *column.data.add(row) };
    if v == column.null_value {
        return Cell::Null;
    }
    // `scale` is 10^digits.
    let scale = column.scale.max(1.0).log10().round() as u32;
    Cell::Int { value: v.into().0, scale }
}

/// Widening of MonetDB's integer types (`usize` included) to `i128`.
struct Wide(i128);

macro_rules! widen {
    ($($t:ty),*) => {$(
        impl From<$t> for Wide {
            fn from(v: $t) -> Self {
                Wide(v as i128)
            }
        }
    )*};
}
widen!(i8, i16, i32, i64, i128, usize);

/// Serializes the unit tests that open a database (one per process).
#[cfg(test)]
pub(crate) fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static TESTS: Mutex<()> = Mutex::new(());
    TESTS.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
