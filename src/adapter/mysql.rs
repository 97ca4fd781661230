//! MariaDB / MySQL (mysql_async): InnoDB tables with proper types and secondary indexes.
//!
//! Owns the namespace's database (`dbsweep`, or `dbsweep_NAME` with `--namespace NAME`),
//! marked as dbsweep's by its table `dbsweep_owner`; it refuses to use such a database
//! without that marker, drops only tables it created, and drops the database itself only
//! when the marker is the last table left. The run's lease record is the one row of its
//! table `dbsweep_lease` (see [`lease`]). Must not touch any other database. Passwords come from the URL (userinfo or
//! `?password=`), `MYSQL_PWD` or `~/.my.cnf` (see [`password`]) and are never shown.
//!
//! Statements are prepared (the driver's per-connection statement cache, keyed by the SQL
//! text this module keeps per op kind and table). Batches: inserts are one multi-row
//! `INSERT`, gets and deletes one `... IN (...)` statement; other batches run as one
//! transaction of statements sent one after another (the protocol has no pipelining).
//! A prepared statement has at most 65,535 placeholders: a multi-row `INSERT` or `IN` list
//! that needs more is sent as the same statement with literal values over the text
//! protocol (what the `mariadb` client sends, see [`literal`]), split into several
//! statements (in one transaction when they write) only where one would exceed the
//! server's `max_allowed_packet`. The target's `request.*` settings say so.
//! Bulk loads are multi-row prepared `INSERT`s of 1000 rows; `LOAD DATA LOCAL INFILE`
//! needs `local_infile` enabled on the server, so it is not used.

use super::{Capabilities, Connection, Execution, OpenContext, RowSource, Target, TargetInfo, TargetUrl};
use crate::adapter::sql::tpch::{self, Dialect};
use crate::base::op::{Answer, ErrorClass, Op, OpError, OpKind, Outcome, QueryId, RangeAgg};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use crate::data::tpch_queries;
use crate::error::{Error, Result};
use async_trait::async_trait;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Params, Value as MyValue};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

mod lease;
pub(crate) mod literal;
mod mycnf;

/// The password for a MariaDB/MySQL URL: the URL's (userinfo or `?password=`), else
/// `MYSQL_PWD`, else `~/.my.cnf`'s client groups.
pub fn password(url: &TargetUrl) -> Option<String> {
    url.password_or_env("MYSQL_PWD").or_else(mycnf::lookup)
}

/// The table whose presence marks the namespace's database as created by dbsweep.
const MARKER: &str = "dbsweep_owner";
/// Rows per multi-row `INSERT` when bulk loading.
const LOAD_CHUNK: usize = 1000;
const LOCK: &str = "SELECT GET_LOCK('dbsweep_ddl', 30)";
const UNLOCK: &str = "SELECT RELEASE_LOCK('dbsweep_ddl')";

pub struct MySql {
    /// Description before the server was asked for its version and settings.
    initial: TargetInfo,
    /// The full description, filled at the first successful connection.
    described: OnceLock<TargetInfo>,
    /// Connection options, password included (never printed).
    opts: mysql_async::Opts,
    /// `host:port`, for messages.
    endpoint: String,
    user: String,
    /// dbsweep's database: the namespace's name.
    database: String,
    /// Tables of the last `prepare`, by `TableId`.
    tables: Mutex<Arc<Vec<MyTable>>>,
}

/// `` `name` `` with embedded backticks doubled.
fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

fn sql_type(ty: ColumnType, indexed: bool) -> &'static str {
    match ty {
        ColumnType::Int => "BIGINT",
        ColumnType::Float => "DOUBLE",
        ColumnType::Decimal => "DECIMAL(15,2)",
        // TEXT cannot be indexed without a prefix length.
        ColumnType::Text if indexed => "VARCHAR(255)",
        ColumnType::Text => "TEXT",
        ColumnType::Date => "DATE",
    }
}

/// One table and the SQL text of its statements.
struct MyTable {
    def: Arc<TableDef>,
    qualified: String,
    key: String,
}

impl MyTable {
    fn new(def: Arc<TableDef>, database: &str) -> Self {
        let qualified = format!("{}.{}", quote(database), quote(&def.name));
        let key = quote(&def.key_column().name);
        MyTable { def, qualified, key }
    }

    fn create_sql(&self) -> String {
        let mut parts: Vec<String> = self
            .def
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{} {}", quote(&c.name), sql_type(c.ty, i == 0 || self.def.indexed.contains(&i))))
            .collect();
        parts.push(format!("PRIMARY KEY ({})", self.key));
        for &i in self.def.indexed.iter().filter(|&&i| i != 0) {
            let name = &self.def.columns[i].name;
            parts.push(format!("INDEX {} ({})", quote(&format!("{name}_idx")), quote(name)));
        }
        format!("CREATE TABLE {} ({}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin", self.qualified, parts.join(", "))
    }

