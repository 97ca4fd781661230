//! The memcached target's life cycle: prepare (ownership marker), load, connect, count,
//! engine memory and cleanup of the prefix's keys. Must never send flush_all.

use super::connection::{MemcachedConnection, deleted};
use super::rows::encode_row;
use super::wire::{StoreReply, Wire, push_store};
use super::{LOAD_CHUNK, MARKER_VALUE, Memcached};
use crate::adapter::lease::LeaseStore;
use crate::adapter::{Connection, RowSource, Target, TargetInfo};
use crate::base::op::OpError;
use crate::base::table::{ColumnType, TableDef, Value};
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::sync::Arc;

#[async_trait]
impl Target for Memcached {
    fn info(&self) -> &TargetInfo {
        self.info.get()
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        for t in tables {
            if t.columns.first().map(|c| c.ty) != Some(ColumnType::Int) {
                return Err(Error::runtime(format!("memcached: table {}: column 0 must be an Int key", t.name)));
            }
        }
        let mut wire = self.admin().await?;
        self.probe(&mut wire).await;
        let keys = self.our_keys().await?;
        self.check_owned(&mut wire, &keys).await?;
        delete_keys(&mut wire, keys.iter().filter(|k| **k != self.marker_key)).await.map_err(|e| self.setup_error("delete", e))?;
        let mut req = Vec::new();
        push_store(&mut req, "set", &self.marker_key, MARKER_VALUE.as_bytes(), None);
        wire.send(&req).await.map_err(|e| self.setup_error("set", e))?;
        if wire.stored().await.map_err(|e| self.setup_error("set", e))? != StoreReply::Stored {
            return Err(Error::runtime(format!("target '{}': memcached did not store the marker", self.name())));
        }
        *self.tables.write().unwrap() = Arc::new(tables.to_vec());
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let prefix = self.table_prefix(table)?;
        let mut wire = self.admin().await?;
        let evictions_before = evictions(&mut wire).await.map_err(|e| self.setup_error("stats", e))?;
        let mut loaded = 0u64;
        let mut rows = rows.peekable();
        while rows.peek().is_some() {
            let mut req = Vec::with_capacity(LOAD_CHUNK * 160);
            let mut n = 0;
            for row in rows.by_ref().take(LOAD_CHUNK) {
                let pk = row.first().and_then(Value::as_int).ok_or_else(|| Error::runtime("memcached: key must be an integer"))?;
                push_store(&mut req, "set", &format!("{prefix}{pk}"), &encode_row(&row), None);
                n += 1;
            }
            wire.send(&req).await.map_err(|e| self.setup_error("load", e))?;
            for _ in 0..n {
                match wire.stored().await.map_err(|e| self.setup_error("load", e))? {
                    StoreReply::Stored => loaded += 1,
                    other => {
                        return Err(Error::runtime(format!("target '{}': memcached refused a row while loading: {other:?}", self.name())));
                    }
                }
            }
        }
        // An evicted row would turn later gets into misses: a wrong benchmark, not a slow one.
        let evicted = evictions(&mut wire).await.map_err(|e| self.setup_error("stats", e))?.saturating_sub(evictions_before);
        if evicted > 0 {
            return Err(Error::runtime(format!(
                "target '{}': memcached at {} evicted {evicted} items while loading {loaded} rows; give it more memory (memcached -m MB)",
                self.name(),
                self.address
            )));
        }
        Ok(loaded)
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let wire = self.admin().await?;
        let tables = self.tables.read().unwrap().clone();
        Ok(Box::new(MemcachedConnection {
            address: self.address.clone(),
            wire: Some(wire),
            prefixes: Arc::new(tables.iter().map(|t| format!("{}{}", self.prefix, t.name)).collect()),
            columns: Arc::new(tables.iter().map(|t| t.columns.len()).collect()),
            key_prefix: self.prefix.clone(),
            table_names: Arc::new(tables.iter().map(|t| t.name.clone()).collect()),
        }))
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let prefix = self.table_prefix(table)?;
        let keys = self.our_keys().await?;
        Ok(keys.iter().filter(|k| k.strip_prefix(&prefix).is_some_and(|pk| pk.parse::<i64>().is_ok())).count() as u64)
    }

    /// `stats bytes`: the bytes the items occupy (keys, values, item headers); the slab
    /// memory memcached has taken from the OS is the process's resident memory.
    async fn engine_memory(&self) -> Result<Option<crate::adapter::EngineMemory>> {
        let mut wire = self.admin().await?;
        let stats = wire.stats("").await.map_err(|e| self.setup_error("stats", e))?;
        Ok(stats
            .get("bytes")
            .and_then(|v| v.parse().ok())
            .map(|bytes| crate::adapter::EngineMemory { bytes, source: "stats bytes".into() }))
    }

    async fn cleanup(&self) -> Result<()> {
        let mut wire = self.admin().await?;
        let mut keys = self.our_keys().await?;
        if self.check_owned(&mut wire, &keys).await? {
            // A crawl can miss items that move between LRU segments while it runs, so crawl
            // again until no row of ours is listed (bounded). The marker goes last, so an
            // interrupted cleanup still owns what is left.
            for _ in 0..5 {
                let rows: Vec<&String> = keys.iter().filter(|k| **k != self.marker_key).collect();
                if rows.is_empty() {
                    break;
                }
                delete_keys(&mut wire, rows.into_iter()).await.map_err(|e| self.setup_error("delete", e))?;
                keys = self.our_keys().await?;
            }
            delete_keys(&mut wire, std::iter::once(&self.marker_key)).await.map_err(|e| self.setup_error("delete", e))?;
        }
        Ok(())
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn LeaseStore>> {
        Some(self)
    }
}

/// The server's eviction counter.
pub(super) async fn evictions(wire: &mut Wire) -> Result<u64, OpError> {
    let stats = wire.stats("").await?;
    Ok(stats.get("evictions").and_then(|v| v.parse().ok()).unwrap_or(0))
}

/// Deletes keys in pipelined chunks; missing keys are fine.
async fn delete_keys<'a>(wire: &mut Wire, keys: impl Iterator<Item = &'a String>) -> Result<(), OpError> {
    let keys: Vec<&String> = keys.collect();
    for chunk in keys.chunks(LOAD_CHUNK) {
        let mut req = Vec::new();
        for k in chunk {
            req.extend_from_slice(format!("delete {k}\r\n").as_bytes());
        }
        wire.send(&req).await?;
        for _ in chunk {
            deleted(wire).await?;
        }
    }
    Ok(())
}
