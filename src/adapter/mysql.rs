//! MariaDB / MySQL (mysql_async): InnoDB tables with proper types and secondary indexes.
//!
//! Owns the namespace's database (`dbsweep`, or `dbsweep_NAME` with `--namespace NAME`),
//! marked as dbsweep's by its table `dbsweep_owner`; it refuses to use such a database
//! without that marker, drops only tables it created, and drops the database itself only
//! when the marker is the last table left. The run's lease record is the one row of its
//! table `dbsweep_lease` (see [`lease`]). Must not touch any other database. Passwords
//! come from the URL (userinfo or `?password=`), `MYSQL_PWD` or `~/.my.cnf` (see
//! [`password`]) and are never shown.
//!
//! Clients' sessions run on a connection of dbsweep's own, blocking their own threads (see
//! [`session`] and [`direct`]); setup, loading, leases and cleanup use mysql_async. Statements are
//! the `mariadb` dialect's, prepared once per session and kept per statement. Batches:
//! inserts are one multi-row `INSERT`, gets and deletes one `... IN (...)` statement;
//! other batches run as one transaction of statements sent one after another (the
//! protocol has no pipelining).
//! A prepared statement has at most 65,535 placeholders: a multi-row `INSERT` or `IN` list
//! that needs more is sent as the same statement with literal values over the text
//! protocol (what the `mariadb` client sends, see [`literal`]), split into several
//! statements (in one transaction when they write) only where one would exceed the
//! server's `max_allowed_packet`. The target's `request.*` settings say so.
//! Each client runs on a thread of its own (`Execution::AsyncThreads`).
//! Bulk loads are one `LOAD DATA LOCAL INFILE` per table with the rows streamed from
//! memory (see [`infile`]) where the server has `local_infile` on (spawned servers do);
//! elsewhere multi-row prepared `INSERT`s of 1000 rows, with a warning once per target.
//! The target's `load` setting says which.

use super::declaration::{Declaration, Needs, TargetInfoCell, UrlOptions};
use super::sql::connection::SqlConnection;
use super::sql::dialect::{Dialect, SqlTable};
use super::sql::dialects::MYSQL;
use super::sql::statement::Statement;
use super::{Connection, ConnectionRoom, Execution, OpenContext, Target, TargetInfo, TargetUrl};
use crate::base::durability::{self, Durability};
use crate::base::op::OpError;
use crate::base::table::{RowSource, TableDef};
use crate::error::{Error, Result};
use crate::servers::ServerKind;
use async_trait::async_trait;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Params};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod direct;
mod infile;
mod lease;
pub(crate) mod literal;
mod mycnf;
mod session;

use session::{MySession, push_row};

/// The password for a MariaDB/MySQL URL: the URL's (userinfo or `?password=`), else
/// `MYSQL_PWD`, else `~/.my.cnf`'s client groups.
pub fn password(url: &TargetUrl) -> Option<String> {
    url.password_or_env("MYSQL_PWD").or_else(mycnf::lookup)
}

/// The table whose presence marks the namespace's database as created by dbsweep.
const MARKER: &str = "dbsweep_owner";
/// Rows per multi-row `INSERT` when bulk loading.
const LOAD_CHUNK: usize = 1000;
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const LOCK: &str = "SELECT GET_LOCK('dbsweep_ddl', 30)";
const UNLOCK: &str = "SELECT RELEASE_LOCK('dbsweep_ddl')";

pub const SYSTEM: Declaration = Declaration {
    system: "mariadb",
    url: "mysql://",
    description: "MariaDB or MySQL, InnoDB tables (also mariadb://)",
    needs: Needs::Server(ServerKind::Mariadb),
    schemes: &["mysql", "mariadb"],
    options: UrlOptions::Only(&[]),
    several_hosts: false,
    capabilities: super::sql::CAPABILITIES,
    open: Some(|name, url, ctx| Ok(Arc::new(MySql::new(name, url, ctx)?))),
};

