//! MongoDB adapter on the official `mongodb` driver, for a real MongoDB and for FerretDB
//! (a MongoDB-wire-protocol server on SQLite or PostgreSQL, what `--spawn ferretdb` runs).
//!
//! Mapping: one collection `dbsweep_<table>` per table in one database (the namespace's
//! name, `dbsweep` or `dbsweep_NAME` with `--namespace NAME`, unless the URL's path names
//! another), one document per row: `{_id: <pk>, <column>: <value>,
//! ...}` with NULL columns left out. The `_id` is the key as a string (as YCSB's MongoDB
//! binding keeps it), zero-padded to 19 digits so that string order is key order (see
//! [`key_id`]): FerretDB 1.24 pushes `_id` equality down to its SQLite query only for
//! string and ObjectId `_id`s (a numeric `_id` made point reads ~20x slower there).
//! Types: Int → Int64, Float → Double, Decimal → Int64 hundredths (exact and ordered),
//! Text → String, Date → BSON date (midnight UTC). Each indexed column gets an ascending
//! index, which serves the ranges of `Op::Range` (on a real MongoDB; FerretDB 1.24 filters
//! those in its own code).
//!
//! Ops: Get `find_one` by `_id`; MultiGet and batched Gets one `find` with `$in`; Insert
//! `insert_one` (a duplicate key is a server error, as in SQL), batched Inserts one
//! `insert_many`; Delete `delete_one`, batched Deletes one `delete_many` with `$in`; Update
//! `update_one` with `$set` (`$unset` for NULL), its matched count the row count; Read-
//! modify-write `find_one` then `update_one`; Scan `find` on `_id >= start` sorted by `_id`
//! with a limit; Range rows/COUNT `find`/`count_documents` on the indexed column; Range MAX
//! the top row of the range sorted by the column, descending (FerretDB 1.24 has no `$max`
//! accumulator in `$group`); FetchAll one `find` of everything
//! (streamed in the server's batches). Batches of other kinds loop, one request per op. No
//! TPC-H queries.
//!
//! URL: `mongodb://[user[:password]@]host:port[/DB][?options]`, handed to the driver as
//! written (so every connection-string option works; with a user the path is also the
//! authentication database unless `authSource` says otherwise). The password comes from
//! the URL only and is never shown (`TargetUrl::redacted`). Each `connect` shares the
//! driver's connection pool (one `Client` per target).
//!
//! Safety: the database is dbsweep's to change only while its marker collection
//! `dbsweep_owner` holds `{_id: "owner", by: "dbsweep"}`; `prepare` refuses with
//! `Error::NotOwned` when `dbsweep_*` collections exist without it. Only `dbsweep_*`
//! collections are ever dropped; other collections of the database are left alone, and
//! there is no `dropDatabase`. The run's lease record lives in `dbsweep_lease` (see
//! `lease.rs`), which clearing the database leaves to the lease protocol.

use super::{Capabilities, Connection, EngineMemory, Execution, OpenContext, RowSource, Target, TargetInfo, TargetUrl};
use crate::base::op::{Answer, ErrorClass, Op, OpError, OpKind, Outcome, RangeAgg};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, TableId, Value};
use crate::error::{Error, Result};
use async_trait::async_trait;
use futures_util::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc};
use mongodb::error::ErrorKind;
use mongodb::options::ClientOptions;
use mongodb::{Client, Collection, Database, IndexModel};
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;
use tokio::sync::OnceCell;

mod lease;

/// Every collection dbsweep creates starts with this.
const PREFIX: &str = "dbsweep_";
/// The marker collection and its one document.
const MARKER_COLLECTION: &str = "dbsweep_owner";
const MARKER_ID: &str = "owner";
const MARKER_BY: &str = "dbsweep";
/// The lease record's collection (see `lease.rs`); never dropped with the tables.
const LEASE_COLLECTION: &str = "dbsweep_lease";
/// Documents per `insert_many` when bulk loading.
const LOAD_CHUNK: usize = 1000;
/// How long the driver looks for a usable server before an op or a setup step fails.
const SERVER_WAIT: Duration = Duration::from_secs(10);
const MILLIS_PER_DAY: i64 = 86_400_000;

