//! Memcached adapter: one item per row, spoken in memcached's text protocol over a tokio
//! `TcpStream` (one socket per client).
//!
//! Why not a client crate: the best-kept async one (async-memcached) covers get, multi-get,
//! add, set, delete and version, but its text-protocol API has no `gets`/`cas` and deletes
//! can only be pipelined as `noreply`, which cannot say how many rows a batch deleted. The
//! subset dbsweep needs (get, gets, add, set, cas, delete, version, stats, lru_crawler
//! metadump) is a few lines each, and speaking it ourselves lets a batch be one write.
//!
//! Mapping: key `dbsweep:<table><pk>` (e.g. `dbsweep:kv17`); the value holds the row's
//! non-key columns in order, each as `<byte length>:<text>,` (netstring-like, so any text
//! is safe), or `-,` for NULL; text as in the Redis adapter (Decimal `12.34`, Date ISO).
//! Example: `2:42,5:12.25,3:abc,` is (grp 42, val 12.25, payload "abc").
//!
//! Ops: Insert = `add` (an existing key is a server error, like a duplicate key in SQL),
//! Get, MultiGet (one `get k1 k2 ...`), Delete, Update (`gets` + `cas`, 0 rows when missing),
//! ReadModifyWrite (`get` then `set`), Echo (`version`), Custom (a study's own memcached
//! commands, `custom.rs`). No Scan, Range or Query: memcached
//! cannot enumerate or order keys cheaply. Batches are pipelined in one write with no
//! atomicity (memcached has no transactions); gets are one multi-get.
//!
//! Safety: only keys with the namespace's prefix (`dbsweep:`, or `dbsweep_NAME:` with
//! `--namespace NAME`), and only once the marker item `<prefix>owner` (= "dbsweep") says
//! they are ours. The run's lease record is the item `<prefix>lease` (taken with `add`,
//! renewed with `gets`/`cas`, removed by a `cas` that expires it; see [`LeaseStore`]);
//! like any item it could be evicted from a server short of memory, which would let a
//! second run in: give memcached room for the data. `count_rows`, `prepare` and `cleanup`
//! enumerate keys with `lru_crawler metadump hash` (else `all`, memcached 1.4.31+; keys come
//! URL-encoded), which walks the live server: under concurrent writes it
//! can miss or repeat an item, so counts are exact only on a quiet server (repeats are
//! de-duplicated). `load` fails if the server evicted items meanwhile (too little `-m`).
//! The server's version and settings are read by `prepare`. This module must never send
//! `flush_all`.

use crate::adapter::declaration::{CapabilitySet, Declaration, Needs, OpSet, TargetInfoCell, UrlOptions};
use crate::adapter::{Execution, OpenContext, TargetUrl};
use crate::base::durability::{self, Durability};
use crate::base::op::{ErrorClass, OpError};
use crate::base::table::TableDef;
use crate::error::{Error, Result};
use crate::servers::ServerKind;
pub use connection::MemcachedConnection;
use lease::LEASE_KEY;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use wire::Wire;

mod connection;
mod custom;
mod lease;
mod rows;
mod target;
mod wire;

/// The marker item (after the namespace's prefix) and its value.
const MARKER_KEY: &str = "owner";

const MARKER_VALUE: &str = "dbsweep";

/// Rows per write when bulk loading.
const LOAD_CHUNK: usize = 1000;

/// How often `cas` is retried when another client changed the item in between.
const CAS_RETRIES: usize = 16;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub const SYSTEM: Declaration = Declaration {
    system: "memcached",
    url: "memcached://",
    description: "Memcached: one item per row (text protocol); no scans, ranges or queries",
    needs: Needs::Server(ServerKind::Memcached),
    schemes: &["memcached"],
    options: UrlOptions::Only(&[]),
    several_hosts: false,
    capabilities: CapabilitySet {
        ops: OpSet::BY_KEY.with(crate::base::op::OpKind::Custom),
        queries: &[],
        native_batch: true,
        secondary_indexes: false,
        statements: Some(crate::base::custom::Family::Memcached),
    },
    open: Some(|name, url, ctx| Ok(Arc::new(Memcached::new(name, url, ctx)?))),
};

pub struct Memcached {
    /// Filled in by `prepare` with the server's version and settings.
    /// What is known before the server was asked, then what `prepare` learned from it.
    info: TargetInfoCell,
    /// `host:port`, for connecting and for messages.
    address: String,
    /// The namespace's key prefix (`dbsweep:`), the marker item and the lease item.
    prefix: String,
    marker_key: String,
    lease_key: String,
    tables: RwLock<Arc<Vec<Arc<TableDef>>>>,
}