    fn insert_sql(&self, rows: usize) -> String {
        let cols: Vec<String> = self.def.columns.iter().map(|c| quote(&c.name)).collect();
        let one = format!("({})", vec!["?"; cols.len()].join(","));
        format!("INSERT INTO {} ({}) VALUES {}", self.qualified, cols.join(", "), vec![one; rows].join(","))
    }

    fn keys_sql(&self, verb: &str, keys: usize) -> String {
        format!("{verb} FROM {} WHERE {} IN ({})", self.qualified, self.key, vec!["?"; keys].join(","))
    }

    fn sql(&self, key: Key) -> String {
        let (t, k) = (&self.qualified, &self.key);
        let col = |i: usize| quote(&self.def.columns[i].name);
        match key {
            Key::Insert(_, n) => self.insert_sql(n),
            Key::Get(_) => format!("SELECT * FROM {t} WHERE {k} = ?"),
            Key::GetMany(_, n) => self.keys_sql("SELECT *", n),
            Key::Delete(_) => format!("DELETE FROM {t} WHERE {k} = ?"),
            Key::DeleteMany(_, n) => self.keys_sql("DELETE", n),
            Key::Update(_, c) => format!("UPDATE {t} SET {} = ? WHERE {k} = ?", col(c)),
            Key::Scan(_) => format!("SELECT * FROM {t} WHERE {k} >= ? ORDER BY {k} LIMIT ?"),
            Key::RangeRows(_, c) => format!("SELECT * FROM {t} WHERE {} BETWEEN ? AND ?", col(c)),
            Key::RangeCount(_, c) => format!("SELECT COUNT(*) FROM {t} WHERE {} BETWEEN ? AND ?", col(c)),
            Key::RangeMax(_, c, of) => format!("SELECT MAX({}) FROM {t} WHERE {} BETWEEN ? AND ?", col(of), col(c)),
            Key::FetchAll(_) => format!("SELECT * FROM {t}"),
        }
    }

    fn param(&self, column: usize, value: &Value) -> Result<MyValue, OpError> {
        let c = &self.def.columns[column];
        Ok(match (c.ty, value) {
            (_, Value::Null) => MyValue::NULL,
            (ColumnType::Int, Value::Int(v)) => MyValue::Int(*v),
            (ColumnType::Float, Value::Float(v)) => MyValue::Double(*v),
            (ColumnType::Float, Value::Int(v)) => MyValue::Double(*v as f64),
            // Decimals and dates travel as text the server converts exactly.
            (ColumnType::Decimal, Value::Decimal(d)) => MyValue::Bytes(d.to_string().into_bytes()),
            (ColumnType::Text, Value::Text(s)) => MyValue::Bytes(s.as_bytes().to_vec()),
            (ColumnType::Date, Value::Date(d)) => MyValue::Bytes(d.to_iso().into_bytes()),
            _ => return Err(OpError::client(format!("{}.{}: value {value:?} does not fit a {:?} column", self.def.name, c.name, c.ty))),
        })
    }

    fn push_row(&self, row: &Row, out: &mut Vec<MyValue>) -> Result<(), OpError> {
        if row.len() != self.def.columns.len() {
            return Err(OpError::client(format!(
                "{}: row has {} values, table has {} columns",
                self.def.name,
                row.len(),
                self.def.columns.len()
            )));
        }
        for (i, v) in row.iter().enumerate() {
            out.push(self.param(i, v)?);
        }
        Ok(())
    }

    fn bound(&self, column: usize, bound: i64) -> Result<MyValue, OpError> {
        Ok(match self.def.columns[column].ty {
            ColumnType::Int => MyValue::Int(bound),
            ColumnType::Float => MyValue::Double(bound as f64),
            ColumnType::Decimal => MyValue::Bytes(Decimal(bound).to_string().into_bytes()),
            ColumnType::Date => {
                let days = i32::try_from(bound).map_err(|_| OpError::client(format!("date bound {bound} out of range")))?;
                MyValue::Bytes(Date(days).to_iso().into_bytes())
            }
            ColumnType::Text => return Err(OpError::client(format!("{}: no integer range over a text column", self.def.name))),
        })
    }