pub struct MySql {
    /// Description before the server was asked for its version and settings, then the
    /// full one, filled at the first successful connection.
    info: TargetInfoCell,
    /// Connection options, password included (never printed).
    opts: mysql_async::Opts,
    /// How clients' sessions log in; their reads and writes time out after the run's
    /// `--timeout` (see `direct`).
    session_login: Arc<direct::Login>,
    /// `host:port`, for messages.
    endpoint: String,
    user: String,
    /// dbsweep's database: the namespace's name.
    database: String,
    /// Tables of the last `prepare`, by `TableId`.
    tables: Mutex<Arc<Vec<SqlTable>>>,
    /// The warning that loads fall back to INSERTs was given.
    warned_insert_load: AtomicBool,
}

/// What an insert, a batch of inserts, a multi-get and a delete send (the target's
/// `request.*` settings).
fn requests(max_packet: &str) -> [(&'static str, String); 4] {
    let split = format!("split into several statements only where one would exceed max_allowed_packet ({max_packet} bytes)");
    [
        ("request.insert", "INSERT INTO <table> (<columns>) VALUES (?, …), prepared".into()),
        (
            "request.insert_batch",
            format!(
                "one multi-row INSERT, prepared with ? placeholders while it needs at most 65,535; beyond that the same INSERT with literal values (text protocol, as the mariadb client sends it); {split}, in one transaction"
            ),
        ),
        (
            "request.multi_get",
            format!(
                "one SELECT * FROM <table> WHERE <key> IN (?, …), prepared up to 65,535 keys; beyond that with literal keys (text protocol); {split}"
            ),
        ),
        ("request.delete", "DELETE FROM <table> WHERE <key> = ?, prepared (a batch: one DELETE … IN (…), as a multi-get)".into()),
    ]
}

/// What a login refusal with this error code says about the server, with the fix, when it
/// is the server's state rather than the URL: out of connections, or shutting down.
fn server_busy(code: u16) -> Option<&'static str> {
    match code {
        // ER_CON_COUNT_ERROR
        1040 => Some("has too many connections; use fewer --clients, or raise max_connections on the server"),
        // ER_TOO_MANY_USER_CONNECTIONS, ER_USER_LIMIT_REACHED
        1203 | 1226 => Some("refuses more connections for this user; use fewer --clients, or raise the user's max_user_connections"),
        // ER_SERVER_SHUTDOWN
        1053 => Some("is shutting down; wait until it is back up, then run again"),
        _ => None,
    }
}

/// A one-line description of a driver error.
fn describe(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => format!("ERROR {} ({}): {}", s.code, s.state, s.message),
        other => other.to_string(),
    }
}

