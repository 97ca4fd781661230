//! The command-line client target's life cycle: it delegates preparing, loading,
//! counting and cleanup to the library adapter of the same server, and connects by
//! starting a client process. Must not load data through the command-line client.

use super::session::CliConn;
use super::text::requests;
use super::{CONNECT_TIMEOUT, CliTarget, Kind};
use crate::adapter::sql::dialect::SqlTable;
use crate::adapter::sql::dialects::MYSQL;
use crate::adapter::{Connection, ConnectionRoom, Target, TargetInfo};
use crate::base::op::Op;
use crate::base::table::{RowSource, TableDef};
use crate::error::{Error, Result};
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

#[async_trait]
impl Target for CliTarget {
    fn info(&self) -> &TargetInfo {
        self.info.get()
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        self.inner.prepare(tables).await?;
        *self.tables.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tables.to_vec());
        if !self.info.is_reached() {
            let lib = self.inner.info();
            let mut info = self.info.opened().clone();
            info.version = lib.version.clone();
            for (k, v) in requests(self.launch.kind, tables) {
                info.settings.insert(k.to_string(), v);
            }
            for (k, v) in &lib.settings {
                info.settings.entry(k.clone()).or_insert_with(|| v.clone());
            }
            self.info.set(info);
        }
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        self.inner.load(table, rows).await
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        static NONCE: AtomicU64 = AtomicU64::new(0);
        let n = NONCE.fetch_add(1, Ordering::Relaxed);
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let tables = self.tables.read().unwrap_or_else(|e| e.into_inner()).clone();
        let sql_tables = match self.launch.kind {
            Kind::MySql => tables.iter().map(|def| SqlTable::in_schema(&MYSQL, def.clone(), &self.launch.database)).collect(),
            Kind::Redis => Vec::new(),
        };
        let mut conn = CliConn {
            launch: self.launch.clone(),
            tables,
            sql_tables,
            proc: None,
            nonce: format!("dbsweepend{}x{t:x}x{n}", std::process::id()),
            seq: 0,
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, conn.execute(&Op::Echo)).await {
            Ok(Ok(_)) => Ok(Box::new(conn)),
            Ok(Err(e)) => Err(Error::unreachable(
                &self.launch.name,
                format!(
                    "{} could not reach the server ({}); start the server or fix host/port/credentials in the URL",
                    self.launch.program, e.message
                ),
            )),
            Err(_) => Err(Error::unreachable(&self.launch.name, format!("{} did not answer within 10 s", self.launch.program))),
        }
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        self.inner.count_rows(table).await
    }

    async fn cleanup(&self) -> Result<()> {
        self.inner.cleanup().await
    }

    /// The library adapter's room: each client is one client process holding one
    /// connection (a fresh one per request with `?spawn=per-op`, never two at once).
    async fn connection_room(&self) -> Result<Option<ConnectionRoom>> {
        self.inner.connection_room().await
    }

    /// The library adapter's lease: the same namespace on the same server.
    fn lease(self: Arc<Self>) -> Option<Arc<dyn crate::adapter::lease::LeaseStore>> {
        self.inner.clone().lease()
    }
}
