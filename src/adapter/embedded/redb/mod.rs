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
//! flattered (`--durability none` commits them with `Durability::None`; redb has no
//! periodic level). Bulk loads commit every `LOAD_CHUNK` rows with `Durability::None` and end with
//! one `Immediate` commit, which makes the whole load durable (redb's bulk-load pattern). Read
//! ops (or a read batch) use one read transaction. An insert of an existing
//! key fails like an SQL primary-key violation. Update and read-modify-write are the same
//! work here (a KV store rewrites the whole value): read the row, change one column, write
//! it back, fix the index. All clients share one `redb::Database` (`Execution::Blocking`);
//! redb runs one writer at a time and readers concurrently. Must not time anything.

use crate::adapter::declaration::{CapabilitySet, Declaration, Needs, OpSet, UrlOptions};
use crate::adapter::embedded::clip;
use crate::adapter::embedded::target::DatabaseFile;
use crate::adapter::lease::FileLease;
use crate::adapter::{Execution, OpenContext, TargetInfo, TargetUrl};
use crate::base::durability::{self, Durability};
use crate::base::op::{OpError, OpKind};
use crate::base::table::TableDef;
use crate::error::{Error, Result};
use ::redb::{Database, ReadableTable, TableDefinition, WriteTransaction};
pub use encoding::decode_row;
pub use encoding::encode_row;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod connection;
mod encoding;
mod target;

const OWNER_TABLE: &str = "dbsweep_owner";

/// Rows per write transaction in bulk loads, so a large load does not hold every dirty
/// page in memory until one commit.
const LOAD_CHUNK: u64 = 100_000;

const TABLE_PREFIX: &str = "dbsweep:";

type Primary<'a> = TableDefinition<'a, i64, &'static [u8]>;

type Index<'a> = TableDefinition<'a, (i64, i64), ()>;

type Owner<'a> = TableDefinition<'a, &'static str, &'static str>;

type IndexTable<'t> = ::redb::Table<'t, (i64, i64), ()>;

pub const SYSTEM: Declaration = Declaration {
    system: "redb",
    url: "redb:[PATH]",
    description: "redb, embedded copy-on-write B-tree key-value store",
    needs: Needs::Library,
    schemes: &["redb"],
    options: UrlOptions::Only(&[]),
    several_hosts: false,
    capabilities: CapabilitySet {
        ops: OpSet::ALL.without(OpKind::Query).without(OpKind::Script).without(OpKind::Custom),
        queries: &[],
        native_batch: true,
        secondary_indexes: true,
        statements: None,
    },
    open: Some(|name, url, ctx| Ok(Arc::new(Redb::open(name, url, ctx)?))),
};

pub struct Redb {
    info: TargetInfo,
    path: PathBuf,
    /// Shared by every connection; `None` after cleanup.
    db: Mutex<Option<Arc<Database>>>,
    /// Tables by `TableId`, as given to `prepare`.
    tables: Mutex<Vec<Arc<TableDef>>>,
    /// The throwaway directory holding the file for `redb:`.
    scratch: Mutex<Option<tempfile::TempDir>>,
    /// How the ops' write transactions commit: `Immediate` (fsync) unless `--durability
    /// none` (redb has no periodic level).
    commit_durability: ::redb::Durability,
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
        let commit_durability = match ctx.durability {
            Some(Durability::None) => ::redb::Durability::None,
            _ => ::redb::Durability::Immediate,
        };
        let mut settings = BTreeMap::from([
            (durability::SETTING.to_string(), durability_of(commit_durability)),
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
            info: SYSTEM.target_info(name, url, Execution::Blocking, env!("DBSWEEP_REDB_VERSION"), settings),
            path,
            db: Mutex::new(Some(Arc::new(db))),
            tables: Mutex::new(Vec::new()),
            scratch: Mutex::new(scratch),
            commit_durability,
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

/// The `durability` setting for how the ops' transactions commit.
fn durability_of(commit: ::redb::Durability) -> String {
    match commit {
        ::redb::Durability::None => Durability::None.describe("Durability::None: commits are not persisted until a later durable commit"),
        _ => Durability::Commit.describe("Durability::Immediate (redb default): fsync at every commit"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::Target;
    use crate::base::op::{Answer, Op, RangeAgg};
    use crate::base::table::{Date, Decimal, Value};
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
