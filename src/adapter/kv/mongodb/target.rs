//! The MongoDB target's life cycle: prepare (marker collection, indexes), load, connect,
//! count, engine memory and cleanup. Must drop only collections dbsweep marked.

use super::connection::MongoConnection;
use super::documents::{bson_u64, row_document};
use super::{LOAD_CHUNK, MongoDb, collection_name};
use crate::adapter::{Connection, EngineMemory, RowSource, Target, TargetInfo};
use crate::base::table::{ColumnType, TableDef};
use crate::error::{Error, Result};
use async_trait::async_trait;
use mongodb::IndexModel;
use mongodb::bson::{Document, doc};
use std::sync::Arc;

#[async_trait]
impl Target for MongoDb {
    fn info(&self) -> &TargetInfo {
        self.info.get()
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

    fn lease(self: Arc<Self>) -> Option<Arc<dyn crate::adapter::lease::LeaseStore>> {
        Some(self)
    }
}
