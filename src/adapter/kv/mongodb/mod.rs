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
//! (streamed in the server's batches); Custom a study's own command document on the
//! namespace's collections (`custom.rs`). Batches of other kinds loop, one request per op.
//! No TPC-H queries.
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

use crate::adapter::declaration::{CapabilitySet, Declaration, Needs, OpSet, TargetInfoCell, UrlOptions};
use crate::adapter::{Execution, OpenContext, TargetUrl};
use crate::base::op::{ErrorClass, OpError};
use crate::base::table::TableDef;
use crate::error::{Error, Result};
use crate::servers::ServerKind;
pub use connection::MongoConnection;
use futures_util::TryStreamExt;
use mongodb::bson::{Document, doc};
use mongodb::error::ErrorKind;
use mongodb::options::ClientOptions;
use mongodb::{Client, Database};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::OnceCell;

mod connection;
mod custom;
mod documents;
mod lease;
mod target;

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

pub const SYSTEM: Declaration = Declaration {
    system: "mongodb",
    url: "mongodb://",
    description: "MongoDB wire protocol (official driver): a document per row, indexes for ranges; a real MongoDB you run, or FerretDB 1.24 (--spawn ferretdb, on SQLite)",
    needs: Needs::Server(ServerKind::FerretDb),
    schemes: &["mongodb"],
    options: UrlOptions::Driver,
    several_hosts: false,
    capabilities: CapabilitySet {
        ops: OpSet::NO_SQL.with(crate::base::op::OpKind::Custom),
        queries: &[],
        native_batch: true,
        secondary_indexes: true,
        statements: Some(crate::base::custom::Family::Mongodb),
    },
    open: Some(|name, url, ctx| Ok(Arc::new(MongoDb::new(name, url, ctx)?))),
};

pub struct MongoDb {
    /// What is known before the server was asked, then what `prepare` learned from it.
    info: TargetInfoCell,
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
        let base = SYSTEM.target_info(name, url, Execution::Async, "unknown (not yet connected)", settings);
        Ok(MongoDb {
            info: TargetInfoCell::new(base),
            connection_string: url_with_password(url),
            database,
            address,
            client: OnceCell::new(),
            tables: RwLock::new(Arc::new(Vec::new())),
        })
    }

    fn name(&self) -> &str {
        &self.info.opened().name
    }

    /// The driver's client (one pool per target), created on first use.
    async fn client(&self) -> Result<&Client> {
        self.client
            .get_or_try_init(|| async {
                let mut options = ClientOptions::parse(&self.connection_string).await.map_err(|e| {
                    Error::usage(format!("target '{}': bad MongoDB URL {}: {}", self.name(), self.info.opened().url, e.kind))
                })?;
                options.app_name.get_or_insert_with(|| "dbsweep".to_string());
                options.server_selection_timeout.get_or_insert(SERVER_WAIT);
                options.connect_timeout.get_or_insert(SERVER_WAIT);
                Client::with_options(options)
                    .map_err(|e| Error::usage(format!("target '{}': bad MongoDB URL {}: {}", self.name(), self.info.opened().url, e.kind)))
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
        if self.info.is_reached() {
            return Ok(());
        }
        let mut info = self.info.opened().clone();
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
        self.info.set(info);
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

#[cfg(test)]
mod tests {
    use super::documents::{MILLIS_PER_DAY, bound, from_bson, key_id, row_document, to_bson};
    use super::*;
    use crate::adapter::Target;
    use crate::base::table::{ColumnType, Date, Decimal, Row, Value};
    use mongodb::bson::{Bson, DateTime};

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
