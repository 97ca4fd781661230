//! The Cassandra target's life cycle: prepare (keyspace, marker, tables), load, connect,
//! count, blind-delete read-back and cleanup. Must drop only what dbsweep marked.

use super::connection::CassandraConnection;
use super::table::{TableCql, quote, row_values, value_bytes};
use super::{
    Affected, BATCH_BYTES, Cassandra, LOAD_BATCH, LOAD_CONCURRENCY, MARKER_COMMENT, MARKER_TABLE, PAGE_SIZE, SLOW_TIMEOUT, TABLE_COMMENT,
};
use crate::adapter::{Connection, EngineMemory, RowSource, Target, TargetInfo};
use crate::base::table::{ColumnType, TableDef};
use crate::error::{Error, Result};
use async_trait::async_trait;
use futures_util::StreamExt;
use scylla::client::session::Session;
use scylla::errors::ExecutionError;
use scylla::response::PagingState;
use scylla::statement::batch::{Batch, BatchStatement, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::CqlValue;
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

/// Runs a prepared statement page by page; returns the number of rows.
pub(super) async fn count_pages(session: &Session, stmt: &PreparedStatement, values: &[CqlValue]) -> Result<u64, ExecutionError> {
    let mut state = PagingState::start();
    let mut rows = 0u64;
    loop {
        let (result, next) = session.execute_single_page(stmt, values, state).await?;
        if result.is_rows() {
            rows += result.into_rows_result().map(|r| r.rows_num() as u64).unwrap_or(0);
        }
        match next.into_paging_control_flow() {
            ControlFlow::Continue(s) => state = s,
            ControlFlow::Break(()) => return Ok(rows),
        }
    }
}

#[async_trait]
impl Target for Cassandra {
    fn info(&self) -> &TargetInfo {
        self.info.get()
    }

    fn blind_deletes(&self) -> bool {
        self.affected == Affected::Plain
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        for t in tables {
            if t.columns.first().map(|c| c.ty) != Some(ColumnType::Int) {
                return Err(Error::runtime(format!("cassandra: table {}: column 0 must be an Int key", t.name)));
            }
            if t.name == MARKER_TABLE {
                return Err(Error::runtime(format!("cassandra: '{MARKER_TABLE}' is dbsweep's marker table name")));
            }
        }
        self.probe().await?;
        let ks = quote(&self.keyspace);
        let existing = self.ensure_keyspace().await?;
        // A same-named table dbsweep did not create is refused before anything is dropped.
        for t in tables {
            if let Some(comment) = existing.get(&t.name)
                && comment != TABLE_COMMENT
            {
                return Err(Error::not_owned(
                    self.name(),
                    format!(
                        "table '{}.{}' on Cassandra {} was not created by dbsweep (its comment is not '{TABLE_COMMENT}'); \
                         drop it yourself or name another keyspace in the URL path",
                        self.keyspace, t.name, self.node
                    ),
                ));
            }
        }
        for (name, comment) in &existing {
            if comment == TABLE_COMMENT {
                self.run(&format!("DROP TABLE IF EXISTS {ks}.{}", quote(name)), ()).await?;
            }
        }
        let cql: Vec<TableCql> = tables.iter().map(|t| TableCql::new(&self.keyspace, t)).collect();
        for t in &cql {
            for statement in t.create(&self.keyspace) {
                self.run(&statement, ()).await?;
            }
        }
        *self.tables.write().unwrap() = Arc::new(cql);
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let (tables, i) = self.tables_of(table)?;
        let t = &tables[i];
        let stmt = self.prepare_stmt(&t.insert).await?;
        let session = self.admin().await?.clone();
        let def = t.def.clone();
        let (stmt, session) = (&stmt, &session);
        // Chunks of up to LOAD_BATCH rows and about BATCH_BYTES of values.
        let mut rows = rows.peekable();
        let chunks = std::iter::from_fn(move || {
            let (mut chunk, mut bytes) = (Vec::new(), 0);
            while chunk.len() < LOAD_BATCH {
                let Some(row) = rows.peek() else { break };
                let values = match row_values(&def, row) {
                    Ok(values) => values,
                    Err(e) => return Some(Err(Error::runtime(e.message))),
                };
                let size = value_bytes(&values);
                if !chunk.is_empty() && bytes + size > BATCH_BYTES {
                    break;
                }
                rows.next();
                bytes += size;
                chunk.push(values);
            }
            (!chunk.is_empty()).then_some(Ok(chunk))
        });
        let mut writes = futures_util::stream::iter(chunks.map(|chunk| async move {
            let chunk = chunk?;
            let n = chunk.len() as u64;
            if chunk.len() == 1 {
                session.execute_unpaged(stmt, &chunk[0]).await.map_err(|e| self.setup_error("load", e))?;
            } else {
                let statements = vec![BatchStatement::PreparedStatement(stmt.clone()); chunk.len()];
                let batch = Batch::new_with_statements(BatchType::Unlogged, statements);
                session.batch(&batch, &chunk).await.map_err(|e| self.setup_error("load", e))?;
            }
            Ok::<u64, Error>(n)
        }))
        .buffer_unordered(LOAD_CONCURRENCY / LOAD_BATCH);
        let mut loaded = 0u64;
        while let Some(done) = writes.next().await {
            loaded += done?;
        }
        Ok(loaded)
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let session = self.new_session().await?;
        Ok(Box::new(CassandraConnection {
            session: Arc::new(session),
            keyspace: self.keyspace.clone(),
            affected: self.affected,
            tables: self.tables.read().unwrap().clone(),
            prepared: HashMap::new(),
            in_keyspace: false,
        }))
    }

    /// Counts the keys page by page (a single `COUNT(*)` could hit the server's range
    /// timeout on large tables).
    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let (tables, i) = self.tables_of(table)?;
        let t = &tables[i];
        let key = quote(&t.def.columns[0].name);
        let cql = format!("SELECT {key} FROM {}.{}", quote(&self.keyspace), quote(&t.def.name));
        let mut stmt = self.prepare_stmt(&cql).await?;
        stmt.set_page_size(PAGE_SIZE);
        stmt.set_request_timeout(Some(SLOW_TIMEOUT));
        count_pages(self.admin().await?, &stmt, &[]).await.map_err(|e| self.setup_error("count", e))
    }

    /// None: Cassandra 5.0 reports no memory figure for a table's data over CQL. Its
    /// memtable sizes (MemtableOnHeapSize, MemtableLiveDataSize) are JMX metrics only, and
    /// the CQL-visible candidates measure something else: `system_views.disk_usage` and
    /// `max_partition_size` are on-disk SSTables in whole MiB (0 while the data is still in
    /// memtables, as it is after a load), `system.size_estimates` / `table_estimates`
    /// cover SSTables only and are refreshed every 5 minutes, and `system_views.caches`
    /// are the key/row/counter caches. The runner's resident-memory reading of the JVM is
    /// the figure for Cassandra (with a fixed heap it grows as the heap is touched and
    /// does not shrink after deletes).
    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        Ok(None)
    }

    async fn cleanup(&self) -> Result<()> {
        let Some(existing) = self.keyspace_tables().await? else { return Ok(()) };
        // Without the marker nothing here is dbsweep's.
        if existing.get(MARKER_TABLE).map(String::as_str) != Some(MARKER_COMMENT) {
            return Ok(());
        }
        let ks = quote(&self.keyspace);
        for (name, comment) in &existing {
            if comment == TABLE_COMMENT {
                self.run(&format!("DROP TABLE IF EXISTS {ks}.{}", quote(name)), ()).await?;
            }
        }
        self.drop_keyspace_if_empty(&existing).await?;
        *self.tables.write().unwrap() = Arc::new(Vec::new());
        Ok(())
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn crate::adapter::lease::LeaseStore>> {
        Some(self)
    }
}
