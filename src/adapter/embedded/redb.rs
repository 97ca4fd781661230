//! redb adapter: the embedded key-value store (copy-on-write B+trees, one file).
//!
//! Why redb is dbsweep's embedded KV engine: it is pure Rust (no C++ build, unlike
//! RocksDB's 20+ minute compile here), ACID with crash-safe commits by default, has ordered
//! range iteration (needed for scans and index ranges), and is actively maintained. sled,
//! the other pure-Rust candidate, has had no stable release in years.
//!
//! `redb:` uses a throwaway file in the run's scratch directory; `redb:/path` the user's
//! file, locked for the run by a `lease::FileLease` (see `embedded::target`). Layout, all in
//! dbsweep's namespace:
//! - `dbsweep:<table>`: primary key (i64) → the row in a compact binary encoding
//!   (see [`encode_row`]);
//! - `dbsweep:<table>:idx:<column>`: (column value, primary key) → (), one per indexed
//!   column, so range ops are index range scans (MAX and row-returning ranges then read
//!   the rows by key);
//! - `dbsweep_owner`: table name → creator, the marker `prepare` checks: tables named like
//!   dbsweep's but not listed there are never touched (`NotOwned`).
//!
//! Every write op, or a whole batch, is one write transaction committed with redb's default
//! `Durability::Immediate` (fsync at each commit), so comparisons with other engines are not
//! flattered. Bulk loads commit every `LOAD_CHUNK` rows with `Durability::None` and end with
//! one `Immediate` commit, which makes the whole load durable (redb's bulk-load pattern). Read
//! ops (or a read batch) use one read transaction. An insert of an existing
//! key fails like an SQL primary-key violation. Update and read-modify-write are the same
//! work here (a KV store rewrites the whole value): read the row, change one column, write
//! it back, fix the index. All clients share one `redb::Database` (`Execution::Blocking`);
//! redb runs one writer at a time and readers concurrently. Must not time anything.

use super::clip;
use super::target::DatabaseFile;
use crate::adapter::lease::FileLease;
use crate::adapter::sql::connection::writes;
use crate::adapter::{Capabilities, Connection, Execution, OpenContext, Target, TargetInfo, TargetUrl};
use crate::base::op::{Answer, Op, OpError, OpKind, Outcome, RangeAgg};
use crate::base::table::RowSource;
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use crate::error::{Error, Result};
use ::redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition, TableHandle, WriteTransaction,
};
use async_trait::async_trait;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

const OWNER_TABLE: &str = "dbsweep_owner";
/// Rows per write transaction in bulk loads, so a large load does not hold every dirty
/// page in memory until one commit.
const LOAD_CHUNK: u64 = 100_000;
const TABLE_PREFIX: &str = "dbsweep:";

type Primary<'a> = TableDefinition<'a, i64, &'static [u8]>;
type Index<'a> = TableDefinition<'a, (i64, i64), ()>;
type Owner<'a> = TableDefinition<'a, &'static str, &'static str>;
type IndexTable<'t> = ::redb::Table<'t, (i64, i64), ()>;

pub struct Redb {
    info: TargetInfo,
    path: PathBuf,
    /// Shared by every connection; `None` after cleanup.
    db: Mutex<Option<Arc<Database>>>,
    /// Tables by `TableId`, as given to `prepare`.
    tables: Mutex<Vec<Arc<TableDef>>>,
    /// The throwaway directory holding the file for `redb:`.
    scratch: Mutex<Option<tempfile::TempDir>>,
    /// The lease on a user's file; declared last, so it is dropped after the database.
    _lease: Option<FileLease>,
}

/// Names of one dbsweep table's redb tables.
#[derive(Clone)]
struct Layout {
    def: Arc<TableDef>,
    primary: String,
    /// (column, index table name) for each indexed column.
    indexes: Vec<(usize, String)>,
}

impl Layout {
    fn new(def: Arc<TableDef>) -> Self {
        let primary = format!("{TABLE_PREFIX}{}", def.name);
        let indexes = def.indexed.iter().map(|&c| (c, format!("{primary}:idx:{}", def.columns[c].name))).collect();
        Layout { def, primary, indexes }
    }