impl MySql {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let host = url.host().unwrap_or("127.0.0.1").to_string();
        let port = url.port().unwrap_or(3306);
        let user = url.username().unwrap_or_else(|| "root".into());
        let password = password(url);
        let session_login = Arc::new(direct::Login {
            host: host.clone(),
            port,
            user: user.clone(),
            password: password.clone(),
            connect_timeout: CONNECT_TIMEOUT,
            request_timeout: ctx.request_timeout,
        });
        let opts = mysql_async::OptsBuilder::default()
            .ip_or_hostname(host.clone())
            .tcp_port(port)
            .user(Some(user.clone()))
            .pass(password)
            // Stay on TCP even on loopback, like every other network target.
            .prefer_socket(false)
            // UPDATE reports matched rows, so updating a value to itself still counts.
            .client_found_rows(true)
            .stmt_cache_size(256)
            .tcp_nodelay(true);
        let system = if url.scheme() == "mariadb" { "mariadb" } else { "mysql" };
        Ok(MySql {
            info: TargetInfoCell::new(TargetInfo {
                name: name.to_string(),
                system: system.into(),
                url: url.redacted(),
                // The sessions' requests block (dbsweep's own connection, see `direct`): each
                // client needs a thread of its own.
                execution: Execution::AsyncThreads,
                capabilities: SYSTEM.capabilities.to_capabilities(),
                version: "unknown (not connected yet)".into(),
                settings: BTreeMap::new(),
            }),
            session_login,
            opts: opts.into(),
            endpoint: format!("{host}:{port}"),
            user,
            database: ctx.namespace.name().to_string(),
            tables: Mutex::new(Arc::new(Vec::new())),
            warned_insert_load: AtomicBool::new(false),
        })
    }

    /// The server could not be reached.
    fn unreachable(&self, why: &str) -> Error {
        Error::unreachable(
            &self.info.opened().name,
            format!(
                "cannot connect to MariaDB/MySQL at {} ({why}); start the server, fix host/port in the URL, or use --spawn mysql",
                self.endpoint
            ),
        )
    }

    /// The error of a login the server refused with this code: a wrong password, or a
    /// server out of connections or shutting down; `None` for other codes.
    fn refused(&self, code: u16, message: &str) -> Option<Error> {
        let name = &self.info.opened().name;
        if matches!(code, 1044 | 1045 | 1698) {
            return Some(Error::unreachable(
                name,
                format!(
                    "MariaDB/MySQL at {} refused login for user '{}' ({message}); put the password in the URL, MYSQL_PWD or ~/.my.cnf",
                    self.endpoint, self.user
                ),
            ));
        }
        let why = server_busy(code)?;
        Some(Error::runtime(format!("target '{name}': MariaDB/MySQL at {} {why} ({message})", self.endpoint)))
    }

    /// A mysql_async connection for setup, loading and cleanup; the first one describes the
    /// server.
    async fn open_conn(&self) -> Result<Conn> {
        let mut conn = match tokio::time::timeout(CONNECT_TIMEOUT, Conn::new(self.opts.clone())).await {
            Err(_) => return Err(self.unreachable("timed out after 5 s")),
            Ok(Err(mysql_async::Error::Server(s))) => {
                return Err(self
                    .refused(s.code, &s.message)
                    .unwrap_or_else(|| self.unreachable(&describe(&mysql_async::Error::Server(s)))));
            }
            Ok(Err(e)) => return Err(self.unreachable(&describe(&e))),
            Ok(Ok(conn)) => conn,
        };
        if !self.info.is_reached() {
            let info = self.describe(&mut conn).await?;
            self.info.set(info);
        }
        Ok(conn)
    }

    async fn describe(&self, conn: &mut Conn) -> Result<TargetInfo> {
        let mut info = self.info.opened().clone();
        let version: Option<String> = conn.query_first("SELECT VERSION()").await.map_err(|e| self.runtime("SELECT VERSION()", &e))?;
        info.version = version.unwrap_or_default();
        if info.version.contains("MariaDB") {
            info.system = "mariadb".into();
        }
        let vars: Vec<(String, String)> = conn
            .query(
                "SHOW GLOBAL VARIABLES WHERE Variable_name IN \
                 ('innodb_flush_log_at_trx_commit', 'tx_isolation', 'transaction_isolation', 'log_bin', 'sync_binlog', \
                 'max_allowed_packet', 'local_infile')",
            )
            .await
            .map_err(|e| self.runtime("SHOW VARIABLES", &e))?;
        let max_packet = vars.iter().find(|(n, _)| n == "max_allowed_packet").map(|(_, v)| v.clone()).unwrap_or_default();
        for (key, text) in requests(&max_packet) {
            info.settings.insert(key.to_string(), text);
        }
        let local_infile = vars.iter().any(|(n, v)| n == "local_infile" && matches!(v.as_str(), "ON" | "1"));
        info.settings.insert("load".into(), load_setting(local_infile));
        for (name, value) in vars {
            let key = match name.as_str() {
                "tx_isolation" | "transaction_isolation" => "isolation".to_string(),
                "log_bin" => "binlog".to_string(),
                other => other.to_string(),
            };
            info.settings.insert(key, value);
        }
        if let Some(level) = info.settings.get("innodb_flush_log_at_trx_commit") {
            let durability =
                durability_of(level, info.settings.get("binlog").map(String::as_str), info.settings.get("sync_binlog").map(String::as_str));
            info.settings.insert(durability::SETTING.into(), durability);
        }
        Ok(info)
    }

    fn runtime(&self, what: &str, e: &mysql_async::Error) -> Error {
        Error::runtime(format!("target '{}': {what}: {}", self.info.opened().name, describe(e)))
    }

    async fn run(&self, conn: &mut Conn, sql: &str) -> Result<()> {
        conn.query_drop(sql).await.map_err(|e| self.runtime(sql, &e))
    }

    /// Whether dbsweep's database exists (and is marked); `NotOwned` if it is unmarked.
    async fn check_owned(&self, conn: &mut Conn) -> Result<bool> {
        let database = &self.database;
        let exists: Option<i64> = conn
            .exec_first("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", (database,))
            .await
            .map_err(|e| self.runtime("checking database", &e))?;
        if exists.unwrap_or(0) == 0 {
            return Ok(false);
        }
        let marked: Option<i64> = conn
            .exec_first("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", (database, MARKER))
            .await
            .map_err(|e| self.runtime("checking database", &e))?;
        if marked.unwrap_or(0) == 0 {
            return Err(Error::not_owned(
                &self.info.opened().name,
                format!(
                    "database {database} on {} exists but was not created by dbsweep (no table {database}.{MARKER}); \
                     drop or rename it, or use another server",
                    self.endpoint
                ),
            ));
        }
        Ok(true)
    }

    /// Serializes dbsweep's DDL on one server (targets may prepare and clean up at once).
    async fn lock(&self, conn: &mut Conn) -> Result<()> {
        let got: Option<i64> = conn.query_first(LOCK).await.map_err(|e| self.runtime("GET_LOCK", &e))?;
        if got == Some(1) {
            Ok(())
        } else {
            Err(Error::runtime(format!("target '{}': another dbsweep held the DDL lock for 30 s", self.info.opened().name)))
        }
    }

    /// Creates dbsweep's database with its marker (under the DDL lock).
    async fn create_database(&self, conn: &mut Conn) -> Result<()> {
        self.run(conn, &format!("CREATE DATABASE {}", MYSQL.quote(&self.database))).await?;
        let marker = MYSQL.table_name_in(&self.database, MARKER);
        self.run(conn, &format!("CREATE TABLE {marker} (note VARCHAR(200)) ENGINE=InnoDB")).await?;
        self.run(conn, &format!("INSERT INTO {marker} VALUES ('created by dbsweep, which drops only tables it created here')")).await
    }

    async fn prepare_locked(&self, conn: &mut Conn, defs: &[Arc<TableDef>]) -> Result<()> {
        if !self.check_owned(conn).await? {
            self.create_database(conn).await?;
        }
        let tables: Vec<SqlTable> = defs.iter().map(|d| SqlTable::in_schema(&MYSQL, d.clone(), &self.database)).collect();
        for t in &tables {
            self.run(conn, &t.drop()).await?;
            for statement in t.create(&MYSQL) {
                self.run(conn, &statement).await?;
            }
        }
        *self.tables.lock().unwrap() = Arc::new(tables);
        Ok(())
    }

    async fn cleanup_locked(&self, conn: &mut Conn) -> Result<()> {
        let owned = match self.check_owned(conn).await {
            Ok(owned) => owned,
            // Someone else's database: nothing of ours can be in it.
            Err(Error::NotOwned { .. }) => false,
            Err(e) => return Err(e),
        };
        if owned {
            let tables = self.tables.lock().unwrap().clone();
            for t in tables.iter() {
                self.run(conn, &t.drop()).await?;
            }
            self.drop_database_if_empty(conn).await?;
        }
        *self.tables.lock().unwrap() = Arc::new(Vec::new());
        Ok(())
    }

    /// Drops dbsweep's (marked) database when the marker is the only table left in it.
    async fn drop_database_if_empty(&self, conn: &mut Conn) -> Result<()> {
        let left: Vec<String> = conn
            .exec("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", (&self.database,))
            .await
            .map_err(|e| self.runtime("cleanup", &e))?;
        if left.iter().all(|t| t == MARKER) {
            self.run(conn, &format!("DROP DATABASE {}", MYSQL.quote(&self.database))).await?;
        }
        Ok(())
    }

    /// A connection of its own that holds the server-wide DDL lock; give it back to
    /// `unlock` when done.
    async fn locked(&self) -> Result<Conn> {
        let mut conn = self.open_conn().await?;
        self.lock(&mut conn).await?;
        Ok(conn)
    }

    async fn unlock(conn: Conn) {
        let mut conn = conn;
        let _ = conn.query_drop(UNLOCK).await;
        let _ = conn.disconnect().await;
    }

    /// Loads `rows` into `table` (the prepared table `index`) as multi-row prepared
    /// `INSERT`s of `LOAD_CHUNK` rows: the way without `local_infile`.
    async fn insert_rows(&self, conn: &mut Conn, table: &SqlTable, index: usize, rows: RowSource) -> Result<u64> {
        let fail = |e: OpError| Error::runtime(format!("target '{}': loading {}: {e}", self.info.opened().name, table.def.name));
        let insert = |rows| table.text(&MYSQL, Statement::Insert { table: index, rows });
        let full = insert(LOAD_CHUNK);
        let mut params = Vec::with_capacity(LOAD_CHUNK * table.def.columns.len());
        let mut pending = 0;
        let mut loaded = 0u64;
        let mut rows = rows.peekable();
        while let Some(row) = rows.next() {
            push_row(&table.def, &row, &mut params).map_err(fail)?;
            pending += 1;
            if pending == LOAD_CHUNK || rows.peek().is_none() {
                let sql = if pending == LOAD_CHUNK { full.clone() } else { insert(pending) };
                conn.exec_drop(sql.as_str(), Params::Positional(std::mem::take(&mut params)))
                    .await
                    .map_err(|e| self.runtime("loading", &e))?;
                loaded += conn.affected_rows();
                pending = 0;
            }
        }
        Ok(loaded)
    }

    /// Says once per target that its loads are INSERTs, and how to make them `LOAD DATA`.
    fn warn_insert_load_once(&self) {
        if !self.warned_insert_load.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{}: local_infile is OFF on the MariaDB/MySQL server at {}, so rows load as multi-row INSERTs \
                 (about 2x the time of LOAD DATA LOCAL INFILE); SET GLOBAL local_infile = ON for the faster load",
                self.info.opened().name,
                self.endpoint
            );
        }
    }

    /// The error of a failed `LOAD DATA` into `table`.
    fn load_data_failed(&self, table: &str, e: infile::LoadError) -> Error {
        let name = &self.info.opened().name;
        match e {
            // ER_NOT_ALLOWED_COMMAND (MariaDB), ER_CLIENT_LOCAL_FILES_DISABLED (MySQL 8)
            infile::LoadError::Driver(mysql_async::Error::Server(s)) if matches!(s.code, 1148 | 3948) => Error::runtime(format!(
                "target '{name}': loading {table}: the server refused LOAD DATA LOCAL INFILE ({}); SET GLOBAL local_infile = ON, or OFF to load with INSERTs",
                s.message
            )),
            infile::LoadError::Driver(e) => Error::runtime(format!("target '{name}': loading {table} with LOAD DATA: {}", describe(&e))),
            other => Error::runtime(format!("target '{name}': loading {table} with LOAD DATA: {other}")),
        }
    }

    fn table(&self, def: &TableDef) -> Result<(Arc<Vec<SqlTable>>, usize)> {
        let tables = self.tables.lock().unwrap().clone();
        let index = tables
            .iter()
            .position(|t| t.def.name == def.name)
            .ok_or_else(|| Error::runtime(format!("target '{}': table {} was not prepared", self.info.opened().name, def.name)))?;
        Ok((tables, index))
    }
}

