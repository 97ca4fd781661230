//! The raw C API of libmonetdbe, the embedded build of MonetDB 11.41 (Jul2021), as the
//! PyPI wheel `monetdbe` 0.11 ships it (`scripts/setup-embedded` installs it, `build.rs`
//! links it). No Rust crate exists; the dozen functions used are declared here from the
//! wheel's sdist (`monetdbe/_cffi/embed.h.j2`, rendered for Jul2021 with 128-bit integers,
//! which this build has: `monetdbe_int128_t` shifts every later type code by one).
//!
//! Declarations only: every call is made by the safe binding (`connection`: connections,
//! statements, appends; `values`: parameters and result sets), each `unsafe` block there
//! with a `SAFETY` note naming which of these rules of the library it keeps:
//! 1. One database per process. `monetdbe_open` with another location while one is open
//!    fails, and every open of the same location joins the same database (two throwaway
//!    in-memory "databases" would share tables). `Connection::open` claims a process-wide
//!    slot and refuses while it is held; `Database::connect` opens further connections to
//!    the claimed database. The slot is freed when the last connection closes, which is
//!    also when MonetDB shuts the database down (an in-memory one is gone).
//! 2. A connection (a MonetDB client) belongs to the thread that opened it: used from
//!    another thread its queries fail (it measures stack depth against the opener's
//!    stack). `Connection` checks the thread on every call and opens itself again on a new
//!    one (reporting a transaction lost on the way); the runner gives each embedded client
//!    one thread, so runs never move. It serves one call at a time: `Send`, not `Sync`,
//!    `&mut self` on every call. Connections on different threads run at once (the library
//!    locks what it shares).
//! 3. An error string belongs to the connection and is freed by its next call: it is
//!    copied into `MonetError` at once.
//! 4. A result set stays valid until `monetdbe_cleanup_result` on the connection that made
//!    it; its columns (and their strings) live as long as the result. `Rows` borrows the
//!    connection mutably for its whole life (no other call can run meanwhile), `Column` and
//!    `Cell` borrow the `Rows`, and dropping `Rows` cleans the result up.
//! 5. A prepared statement belongs to its connection: `Connection` owns them (cached by
//!    text) and cleans them up before it closes. MonetDB frees the plans of a connection's
//!    prepared statements after a schema change (DDL), after a failed execution and after
//!    a transaction it aborted (a `COMMIT` that lost a concurrency conflict); executing one
//!    then crashes (a use after free), so every statement run through `query` other than
//!    transaction control, every failed execution and every failed transaction control
//!    statement forgets the cache (the small statement records are leaked, since cleaning
//!    them up would free the plans again).
//! 6. `monetdbe_bind` of a string keeps the pointer, not a copy: the bound values live in
//!    the call until `monetdbe_execute` returns. Every parameter is bound before each
//!    execution, in the type the statement declares (`monetdbe_statement.type`); a `NULL`
//!    is the library's nil value (`monetdbe_null`; a null pointer for strings).
//! 7. `monetdbe_append` reads plain arrays of the column's storage type (`int64_t` for
//!    `BIGINT` and `DECIMAL(15,2)` as its unscaled value, `double`, `char*`, the date
//!    struct); the arrays live until it returns. In 11.41 it refuses tables with key
//!    constraints (add the key after the load).
//!
//! Must not know dbsweep's tables, statements or ops, and must not time anything.

#![allow(non_camel_case_types)]

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