    fn index_of(&self, column: usize) -> Option<&str> {
        self.indexes.iter().find(|(c, _)| *c == column).map(|(_, name)| name.as_str())
    }
}

/// True if the redb table `name` belongs to dbsweep table `primary` (itself or an index).
fn belongs_to(name: &str, primary: &str) -> bool {
    name == primary || name.strip_prefix(primary).is_some_and(|rest| rest.starts_with(":idx:"))
}

fn runtime(e: impl Into<::redb::Error>) -> Error {
    Error::runtime(format!("redb: {}", e.into()))
}

fn op_error(e: impl Into<::redb::Error>) -> OpError {
    OpError::server(clip(format!("redb: {}", e.into())))
}

impl Redb {
    pub fn open(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let file = DatabaseFile::of(name, url, ctx, "redb", "dbsweep.redb")?;
        let file_settings = file.settings();
        let DatabaseFile { path, scratch, lease } = file;
        let db = Database::create(&path).map_err(|e| {
            Error::usage(format!("target '{name}': cannot open redb file {}: {e}; check the path in the URL", path.display()))
        })?;
        let mut settings = BTreeMap::from([
            ("durability".to_string(), "Durability::Immediate (redb default): fsync at every commit".to_string()),
            ("indexes".to_string(), "one (value, key) -> () table per indexed column, maintained in the same transaction".to_string()),
            ("encoding".to_string(), "dbsweep binary row encoding (tag byte + varint/LE f64/length-prefixed text)".to_string()),
            ("batch".to_string(), "one transaction per batch".to_string()),
            ("request.insert".to_string(), "one write transaction inserting the row, committed".to_string()),
            ("request.insert_batch".to_string(), "one write transaction inserting every row, committed once".to_string()),
            ("request.multi_get".to_string(), "one read transaction, a B-tree lookup per key".to_string()),
            ("echo".to_string(), "begin and drop a read transaction".to_string()),
            ("concurrency".to_string(), "one writer at a time, readers concurrent (MVCC)".to_string()),
            ("cache_size".to_string(), "1 GiB (redb default)".to_string()),
            ("bulk_load".to_string(), format!("write transactions of {LOAD_CHUNK} rows, Durability::None, then one Immediate commit")),
        ]);
        settings.extend(file_settings);
        Ok(Redb {
            info: TargetInfo {
                name: name.to_string(),
                system: "redb".into(),
                url: url.redacted(),
                execution: Execution::Blocking,
                capabilities: Capabilities {
                    ops: OpKind::ALL.iter().copied().filter(|k| *k != OpKind::Query).collect(),
                    queries: vec![],
                    native_batch: true,
                    secondary_indexes: true,
                },
                version: env!("DBSWEEP_REDB_VERSION").to_string(),
                settings,
            },
            path,
            db: Mutex::new(Some(Arc::new(db))),
            tables: Mutex::new(Vec::new()),
            scratch: Mutex::new(scratch),
            _lease: lease,
        })
    }

    fn db(&self) -> Result<Arc<Database>> {
        self.db.lock().unwrap().clone().ok_or_else(|| Error::runtime("redb: target already cleaned up"))
    }
}

/// Tables dbsweep registered in the marker table.
fn owned_tables(txn: &WriteTransaction, existing: &[String]) -> Result<Vec<String>> {
    if !existing.iter().any(|n| n == OWNER_TABLE) {
        return Ok(Vec::new());
    }
    let owner = txn.open_table(Owner::new(OWNER_TABLE)).map_err(runtime)?;
    let mut names = Vec::new();
    for entry in owner.range::<&str>(..).map_err(runtime)? {
        names.push(entry.map_err(runtime)?.0.value().to_string());
    }
    Ok(names)
}