#[async_trait]
impl Target for MySql {
    fn info(&self) -> &TargetInfo {
        self.info.get()
    }

    async fn prepare(&self, defs: &[Arc<TableDef>]) -> Result<()> {
        if let Some(t) = defs.iter().find(|t| t.name == MARKER) {
            return Err(Error::usage(format!("target '{}': a table may not be named {}", self.info.opened().name, t.name)));
        }
        let mut conn = self.locked().await?;
        let result = self.prepare_locked(&mut conn, defs).await;
        Self::unlock(conn).await;
        result
    }

    async fn load(&self, def: &TableDef, rows: RowSource) -> Result<u64> {
        let (tables, index) = self.table(def)?;
        let table = &tables[index];
        let mut conn = self.open_conn().await?;
        let loaded = if self.info.get().settings.get("load").is_some_and(|s| s == infile::SETTING) {
            infile::load(&mut conn, table, rows).await.map_err(|e| self.load_data_failed(&def.name, e))?
        } else {
            self.warn_insert_load_once();
            self.insert_rows(&mut conn, table, index, rows).await?
        };
        // Fresh index statistics before anything is measured.
        conn.query_drop(format!("ANALYZE TABLE {}", table.name)).await.map_err(|e| self.runtime("ANALYZE TABLE", &e))?;
        let _ = conn.disconnect().await;
        Ok(loaded)
    }