    /// Decodes a value the server returned for column `column`.
    fn decode(&self, column: usize, value: &MyValue) -> Result<Value, OpError> {
        let ty = self.def.columns[column].ty;
        let bad = || OpError::client(format!("cannot read {value:?} as a {ty:?} value"));
        Ok(match (ty, value) {
            (_, MyValue::NULL) => Value::Null,
            (ColumnType::Int, MyValue::Int(v)) => Value::Int(*v),
            (ColumnType::Int, MyValue::UInt(v)) => Value::Int(i64::try_from(*v).map_err(|_| bad())?),
            (ColumnType::Float, MyValue::Double(v)) => Value::Float(*v),
            (ColumnType::Float, MyValue::Float(v)) => Value::Float(f64::from(*v)),
            (ColumnType::Date, MyValue::Date(y, m, d, ..)) => {
                Value::Date(Date::from_iso(&format!("{y:04}-{m:02}-{d:02}")).ok_or_else(bad)?)
            }
            (ty, MyValue::Bytes(b)) => {
                let text = std::str::from_utf8(b).map_err(|_| bad())?;
                match ty {
                    ColumnType::Int => Value::Int(text.parse().map_err(|_| bad())?),
                    ColumnType::Float => Value::Float(text.parse().map_err(|_| bad())?),
                    ColumnType::Decimal => Value::Decimal(parse_hundredths(text).ok_or_else(bad)?),
                    ColumnType::Text => Value::Text(text.into()),
                    ColumnType::Date => Value::Date(Date::from_iso(text.get(..10).unwrap_or(text)).ok_or_else(bad)?),
                }
            }
            _ => return Err(bad()),
        })
    }
}

/// Decodes one cell of an analytic query's result as the type `answer_columns` names.
fn decode_answer_cell(ty: ColumnType, value: &MyValue) -> Result<Value, OpError> {
    let bad = || OpError::client(format!("cannot read {value:?} as a {ty:?} query result"));
    Ok(match (ty, value) {
        (_, MyValue::NULL) => Value::Null,
        (ColumnType::Int, MyValue::Int(v)) => Value::Int(*v),
        (ColumnType::Int, MyValue::UInt(v)) => Value::Int(i64::try_from(*v).map_err(|_| bad())?),
        (ColumnType::Float, MyValue::Double(v)) => Value::Float(*v),
        (ColumnType::Float, MyValue::Float(v)) => Value::Float(f64::from(*v)),
        (ColumnType::Float, MyValue::Int(v)) => Value::Float(*v as f64),
        (ColumnType::Float, MyValue::UInt(v)) => Value::Float(*v as f64),
        (ColumnType::Date, MyValue::Date(y, m, d, ..)) => Value::Date(Date::from_iso(&format!("{y:04}-{m:02}-{d:02}")).ok_or_else(bad)?),
        (ty, MyValue::Bytes(b)) => {
            let text = std::str::from_utf8(b).map_err(|_| bad())?;
            match ty {
                ColumnType::Int => Value::Int(text.parse().map_err(|_| bad())?),
                ColumnType::Float => Value::Float(text.parse().map_err(|_| bad())?),
                ColumnType::Text => Value::Text(text.into()),
                ColumnType::Date => Value::Date(Date::from_iso(text.get(..10).unwrap_or(text)).ok_or_else(bad)?),
                ColumnType::Decimal => Value::Decimal(parse_hundredths(text).ok_or_else(bad)?),
            }
        }
        _ => return Err(bad()),
    })
}

/// `"-12.3"` -> `Decimal(-1230)`.
fn parse_hundredths(text: &str) -> Option<Decimal> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if frac.len() > 2 || whole.is_empty() || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let frac: i64 = if frac.is_empty() { 0 } else { format!("{frac:0<2}").parse().ok()? };
    let value = whole.checked_mul(100)?.checked_add(frac)?;
    Some(Decimal(if negative { -value } else { value }))
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
                "one multi-row INSERT, prepared with ? placeholders while it needs at most 65,535; beyond that the same INSERT                  with literal values (text protocol, as the mariadb client sends it); {split}, in one transaction"
            ),
        ),
        (
            "request.multi_get",
            format!(
                "one SELECT * FROM <table> WHERE <key> IN (?, …), prepared up to 65,535 keys; beyond that with literal keys                  (text protocol); {split}"
            ),
        ),
        ("request.delete", "DELETE FROM <table> WHERE <key> = ?, prepared (a batch: one DELETE … IN (…), as a multi-get)".into()),
    ]
}

fn op_error(e: mysql_async::Error) -> OpError {
    let class = match &e {
        mysql_async::Error::Server(_) => ErrorClass::Server,
        mysql_async::Error::Io(_) | mysql_async::Error::Driver(mysql_async::DriverError::ConnectionClosed) => ErrorClass::Connection,
        _ => ErrorClass::Client,
    };
    OpError::new(class, describe(&e))
}

