//! The MariaDB/MySQL adapter's lease record: the one row of `<database>.dbsweep_lease`,
//! read and swapped under the server-wide DDL lock (`GET_LOCK`), so every dbsweep's swap on
//! one server is serialized (the protocol is `adapter::lease`). Removing the record drops
//! the lease table, and the database when only its marker is left. Must not touch any
//! other table.

use super::MySql;
use crate::adapter::lease::LeaseStore;
use crate::adapter::sql::dialect::Dialect;
use crate::adapter::sql::dialects::MYSQL;
use crate::error::Result;
use async_trait::async_trait;
use mysql_async::Conn;
use mysql_async::prelude::Queryable;

/// The lease table's name inside dbsweep's database.
const LEASE_TABLE: &str = "dbsweep_lease";
/// ER_NO_SUCH_TABLE.
const NO_SUCH_TABLE: u16 = 1146;

impl MySql {
    fn lease_table(&self) -> String {
        MYSQL.table_name_in(&self.database, LEASE_TABLE)
    }

    /// The stored record; `None` when dbsweep's database or the lease table is absent.
    async fn stored_lease(&self, conn: &mut Conn) -> Result<Option<String>> {
        if !self.check_owned(conn).await? {
            return Ok(None);
        }
        match conn.query_first::<String, _>(format!("SELECT holder FROM {} WHERE id = 1", self.lease_table())).await {
            Ok(holder) => Ok(holder),
            Err(mysql_async::Error::Server(e)) if e.code == NO_SUCH_TABLE => Ok(None),
            Err(e) => Err(self.runtime("reading the lease", &e)),
        }
    }

    async fn swap_locked(&self, conn: &mut Conn, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        if self.stored_lease(conn).await?.as_deref() != current {
            return Ok(false);
        }
        let table = self.lease_table();
        match next {
            Some(next) => {
                if !self.check_owned(conn).await? {
                    self.create_database(conn).await?;
                }
                self.run(conn, &format!("CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY, holder TEXT NOT NULL) ENGINE=InnoDB"))
                    .await?;
                conn.exec_drop(format!("REPLACE INTO {table} (id, holder) VALUES (1, ?)"), (next,))
                    .await
                    .map_err(|e| self.runtime("writing the lease", &e))?;
            }
            None if current.is_some() => {
                self.run(conn, &format!("DROP TABLE {table}")).await?;
                self.drop_database_if_empty(conn).await?;
            }
            None => {}
        }
        Ok(true)
    }
}

#[async_trait]
impl LeaseStore for MySql {
    fn place(&self) -> String {
        format!("database {} on MariaDB/MySQL at {}", self.database, self.endpoint)
    }

    fn alternatives(&self) -> String {
        "point the URL at another server, or add --namespace NAME to run side by side in another database".into()
    }

    async fn read(&self) -> Result<Option<String>> {
        let mut conn = self.open_conn().await?;
        let stored = self.stored_lease(&mut conn).await;
        let _ = conn.disconnect().await;
        stored
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let mut conn = self.locked().await?;
        let result = self.swap_locked(&mut conn, current, next).await;
        Self::unlock(conn).await;
        result
    }
}