    /// A client's session on a connection of dbsweep's own (blocking: called on the
    /// client's own thread). The first connection of a process describes the server, over mysql_async
    /// as setup does.
    async fn connect(&self) -> Result<Box<dyn Connection>> {
        if !self.info.is_reached() {
            let _ = self.open_conn().await?.disconnect().await;
        }
        let conn = match direct::Connection::open(&self.session_login) {
            Ok(conn) => conn,
            Err(e @ direct::WireError::Server { .. }) => {
                let direct::WireError::Server { code, ref message, .. } = e else { unreachable!() };
                return Err(self.refused(code, message).unwrap_or_else(|| self.unreachable(&e.to_string())));
            }
            Err(direct::WireError::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut => {
                return Err(self.unreachable(&format!("timed out after {} s", CONNECT_TIMEOUT.as_secs())));
            }
            Err(e) => return Err(self.unreachable(&e.to_string())),
        };
        let tables = self.tables.lock().unwrap().clone();
        let mut session = MySession::new(conn, self.session_login.clone(), tables.clone());
        session.warm().map_err(|e| Error::runtime(format!("target '{}': preparing statements: {e}", self.info.opened().name)))?;
        Ok(Box::new(SqlConnection::new(&MYSQL, tables, session)))
    }

    async fn count_rows(&self, def: &TableDef) -> Result<u64> {
        let (tables, index) = self.table(def)?;
        let mut conn = self.open_conn().await?;
        let n: Option<i64> = conn.query_first(tables[index].count()).await.map_err(|e| self.runtime("count", &e))?;
        let _ = conn.disconnect().await;
        Ok(n.unwrap_or(0) as u64)
    }

    async fn cleanup(&self) -> Result<()> {
        let mut conn = self.locked().await?;
        let result = self.cleanup_locked(&mut conn).await;
        Self::unlock(conn).await;
        result
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn super::lease::LeaseStore>> {
        Some(self)
    }

    /// `@@max_connections` less the other connected threads (`Threads_connected`). A
    /// server that will not tell (an error) is not checked.
    async fn connection_room(&self) -> Result<Option<ConnectionRoom>> {
        let mut conn = self.open_conn().await?;
        let max: Result<Option<u64>, _> = conn.query_first("SELECT @@max_connections").await;
        let connected: Result<Option<(String, u64)>, _> = conn.query_first("SHOW GLOBAL STATUS LIKE 'Threads_connected'").await;
        let _ = conn.disconnect().await;
        match (max, connected) {
            (Ok(Some(max)), Ok(Some((_, connected)))) => Ok(Some(mysql_room(max, connected.saturating_sub(1)))),
            (max, connected) => {
                let why = [max.err(), connected.err()].into_iter().flatten().map(|e| describe(&e)).collect::<Vec<_>>().join("; ");
                tracing::debug!("target '{}': cannot read the connection limit: {why}", self.info.opened().name);
                Ok(None)
            }
        }
    }
}

/// The room of a MariaDB/MySQL server: `max_connections` less the connections others hold.
fn mysql_room(max_connections: u64, others: u64) -> ConnectionRoom {
    ConnectionRoom {
        free: max_connections.saturating_sub(others),
        limit: format!("max_connections={max_connections}, {others} in use"),
        setting: "max_connections",
    }
}

/// The target's `load` setting: how bulk loads travel, by the server's `local_infile`.
fn load_setting(local_infile: bool) -> String {
    if local_infile {
        infile::SETTING.to_string()
    } else {
        format!(
            "multi-row prepared INSERTs of {LOAD_CHUNK} rows (local_infile is OFF on the server, so LOAD DATA LOCAL INFILE is not used)"
        )
    }
}

/// The `durability` setting of a MariaDB/MySQL server from `innodb_flush_log_at_trx_commit`
/// (and the binary log's sync, when it is on).
fn durability_of(flush_log_at_trx_commit: &str, binlog: Option<&str>, sync_binlog: Option<&str>) -> String {
    let binlog_unsynced = binlog == Some("ON") && sync_binlog != Some("1");
    match flush_log_at_trx_commit {
        "1" | "3" if binlog_unsynced => Durability::Periodic.describe(&format!(
            "InnoDB log fsynced at every commit, binary log not (innodb_flush_log_at_trx_commit={flush_log_at_trx_commit}, sync_binlog={})",
            sync_binlog.unwrap_or("?")
        )),
        "1" | "3" => Durability::Commit
            .describe(&format!("InnoDB log fsynced at every commit (innodb_flush_log_at_trx_commit={flush_log_at_trx_commit})")),
        "2" => Durability::Periodic.describe("log written at commit, fsynced about once a second (innodb_flush_log_at_trx_commit=2)"),
        "0" => Durability::Periodic
            .describe("log written and fsynced about once a second (innodb_flush_log_at_trx_commit=0; InnoDB has no 'never')"),
        other => format!("innodb_flush_log_at_trx_commit={other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_the_limit_less_the_other_connections() {
        let room = mysql_room(151, 4);
        assert_eq!((room.free, room.limit.as_str(), room.setting), (147, "max_connections=151, 4 in use", "max_connections"));
        assert_eq!(mysql_room(10, 12).free, 0);
    }

    #[test]
    fn full_or_stopping_servers_are_named_with_the_fix() {
        assert!(server_busy(1040).unwrap().contains("max_connections"));
        assert!(server_busy(1226).unwrap().contains("max_user_connections"));
        assert!(server_busy(1053).unwrap().contains("wait"));
        assert_eq!(server_busy(1045), None, "a refused login is the URL's to fix");
    }

    #[test]
    fn durability_follows_the_log_flush_and_the_binary_log() {
        assert!(durability_of("1", Some("OFF"), Some("0")).starts_with("commit: "));
        assert!(durability_of("1", Some("ON"), Some("0")).starts_with("periodic: InnoDB log fsynced at every commit, binary log not"));
        assert!(durability_of("1", Some("ON"), Some("1")).starts_with("commit: "));
        assert!(durability_of("2", None, None).starts_with("periodic: log written at commit"));
        assert!(durability_of("0", None, None).starts_with("periodic: log written and fsynced about once a second"));
    }
}