/// A one-line description of a driver error.
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
        let ops = OpKind::ALL.to_vec();
        Ok(MySql {
            initial: TargetInfo {
                name: name.to_string(),
                system: system.into(),
                url: url.redacted(),
                execution: Execution::Async,
                capabilities: Capabilities {
                    ops,
                    queries: vec![QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14],
                    native_batch: true,
                    secondary_indexes: true,
                },
                version: "unknown (not connected yet)".into(),
                settings: BTreeMap::new(),
            },
            described: OnceLock::new(),
            opts: opts.into(),
            endpoint: format!("{host}:{port}"),
            user,
            database: ctx.namespace.name().to_string(),
            tables: Mutex::new(Arc::new(Vec::new())),
        })
    }

    async fn open_conn(&self) -> Result<Conn> {
        let name = &self.initial.name;
        let unreachable = |why: String| {
            Error::unreachable(
                name,
                format!(
                    "cannot connect to MariaDB/MySQL at {} ({why}); start the server, fix host/port in the URL, or use --spawn mysql",
                    self.endpoint
                ),
            )
        };
        let conn = match tokio::time::timeout(Duration::from_secs(5), Conn::new(self.opts.clone())).await {
            Err(_) => return Err(unreachable("timed out after 5 s".into())),
            Ok(Err(mysql_async::Error::Server(s))) if matches!(s.code, 1044 | 1045 | 1698) => {
                return Err(Error::unreachable(
                    name,
                    format!(
                        "MariaDB/MySQL at {} refused login for user '{}' ({}); put the password in the URL, MYSQL_PWD or ~/.my.cnf",
                        self.endpoint, self.user, s.message
                    ),
                ));
            }
            Ok(Err(mysql_async::Error::Server(s))) if server_busy(s.code).is_some() => {
                let why = server_busy(s.code).unwrap_or_default();
                return Err(Error::runtime(format!("target '{name}': MariaDB/MySQL at {} {why} ({})", self.endpoint, s.message)));
            }
            Ok(Err(e)) => return Err(unreachable(describe(&e))),
            Ok(Ok(conn)) => conn,
        };
        let mut conn = conn;
        if self.described.get().is_none() {
            let info = self.describe(&mut conn).await?;
            let _ = self.described.set(info);
        }
        Ok(conn)
    }

    async fn describe(&self, conn: &mut Conn) -> Result<TargetInfo> {
        let mut info = self.initial.clone();
        let version: Option<String> = conn.query_first("SELECT VERSION()").await.map_err(|e| self.runtime("SELECT VERSION()", &e))?;
        info.version = version.unwrap_or_default();
        if info.version.contains("MariaDB") {
            info.system = "mariadb".into();
        }
        let vars: Vec<(String, String)> = conn
            .query(
                "SHOW GLOBAL VARIABLES WHERE Variable_name IN \
                 ('innodb_flush_log_at_trx_commit', 'tx_isolation', 'transaction_isolation', 'log_bin', 'sync_binlog', \
                 'max_allowed_packet')",
            )
            .await
            .map_err(|e| self.runtime("SHOW VARIABLES", &e))?;
        let max_packet = vars.iter().find(|(n, _)| n == "max_allowed_packet").map(|(_, v)| v.clone()).unwrap_or_default();
        for (key, text) in requests(&max_packet) {
            info.settings.insert(key.to_string(), text);
        }
        for (name, value) in vars {
            let key = match name.as_str() {
                "tx_isolation" | "transaction_isolation" => "isolation".to_string(),
                "log_bin" => "binlog".to_string(),
                other => other.to_string(),
            };
            info.settings.insert(key, value);
        }
        Ok(info)
    }

    fn runtime(&self, what: &str, e: &mysql_async::Error) -> Error {
        Error::runtime(format!("target '{}': {what}: {}", self.initial.name, describe(e)))
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
                &self.initial.name,
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
            Err(Error::runtime(format!("target '{}': another dbsweep held the DDL lock for 30 s", self.initial.name)))
        }
    }

    /// Creates dbsweep's database with its marker (under the DDL lock).
    async fn create_database(&self, conn: &mut Conn) -> Result<()> {
        self.run(conn, &format!("CREATE DATABASE {}", quote(&self.database))).await?;
        let marker = format!("{}.{}", quote(&self.database), quote(MARKER));
        self.run(conn, &format!("CREATE TABLE {marker} (note VARCHAR(200)) ENGINE=InnoDB")).await?;
        self.run(conn, &format!("INSERT INTO {marker} VALUES ('created by dbsweep, which drops only tables it created here')")).await
    }

    async fn prepare_locked(&self, conn: &mut Conn, defs: &[Arc<TableDef>]) -> Result<()> {
        if !self.check_owned(conn).await? {
            self.create_database(conn).await?;
        }
        let tables: Vec<MyTable> = defs.iter().map(|d| MyTable::new(d.clone(), &self.database)).collect();
        for t in &tables {
            self.run(conn, &format!("DROP TABLE IF EXISTS {}", t.qualified)).await?;
            self.run(conn, &t.create_sql()).await?;
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
                self.run(conn, &format!("DROP TABLE IF EXISTS {}", t.qualified)).await?;
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
            self.run(conn, &format!("DROP DATABASE {}", quote(&self.database))).await?;
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

    fn table(&self, def: &TableDef) -> Result<(Arc<Vec<MyTable>>, usize)> {
        let tables = self.tables.lock().unwrap().clone();
        let index = tables
            .iter()
            .position(|t| t.def.name == def.name)
            .ok_or_else(|| Error::runtime(format!("target '{}': table {} was not prepared", self.initial.name, def.name)))?;
        Ok((tables, index))
    }
}

#[async_trait]
impl Target for MySql {
    fn info(&self) -> &TargetInfo {
        self.described.get().unwrap_or(&self.initial)
    }

    async fn prepare(&self, defs: &[Arc<TableDef>]) -> Result<()> {
        if let Some(t) = defs.iter().find(|t| t.name == MARKER) {
            return Err(Error::usage(format!("target '{}': a table may not be named {}", self.initial.name, t.name)));
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
        let fail = |e: OpError| Error::runtime(format!("target '{}': loading {}: {e}", self.initial.name, def.name));
        let full = table.insert_sql(LOAD_CHUNK);
        let mut params = Vec::with_capacity(LOAD_CHUNK * table.def.columns.len());
        let mut pending = 0;
        let mut loaded = 0u64;
        let mut rows = rows.peekable();
        while let Some(row) = rows.next() {
            table.push_row(&row, &mut params).map_err(fail)?;
            pending += 1;
            if pending == LOAD_CHUNK || rows.peek().is_none() {
                let sql = if pending == LOAD_CHUNK { full.clone() } else { table.insert_sql(pending) };
                conn.exec_drop(sql.as_str(), Params::Positional(std::mem::take(&mut params)))
                    .await
                    .map_err(|e| self.runtime("loading", &e))?;
                loaded += conn.affected_rows();
                pending = 0;
            }
        }
        // Fresh index statistics before anything is measured.
        conn.query_drop(format!("ANALYZE TABLE {}", table.qualified)).await.map_err(|e| self.runtime("ANALYZE TABLE", &e))?;
        let _ = conn.disconnect().await;
        Ok(loaded)
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let conn = self.open_conn().await?;
        let tables = self.tables.lock().unwrap().clone();
        let mut conn = conn;
        let max_packet: Option<u64> =
            conn.query_first("SELECT @@max_allowed_packet").await.map_err(|e| self.runtime("SELECT @@max_allowed_packet", &e))?;
        let max_packet = max_packet.unwrap_or(4 << 20) as usize;
        let mut session = MyConnection { conn, max_packet, tables, sql: HashMap::new(), queries: HashMap::new() };
        session.warm().await.map_err(|e| Error::runtime(format!("target '{}': preparing statements: {e}", self.initial.name)))?;
        Ok(Box::new(session))
    }

    async fn count_rows(&self, def: &TableDef) -> Result<u64> {
        let (tables, index) = self.table(def)?;
        let mut conn = self.open_conn().await?;
        let n: Option<i64> =
            conn.query_first(format!("SELECT COUNT(*) FROM {}", tables[index].qualified)).await.map_err(|e| self.runtime("count", &e))?;
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
}

/// A statement in the per-session SQL cache; `usize`s are table, column and key counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Insert(usize, usize),
    Get(usize),
    GetMany(usize, usize),
    Delete(usize),
    DeleteMany(usize, usize),
    Update(usize, usize),
    Scan(usize),
    RangeRows(usize, usize),
    RangeCount(usize, usize),
    RangeMax(usize, usize, usize),
    FetchAll(usize),
}

struct MyConnection {
    conn: Conn,
    /// The server's `max_allowed_packet`: the longest statement it accepts.
    max_packet: usize,
    tables: Arc<Vec<MyTable>>,
    sql: HashMap<Key, Arc<str>>,
    /// Analytic query texts (prepared through the driver's statement cache).
    queries: HashMap<QueryId, Arc<str>>,
}

/// The SQL of `query` over the prepared tables, or which TPC-H table it lacks.
fn query_sql(query: QueryId, tables: &[MyTable]) -> Result<String, OpError> {
    let missing = std::cell::RefCell::new(None::<String>);
    let text = tpch::sql(query, Dialect::MySql, &|name: &str| match tables.iter().find(|t| t.def.name == name) {
        Some(t) => t.qualified.clone(),
        None => {
            missing.borrow_mut().get_or_insert_with(|| name.to_string());
            name.to_string()
        }
    });
    match missing.into_inner() {
        None => Ok(text),
        Some(name) => Err(OpError::client(format!("{query:?} needs the TPC-H table {name}, which this run did not prepare"))),
    }
}

impl MyConnection {
    fn table(&self, id: usize) -> Result<&MyTable, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("no table #{id} was prepared")))
    }

    fn check_column(&self, table: usize, column: usize) -> Result<(), OpError> {
        let t = self.table(table)?;
        if column < t.def.columns.len() { Ok(()) } else { Err(OpError::client(format!("{} has no column #{column}", t.def.name))) }
    }

    /// Prepares the statements every workload uses into the driver's cache, so the first
    /// measured ops do not pay for preparing; the rest are prepared on first use.
    async fn warm(&mut self) -> Result<(), OpError> {
        let mut keys = Vec::new();
        for (id, t) in self.tables.iter().enumerate() {
            keys.extend([Key::Insert(id, 1), Key::Get(id), Key::Delete(id), Key::Scan(id)]);
            for &c in t.def.indexed.iter().filter(|&&c| c != 0) {
                keys.extend([Key::RangeRows(id, c), Key::RangeCount(id, c)]);
            }
        }
        self.conn.prep("SELECT 1").await.map_err(op_error)?;
        for key in keys {
            let table = match key {
                Key::Insert(t, _) | Key::Get(t) | Key::Delete(t) | Key::Scan(t) | Key::RangeRows(t, _) | Key::RangeCount(t, _) => t,
                _ => unreachable!("only the keys above"),
            };
            let sql = self.sql(table, key)?;
            self.conn.prep(&*sql).await.map_err(op_error)?;
        }
        // The analytic queries whose tables this run prepared.
        for query in [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14] {
            if let Ok(sql) = query_sql(query, &self.tables) {
                self.conn.prep(sql.as_str()).await.map_err(op_error)?;
                self.queries.insert(query, sql.into());
            }
        }
        Ok(())
    }

    /// Runs an analytic query and decodes its rows into the types of `answer_columns`.
    async fn query(&mut self, query: QueryId) -> Result<Outcome, OpError> {
        let sql = match self.queries.get(&query) {
            Some(sql) => sql.clone(),
            None => {
                let sql: Arc<str> = query_sql(query, &self.tables)?.into();
                self.queries.insert(query, sql.clone());
                sql
            }
        };
        let types = tpch_queries::answer_columns(query);
        let rows: Vec<mysql_async::Row> = self.conn.exec(&*sql, ()).await.map_err(op_error)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            if row.len() != types.len() {
                return Err(OpError::client(format!("{query:?} returned {} columns, expected {}", row.len(), types.len())));
            }
            let decoded = types
                .iter()
                .enumerate()
                .map(|(i, ty)| decode_answer_cell(*ty, row.as_ref(i).unwrap_or(&MyValue::NULL)))
                .collect::<Result<Vec<Value>, _>>()?;
            out.push(decoded);
        }
        Ok(Outcome::answer(out.len() as u64, Answer::Table(out)))
    }

    fn sql(&mut self, table: usize, key: Key) -> Result<Arc<str>, OpError> {
        if let Some(sql) = self.sql.get(&key) {
            return Ok(sql.clone());
        }
        let sql: Arc<str> = self.table(table)?.sql(key).into();
        self.sql.insert(key, sql.clone());
        Ok(sql)
    }

    async fn rows(&mut self, sql: &str, params: Vec<MyValue>) -> Result<Vec<mysql_async::Row>, OpError> {
        self.conn.exec(sql, Params::Positional(params)).await.map_err(op_error)
    }

    async fn affected(&mut self, sql: &str, params: Vec<MyValue>) -> Result<u64, OpError> {
        self.conn.exec_drop(sql, Params::Positional(params)).await.map_err(op_error)?;
        Ok(self.conn.affected_rows())
    }

    async fn by_keys(&mut self, table: usize, keys: Vec<i64>, delete: bool) -> Result<u64, OpError> {
        if keys.is_empty() {
            return Ok(0);
        }
        if keys.len() > literal::MAX_PLACEHOLDERS {
            let t = self.table(table)?;
            let prefix = format!("{} FROM {} WHERE {} IN (", if delete { "DELETE" } else { "SELECT *" }, t.qualified, t.key);
            let statements = literal::statements(&prefix, ")", keys.iter().map(i64::to_string), self.max_packet);
            return self.literal_statements(statements, delete).await;
        }
        let n = keys.len();
        let params = keys.into_iter().map(MyValue::Int).collect();
        if delete {
            let sql = self.sql(table, Key::DeleteMany(table, n))?;
            self.affected(&sql, params).await
        } else {
            let sql = self.sql(table, Key::GetMany(table, n))?;
            Ok(self.rows(&sql, params).await?.len() as u64)
        }
    }

    async fn get_one(&mut self, table: usize, key: i64) -> Result<u64, OpError> {
        let sql = self.sql(table, Key::Get(table))?;
        Ok(self.rows(&sql, vec![MyValue::Int(key)]).await?.len() as u64)
    }

    async fn update_one(&mut self, table: usize, key: i64, column: usize, value: &Value) -> Result<u64, OpError> {
        self.check_column(table, column)?;
        if column == 0 {
            return Err(OpError::client("cannot update the key column"));
        }
        let v = self.table(table)?.param(column, value)?;
        let sql = self.sql(table, Key::Update(table, column))?;
        self.affected(&sql, vec![v, MyValue::Int(key)]).await
    }

    async fn run(&mut self, op: &Op) -> Result<Outcome, OpError> {
        Ok(match op {
            Op::Echo => {
                self.conn.exec_drop("SELECT 1", ()).await.map_err(op_error)?;
                Outcome::rows(0)
            }
            Op::Insert { table, row } => {
                let mut params = Vec::with_capacity(row.len());
                self.table(*table)?.push_row(row, &mut params)?;
                let sql = self.sql(*table, Key::Insert(*table, 1))?;
                Outcome::rows(self.affected(&sql, params).await?)
            }
            Op::Get { table, key } => Outcome::rows(self.get_one(*table, *key).await?),
            Op::MultiGet { table, keys } => Outcome::rows(self.by_keys(*table, keys.clone(), false).await?),
            Op::Delete { table, key } => {
                let sql = self.sql(*table, Key::Delete(*table))?;
                Outcome::rows(self.affected(&sql, vec![MyValue::Int(*key)]).await?)
            }
            Op::Update { table, key, column, value } => Outcome::rows(self.update_one(*table, *key, *column, value).await?),
            Op::ReadModifyWrite { table, key, column, value } => {
                // Read the row, then write it: two requests, as a client-side RMW is.
                if self.get_one(*table, *key).await? == 0 {
                    return Ok(Outcome::rows(0));
                }
                Outcome::rows(self.update_one(*table, *key, *column, value).await?)
            }
            Op::FetchAll { table } => {
                // Counted as the rows stream in, not collected.
                let sql = self.sql(*table, Key::FetchAll(*table))?;
                let rows = self.conn.exec_fold(&*sql, (), 0u64, |n, _: mysql_async::Row| n + 1).await.map_err(op_error)?;
                Outcome::rows(rows)
            }
            Op::Scan { table, start, count } => {
                let sql = self.sql(*table, Key::Scan(*table))?;
                let limit = MyValue::Int(i64::try_from(*count).unwrap_or(i64::MAX));
                Outcome::rows(self.rows(&sql, vec![MyValue::Int(*start), limit]).await?.len() as u64)
            }
            Op::Range { table, column, lo, hi, agg } => {
                self.check_column(*table, *column)?;
                let t = self.table(*table)?;
                let params = vec![t.bound(*column, *lo)?, t.bound(*column, *hi)?];
                match agg {
                    RangeAgg::Rows => {
                        let sql = self.sql(*table, Key::RangeRows(*table, *column))?;
                        Outcome::rows(self.rows(&sql, params).await?.len() as u64)
                    }
                    RangeAgg::Count => {
                        let sql = self.sql(*table, Key::RangeCount(*table, *column))?;
                        let n: Option<i64> = self.conn.exec_first(&*sql, Params::Positional(params)).await.map_err(op_error)?;
                        Outcome::answer(1, Answer::Scalar(Value::Int(n.unwrap_or(0))))
                    }
                    RangeAgg::Max { column: of } => {
                        self.check_column(*table, *of)?;
                        let sql = self.sql(*table, Key::RangeMax(*table, *column, *of))?;
                        let rows = self.rows(&sql, params).await?;
                        let raw = rows.first().and_then(|r| r.as_ref(0)).cloned().unwrap_or(MyValue::NULL);
                        Outcome::answer(1, Answer::Scalar(self.table(*table)?.decode(*of, &raw)?))
                    }
                }
            }
            Op::Query(q) => self.query(*q).await?,
        })
    }

    /// Multi-row inserts as literal statements (see [`literal`]).
    async fn insert_literal(&mut self, table: usize, rows: &[&Row]) -> Result<u64, OpError> {
        let t = self.table(table)?;
        let cols: Vec<String> = t.def.columns.iter().map(|c| quote(&c.name)).collect();
        let prefix = format!("INSERT INTO {} ({}) VALUES ", t.qualified, cols.join(", "));
        let mut tuples = Vec::with_capacity(rows.len());
        for row in rows {
            if row.len() != t.def.columns.len() {
                return Err(OpError::client(format!(
                    "{}: row has {} values, table has {} columns",
                    t.def.name,
                    row.len(),
                    t.def.columns.len()
                )));
            }
            tuples.push(literal::row_tuple(row)?);
        }
        let statements = literal::statements(&prefix, "", tuples, self.max_packet);
        self.literal_statements(statements, true).await
    }

    /// Sends literal statements over the text protocol: the affected rows of writes (in one
    /// transaction when there are several), else the rows returned.
    async fn literal_statements(&mut self, statements: Vec<String>, writes: bool) -> Result<u64, OpError> {
        if !writes {
            let mut rows = 0;
            for sql in statements {
                rows += self.conn.query_fold(sql, 0u64, |n, _: mysql_async::Row| n + 1).await.map_err(op_error)?;
            }
            return Ok(rows);
        }
        if let [sql] = statements.as_slice() {
            self.conn.query_drop(sql).await.map_err(op_error)?;
            return Ok(self.conn.affected_rows());
        }
        self.conn.query_drop("START TRANSACTION").await.map_err(op_error)?;
        let mut rows = 0;
        for sql in statements {
            if let Err(e) = self.conn.query_drop(sql).await {
                let _ = self.conn.query_drop("ROLLBACK").await;
                return Err(op_error(e));
            }
            rows += self.conn.affected_rows();
        }
        self.conn.query_drop("COMMIT").await.map_err(op_error)?;
        Ok(rows)
    }

    /// Runs the ops one after another inside one transaction.
    async fn in_transaction(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        self.conn.query_drop("START TRANSACTION").await.map_err(op_error)?;
        let mut rows = 0;
        for op in ops {
            match self.run(op).await {
                Ok(out) => rows += out.rows,
                Err(e) => {
                    let _ = self.conn.query_drop("ROLLBACK").await;
                    return Err(e);
                }
            }
        }
        self.conn.query_drop("COMMIT").await.map_err(op_error)?;
        Ok(Outcome::rows(rows))
    }
}

