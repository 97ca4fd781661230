//! The lease record of the PostgreSQL-protocol engines that share a server between runs
//! (the protocol is `adapter::lease`): the one row of `<schema>.dbsweep_lease` in
//! dbsweep's schema. Removing the record drops the lease table, and the schema when nothing
//! else is left in it. How a swap is made atomic is the engine's:
//! - PostgreSQL: read and swapped in one transaction under the DDL advisory lock, so every
//!   dbsweep's swap on one database is serialized;
//! - H2 (no advisory locks): each step is one autocommitted statement, atomic by itself:
//!   taking a free lease is an `INSERT` of primary key 1 (a second run's insert fails on
//!   the key), renewing and removing are `UPDATE`/`DELETE ... WHERE holder = <ours>` (one
//!   row or none). A run that takes the lease in the instant its emptied table is dropped
//!   can lose it again, which its next renewal notices. Statements go through the simple
//!   (text) protocol, as H2's PG server prefers.
//!
//! HyPer keeps no lease here: each target owns a database file of its own. Must not touch
//! any other table.

use super::h2::{H2, first_cell};
use super::postgres::Postgres;
use super::{PgServer, PgWire};
use crate::adapter::lease::{LeaseStore, LockedLeaseTable, swap_locked};
use crate::adapter::sql::dialect::Dialect;
use crate::adapter::sql::dialects::{H2_SQL, PG_ROW, quote_literal};
use crate::error::Result;
use async_trait::async_trait;
use tokio_postgres::{Client, SimpleQueryMessage};

/// The lease table's name inside dbsweep's schema.
const LEASE_TABLE: &str = "dbsweep_lease";

/// A PostgreSQL-protocol target's lease is its engine's (`PgServer::lease_store`).
#[async_trait]
impl<S: PgServer> LeaseStore for PgWire<S> {
    fn place(&self) -> String {
        self.store().place()
    }

    fn alternatives(&self) -> String {
        self.store().alternatives()
    }

    async fn read(&self) -> Result<Option<String>> {
        self.store().read().await
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        self.store().swap(current, next).await
    }
}

impl<S: PgServer> PgWire<S> {
    fn store(&self) -> &dyn LeaseStore {
        self.0.lease_store().expect("only targets with a lease store are leased")
    }
}

impl Postgres {
    fn lease_table(&self) -> String {
        PG_ROW.table_name_in(self.pg().schema(), LEASE_TABLE)
    }

    /// The stored record, inside a transaction that holds the DDL lock and has checked the
    /// schema. `None` when the schema or the table does not exist (yet).
    async fn stored_lease(&self, client: &Client, schema_exists: bool) -> Result<Option<String>> {
        if !schema_exists {
            return Ok(None);
        }
        let runtime = |e: tokio_postgres::Error| self.pg().runtime("reading the lease", &e);
        let table: Option<String> =
            client.query_one("SELECT to_regclass($1)::text", &[&self.lease_table()]).await.and_then(|r| r.try_get(0)).map_err(runtime)?;
        if table.is_none() {
            return Ok(None);
        }
        let rows = client.query(&format!("SELECT holder FROM {} WHERE id = 1", self.lease_table()), &[]).await.map_err(runtime)?;
        rows.first().map(|r| r.try_get(0).map_err(runtime)).transpose()
    }
}

/// PostgreSQL's lease table inside a transaction that holds the DDL advisory lock.
struct LockedTable<'a> {
    target: &'a Postgres,
    client: &'a Client,
    schema_exists: bool,
}

impl LockedTable<'_> {
    async fn run(&self, sql: &str) -> Result<()> {
        self.client.batch_execute(sql).await.map_err(|e| self.target.pg().runtime(sql, &e))
    }
}

#[async_trait]
impl LockedLeaseTable for LockedTable<'_> {
    async fn stored(&mut self) -> Result<Option<String>> {
        self.target.stored_lease(self.client, self.schema_exists).await
    }

    async fn create(&mut self) -> Result<()> {
        if !self.schema_exists {
            self.target.create_schema(self.client).await?;
        }
        let table = self.target.lease_table();
        self.run(&format!("CREATE TABLE IF NOT EXISTS {table} (id int PRIMARY KEY CHECK (id = 1), holder text NOT NULL)")).await
    }

    async fn write(&mut self, record: &str) -> Result<()> {
        let upsert = format!(
            "INSERT INTO {} (id, holder) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder",
            self.target.lease_table()
        );
        self.client.execute(&upsert, &[&record]).await.map(drop).map_err(|e| self.target.pg().runtime("writing the lease", &e))
    }

    async fn remove(&mut self) -> Result<()> {
        self.run(&format!("DROP TABLE {}", self.target.lease_table())).await?;
        self.target.drop_schema_if_empty(self.client).await
    }
}

