//! The Cassandra adapter's lease record: the one row of `<keyspace>.dbsweep_lease`, taken,
//! renewed and removed with lightweight transactions (`IF NOT EXISTS`, `IF holder = ?`),
//! which Paxos makes atomic across clients (the protocol is `adapter::lease`). Removing the
//! record drops the lease table, and the keyspace when only its marker is left; Cassandra
//! has no lock around that step, so a run taking the lease in that instant can lose it
//! again, which its next renewal notices.

use super::{Cassandra, MARKER_TABLE, applied, quote};
use crate::adapter::lease::LeaseStore;
use crate::error::{Error, Result};
use async_trait::async_trait;
use scylla::value::CqlValue;

/// The lease table's name inside the keyspace, and its comment.
const LEASE_TABLE: &str = "dbsweep_lease";
const LEASE_COMMENT: &str = "dbsweep lease: which dbsweep run uses this keyspace";

impl Cassandra {
    fn lease_table(&self) -> String {
        format!("{}.{}", quote(&self.keyspace), quote(LEASE_TABLE))
    }

    /// Whether an LWT was applied.
    async fn lwt(&self, cql: &str, values: impl scylla::serialize::row::SerializeRow) -> Result<bool> {
        let result = self.run(cql, values).await?;
        applied(result).map(|n| n == 1).map_err(|e| Error::runtime(format!("target '{}': {}", self.name(), e.message)))
    }
}

#[async_trait]
impl LeaseStore for Cassandra {
    fn place(&self) -> String {
        format!("keyspace {} on Cassandra {}", self.keyspace, self.node)
    }

    fn alternatives(&self) -> String {
        "name another keyspace in the URL path, or add --namespace NAME to run side by side in another keyspace".into()
    }

    async fn read(&self) -> Result<Option<String>> {
        let Some(tables) = self.owned_tables().await? else { return Ok(None) };
        if !tables.contains_key(LEASE_TABLE) {
            return Ok(None);
        }
        let result = self.run(&format!("SELECT holder FROM {} WHERE id = 1", self.lease_table()), ()).await?;
        let failed = |e: &dyn std::fmt::Display| Error::runtime(format!("target '{}': reading the lease: {e}", self.name()));
        let rows = result.into_rows_result().map_err(|e| failed(&e))?;
        if rows.rows_num() == 0 {
            return Ok(None);
        }
        let row: scylla::value::Row = rows.first_row().map_err(|e| failed(&e))?;
        match row.columns.into_iter().next().flatten() {
            Some(CqlValue::Text(holder)) => Ok(Some(holder)),
            _ => Ok(None),
        }
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let table = self.lease_table();
        match (current, next) {
            (None, None) => Ok(self.read().await?.is_none()),
            (None, Some(next)) => {
                self.ensure_keyspace().await?;
                self.run(
                    &format!("CREATE TABLE IF NOT EXISTS {table} (id int PRIMARY KEY, holder text) WITH comment = '{LEASE_COMMENT}'"),
                    (),
                )
                .await?;
                self.lwt(&format!("INSERT INTO {table} (id, holder) VALUES (1, ?) IF NOT EXISTS"), (next,)).await
            }
            (Some(current), Some(next)) => {
                self.lwt(&format!("UPDATE {table} SET holder = ? WHERE id = 1 IF holder = ?"), (next, current)).await
            }
            (Some(current), None) => {
                if !self.lwt(&format!("DELETE FROM {table} WHERE id = 1 IF holder = ?"), (current,)).await? {
                    return Ok(false);
                }
                self.run(&format!("DROP TABLE IF EXISTS {table}"), ()).await?;
                if let Some(left) = self.owned_tables().await?
                    && left.keys().all(|name| name == MARKER_TABLE)
                {
                    self.run(&format!("DROP KEYSPACE IF EXISTS {}", quote(&self.keyspace)), ()).await?;
                }
                Ok(true)
            }
        }
    }
}