pub struct MongoDb {
    /// Filled in by `prepare` with the server's version and settings.
    probed: OnceLock<TargetInfo>,
    /// What is known before the server was asked.
    base: TargetInfo,
    /// The URL as the user wrote it, password included: only ever handed to the driver.
    connection_string: String,
    database: String,
    /// `host:port/db` for messages (never the password).
    address: String,
    client: OnceCell<Client>,
    tables: RwLock<Arc<Vec<Arc<TableDef>>>>,
}

impl MongoDb {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let host = url.host().unwrap_or("127.0.0.1");
        let database = url.database().filter(|d| !d.is_empty()).unwrap_or_else(|| ctx.namespace.name().to_string());
        if database.contains(['/', '\\', '.', ' ', '"', '$']) {
            return Err(Error::usage(format!(
                "target '{name}': '{database}' is not a MongoDB database name; use letters, digits, '_' or '-'"
            )));
        }
        let address = format!("{host}:{}/{database}", url.port().unwrap_or(27017));
        let mut settings = BTreeMap::new();
        settings.insert("database".into(), database.clone());
        settings.insert("layout".into(), "one document per row {_id: pk, column: value}; an ascending index per indexed column".into());
        settings.insert("write_concern".into(), "the server's default".into());
        let base = TargetInfo {
            name: name.to_string(),
            system: "mongodb".into(),
            url: url.redacted(),
            execution: Execution::Async,
            capabilities: Capabilities {
                ops: vec![
                    OpKind::Echo,
                    OpKind::Insert,
                    OpKind::Get,
                    OpKind::MultiGet,
                    OpKind::Delete,
                    OpKind::Update,
                    OpKind::ReadModifyWrite,
                    OpKind::Scan,
                    OpKind::RangeRows,
                    OpKind::RangeCount,
                    OpKind::RangeMax,
                    OpKind::FetchAll,
                ],
                queries: vec![],
                native_batch: true,
                secondary_indexes: true,
            },
            version: "unknown (not yet connected)".into(),
            settings,
        };
        Ok(MongoDb {
            probed: OnceLock::new(),
            base,
            connection_string: url_with_password(url),
            database,
            address,
            client: OnceCell::new(),
            tables: RwLock::new(Arc::new(Vec::new())),
        })
    }

    fn name(&self) -> &str {
        &self.base.name
    }

    /// The driver's client (one pool per target), created on first use.
    async fn client(&self) -> Result<&Client> {
        self.client
            .get_or_try_init(|| async {
                let mut options = ClientOptions::parse(&self.connection_string)
                    .await
                    .map_err(|e| Error::usage(format!("target '{}': bad MongoDB URL {}: {}", self.name(), self.base.url, e.kind)))?;
                options.app_name.get_or_insert_with(|| "dbsweep".to_string());
                options.server_selection_timeout.get_or_insert(SERVER_WAIT);
                options.connect_timeout.get_or_insert(SERVER_WAIT);
                Client::with_options(options)
                    .map_err(|e| Error::usage(format!("target '{}': bad MongoDB URL {}: {}", self.name(), self.base.url, e.kind)))
            })
            .await
    }

    async fn db(&self) -> Result<Database> {
        Ok(self.client().await?.database(&self.database))
    }

    fn setup_error(&self, what: &str, e: mongodb::error::Error) -> Error {
        if is_connection_error(&e) {
            Error::unreachable(
                self.name(),
                format!("cannot reach MongoDB at {} during {what}: {}; start the server or fix the URL", self.address, e.kind),
            )
        } else {
            Error::runtime(format!("target '{}': MongoDB {what} failed: {}", self.name(), e.kind))
        }
    }

    /// Asks the server for its version (FerretDB names itself) and storage engine.
    async fn probe(&self, db: &Database) -> Result<()> {
        let build = db.run_command(doc! {"buildInfo": 1}).await.map_err(|e| self.setup_error("buildInfo", e))?;
        if self.probed.get().is_some() {
            return Ok(());
        }
        let mut info = self.base.clone();
        let version = build.get_str("version").unwrap_or("unknown").to_string();
        match build.get_str("ferretdbVersion") {
            Ok(ferret) => {
                info.system = "ferretdb".into();
                info.version = format!("FerretDB {ferret} (answers as MongoDB {version})");
            }
            Err(_) => info.version = version,
        }
        if let Ok(status) = db.run_command(doc! {"serverStatus": 1}).await
            && let Ok(engine) = status.get_document("storageEngine")
            && let Ok(engine) = engine.get_str("name")
        {
            info.settings.insert("storage_engine".into(), engine.to_string());
        }
        let _ = self.probed.set(info);
        Ok(())
    }

    /// Whether the marker says the `dbsweep_*` collections are ours; `Err(NotOwned)` when
    /// such collections exist that dbsweep did not mark.
    async fn check_owned(&self, db: &Database) -> Result<bool> {
        let names = db.list_collection_names().await.map_err(|e| self.setup_error("listCollections", e))?;
        if names.iter().any(|n| n == MARKER_COLLECTION) {
            // One read of the whole (one-document) collection, so a marker another run
            // writes meanwhile is seen whole or not at all.
            let read = db.collection::<Document>(MARKER_COLLECTION).find(doc! {}).limit(2).await;
            let documents: Vec<Document> = read
                .map_err(|e| self.setup_error("reading the marker", e))?
                .try_collect()
                .await
                .map_err(|e| self.setup_error("reading the marker", e))?;
            if let [marker] = documents.as_slice()
                && marker.get_str("_id") == Ok(MARKER_ID)
                && marker.get_str("by") == Ok(MARKER_BY)
            {
                return Ok(true);
            }
            // An empty marker collection is another dbsweep run writing its marker this
            // instant (the collection shows before its document): not marked yet.
            if !documents.is_empty() {
                return Err(Error::not_owned(
                    self.name(),
                    format!(
                        "collection '{MARKER_COLLECTION}' in MongoDB {} was not written by dbsweep; dbsweep will not touch collections it did not create: drop the '{PREFIX}*' collections yourself or name another database in the URL",
                        self.address
                    ),
                ));
            }
        }
        match names.iter().find(|n| n.starts_with(PREFIX) && *n != LEASE_COLLECTION && *n != MARKER_COLLECTION) {
            Some(name) => Err(Error::not_owned(
                self.name(),
                format!(
                    "collection '{name}' in MongoDB {} has dbsweep's prefix but no '{MARKER_COLLECTION}' marker, so dbsweep did not create it; drop the '{PREFIX}*' collections yourself or name another database in the URL",
                    self.address
                ),
            )),
            None => Ok(false),
        }
    }

    /// Drops dbsweep's collections, the marker last and the lease record not at all (call
    /// only once `check_owned` said yes).
    async fn drop_ours(&self, db: &Database) -> Result<()> {
        let names = db.list_collection_names().await.map_err(|e| self.setup_error("listCollections", e))?;
        for name in names.iter().filter(|n| n.starts_with(PREFIX) && *n != MARKER_COLLECTION && *n != LEASE_COLLECTION) {
            db.collection::<Document>(name).drop().await.map_err(|e| self.setup_error("drop", e))?;
        }
        if names.iter().any(|n| n == MARKER_COLLECTION) {
            db.collection::<Document>(MARKER_COLLECTION).drop().await.map_err(|e| self.setup_error("drop", e))?;
        }
        Ok(())
    }

    /// Marks the database's `dbsweep_*` collections as dbsweep's (idempotent).
    async fn write_marker(&self, db: &Database) -> Result<()> {
        let marker = db.collection::<Document>(MARKER_COLLECTION);
        let upsert = || marker.update_one(doc! {"_id": MARKER_ID}, doc! {"$set": {"by": MARKER_BY}}).upsert(true);
        match upsert().await {
            // Two upserts at once can both insert; the loser's retry finds the winner's.
            Err(e) if is_duplicate_key(&e) => upsert().await,
            other => other,
        }
        .map_err(|e| self.setup_error("writing the marker", e))?;
        Ok(())
    }

    fn table(&self, table: &TableDef) -> Result<Arc<TableDef>> {
        self.tables
            .read()
            .unwrap()
            .iter()
            .find(|t| t.name == table.name)
            .cloned()
            .ok_or_else(|| Error::runtime(format!("target '{}': table {} was not prepared", self.name(), table.name)))
    }
}

