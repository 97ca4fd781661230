//! Bulk loads with `LOAD DATA LOCAL INFILE`, the server's own bulk path: the rows are
//! encoded in the statement's default text format (fields separated by tabs, lines ended
//! by newlines, backslash escapes, `\N` for NULL) and streamed from memory by mysql_async's
//! one-shot local-infile handler of the loading connection, in chunks of about 256 KiB.
//! No file is written or read: the file name in the statement is never opened.
//!
//! Values are the text the server converts exactly, as the INSERT path's parameters are:
//! integers and decimals in full, floats in Rust's shortest round-trip form, dates as ISO.
//! With `LOCAL` the server turns bad values and duplicate keys into warnings (it cannot stop
//! the client mid-file), so a load that raised any warning, or stored fewer rows than were
//! sent, fails. The server must have `local_infile` on (`MySql::load` decides, falling back
//! to multi-row INSERTs). Must not open connections, create or drop anything, or time anything.

use crate::adapter::sql::dialect::{Dialect, SqlTable};
use crate::adapter::sql::dialects::MYSQL;
use crate::base::op::OpError;
use crate::base::table::{ColumnType, Row, RowSource, TableDef, Value};
use bytes::Bytes;
use futures_util::StreamExt;
use mysql_async::Conn;
use mysql_async::prelude::Queryable;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes per chunk handed to the driver (one protocol packet each).
const CHUNK: usize = 256 * 1024;

/// What `settings.load` says when rows travel by `LOAD DATA LOCAL INFILE`.
pub(super) const SETTING: &str =
    "LOAD DATA LOCAL INFILE, rows streamed from dbsweep as tab-separated text (no file), one statement per table";

/// The statement that loads `table`'s columns in the default text format (as utf8mb4,
/// whatever the database's character set).
pub(super) fn statement(table: &SqlTable) -> String {
    let columns: Vec<String> = table.def.columns.iter().map(|c| MYSQL.quote(&c.name)).collect();
    format!("LOAD DATA LOCAL INFILE 'dbsweep-rows' INTO TABLE {} CHARACTER SET utf8mb4 ({})", table.name, columns.join(", "))
}

/// Why a `LOAD DATA` failed.
#[derive(Debug)]
pub(super) enum LoadError {
    /// The driver or the server refused (the statement, or the rows' transfer).
    Driver(mysql_async::Error),
    /// A row could not be encoded for its table.
    Row(String),
    /// The server stored other rows than were sent: `stored` of `sent`, and its first warning.
    Short { sent: u64, stored: u64, warnings: u16, first: String },
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Driver(e) => write!(f, "{e}"),
            LoadError::Row(why) => write!(f, "{why}"),
            LoadError::Short { sent, stored, warnings, first } => {
                write!(f, "LOAD DATA stored {stored} of {sent} rows with {warnings} warning(s), the first: {first}")
            }
        }
    }
}

/// Loads `rows` into `table` over `conn` with one `LOAD DATA LOCAL INFILE`; returns the
/// rows stored, which are all the rows the source gave.
pub(super) async fn load(conn: &mut Conn, table: &SqlTable, rows: RowSource) -> Result<u64, LoadError> {
    let sent = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(Mutex::new(None));
    let chunks = Chunks { def: table.def.clone(), rows, sent: sent.clone(), failed: failed.clone(), buffer: Vec::new() };
    // The handler must be Sync; the row source is only Send, and is taken out once, when
    // the server asks for the file.
    let chunks = Mutex::new(Some(chunks));
    conn.set_infile_handler(async move {
        let chunks = chunks.lock().unwrap_or_else(|e| e.into_inner()).take().expect("the handler runs once");
        Ok(futures_util::stream::iter(chunks).boxed())
    });
    let result = conn.query_drop(statement(table)).await;
    if let Some(why) = failed.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(LoadError::Row(why));
    }
    result.map_err(LoadError::Driver)?;
    let (sent, stored, warnings) = (sent.load(Ordering::Relaxed), conn.affected_rows(), conn.get_warnings());
    if stored != sent || warnings > 0 {
        let first: Option<(String, u32, String)> = conn.query_first("SHOW WARNINGS LIMIT 1").await.map_err(LoadError::Driver)?;
        let first = first.map_or_else(|| "none".to_string(), |(level, code, message)| format!("{level} {code}: {message}"));
        return Err(LoadError::Short { sent, stored, warnings, first });
    }
    Ok(stored)
}