#[async_trait]
impl Connection for MyConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        self.run(op).await
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let Some(first) = ops.first() else { return Ok(Outcome::rows(0)) };
        let table_of = |op: &Op| match op {
            Op::Insert { table, .. } | Op::Get { table, .. } | Op::MultiGet { table, .. } | Op::Delete { table, .. } => Some(*table),
            _ => None,
        };
        let same_table = table_of(first).filter(|t| ops.iter().all(|op| table_of(op) == Some(*t)));
        let Some(table) = same_table else { return self.in_transaction(ops).await };
        match first.kind() {
            OpKind::Insert if ops.len() * self.table(table)?.def.columns.len() > literal::MAX_PLACEHOLDERS => {
                let mut rows = Vec::with_capacity(ops.len());
                for op in ops {
                    match op {
                        Op::Insert { row, .. } => rows.push(row),
                        _ => return Err(OpError::client("a batch mixes op kinds")),
                    }
                }
                Ok(Outcome::rows(self.insert_literal(table, &rows).await?))
            }
            OpKind::Insert => {
                let t = self.table(table)?;
                let mut params = Vec::with_capacity(ops.len() * t.def.columns.len());
                for op in ops {
                    match op {
                        Op::Insert { row, .. } => t.push_row(row, &mut params)?,
                        _ => return Err(OpError::client("a batch mixes op kinds")),
                    }
                }
                let sql = self.sql(table, Key::Insert(table, ops.len()))?;
                Ok(Outcome::rows(self.affected(&sql, params).await?))
            }
            kind @ (OpKind::Get | OpKind::MultiGet | OpKind::Delete) => {
                let mut keys = Vec::new();
                for op in ops {
                    match op {
                        Op::Get { key, .. } | Op::Delete { key, .. } => keys.push(*key),
                        Op::MultiGet { keys: more, .. } => keys.extend_from_slice(more),
                        _ => return Err(OpError::client("a batch mixes op kinds")),
                    }
                }
                Ok(Outcome::rows(self.by_keys(table, keys, kind == OpKind::Delete).await?))
            }
            _ => self.in_transaction(ops).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_or_stopping_servers_are_named_with_the_fix() {
        assert!(server_busy(1040).unwrap().contains("max_connections"));
        assert!(server_busy(1226).unwrap().contains("max_user_connections"));
        assert!(server_busy(1053).unwrap().contains("wait"));
        assert_eq!(server_busy(1045), None, "a refused login is the URL's to fix");
    }

    #[test]
    fn decimals_parse_to_hundredths() {
        assert_eq!(parse_hundredths("12.34"), Some(Decimal(1234)));
        assert_eq!(parse_hundredths("-0.05"), Some(Decimal(-5)));
        assert_eq!(parse_hundredths("7.5"), Some(Decimal(750)));
        assert_eq!(parse_hundredths("3"), Some(Decimal(300)));
        assert_eq!(parse_hundredths("1.234"), None);
        assert_eq!(parse_hundredths("x"), None);
    }

    #[test]
    fn create_table_indexes_and_limits_indexed_text() {
        let def = Arc::new(crate::data::kv::table_def());
        let sql = MyTable::new(def, "dbsweep").create_sql();
        assert!(sql.starts_with("CREATE TABLE `dbsweep`.`kv` (`k` BIGINT, `grp` BIGINT, `val` DOUBLE, `payload` TEXT"), "{sql}");
        assert!(sql.contains("PRIMARY KEY (`k`), INDEX `grp_idx` (`grp`)"), "{sql}");
    }
}