/// The URL with its password in the userinfo, as the driver needs it (`TargetUrl` shows
/// only the redacted form; a `?password=` becomes the userinfo's, the driver knows no such
/// option).
fn url_with_password(url: &TargetUrl) -> String {
    let mut text = url.without_password().to_string();
    if let Some(password) = url.password()
        && let Ok(mut parsed) = ::url::Url::parse(&text)
    {
        let _ = parsed.set_password(Some(&password));
        text = parsed.to_string();
    }
    text
}

/// The `_id` of a key: its decimal digits zero-padded to 19 (the width of `i64::MAX`), so
/// string order is numeric order; a negative key is `-` and the 19 digits of its distance
/// from `i64::MIN` (`-` sorts before every digit).
fn key_id(key: i64) -> String {
    if key >= 0 { format!("{key:019}") } else { format!("-{:019}", i128::from(key) - i128::from(i64::MIN)) }
}

fn ids(keys: &[i64]) -> Vec<String> {
    keys.iter().map(|k| key_id(*k)).collect()
}

fn collection_name(table: &TableDef) -> String {
    format!("{PREFIX}{}", table.name)
}

/// MongoDB's duplicate key error (a unique `_id` already taken).
fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    const DUPLICATE_KEY: i32 = 11000;
    matches!(&*e.kind, ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) if w.code == DUPLICATE_KEY)
}

