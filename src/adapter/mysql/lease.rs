//! The MariaDB/MySQL adapter's lease record: the one row of `<database>.dbsweep_lease`,
//! read and swapped under the server-wide DDL lock (`GET_LOCK`), so every dbsweep's swap on
//! one server is serialized (the protocol is `adapter::lease`). Removing the record drops
//! the lease table, and the database when only its marker is left. Must not touch any
//! other table.

use super::MySql;
use crate::adapter::lease::{LeaseStore, LockedLeaseTable, swap_locked};
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
}

/// The lease table seen through a connection that holds the server-wide DDL lock.
struct LockedTable<'a> {
    target: &'a MySql,
    conn: &'a mut Conn,
}

#[async_trait]
impl LockedLeaseTable for LockedTable<'_> {
    async fn stored(&mut self) -> Result<Option<String>> {
        self.target.stored_lease(self.conn).await
    }

    async fn create(&mut self) -> Result<()> {
        if !self.target.check_owned(self.conn).await? {
            self.target.create_database(self.conn).await?;
        }
        let table = self.target.lease_table();
        let create = format!("CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY, holder TEXT NOT NULL) ENGINE=InnoDB");
        self.target.run(self.conn, &create).await
    }

    async fn write(&mut self, record: &str) -> Result<()> {
        let replace = format!("REPLACE INTO {} (id, holder) VALUES (1, ?)", self.target.lease_table());
        self.conn.exec_drop(replace, (record,)).await.map_err(|e| self.target.runtime("writing the lease", &e))
    }

    async fn remove(&mut self) -> Result<()> {
        self.target.run(self.conn, &format!("DROP TABLE {}", self.target.lease_table())).await?;
        self.target.drop_database_if_empty(self.conn).await
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
        let result = swap_locked(&mut LockedTable { target: self, conn: &mut conn }, current, next).await;
        Self::unlock(conn).await;
        result
    }
}