#[async_trait]
impl Target for Redb {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let db = self.db()?;
        for t in tables {
            for &c in &t.indexed {
                if matches!(t.columns[c].ty, ColumnType::Float | ColumnType::Text) {
                    return Err(Error::runtime(format!(
                        "redb: indexed column {}.{} must be an integer, decimal or date",
                        t.name, t.columns[c].name
                    )));
                }
            }
        }
        let txn = db.begin_write().map_err(runtime)?;
        let handles: Vec<_> = txn.list_tables().map_err(runtime)?.collect();
        let existing: Vec<String> = handles.iter().map(|h| h.name().to_string()).collect();
        let owned = owned_tables(&txn, &existing)?;
        // Check everything before changing anything: a refusal leaves the file as it was.
        for t in tables {
            let primary = format!("{TABLE_PREFIX}{}", t.name);
            if let Some(foreign) = existing.iter().find(|n| belongs_to(n, &primary) && !owned.contains(&primary)) {
                return Err(Error::not_owned(
                    &self.info.name,
                    format!("redb table {foreign} in {} was not created by dbsweep; remove it or use another file", self.path.display()),
                ));
            }
        }
        {
            let mut owner = txn.open_table(Owner::new(OWNER_TABLE)).map_err(runtime)?;
            for t in tables {
                let layout = Layout::new(t.clone());
                for handle in handles.iter().filter(|h| belongs_to(h.name(), &layout.primary)) {
                    txn.delete_table(handle.clone()).map_err(runtime)?;
                }
                txn.open_table(Primary::new(&layout.primary)).map_err(runtime)?;
                for (_, index) in &layout.indexes {
                    txn.open_table(Index::new(index)).map_err(runtime)?;
                }
                owner.insert(layout.primary.as_str(), concat!("dbsweep ", env!("CARGO_PKG_VERSION"))).map_err(runtime)?;
            }
        }
        txn.commit().map_err(runtime)?;
        *self.tables.lock().unwrap() = tables.to_vec();
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let db = self.db()?;
        let layout = Layout::new(Arc::new(table.clone()));
        let mut rows = rows.peekable();
        let mut buf = Vec::new();
        let mut n = 0;
        loop {
            let mut txn = db.begin_write().map_err(runtime)?;
            {
                let mut writer = Writer::open(&txn, &layout).map_err(|e| Error::runtime(e.message))?;
                for row in rows.by_ref().take(LOAD_CHUNK as usize) {
                    writer.insert(&row, &mut buf).map_err(|e| Error::runtime(e.message))?;
                    n += 1;
                }
            }
            let last = rows.peek().is_none();
            if !last {
                txn.set_durability(::redb::Durability::None).map_err(runtime)?;
            }
            txn.commit().map_err(runtime)?;
            if last {
                return Ok(n);
            }
        }
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let db = self.db()?;
        let tables = self.tables.lock().unwrap().iter().map(|t| Layout::new(t.clone())).collect();
        Ok(Box::new(RedbConnection { db, tables, buf: Vec::new() }))
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let txn = self.db()?.begin_read().map_err(runtime)?;
        let primary = format!("{TABLE_PREFIX}{}", table.name);
        txn.open_table(Primary::new(&primary)).map_err(runtime)?.len().map_err(runtime)
    }

    async fn cleanup(&self) -> Result<()> {
        let Some(db) = self.db.lock().unwrap().take() else {
            return Ok(());
        };
        if let Some(dir) = self.scratch.lock().unwrap().take() {
            drop(db);
            return dir.close().map_err(|e| Error::runtime(format!("redb: cannot remove the throwaway file: {e}")));
        }
        let txn = db.begin_write().map_err(runtime)?;
        let handles: Vec<_> = txn.list_tables().map_err(runtime)?.collect();
        let existing: Vec<String> = handles.iter().map(|h| h.name().to_string()).collect();
        let owned = owned_tables(&txn, &existing)?;
        for handle in &handles {
            if owned.iter().any(|p| belongs_to(handle.name(), p)) || handle.name() == OWNER_TABLE {
                txn.delete_table(handle.clone()).map_err(runtime)?;
            }
        }
        txn.commit().map_err(runtime)
    }
}

/// The value an index is keyed by, or `None` for NULL (not indexed).
fn index_key(value: &Value) -> Option<i64> {
    match value {
        Value::Int(v) | Value::Decimal(Decimal(v)) => Some(*v),
        Value::Date(Date(d)) => Some(i64::from(*d)),
        Value::Null | Value::Float(_) | Value::Text(_) => None,
    }
}

fn key_of(row: &Row) -> Result<i64, OpError> {
    row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("redb: key column must be an integer"))
}

/// A table and its indexes opened in one write transaction.
struct Writer<'t> {
    layout: &'t Layout,
    primary: ::redb::Table<'t, i64, &'static [u8]>,
    indexes: Vec<(usize, IndexTable<'t>)>,
}