fn is_connection_error(e: &mongodb::error::Error) -> bool {
    matches!(*e.kind, ErrorKind::Io(_) | ErrorKind::ServerSelection { .. } | ErrorKind::ConnectionPoolCleared { .. })
}

fn op_error(e: mongodb::error::Error) -> OpError {
    let class = if is_connection_error(&e) { ErrorClass::Connection } else { ErrorClass::Server };
    OpError::new(class, format!("mongodb: {}", e.kind))
}

/// A value as stored in a document; `None` for NULL (the field is left out).
fn to_bson(v: &Value) -> Option<Bson> {
    Some(match v {
        Value::Null => return None,
        Value::Int(i) => Bson::Int64(*i),
        Value::Float(f) => Bson::Double(*f),
        Value::Decimal(d) => Bson::Int64(d.0),
        Value::Text(s) => Bson::String(s.to_string()),
        Value::Date(d) => Bson::DateTime(DateTime::from_millis(i64::from(d.0) * MILLIS_PER_DAY)),
    })
}

/// A stored field read back as a value of the column's type.
fn from_bson(ty: ColumnType, b: &Bson) -> Option<Value> {
    Some(match (ty, b) {
        (_, Bson::Null) => Value::Null,
        (ColumnType::Int, Bson::Int64(i)) => Value::Int(*i),
        (ColumnType::Int, Bson::Int32(i)) => Value::Int(i64::from(*i)),
        (ColumnType::Float, Bson::Double(f)) => Value::Float(*f),
        (ColumnType::Float, Bson::Int64(i)) => Value::Float(*i as f64),
        (ColumnType::Float, Bson::Int32(i)) => Value::Float(f64::from(*i)),
        (ColumnType::Decimal, Bson::Int64(i)) => Value::Decimal(Decimal(*i)),
        (ColumnType::Decimal, Bson::Int32(i)) => Value::Decimal(Decimal(i64::from(*i))),
        (ColumnType::Text, Bson::String(s)) => Value::Text(s.as_str().into()),
        (ColumnType::Date, Bson::DateTime(d)) => Value::Date(Date(i32::try_from(d.timestamp_millis().div_euclid(MILLIS_PER_DAY)).ok()?)),
        _ => return None,
    })
}