impl Memcached {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        if url.password().is_some() || url.username().is_some() {
            return Err(Error::usage(format!(
                "target '{name}': memcached's text protocol has no login here; drop the user/password from the URL"
            )));
        }
        let address = format!("{}:{}", url.host().unwrap_or("127.0.0.1"), url.port().unwrap_or(11211));
        let mut settings = BTreeMap::new();
        settings.insert("batch".into(), "pipelined, no atomicity".into());
        settings.insert(durability::SETTING.into(), Durability::None.describe("no persistence (memcached keeps items in memory only)"));
        settings.insert("request.insert".into(), "add <key> (refused if present)".into());
        settings.insert("request.insert_batch".into(), "one pipeline of add commands".into());
        settings.insert("request.multi_get".into(), "one get <key> <key> …".into());
        settings.insert("layout".into(), "one item per row; value = non-key columns, length-prefixed text".into());
        settings.insert("count_rows".into(), "lru_crawler metadump (exact only on a quiet server)".into());
        let base = SYSTEM.target_info(name, url, Execution::Async, "unknown (not yet connected)", settings);
        let prefix = ctx.namespace.key_prefix();
        Ok(Memcached {
            info: TargetInfoCell::new(base),
            address,
            marker_key: format!("{prefix}{MARKER_KEY}"),
            lease_key: format!("{prefix}{LEASE_KEY}"),
            prefix,
            tables: RwLock::new(Arc::new(Vec::new())),
        })
    }

    fn name(&self) -> &str {
        &self.info.opened().name
    }

    async fn admin(&self) -> Result<Wire> {
        Wire::connect(&self.address).await.map_err(|e| {
            Error::unreachable(
                self.name(),
                format!("cannot connect to memcached at {}: {e}; start the server or fix the URL", self.address),
            )
        })
    }

    fn setup_error(&self, what: &str, e: OpError) -> Error {
        match e.class {
            ErrorClass::Connection | ErrorClass::Timeout => {
                Error::unreachable(self.name(), format!("lost memcached at {} during {what}: {}", self.address, e.message))
            }
            _ => Error::runtime(format!("target '{}': memcached {what} failed: {}", self.name(), e.message)),
        }
    }

    async fn probe(&self, wire: &mut Wire) {
        if self.info.is_reached() {
            return;
        }
        let mut info = self.info.opened().clone();
        if let Ok(v) = wire.version().await {
            info.version = v;
        }
        if let Ok(stats) = wire.stats("settings").await {
            for key in ["maxbytes", "evictions", "cas_enabled", "item_size_max", "num_threads", "lru_segmented"] {
                if let Some(v) = stats.get(key) {
                    info.settings.insert(key.to_string(), v.clone());
                }
            }
        }
        self.info.set(info);
    }

    /// All keys with our prefix (the marker too, not the lease record), from a fresh
    /// connection's metadump.
    async fn our_keys(&self) -> Result<Vec<String>> {
        let mut wire = self.admin().await?;
        let keys = wire.metadump().await.map_err(|e| self.setup_error("lru_crawler metadump", e))?;
        Ok(keys.into_iter().filter(|k| k.starts_with(&self.prefix) && *k != self.lease_key).collect())
    }

    /// Whether the prefixed keys are ours; `Err(NotOwned)` when some exist without our marker.
    async fn check_owned(&self, wire: &mut Wire, keys: &[String]) -> Result<bool> {
        let (marker_key, prefix) = (&self.marker_key, &self.prefix);
        let marker = wire.get_multi(std::slice::from_ref(marker_key)).await.map_err(|e| self.setup_error("get", e))?;
        match marker.first().map(|(_, v, _)| v.as_slice()) {
            Some(v) if v == MARKER_VALUE.as_bytes() => Ok(true),
            Some(_) => Err(Error::not_owned(
                self.name(),
                format!(
                    "item '{marker_key}' in memcached at {} was not written by dbsweep; delete the '{prefix}*' items yourself or use another server",
                    self.address
                ),
            )),
            None => match keys.first() {
                Some(key) => Err(Error::not_owned(
                    self.name(),
                    format!(
                        "item '{key}' in memcached at {} has dbsweep's prefix but no '{marker_key}' marker, so dbsweep did not create it; delete the '{prefix}*' items yourself or use another server",
                        self.address
                    ),
                )),
                None => Ok(false),
            },
        }
    }

    fn table_prefix(&self, table: &TableDef) -> Result<String> {
        if self.tables.read().unwrap().iter().any(|t| t.name == table.name) {
            Ok(format!("{}{}", self.prefix, table.name))
        } else {
            Err(Error::runtime(format!("target '{}': table {} was not prepared", self.name(), table.name)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::rows::{decode_fields, encode_row, percent_decode, replace_field};
    use super::*;
    use crate::base::table::Decimal;
    use crate::base::table::Value;

    #[test]
    fn rows_encode_as_length_prefixed_text_and_fields_can_be_replaced() {
        let row = vec![Value::Int(17), Value::Int(42), Value::Float(12.25), Value::Text("a,b:c".into()), Value::Null];
        let data = encode_row(&row);
        assert_eq!(data, b"2:42,5:12.25,5:a,b:c,-,");
        assert_eq!(decode_fields(&data).unwrap(), vec![Some(b"42".to_vec()), Some(b"12.25".to_vec()), Some(b"a,b:c".to_vec()), None]);
        let changed = replace_field(&data, 2, &Value::Float(7.5)).unwrap();
        assert_eq!(changed, b"2:42,3:7.5,5:a,b:c,-,");
        assert_eq!(replace_field(&data, 4, &Value::Decimal(Decimal(1234))).unwrap(), b"2:42,5:12.25,5:a,b:c,5:12.34,");
        assert!(decode_fields(b"3:ab,").is_none());
    }

    #[test]
    fn metadump_keys_are_url_decoded() {
        assert_eq!(percent_decode("dbsweep%3Akv17"), "dbsweep:kv17");
        assert_eq!(percent_decode("a%2520b"), "a%20b");
        assert_eq!(percent_decode("plain%"), "plain%");
    }

    #[test]
    fn credentials_in_memcached_urls_are_refused_without_echoing_them() {
        let err =
            Memcached::new("m", &TargetUrl::parse("memcached://u:canary@127.0.0.1:1").unwrap(), &OpenContext::new("/tmp")).err().unwrap();
        assert_eq!(err.exit_code(), 2);
        assert!(!err.to_string().contains("canary"));
    }
}
