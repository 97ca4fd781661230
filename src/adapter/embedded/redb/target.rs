//! The redb target's life cycle: prepare (owner table, tables), load, connect, count and
//! cleanup. Must delete only the tables it owns.

use super::connection::{RedbConnection, Writer};
use super::{Index, LOAD_CHUNK, Layout, OWNER_TABLE, Owner, Primary, Redb, TABLE_PREFIX, belongs_to, owned_tables, runtime};
use crate::adapter::{Connection, Target, TargetInfo};
use crate::base::table::{ColumnType, RowSource, TableDef};
use crate::error::{Error, Result};
use ::redb::{ReadableDatabase, ReadableTableMetadata, TableHandle};
use async_trait::async_trait;
use std::sync::Arc;

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
        Ok(Box::new(RedbConnection { db, tables, buf: Vec::new(), commit_durability: self.commit_durability }))
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