/// A range bound (in the units of `Op::Range`: integers, hundredths, days) as stored.
fn bound(ty: ColumnType, v: i64) -> Option<Bson> {
    Some(match ty {
        ColumnType::Int | ColumnType::Decimal => Bson::Int64(v),
        ColumnType::Float => Bson::Double(v as f64),
        ColumnType::Date => Bson::DateTime(DateTime::from_millis(v.checked_mul(MILLIS_PER_DAY)?)),
        ColumnType::Text => return None,
    })
}

fn row_document(table: &TableDef, row: &Row) -> Result<Document, OpError> {
    let key = row.first().and_then(Value::as_int).ok_or_else(|| OpError::client("mongodb: the key column must be an integer"))?;
    let mut document = doc! {"_id": key_id(key)};
    for (column, value) in table.columns.iter().zip(row).skip(1) {
        if let Some(b) = to_bson(value) {
            document.insert(column.name.clone(), b);
        }
    }
    Ok(document)
}

#[async_trait]
impl Target for MongoDb {
    fn info(&self) -> &TargetInfo {
        self.probed.get().unwrap_or(&self.base)
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        for t in tables {
            if t.columns.first().map(|c| c.ty) != Some(ColumnType::Int) {
                return Err(Error::runtime(format!("mongodb: table {}: column 0 must be an Int key", t.name)));
            }
        }
        let db = self.db().await?;
        self.probe(&db).await?;
        if self.check_owned(&db).await? {
            self.drop_ours(&db).await?;
        }
        self.write_marker(&db).await?;
        for t in tables {
            let name = collection_name(t);
            db.create_collection(&name).await.map_err(|e| self.setup_error("create", e))?;
            let collection = db.collection::<Document>(&name);
            for &c in &t.indexed {
                let column = &t.columns[c].name;
                let model = IndexModel::builder().keys(doc! {column.as_str(): 1}).build();
                collection.create_index(model).await.map_err(|e| self.setup_error("createIndexes", e))?;
            }
        }
        *self.tables.write().unwrap() = Arc::new(tables.to_vec());
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let t = self.table(table)?;
        let collection = self.db().await?.collection::<Document>(&collection_name(&t));
        let mut loaded = 0u64;
        let mut rows = rows.peekable();
        while rows.peek().is_some() {
            let documents = rows.by_ref().take(LOAD_CHUNK).map(|row| row_document(&t, &row)).collect::<Result<Vec<_>, _>>();
            let documents = documents.map_err(|e| Error::runtime(e.message))?;
            let result = collection.insert_many(documents).await.map_err(|e| self.setup_error("insert_many", e))?;
            loaded += result.inserted_ids.len() as u64;
        }
        Ok(loaded)
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let db = self.db().await?;
        db.run_command(doc! {"ping": 1}).await.map_err(|e| self.setup_error("ping", e))?;
        let tables = self.tables.read().unwrap().clone();
        let collections = tables.iter().map(|t| db.collection::<Document>(&collection_name(t))).collect();
        Ok(Box::new(MongoConnection { db, tables, collections }))
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let t = self.table(table)?;
        let collection = self.db().await?.collection::<Document>(&collection_name(&t));
        collection.count_documents(doc! {}).await.map_err(|e| self.setup_error("count_documents", e))
    }

    /// MongoDB: WiredTiger's `bytes currently in the cache` (the whole server). FerretDB
    /// has no memory figure: `dbStats` `dataSize + indexSize` of dbsweep's database (the
    /// stored size) is the nearest it reports.
    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        let db = self.db().await?;
        if let Ok(status) = db.run_command(doc! {"serverStatus": 1}).await
            && let Ok(cache) = status.get_document("wiredTiger").and_then(|w| w.get_document("cache"))
            && let Some(bytes) = cache.get("bytes currently in the cache").and_then(bson_u64)
        {
            return Ok(Some(EngineMemory { bytes, source: "serverStatus wiredTiger.cache bytes currently in the cache".into() }));
        }
        let stats = db.run_command(doc! {"dbStats": 1}).await.map_err(|e| self.setup_error("dbStats", e))?;
        let size = |field: &str| stats.get(field).and_then(bson_u64);
        Ok(match (size("dataSize"), size("indexSize")) {
            (Some(data), index) => Some(EngineMemory {
                bytes: data + index.unwrap_or(0),
                source: "dbStats dataSize + indexSize of dbsweep's database (stored size; no memory figure)".into(),
            }),
            (None, _) => None,
        })
    }

    async fn cleanup(&self) -> Result<()> {
        let db = self.db().await?;
        if self.check_owned(&db).await? {
            self.drop_ours(&db).await?;
        }
        Ok(())
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn super::lease::LeaseStore>> {
        Some(self)
    }
}