/// The rows of one load as chunks of encoded lines; counts the rows it encoded. A row that
/// cannot be encoded ends the stream with an error (the driver then ends the transfer) and
/// leaves its reason in `failed`.
struct Chunks {
    def: Arc<TableDef>,
    rows: RowSource,
    sent: Arc<AtomicU64>,
    failed: Arc<Mutex<Option<String>>>,
    buffer: Vec<u8>,
}

impl Iterator for Chunks {
    type Item = std::io::Result<Bytes>;

    fn next(&mut self) -> Option<Self::Item> {
        self.buffer.reserve(CHUNK + CHUNK / 4);
        let mut rows = 0;
        while self.buffer.len() < CHUNK {
            let Some(row) = self.rows.next() else { break };
            if let Err(e) = encode_row(&self.def, &row, &mut self.buffer) {
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{}: {e}", self.def.name));
                // Nothing more after the error.
                self.rows = Box::new(std::iter::empty());
                self.buffer.clear();
                return Some(Err(std::io::Error::other(e.to_string())));
            }
            rows += 1;
        }
        self.sent.fetch_add(rows, Ordering::Relaxed);
        (!self.buffer.is_empty()).then(|| Ok(Bytes::from(std::mem::take(&mut self.buffer))))
    }
}

/// Appends one row as a line of the default `LOAD DATA` text format.
pub(super) fn encode_row(def: &TableDef, row: &Row, out: &mut Vec<u8>) -> Result<(), OpError> {
    if row.len() != def.columns.len() {
        return Err(OpError::client(format!("{}: row has {} values, table has {} columns", def.name, row.len(), def.columns.len())));
    }
    for (i, value) in row.iter().enumerate() {
        if i > 0 {
            out.push(b'\t');
        }
        let column = &def.columns[i];
        match (column.ty, value) {
            (_, Value::Null) => out.extend_from_slice(b"\\N"),
            (ColumnType::Int | ColumnType::Float, Value::Int(v)) => out.extend_from_slice(itoa::Buffer::new().format(*v).as_bytes()),
            (ColumnType::Float, Value::Float(v)) if v.is_finite() => {
                let _ = write!(out, "{v}");
            }
            (ColumnType::Decimal, Value::Decimal(d)) => {
                let _ = write!(out, "{d}");
            }
            (ColumnType::Date, Value::Date(d)) => {
                let (y, m, d) = d.to_civil();
                let _ = write!(out, "{y:04}-{m:02}-{d:02}");
            }
            (ColumnType::Text, Value::Text(s)) => escape(s.as_bytes(), out),
            _ => {
                return Err(OpError::client(format!(
                    "{}.{}: value {value:?} does not fit a {:?} column",
                    def.name, column.name, column.ty
                )));
            }
        }
    }
    out.push(b'\n');
    Ok(())
}