impl<'t> Writer<'t> {
    fn open(txn: &'t WriteTransaction, layout: &'t Layout) -> Result<Self, OpError> {
        let primary = txn.open_table(Primary::new(&layout.primary)).map_err(op_error)?;
        let indexes = layout
            .indexes
            .iter()
            .map(|(c, name)| Ok((*c, txn.open_table(Index::new(name)).map_err(op_error)?)))
            .collect::<Result<_, OpError>>()?;
        Ok(Writer { layout, primary, indexes })
    }

    fn insert(&mut self, row: &Row, buf: &mut Vec<u8>) -> Result<u64, OpError> {
        let key = key_of(row)?;
        if row.len() != self.layout.def.columns.len() {
            return Err(OpError::client(format!(
                "redb: row has {} values, table {} has {} columns",
                row.len(),
                self.layout.def.name,
                self.layout.def.columns.len()
            )));
        }
        encode_row(row, buf);
        if self.primary.insert(key, buf.as_slice()).map_err(op_error)?.is_some() {
            return Err(OpError::server(format!("redb: duplicate key {key} in {}", self.layout.def.name)));
        }
        for (c, index) in &mut self.indexes {
            if let Some(v) = index_key(&row[*c]) {
                index.insert((v, key), ()).map_err(op_error)?;
            }
        }
        Ok(1)
    }

    fn delete(&mut self, key: i64) -> Result<u64, OpError> {
        let Some(old) = self.primary.remove(key).map_err(op_error)? else {
            return Ok(0);
        };
        let old = decode_row(old.value())?;
        for (c, index) in &mut self.indexes {
            if let Some(v) = old.get(*c).and_then(index_key) {
                index.remove((v, key)).map_err(op_error)?;
            }
        }
        Ok(1)
    }

    /// Reads the row, sets one column, writes it back and moves its index entry.
    fn update(&mut self, key: i64, column: usize, value: &Value, buf: &mut Vec<u8>) -> Result<u64, OpError> {
        let mut row = match self.primary.get(key).map_err(op_error)? {
            Some(bytes) => decode_row(bytes.value())?,
            None => return Ok(0),
        };
        let cell = row.get_mut(column).ok_or_else(|| OpError::client("redb: no such column"))?;
        let old = std::mem::replace(cell, value.clone());
        if let Some((_, index)) = self.indexes.iter_mut().find(|(c, _)| *c == column) {
            if let Some(v) = index_key(&old) {
                index.remove((v, key)).map_err(op_error)?;
            }
            if let Some(v) = index_key(value) {
                index.insert((v, key), ()).map_err(op_error)?;
            }
        }
        encode_row(&row, buf);
        self.primary.insert(key, buf.as_slice()).map_err(op_error)?;
        Ok(1)
    }
}

struct RedbConnection {
    db: Arc<Database>,
    /// Layouts by `TableId`.
    tables: Vec<Layout>,
    /// Reused encoding buffer.
    buf: Vec<u8>,
}

impl RedbConnection {
    fn layout(&self, op: &Op) -> Result<&Layout, OpError> {
        let id = op.table().ok_or_else(|| OpError::unsupported(op.kind(), "redb"))?;
        self.tables.get(id).ok_or_else(|| OpError::client(format!("redb: no table #{id} (prepare first)")))
    }