fn bson_u64(b: &Bson) -> Option<u64> {
    match b {
        Bson::Int32(i) => u64::try_from(*i).ok(),
        Bson::Int64(i) => u64::try_from(*i).ok(),
        Bson::Double(f) if *f >= 0.0 => Some(*f as u64),
        _ => None,
    }
}

pub struct MongoConnection {
    db: Database,
    tables: Arc<Vec<Arc<TableDef>>>,
    /// One per table, in `TableId` order.
    collections: Vec<Collection<Document>>,
}

impl MongoConnection {
    fn table(&self, id: TableId) -> Result<(&TableDef, &Collection<Document>), OpError> {
        match (self.tables.get(id), self.collections.get(id)) {
            (Some(t), Some(c)) => Ok((t, c)),
            _ => Err(OpError::client(format!("mongodb: no table #{id} (was prepare called?)"))),
        }
    }

    /// The filter `lo <= column <= hi` on an indexed column.
    fn range_filter(t: &TableDef, column: usize, lo: i64, hi: i64) -> Result<Document, OpError> {
        let col = t
            .columns
            .get(column)
            .filter(|_| t.indexed.contains(&column))
            .ok_or_else(|| OpError::new(ErrorClass::Unsupported, format!("mongodb: column {column} of {} has no index", t.name)))?;
        let unsupported = || OpError::new(ErrorClass::Unsupported, format!("mongodb: ranges over text column {}", col.name));
        Ok(
            doc! {col.name.as_str(): {"$gte": bound(col.ty, lo).ok_or_else(unsupported)?, "$lte": bound(col.ty, hi).ok_or_else(unsupported)?}},
        )
    }

    /// `$set` of one column, or `$unset` for NULL.
    fn update_document(t: &TableDef, column: usize, value: &Value) -> Result<Document, OpError> {
        if column == 0 || column >= t.columns.len() {
            return Err(OpError::client(format!("mongodb: cannot update column {column} of {}", t.name)));
        }
        let name = t.columns[column].name.as_str();
        Ok(match to_bson(value) {
            Some(b) => doc! {"$set": {name: b}},
            None => doc! {"$unset": {name: ""}},
        })
    }

    async fn count_found(collection: &Collection<Document>, filter: Document) -> Result<u64, OpError> {
        let mut cursor = collection.find(filter).await.map_err(op_error)?;
        let mut rows = 0;
        while cursor.try_next().await.map_err(op_error)?.is_some() {
            rows += 1;
        }
        Ok(rows)
    }

    async fn range_max(t: &TableDef, collection: &Collection<Document>, filter: Document, of: usize) -> Result<Outcome, OpError> {
        let of_col = t.columns.get(of).ok_or_else(|| OpError::client(format!("mongodb: no column {of} in {}", t.name)))?;
        let field = of_col.name.as_str();
        let top = collection.find_one(filter).sort(doc! {field: -1}).projection(doc! {field: 1}).await.map_err(op_error)?;
        let value = match top {
            None => Value::Null,
            // A missing field sorts below every value: the top row lacks it only when all do.
            Some(document) => match document.get(field) {
                None => Value::Null,
                Some(b) => from_bson(of_col.ty, b).ok_or_else(|| OpError::server(format!("mongodb: max {b} is not a {:?}", of_col.ty)))?,
            },
        };
        Ok(Outcome::answer(1, Answer::Scalar(value)))
    }
}

