//! The H2 adapter's lease record: the one row of `<schema>.dbsweep_lease`. H2 has no
//! advisory locks, so each step is one autocommitted statement that is atomic by itself:
//! taking a free lease is an `INSERT` of primary key 1 (a second run's insert fails on the
//! key), renewing and removing are `UPDATE`/`DELETE ... WHERE holder = <ours>` (one row or
//! none). Removing the record then drops the emptied lease table and schema; a run that
//! takes the lease in that instant can lose it again, which its next renewal notices.
//! Statements go through the simple (text) protocol, as H2's PG server prefers.

use super::{H2, first_cell};
use crate::adapter::lease::LeaseStore;
use crate::adapter::postgres::sql::{quote_ident, quote_literal};
use crate::error::Result;
use async_trait::async_trait;
use tokio_postgres::{Client, SimpleQueryMessage};

/// The lease table's name inside dbsweep's schema.
const LEASE_TABLE: &str = "dbsweep_lease";

impl H2 {
    fn lease_table(&self) -> String {
        format!("{}.{}", quote_ident(&self.schema), quote_ident(LEASE_TABLE))
    }

    /// Rows a statement changed.
    async fn changed(&self, client: &Client, sql: &str) -> Result<u64> {
        let messages = client.simple_query(sql).await.map_err(|e| self.runtime(sql, &e))?;
        Ok(messages.iter().map(|m| if let SimpleQueryMessage::CommandComplete(n) = m { *n } else { 0 }).sum())
    }

    async fn lease_table_exists(&self, client: &Client) -> Result<bool> {
        let sql = format!(
            "SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
            quote_literal(&self.schema),
            quote_literal(LEASE_TABLE)
        );
        let n = first_cell(client, &sql).await.map_err(|e| self.runtime("checking the lease table", &e))?;
        Ok(n.as_deref().is_some_and(|n| n != "0"))
    }
}

#[async_trait]
impl LeaseStore for H2 {
    fn place(&self) -> String {
        format!("schema {} of H2 database {} at {}", self.schema, self.initial.settings["database"], self.endpoint)
    }

    fn alternatives(&self) -> String {
        "point the URL at another database (e.g. mem:OTHER), or add --namespace NAME to run side by side in another schema".into()
    }

    async fn read(&self) -> Result<Option<String>> {
        let client = self.open_client().await?;
        match self.schema_owned(&client).await? {
            None => return Ok(None),
            Some(false) => return Err(self.not_owned()),
            Some(true) => {}
        }
        if !self.lease_table_exists(&client).await? {
            return Ok(None);
        }
        let sql = format!("SELECT holder FROM {} WHERE id = 1", self.lease_table());
        first_cell(&client, &sql).await.map_err(|e| self.runtime("reading the lease", &e))
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let client = self.open_client().await?;
        let table = self.lease_table();
        match (current, next) {
            (None, None) => Ok(self.read().await?.is_none()),
            (None, Some(next)) => {
                self.ensure_schema(&client).await?;
                let create = format!("CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY, holder VARCHAR NOT NULL)");
                client.batch_execute(&create).await.map_err(|e| self.runtime(&create, &e))?;
                let insert = format!("INSERT INTO {table} (id, holder) VALUES (1, {})", quote_literal(next));
                match client.simple_query(&insert).await {
                    Ok(_) => Ok(true),
                    // Another run inserted first (a unique violation): not ours.
                    Err(e) if e.as_db_error().is_some_and(|db| db.code().code() == "23505") => Ok(false),
                    Err(e) => Err(self.runtime(&insert, &e)),
                }
            }
            (Some(current), Some(next)) => {
                let sql =
                    format!("UPDATE {table} SET holder = {} WHERE id = 1 AND holder = {}", quote_literal(next), quote_literal(current));
                Ok(self.changed(&client, &sql).await? == 1)
            }
            (Some(current), None) => {
                let sql = format!("DELETE FROM {table} WHERE id = 1 AND holder = {}", quote_literal(current));
                if self.changed(&client, &sql).await? != 1 {
                    return Ok(false);
                }
                let empty = first_cell(&client, &format!("SELECT COUNT(*) FROM {table}")).await.map_err(|e| self.runtime("lease", &e))?;
                if empty.as_deref() == Some("0") {
                    let drop = format!("DROP TABLE {table}");
                    client.batch_execute(&drop).await.map_err(|e| self.runtime(&drop, &e))?;
                    self.drop_schema_if_empty(&client).await?;
                }
                Ok(true)
            }
        }
    }
}