#[async_trait]
impl LeaseStore for Postgres {
    fn place(&self) -> String {
        format!("schema {} of database {} on PostgreSQL at {}", self.pg().schema(), self.database, self.endpoint())
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
        client.batch_execute("BEGIN").await.map_err(|e| self.pg().runtime("BEGIN", &e))?;
        let swapped = async {
            let schema_exists = self.lock_and_check(&client).await?;
            swap_locked(&mut LockedTable { target: self, client: &client, schema_exists }, current, next).await
        };
        match swapped.await {
            Ok(true) => {
                client.batch_execute("COMMIT").await.map_err(|e| self.pg().runtime("COMMIT", &e))?;
                Ok(true)
            }
            other => {
                let _ = client.batch_execute("ROLLBACK").await;
                other
            }
        }
    }
}

impl H2 {
    fn lease_table(&self) -> String {
        H2_SQL.table_name_in(self.pg().schema(), LEASE_TABLE)
    }

    /// Rows a statement changed.
    async fn changed(&self, client: &Client, sql: &str) -> Result<u64> {
        let messages = client.simple_query(sql).await.map_err(|e| self.pg().runtime(sql, &e))?;
        Ok(messages.iter().map(|m| if let SimpleQueryMessage::CommandComplete(n) = m { *n } else { 0 }).sum())
    }

    async fn lease_table_exists(&self, client: &Client) -> Result<bool> {
        let sql = format!(
            "SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
            quote_literal(self.pg().schema()),
            quote_literal(LEASE_TABLE)
        );
        let n = first_cell(client, &sql).await.map_err(|e| self.pg().runtime("checking the lease table", &e))?;
        Ok(n.as_deref().is_some_and(|n| n != "0"))
    }
}

#[async_trait]
impl LeaseStore for H2 {
    fn place(&self) -> String {
        format!("schema {} of H2 database {} at {}", self.pg().schema(), self.pg().initial().settings["database"], self.endpoint())
    }

    fn alternatives(&self) -> String {
        "point the URL at another database (e.g. mem:OTHER), or add --namespace NAME to run side by side in another schema".into()
    }

    async fn read(&self) -> Result<Option<String>> {
        let client = self.session().await?;
        match self.schema_owned(&client).await? {
            None => return Ok(None),
            Some(false) => return Err(self.not_owned()),
            Some(true) => {}
        }
        if !self.lease_table_exists(&client).await? {
            return Ok(None);
        }
        let sql = format!("SELECT holder FROM {} WHERE id = 1", self.lease_table());
        first_cell(&client, &sql).await.map_err(|e| self.pg().runtime("reading the lease", &e))
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let client = self.session().await?;
        let table = self.lease_table();
        match (current, next) {
            (None, None) => Ok(self.read().await?.is_none()),
            (None, Some(next)) => {
                self.ensure_schema(&client).await?;
                let create = format!("CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY, holder VARCHAR NOT NULL)");
                client.batch_execute(&create).await.map_err(|e| self.pg().runtime(&create, &e))?;
                let insert = format!("INSERT INTO {table} (id, holder) VALUES (1, {})", quote_literal(next));
                match client.simple_query(&insert).await {
                    Ok(_) => Ok(true),
                    // Another run inserted first (a unique violation): not ours.
                    Err(e) if e.as_db_error().is_some_and(|db| db.code().code() == "23505") => Ok(false),
                    Err(e) => Err(self.pg().runtime(&insert, &e)),
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
                let left =
                    first_cell(&client, &format!("SELECT COUNT(*) FROM {table}")).await.map_err(|e| self.pg().runtime("lease", &e))?;
                if left.as_deref() == Some("0") {
                    let drop = format!("DROP TABLE {table}");
                    client.batch_execute(&drop).await.map_err(|e| self.pg().runtime(&drop, &e))?;
                    self.drop_schema_if_empty(&client).await?;
                }
                Ok(true)
            }
        }
    }
}