#[async_trait]
impl Connection for MongoConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::Echo => {
                self.db.run_command(doc! {"ping": 1}).await.map_err(op_error)?;
                Ok(Outcome::rows(0))
            }
            Op::Insert { table, row } => {
                let (t, collection) = self.table(*table)?;
                collection.insert_one(row_document(t, row)?).await.map_err(op_error)?;
                Ok(Outcome::rows(1))
            }
            Op::Get { table, key } => {
                let (_, collection) = self.table(*table)?;
                Ok(Outcome::rows(u64::from(collection.find_one(doc! {"_id": key_id(*key)}).await.map_err(op_error)?.is_some())))
            }
            Op::MultiGet { table, keys } => {
                let (_, collection) = self.table(*table)?;
                Ok(Outcome::rows(Self::count_found(collection, doc! {"_id": {"$in": ids(keys)}}).await?))
            }
            Op::Delete { table, key } => {
                let (_, collection) = self.table(*table)?;
                Ok(Outcome::rows(collection.delete_one(doc! {"_id": key_id(*key)}).await.map_err(op_error)?.deleted_count))
            }
            Op::Update { table, key, column, value } => {
                let (t, collection) = self.table(*table)?;
                let update = Self::update_document(t, *column, value)?;
                Ok(Outcome::rows(collection.update_one(doc! {"_id": key_id(*key)}, update).await.map_err(op_error)?.matched_count))
            }
            Op::ReadModifyWrite { table, key, column, value } => {
                let (t, collection) = self.table(*table)?;
                let update = Self::update_document(t, *column, value)?;
                if collection.find_one(doc! {"_id": key_id(*key)}).await.map_err(op_error)?.is_none() {
                    return Ok(Outcome::rows(0));
                }
                Ok(Outcome::rows(collection.update_one(doc! {"_id": key_id(*key)}, update).await.map_err(op_error)?.matched_count))
            }
            Op::Scan { table, start, count } => {
                let (_, collection) = self.table(*table)?;
                let limit = i64::try_from(*count).map_err(|_| OpError::client("mongodb: scan count too large"))?;
                let mut cursor =
                    collection.find(doc! {"_id": {"$gte": key_id(*start)}}).sort(doc! {"_id": 1}).limit(limit).await.map_err(op_error)?;
                let mut rows = 0;
                while cursor.try_next().await.map_err(op_error)?.is_some() {
                    rows += 1;
                }
                Ok(Outcome::rows(rows))
            }
            Op::Range { table, column, lo, hi, agg } => {
                let (t, collection) = self.table(*table)?;
                let filter = Self::range_filter(t, *column, *lo, *hi)?;
                match agg {
                    RangeAgg::Rows => Ok(Outcome::rows(Self::count_found(collection, filter).await?)),
                    RangeAgg::Count => {
                        let n = collection.count_documents(filter).await.map_err(op_error)?;
                        let n = i64::try_from(n).map_err(|_| OpError::server("mongodb: count out of range"))?;
                        Ok(Outcome::answer(1, Answer::Scalar(Value::Int(n))))
                    }
                    RangeAgg::Max { column: of } => Self::range_max(t, collection, filter, *of).await,
                }
            }
            Op::FetchAll { table } => {
                let (_, collection) = self.table(*table)?;
                Ok(Outcome::rows(Self::count_found(collection, doc! {}).await?))
            }
            Op::Query(q) => Err(OpError::new(ErrorClass::Unsupported, format!("mongodb does not run {q:?}"))),
        }
    }

    /// Inserts, Gets and Deletes of one table go in one request; other batches loop.
    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let same_table = |id: &TableId| ops.iter().all(|op| op_table(op) == Some(*id));
        match ops.first() {
            Some(Op::Insert { table, .. }) if same_table(table) => {
                let (t, collection) = self.table(*table)?;
                let documents = ops
                    .iter()
                    .map(|op| match op {
                        Op::Insert { row, .. } => row_document(t, row),
                        other => Err(OpError::client(format!("mongodb: {} in an insert batch", other.kind()))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Outcome::rows(collection.insert_many(documents).await.map_err(op_error)?.inserted_ids.len() as u64))
            }
            Some(Op::Get { table, .. }) if same_table(table) => {
                let (_, collection) = self.table(*table)?;
                let keys = batch_keys(ops, OpKind::Get)?;
                Ok(Outcome::rows(Self::count_found(collection, doc! {"_id": {"$in": ids(&keys)}}).await?))
            }
            Some(Op::Delete { table, .. }) if same_table(table) => {
                let (_, collection) = self.table(*table)?;
                let keys = batch_keys(ops, OpKind::Delete)?;
                Ok(Outcome::rows(collection.delete_many(doc! {"_id": {"$in": ids(&keys)}}).await.map_err(op_error)?.deleted_count))
            }
            _ => {
                let mut rows = 0;
                for op in ops {
                    rows += self.execute(op).await?.rows;
                }
                Ok(Outcome::rows(rows))
            }
        }
    }
}

