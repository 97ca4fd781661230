//! The PostgreSQL adapter's lease record: the one row of `<schema>.dbsweep_lease`, read and
//! swapped in a transaction under the DDL advisory lock, so every dbsweep's swap on one
//! database is serialized (the protocol is `adapter::lease`). Removing the record drops
//! the lease table, and the schema when nothing else is left in it. Must not touch any
//! other table.

use super::Postgres;
use super::sql::quote_ident;
use crate::adapter::lease::LeaseStore;
use crate::error::Result;
use async_trait::async_trait;
use tokio_postgres::Client;

/// The lease table's name inside dbsweep's schema.
const LEASE_TABLE: &str = "dbsweep_lease";

impl Postgres {
    fn lease_table(&self) -> String {
        format!("{}.{}", quote_ident(&self.schema), quote_ident(LEASE_TABLE))
    }

    /// The stored record, inside a transaction that holds the DDL lock and has checked the
    /// schema. `None` when the schema or the table does not exist (yet).
    async fn stored_lease(&self, client: &Client, schema_exists: bool) -> Result<Option<String>> {
        if !schema_exists {
            return Ok(None);
        }
        let table: Option<String> = client
            .query_one("SELECT to_regclass($1)::text", &[&self.lease_table()])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| self.runtime("checking the lease table", &e))?;
        if table.is_none() {
            return Ok(None);
        }
        let rows = client
            .query(&format!("SELECT holder FROM {} WHERE id = 1", self.lease_table()), &[])
            .await
            .map_err(|e| self.runtime("reading the lease", &e))?;
        rows.first().map(|r| r.try_get(0).map_err(|e| self.runtime("reading the lease", &e))).transpose()
    }

    async fn swap_in_tx(&self, client: &Client, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let exists = self.lock_and_check(client).await?;
        if self.stored_lease(client, exists).await?.as_deref() != current {
            return Ok(false);
        }
        let run = |sql: String| async move { client.batch_execute(&sql).await.map_err(|e| self.runtime(&sql, &e)) };
        let table = self.lease_table();
        match next {
            Some(next) => {
                if !exists {
                    self.create_schema(client).await?;
                }
                run(format!("CREATE TABLE IF NOT EXISTS {table} (id int PRIMARY KEY CHECK (id = 1), holder text NOT NULL)")).await?;
                client
                    .execute(
                        &format!("INSERT INTO {table} (id, holder) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder"),
                        &[&next],
                    )
                    .await
                    .map_err(|e| self.runtime("writing the lease", &e))?;
            }
            None if current.is_some() => {
                run(format!("DROP TABLE {table}")).await?;
                self.drop_schema_if_empty(client).await?;
            }
            None => {}
        }
        Ok(true)
    }
}

#[async_trait]
impl LeaseStore for Postgres {
    fn place(&self) -> String {
        format!("schema {} of database {} on PostgreSQL at {}", self.schema, self.database, self.endpoint)
    }

    fn alternatives(&self) -> String {
        "point the URL at another database, or add --namespace NAME to run side by side in another schema".into()
    }

    async fn read(&self) -> Result<Option<String>> {
        let client = self.open_client().await?;
        let exists = self.check_schema(&client).await?;
        self.stored_lease(&client, exists).await
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let client = self.open_client().await?;
        client.batch_execute("BEGIN").await.map_err(|e| self.runtime("BEGIN", &e))?;
        match self.swap_in_tx(&client, current, next).await {
            Ok(true) => {
                client.batch_execute("COMMIT").await.map_err(|e| self.runtime("COMMIT", &e))?;
                Ok(true)
            }
            other => {
                let _ = client.batch_execute("ROLLBACK").await;
                other
            }
        }
    }
}