/// Appends a text field with the bytes `LOAD DATA` reads specially escaped (copied whole
/// when there are none).
fn escape(text: &[u8], out: &mut Vec<u8>) {
    if !text.iter().any(|b| matches!(b, b'\\' | b'\t' | b'\n' | b'\r' | 0)) {
        out.extend_from_slice(text);
        return;
    }
    for &b in text {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0 => out.extend_from_slice(b"\\0"),
            b => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::{Column, Date, Decimal};

    fn def() -> TableDef {
        let column = |name: &str, ty| Column { name: name.into(), ty };
        TableDef {
            name: "t".into(),
            columns: vec![
                column("k", ColumnType::Int),
                column("f", ColumnType::Float),
                column("d", ColumnType::Decimal),
                column("day", ColumnType::Date),
                column("s", ColumnType::Text),
            ],
            indexed: vec![],
        }
    }

    fn line(row: Row) -> String {
        let mut out = Vec::new();
        encode_row(&def(), &row, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn rows_are_tab_separated_lines_in_the_servers_exact_text() {
        let row = vec![
            Value::Int(-42),
            Value::Float(0.1),
            Value::Decimal(Decimal(-5)),
            Value::Date(Date::from_iso("1998-12-01").unwrap()),
            Value::Text("plain text".into()),
        ];
        assert_eq!(line(row), "-42\t0.1\t-0.05\t1998-12-01\tplain text\n");
        let row = vec![Value::Int(i64::MIN), Value::Int(3), Value::Null, Value::Null, Value::Text("".into())];
        assert_eq!(line(row), "-9223372036854775808\t3\t\\N\t\\N\t\n", "an int in a float column, NULLs, an empty text");
    }

    #[test]
    fn floats_round_trip_through_their_text() {
        for v in [0.1, 1.0 / 3.0, 1e300, -2.5e-300, f64::MAX, f64::MIN_POSITIVE] {
            let text = line(vec![Value::Int(0), Value::Float(v), Value::Null, Value::Null, Value::Null]);
            let field = text.split('\t').nth(1).unwrap();
            assert_eq!(field.parse::<f64>().unwrap().to_bits(), v.to_bits(), "{v} as {field}");
        }
    }

    #[test]
    fn text_escapes_what_load_data_reads_specially() {
        let text = line(vec![Value::Null, Value::Null, Value::Null, Value::Null, Value::Text("a\tb\nc\\N\r\0NULL".into())]);
        assert_eq!(text, "\\N\t\\N\t\\N\t\\N\ta\\tb\\nc\\\\N\\r\\0NULL\n");
    }

    #[test]
    fn values_that_do_not_fit_their_column_and_short_rows_are_refused() {
        let mut out = Vec::new();
        let mismatched = vec![Value::Text("x".into()), Value::Null, Value::Null, Value::Null, Value::Null];
        assert!(encode_row(&def(), &mismatched, &mut out).unwrap_err().to_string().contains("t.k"));
        assert!(encode_row(&def(), &vec![Value::Int(1)], &mut out).is_err());
        let infinite = vec![Value::Int(1), Value::Float(f64::INFINITY), Value::Null, Value::Null, Value::Null];
        assert!(encode_row(&def(), &infinite, &mut out).is_err(), "no text for infinity");
    }

    #[test]
    fn chunks_count_the_rows_and_end_at_a_bad_row() {
        let rows = (0..10).map(|k| vec![Value::Int(k), Value::Null, Value::Null, Value::Null, Value::Null]);
        let bad = std::iter::once(vec![Value::Int(1)]);
        let (sent, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(Mutex::new(None)));
        let chunks = Chunks {
            def: Arc::new(def()),
            rows: Box::new(rows.chain(bad)),
            sent: sent.clone(),
            failed: failed.clone(),
            buffer: Vec::new(),
        };
        let items: Vec<_> = chunks.collect();
        assert!(items.len() == 1 && items[0].is_err(), "one chunk, which is the error");
        assert!(failed.lock().unwrap().as_deref().unwrap().contains("row has 1 values"));
        let rows = (0..10).map(|k| vec![Value::Int(k), Value::Null, Value::Null, Value::Null, Value::Null]);
        let sent = Arc::new(AtomicU64::new(0));
        let chunks = Chunks { def: Arc::new(def()), rows: Box::new(rows), sent: sent.clone(), failed, buffer: Vec::new() };
        let bytes: Vec<u8> = chunks.flat_map(|c| c.unwrap().to_vec()).collect();
        assert_eq!((sent.load(Ordering::Relaxed), bytes.iter().filter(|b| **b == b'\n').count()), (10, 10));
        assert!(bytes.starts_with(b"0\t\\N\t\\N\t\\N\t\\N\n1\t"));
    }
}