fn op_table(op: &Op) -> Option<TableId> {
    match op {
        Op::Insert { table, .. } | Op::Get { table, .. } | Op::Delete { table, .. } => Some(*table),
        _ => None,
    }
}

/// The keys of a batch of Gets or Deletes (the runner never repeats a key in one batch).
fn batch_keys(ops: &[Op], kind: OpKind) -> Result<Vec<i64>, OpError> {
    ops.iter()
        .map(|op| match op {
            Op::Get { key, .. } | Op::Delete { key, .. } if op.kind() == kind => Ok(*key),
            other => Err(OpError::client(format!("mongodb: {} in a {kind} batch", other.kind()))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_bson() {
        for (ty, v) in [
            (ColumnType::Int, Value::Int(-7)),
            (ColumnType::Float, Value::Float(2.5)),
            (ColumnType::Decimal, Value::Decimal(Decimal(1234))),
            (ColumnType::Text, Value::Text("abc".into())),
            (ColumnType::Date, Value::Date(Date::from_iso("1998-12-01").unwrap())),
            (ColumnType::Date, Value::Date(Date(-1))),
        ] {
            let b = to_bson(&v).unwrap();
            assert_eq!(from_bson(ty, &b), Some(v), "{ty:?}");
        }
        assert_eq!(to_bson(&Value::Null), None);
        assert_eq!(from_bson(ColumnType::Int, &Bson::String("x".into())), None);
    }

    #[test]
    fn key_ids_sort_like_the_keys() {
        let keys = [i64::MIN, -1_000_000, -2, -1, 0, 1, 9, 10, 17, 1_000_000, i64::MAX];
        let ids: Vec<String> = keys.iter().map(|k| key_id(*k)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
        assert_eq!(key_id(17), "0000000000000000017");
        assert_eq!(key_id(i64::MIN), "-0000000000000000000");
    }

    #[test]
    fn range_bounds_use_the_stored_units() {
        assert_eq!(bound(ColumnType::Decimal, 1234), Some(Bson::Int64(1234)));
        assert_eq!(bound(ColumnType::Date, 1), Some(Bson::DateTime(DateTime::from_millis(MILLIS_PER_DAY))));
        assert_eq!(bound(ColumnType::Text, 1), None);
    }

    #[test]
    fn documents_carry_the_key_as_id_and_leave_nulls_out() {
        let def = crate::data::kv::shared_def();
        let mut row: Row = def.columns.iter().map(|_| Value::Null).collect();
        row[0] = Value::Int(17);
        let document = row_document(&def, &row).unwrap();
        assert_eq!(document.get_str("_id").unwrap(), "0000000000000000017");
        assert_eq!(document.len(), 1);
    }

    #[test]
    fn the_password_reaches_the_driver_but_never_the_info() {
        let url = TargetUrl::parse("mongodb://bench:s3cr%40t@127.0.0.1:27017/bench?authSource=admin").unwrap();
        let ctx = OpenContext::new(std::env::temp_dir());
        let target = MongoDb::new("m", &url, &ctx).unwrap();
        assert!(target.connection_string.contains("bench:s3cr%40t@"), "{}", target.connection_string);
        assert!(!format!("{:?}", target.info()).contains("s3cr"));
        assert_eq!(target.info().settings["database"], "bench");
        let err = MongoDb::new("m", &TargetUrl::parse("mongodb://127.0.0.1:1/a.b").unwrap(), &ctx).err().unwrap();
        assert_eq!(err.exit_code(), 2);
    }
}