    /// Runs write ops in one write transaction, committed once.
    fn write(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let txn = self.db.begin_write().map_err(op_error)?;
        let mut rows = 0;
        {
            // Ops of a batch usually share a table: keep it open across them.
            let mut open: Option<(usize, Writer<'_>)> = None;
            for op in ops {
                let id = op.table().ok_or_else(|| OpError::unsupported(op.kind(), "redb"))?;
                if open.as_ref().is_none_or(|(open_id, _)| *open_id != id) {
                    // Close the previous table first: redb allows one open handle per table.
                    drop(open.take());
                    let layout = self.tables.get(id).ok_or_else(|| OpError::client(format!("redb: no table #{id} (prepare first)")))?;
                    open = Some((id, Writer::open(&txn, layout)?));
                }
                let writer = &mut open.as_mut().expect("opened above").1;
                rows += match op {
                    Op::Insert { row, .. } => writer.insert(row, &mut self.buf)?,
                    Op::Delete { key, .. } => writer.delete(*key)?,
                    Op::Update { key, column, value, .. } | Op::ReadModifyWrite { key, column, value, .. } => {
                        writer.update(*key, *column, value, &mut self.buf)?
                    }
                    other => return Err(OpError::unsupported(other.kind(), "redb write")),
                };
            }
        }
        // An error above drops `txn`, which aborts it.
        txn.commit().map_err(op_error)?;
        Ok(Outcome::rows(rows))
    }

    fn read(&self, txn: &ReadTransaction, op: &Op) -> Result<Outcome, OpError> {
        if let Op::Echo = op {
            return Ok(Outcome::rows(0));
        }
        let layout = self.layout(op)?;
        let primary = txn.open_table(Primary::new(&layout.primary)).map_err(op_error)?;
        let get = |key: i64| -> Result<Option<Row>, OpError> {
            primary.get(key).map_err(op_error)?.map(|bytes| decode_row(bytes.value())).transpose()
        };
        Ok(match op {
            Op::Get { key, .. } => Outcome::rows(u64::from(black_box(get(*key)?).is_some())),
            Op::MultiGet { keys, .. } => {
                let mut n = 0;
                for key in keys {
                    n += u64::from(black_box(get(*key)?).is_some());
                }
                Outcome::rows(n)
            }
            Op::FetchAll { .. } => {
                let mut n = 0;
                for entry in primary.range::<i64>(..).map_err(op_error)? {
                    black_box(decode_row(entry.map_err(op_error)?.1.value())?);
                    n += 1;
                }
                Outcome::rows(n)
            }
            Op::Scan { start, count, .. } => {
                let mut n = 0;
                for entry in primary.range(*start..).map_err(op_error)?.take(*count) {
                    black_box(decode_row(entry.map_err(op_error)?.1.value())?);
                    n += 1;
                }
                Outcome::rows(n)
            }
            Op::Range { column, lo, hi, agg, .. } => {
                let mut matching = Vec::new();
                if lo <= hi {
                    match layout.index_of(*column) {
                        Some(index) => {
                            let index = txn.open_table(Index::new(index)).map_err(op_error)?;
                            for entry in index.range((*lo, i64::MIN)..=(*hi, i64::MAX)).map_err(op_error)? {
                                matching.push(entry.map_err(op_error)?.0.value().1);
                            }
                        }
                        // No index on this column: a full scan, as an SQL engine would do.
                        None => {
                            for entry in primary.range::<i64>(..).map_err(op_error)? {
                                let (key, bytes) = entry.map_err(op_error)?;
                                let row = decode_row(bytes.value())?;
                                if row.get(*column).and_then(index_key).is_some_and(|v| (*lo..=*hi).contains(&v)) {
                                    matching.push(key.value());
                                }
                            }
                        }
                    }
                }
                match agg {
                    RangeAgg::Count => Outcome::answer(1, Answer::Scalar(Value::Int(matching.len() as i64))),
                    RangeAgg::Rows => {
                        let mut n = 0;
                        for key in matching {
                            n += u64::from(black_box(get(key)?).is_some());
                        }
                        Outcome::rows(n)
                    }
                    RangeAgg::Max { column: of } => {
                        let mut max = Value::Null;
                        for key in matching {
                            if let Some(mut row) = get(key)? {
                                let v = std::mem::replace(
                                    row.get_mut(*of).ok_or_else(|| OpError::client("redb: no such column"))?,
                                    Value::Null,
                                );
                                if !matches!(v, Value::Null) && (matches!(max, Value::Null) || compare(&v, &max) == Ordering::Greater) {
                                    max = v;
                                }
                            }
                        }
                        Outcome::answer(1, Answer::Scalar(max))
                    }
                }
            }
            other => return Err(OpError::unsupported(other.kind(), "redb read")),
        })
    }
}

/// Orders two non-null values of one column type.
fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => x.total_cmp(y),
        (Value::Decimal(x), Value::Decimal(y)) => x.cmp(y),
        (Value::Date(x), Value::Date(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}

#[async_trait]
impl Connection for RedbConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        self.execute_batch(std::slice::from_ref(op)).await
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let Some(first) = ops.first() else {
            return Ok(Outcome::rows(0));
        };
        if writes(first.kind()) {
            return self.write(ops);
        }
        let txn = self.db.begin_read().map_err(op_error)?;
        if let [op] = ops {
            return self.read(&txn, op);
        }
        let mut rows = 0;
        for op in ops {
            rows += self.read(&txn, op)?.rows;
        }
        Ok(Outcome::rows(rows))
    }
}

// Row encoding: for each value a tag byte, then Int/Decimal/Date as a zigzag LEB128 varint,
// Float as 8 little-endian bytes, Text as a varint byte length and the UTF-8 bytes; Null
// has no payload. Small keys and groups take 1-3 bytes instead of 8; the encoding is
// self-describing, so decoding needs no schema. Hand-written because it is 60 lines and
// keeps the stored bytes under dbsweep's control (no serde format to pin).
const TAG_NULL: u8 = 0;
const TAG_INT: u8 = 1;
const TAG_FLOAT: u8 = 2;
const TAG_DECIMAL: u8 = 3;
const TAG_TEXT: u8 = 4;
const TAG_DATE: u8 = 5;

/// Encodes a row into `buf` (cleared first).
pub fn encode_row(row: &[Value], buf: &mut Vec<u8>) {
    fn varint(buf: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        buf.push(v as u8);
    }
    fn zigzag(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }
    buf.clear();
    for value in row {
        match value {
            Value::Null => buf.push(TAG_NULL),
            Value::Int(v) => {
                buf.push(TAG_INT);
                varint(buf, zigzag(*v));
            }
            Value::Float(v) => {
                buf.push(TAG_FLOAT);
                buf.extend_from_slice(&v.to_le_bytes());
            }
            Value::Decimal(d) => {
                buf.push(TAG_DECIMAL);
                varint(buf, zigzag(d.0));
            }
            Value::Date(d) => {
                buf.push(TAG_DATE);
                varint(buf, zigzag(d.0.into()));
            }
            Value::Text(s) => {
                buf.push(TAG_TEXT);
                varint(buf, s.len() as u64);
                buf.extend_from_slice(s.as_bytes());
            }
        }
    }
}

/// Decodes a row written by [`encode_row`].
pub fn decode_row(mut bytes: &[u8]) -> Result<Row, OpError> {
    fn corrupt() -> OpError {
        OpError::server("redb: stored row is not in dbsweep's encoding")
    }
    fn varint(bytes: &mut &[u8]) -> Result<u64, OpError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = bytes.split_first().ok_or_else(corrupt)?;
            *bytes = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(corrupt())
    }
    fn signed(bytes: &mut &[u8]) -> Result<i64, OpError> {
        let v = varint(bytes)?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }
    let mut row = Vec::new();
    while let Some((&tag, rest)) = bytes.split_first() {
        bytes = rest;
        row.push(match tag {
            TAG_NULL => Value::Null,
            TAG_INT => Value::Int(signed(&mut bytes)?),
            TAG_DECIMAL => Value::Decimal(Decimal(signed(&mut bytes)?)),
            TAG_DATE => Value::Date(Date(i32::try_from(signed(&mut bytes)?).map_err(|_| corrupt())?)),
            TAG_FLOAT => {
                let (head, rest) = bytes.split_first_chunk::<8>().ok_or_else(corrupt)?;
                bytes = rest;
                Value::Float(f64::from_le_bytes(*head))
            }
            TAG_TEXT => {
                let len = usize::try_from(varint(&mut bytes)?).map_err(|_| corrupt())?;
                if bytes.len() < len {
                    return Err(corrupt());
                }
                let (text, rest) = bytes.split_at(len);
                bytes = rest;
                Value::Text(std::str::from_utf8(text).map_err(|_| corrupt())?.into())
            }
            _ => return Err(corrupt()),
        });
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::kv;

    #[test]
    fn rows_round_trip_through_the_encoding() {
        let rows = [
            vec![Value::Int(0), Value::Null, Value::Float(-0.5), Value::Text("".into())],
            vec![
                Value::Int(i64::MIN),
                Value::Int(i64::MAX),
                Value::Decimal(Decimal(-123_456)),
                Value::Date(Date(-1)),
                Value::Date(Date(i32::MAX)),
                Value::Text("héllo, wörld".into()),
                Value::Float(f64::MAX),
            ],
        ];
        let mut buf = Vec::new();
        for row in rows {
            encode_row(&row, &mut buf);
            assert_eq!(decode_row(&buf).unwrap(), row);
        }
        // Small integers stay small: key 5, group 3, a float, 4 bytes of text.
        encode_row(&[Value::Int(5), Value::Int(3), Value::Float(1.0), Value::Text("abcd".into())], &mut buf);
        assert_eq!(buf.len(), 2 + 2 + 9 + 6);
    }

    #[test]
    fn truncated_or_foreign_bytes_are_rejected() {
        let mut buf = Vec::new();
        encode_row(&[Value::Int(300), Value::Text("abc".into())], &mut buf);
        for cut in 1..buf.len() {
            // Every proper prefix that ends inside a value must fail, not misread.
            if let Ok(row) = decode_row(&buf[..cut]) {
                assert!(row.len() < 2, "prefix {cut} decoded as {row:?}");
            }
        }
        assert!(decode_row(&[9, 1, 2]).is_err());
    }

    #[tokio::test]
    async fn loads_span_several_transactions() {
        let dir = tempfile::tempdir().unwrap();
        let target = Redb::open("t", &TargetUrl::parse("redb:").unwrap(), &OpenContext::new(dir.path().to_path_buf())).unwrap();
        let def = kv::shared_def();
        target.prepare(std::slice::from_ref(&def)).await.unwrap();
        let n = LOAD_CHUNK as i64 + 1;
        let g = kv::KvGen::new(1, n as u64, 4);
        assert_eq!(target.load(&def, Box::new((0..n).map(move |k| g.row(k)))).await.unwrap(), n as u64);
        assert_eq!(target.count_rows(&def).await.unwrap(), n as u64);
        let mut conn = target.connect().await.unwrap();
        assert_eq!(conn.execute(&Op::Get { table: 0, key: n - 1 }).await.unwrap().rows, 1);
    }

    #[tokio::test]
    async fn index_follows_updates_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let url = TargetUrl::parse(&format!("redb:{}", dir.path().join("i.redb").display())).unwrap();
        let target = Redb::open("t", &url, &OpenContext::new(dir.path().to_path_buf())).unwrap();
        let def = kv::shared_def();
        target.prepare(std::slice::from_ref(&def)).await.unwrap();
        let g = kv::KvGen::new(1, 100, 8);
        target.load(&def, Box::new((0..100).map(move |k| g.row(k)))).await.unwrap();
        let mut conn = target.connect().await.unwrap();
        let count = |lo, hi| Op::Range { table: 0, column: kv::GROUP, lo, hi, agg: RangeAgg::Count };
        let in_group = |grp| (0..100).filter(|k| g.group_of(*k) == grp).count() as i64;
        let g0 = g.group_of(0);
        // Move key 0 to a group of its own, then delete it: the index must follow both.
        let update = Op::Update { table: 0, key: 0, column: kv::GROUP, value: Value::Int(1000).into() };
        assert_eq!(conn.execute(&update).await.unwrap().rows, 1);
        assert_eq!(conn.execute(&count(1000, 1000)).await.unwrap().answer, Some(Answer::Scalar(Value::Int(1))));
        assert_eq!(conn.execute(&count(g0, g0)).await.unwrap().answer, Some(Answer::Scalar(Value::Int(in_group(g0) - 1))));
        assert_eq!(conn.execute(&Op::Delete { table: 0, key: 0 }).await.unwrap().rows, 1);
        assert_eq!(conn.execute(&count(1000, 1000)).await.unwrap().answer, Some(Answer::Scalar(Value::Int(0))));
        // A failed write batch leaves nothing behind.
        let batch: Vec<Op> = [200, 201, 5].iter().map(|k| Op::Insert { table: 0, row: g.row(*k) }).collect();
        assert!(conn.execute_batch(&batch).await.is_err());
        assert_eq!(target.count_rows(&def).await.unwrap(), 99);
        assert_eq!(conn.execute(&Op::Get { table: 0, key: 200 }).await.unwrap().rows, 0);
    }
}
