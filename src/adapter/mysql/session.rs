//! One MariaDB session: the `Executor` of `sql::SqlConnection` over a connection of
//! dbsweep's own (`direct`), and the encoding of dbsweep values as MariaDB parameters and
//! back.
//!
//! Requests block the calling thread (each MariaDB client has a thread of its own,
//! `Execution::AsyncThreads`): a send and a receive per request, no reactor. The runner's
//! timer cannot cut a blocking request short, so the connection's read and write timeouts
//! are the run's `--timeout`, and a request that outlasts them is a timeout error. A
//! request cut off by a timeout or a broken connection leaves the connection mid-reply:
//! the session opens a new one (and prepares again) before its next request, so a late
//! reply is never read as the answer to a later request.
//!
//! Statements are the `mariadb` dialect's, prepared once per session and kept in the
//! session's `StatementCache` (a request names its prepared statement directly, with no
//! text to hash or parse). At
//! most `MAX_PREPARED` are kept; preparing one more closes them all first. A step that
//! needs more than 65,535 placeholders is sent with literal values (see
//! [`super::literal`]). Must not create or drop anything, or time anything.

use super::direct::{Connection, Login, Prepared, Reply as Wire, Rows, WireError};
use super::literal;
use crate::adapter::sql::QUERIES;
use crate::adapter::sql::connection::{Executor, StatementCache, returns_rows};
use crate::adapter::sql::dialect::SqlTable;
use crate::adapter::sql::dialects::MYSQL;
use crate::adapter::sql::plan::{Answered, Args, Reply, Step};
use crate::adapter::sql::statement::Statement;
use crate::base::op::{ErrorClass, OpError, RangeAgg};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use crate::data::tpch_queries::answer_columns;
use async_trait::async_trait;
use mysql_common::Value as MyValue;
use std::sync::Arc;
use std::time::Duration;

/// A value as the parameter MariaDB converts exactly: decimals and dates as text.
fn param(value: &Value) -> Result<MyValue, OpError> {
    Ok(match value {
        Value::Null => MyValue::NULL,
        Value::Int(v) => MyValue::Int(*v),
        Value::Float(v) => MyValue::Double(*v),
        Value::Decimal(d) => MyValue::Bytes(d.to_string().into_bytes()),
        Value::Text(s) => MyValue::Bytes(s.as_bytes().to_vec()),
        Value::Date(d) => MyValue::Bytes(d.to_iso().into_bytes()),
    })
}

/// A value for a column of type `ty` (integers in a float column become floats).
fn column_param(def: &TableDef, column: usize, value: &Value) -> Result<MyValue, OpError> {
    let c = &def.columns[column];
    match (c.ty, value) {
        (_, Value::Null) | (ColumnType::Int, Value::Int(_)) | (ColumnType::Float, Value::Float(_)) => param(value),
        (ColumnType::Decimal, Value::Decimal(_)) | (ColumnType::Text, Value::Text(_)) | (ColumnType::Date, Value::Date(_)) => param(value),
        (ColumnType::Float, Value::Int(v)) => Ok(MyValue::Double(*v as f64)),
        _ => Err(OpError::client(format!("{}.{}: value {value:?} does not fit a {:?} column", def.name, c.name, c.ty))),
    }
}

/// A range bound (the column's integer representation) in the column's type.
fn bound(def: &TableDef, column: usize, bound: i64) -> Result<MyValue, OpError> {
    param(&match def.columns[column].ty {
        ColumnType::Int => Value::Int(bound),
        ColumnType::Float => Value::Float(bound as f64),
        ColumnType::Decimal => Value::Decimal(Decimal(bound)),
        ColumnType::Date => {
            Value::Date(Date(i32::try_from(bound).map_err(|_| OpError::client(format!("date bound {bound} out of range")))?))
        }
        ColumnType::Text => return Err(OpError::client(format!("{}: no integer range over a text column", def.name))),
    })
}

/// A value the server returned, as the type `ty`.
fn decode(ty: ColumnType, value: &MyValue) -> Result<Value, OpError> {
    let bad = || OpError::client(format!("cannot read {value:?} as a {ty:?} value"));
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
                ColumnType::Decimal => Value::Decimal(parse_hundredths(text).ok_or_else(bad)?),
                ColumnType::Text => Value::Text(text.into()),
                ColumnType::Date => Value::Date(Date::from_iso(text.get(..10).unwrap_or(text)).ok_or_else(bad)?),
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

/// The class of a connection's error; a read or write that outlasted the socket's timeout
/// (`timeout`, the run's `--timeout`) is a timeout, worded as the runner words its own.
fn op_error(e: WireError, timeout: Duration) -> OpError {
    let class = match &e {
        WireError::Io(io) if matches!(io.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            return OpError::new(ErrorClass::Timeout, format!("no reply within {:.1}s", timeout.as_secs_f64()));
        }
        WireError::Server { .. } => ErrorClass::Server,
        // A reply this client cannot read leaves the connection out of step, as a broken one.
        WireError::Io(_) | WireError::Protocol(_) => ErrorClass::Connection,
    };
    OpError::new(class, e.to_string())
}

/// The values of one row, each in its column's encoding.
pub(super) fn push_row(def: &TableDef, row: &Row, out: &mut Vec<MyValue>) -> Result<(), OpError> {
    if row.len() != def.columns.len() {
        return Err(OpError::client(format!("{}: row has {} values, table has {} columns", def.name, row.len(), def.columns.len())));
    }
    for (i, v) in row.iter().enumerate() {
        out.push(column_param(def, i, v)?);
    }
    Ok(())
}

/// The most prepared statements a session keeps open on the server.
const MAX_PREPARED: usize = 256;

/// One MariaDB session: the `Executor` of `sql::SqlConnection`.
pub(super) struct MySession {
    conn: Connection,
    /// How to open the connection again after a request was cut off.
    login: Arc<Login>,
    /// A request was cut off (timeout, I/O error): `conn` may hold the rest of its reply.
    cut_off: bool,
    /// The statements this session prepared (at most `MAX_PREPARED`).
    statements: StatementCache<Arc<Prepared>>,
}

impl MySession {
    pub(super) fn new(conn: Connection, login: Arc<Login>, tables: Arc<Vec<SqlTable>>) -> Self {
        MySession { conn, login, cut_off: false, statements: StatementCache::new(&MYSQL, tables) }
    }

    /// The error of a failed request; a timeout or connection error marks the connection
    /// as cut off.
    fn error(&mut self, e: WireError) -> OpError {
        let error = op_error(e, self.login.request_timeout);
        if matches!(error.class, ErrorClass::Timeout | ErrorClass::Connection) {
            self.cut_off = true;
        }
        error
    }

    /// Opens a new connection in place of one a request was cut off on (its statements
    /// are prepared again on first use); a server still unreachable is a connection error.
    fn reconnect_if_cut_off(&mut self) -> Result<(), OpError> {
        if !self.cut_off {
            return Ok(());
        }
        let mut conn = Connection::open(&self.login).map_err(|e| OpError::new(ErrorClass::Connection, e.to_string()))?;
        conn.set_timeout(self.login.request_timeout).map_err(|e| OpError::new(ErrorClass::Connection, e.to_string()))?;
        self.conn = conn;
        self.statements.take_all();
        self.cut_off = false;
        Ok(())
    }

    /// Prepares the statements every workload uses into the session's cache, so the first
    /// measured ops do not pay for preparing (the rest are prepared on first use), then
    /// makes requests time out after the run's `--timeout`.
    pub(super) fn warm(&mut self) -> Result<(), OpError> {
        let mut common = vec![Statement::Echo];
        for (table, t) in self.statements.tables().clone().iter().enumerate() {
            common.extend([
                Statement::Insert { table, rows: 1 },
                Statement::Get { table },
                Statement::Delete { table },
                Statement::Scan { table, limit: None },
            ]);
            for &column in t.def.indexed.iter().filter(|&&c| c != 0) {
                common.extend([RangeAgg::Rows, RangeAgg::Count].map(|agg| Statement::Range { table, column, agg }));
            }
        }
        // The analytic queries whose tables this run prepared.
        let tables = self.statements.tables().clone();
        common.extend(QUERIES.into_iter().filter(|q| Statement::Query(*q).text(&MYSQL, &tables).is_ok()).map(Statement::Query));
        for statement in common {
            self.prepared(statement)?;
        }
        // Set up: requests time out after the run's `--timeout` from here on.
        let timeout = self.login.request_timeout;
        self.conn.set_timeout(timeout).map_err(|e| self.error(e))
    }

    /// The statement prepared on this session, prepared on first use. Preparing one more
    /// than `MAX_PREPARED` closes the ones kept first (they are prepared again when used).
    fn prepared(&mut self, statement: Statement) -> Result<Arc<Prepared>, OpError> {
        if let Some(prepared) = self.statements.get(&statement) {
            return Ok(prepared);
        }
        if self.statements.len() >= MAX_PREPARED {
            for old in self.statements.take_all() {
                self.conn.close(&old).map_err(|e| self.error(e))?;
            }
        }
        let prepared = Arc::new(self.conn.prepare(&self.statements.text(statement)?).map_err(|e| self.error(e))?);
        self.statements.insert(statement, prepared.clone());
        Ok(prepared)
    }

    /// Sends a text statement: its rows counted, or its affected rows.
    fn query(&mut self, sql: &str) -> Result<u64, OpError> {
        match self.conn.query(sql).map_err(|e| self.error(e))? {
            Wire::Done { affected } => Ok(affected),
            Wire::Counted(rows) => Ok(rows),
            Wire::Kept(rows) => Ok(rows.len() as u64),
        }
    }

    /// Executes a prepared statement: its rows (counted or kept), or its affected rows.
    fn execute(&mut self, prepared: &Prepared, params: &[MyValue], rows: Rows) -> Result<Wire, OpError> {
        self.conn.execute(prepared, params, rows).map_err(|e| self.error(e))
    }

    /// The parameters of a step.
    fn params(&self, step: &Step<'_>) -> Result<Vec<MyValue>, OpError> {
        let def = || self.statements.table(step.statement.table().unwrap_or_default()).map(|t| &t.def);
        Ok(match &step.args {
            Args::None => vec![],
            Args::Key(key) => vec![MyValue::Int(*key)],
            Args::Keys(keys) => keys.iter().map(|k| MyValue::Int(*k)).collect(),
            Args::Rows(rows) => {
                let def = def()?;
                let mut params = Vec::with_capacity(rows.len() * def.columns.len());
                for row in rows {
                    push_row(def, row, &mut params)?;
                }
                params
            }
            Args::Update { column, value, key } => vec![column_param(def()?, *column, value)?, MyValue::Int(*key)],
            Args::Scan { start, count } => std::iter::once(*start).chain(*count).map(MyValue::Int).collect(),
            Args::Range { column, lo, hi } => vec![bound(def()?, *column, *lo)?, bound(def()?, *column, *hi)?],
        })
    }
}

impl MySession {
    /// The step as statements with literal values when it needs more placeholders than a
    /// prepared statement has (see [`literal`]): the one-row (one-key) statement's text with
    /// its placeholder group repeated as literals, split only where `max_allowed_packet`
    /// requires. `None` for every other step.
    fn literal_statements(&self, step: &Step<'_>) -> Result<Option<Vec<String>>, OpError> {
        let table = step.statement.table().unwrap_or_default();
        let (one, items): (Statement, Vec<String>) = match (&step.args, step.statement) {
            (Args::Rows(rows), Statement::Insert { .. })
                if rows.len() * rows.first().map_or(0, |r| r.len()) > literal::MAX_PLACEHOLDERS =>
            {
                let def = &self.statements.table(table)?.def;
                let mut tuples = Vec::with_capacity(rows.len());
                for row in rows {
                    if row.len() != def.columns.len() {
                        let (name, have, want) = (&def.name, row.len(), def.columns.len());
                        return Err(OpError::client(format!("{name}: row has {have} values, table has {want} columns")));
                    }
                    tuples.push(literal::row_tuple(row)?);
                }
                (Statement::Insert { table, rows: 1 }, tuples)
            }
            (Args::Keys(keys), Statement::GetMany { .. } | Statement::DeleteMany { .. }) if keys.len() > literal::MAX_PLACEHOLDERS => {
                let one = if matches!(step.statement, Statement::GetMany { .. }) {
                    Statement::GetMany { table, keys: 1 }
                } else {
                    Statement::DeleteMany { table, keys: 1 }
                };
                (one, keys.iter().map(i64::to_string).collect())
            }
            _ => return Ok(None),
        };
        let text = self.statements.text(one)?;
        // The placeholder group: a row's `(?, …)` tuple, or the one key's `?`.
        let group = if matches!(one, Statement::Insert { .. }) { text.rfind("(?") } else { text.rfind('?') };
        let start = group.ok_or_else(|| OpError::client(format!("no placeholder in {text}")))?;
        let end = if matches!(one, Statement::Insert { .. }) { text[start..].find(')').map(|i| start + i + 1) } else { Some(start + 1) };
        let end = end.ok_or_else(|| OpError::client(format!("no placeholder group in {text}")))?;
        Ok(Some(literal::statements(&text[..start], &text[end..], items, self.conn.max_packet())))
    }

    /// Sends literal statements over the text protocol: the rows returned, else the
    /// affected rows of writes (in one transaction when there are several).
    async fn run_literal(&mut self, statements: Vec<String>, returns_rows: bool) -> Result<u64, OpError> {
        if returns_rows {
            let mut rows = 0;
            for sql in statements {
                rows += self.query(&sql)?;
            }
            return Ok(rows);
        }
        if let [sql] = statements.as_slice() {
            return self.query(sql);
        }
        self.begin(true).await?;
        let mut rows = 0;
        for sql in statements {
            match self.query(&sql) {
                Ok(affected) => rows += affected,
                Err(e) => {
                    self.rollback().await;
                    return Err(e);
                }
            }
        }
        self.commit().await?;
        Ok(rows)
    }
}

#[async_trait]
impl Executor for MySession {
    async fn run(&mut self, step: &Step<'_>) -> Result<Answered, OpError> {
        self.reconnect_if_cut_off()?;
        if let Some(statements) = self.literal_statements(step)? {
            return self.run_literal(statements, returns_rows(step.reply)).await.map(Answered::Rows);
        }
        let (prepared, params) = (self.prepared(step.statement)?, self.params(step)?);
        let rows = if matches!(step.reply, Reply::Count | Reply::Max(_) | Reply::Answer(_)) { Rows::Keep } else { Rows::Count };
        let reply = self.execute(&prepared, &params, rows)?;
        Ok(match (step.reply, reply) {
            (Reply::Affected | Reply::Inserted(_), Wire::Done { affected }) => Answered::Rows(affected),
            // Counted as the rows stream in, not collected.
            (_, Wire::Counted(rows)) => Answered::Rows(rows),
            (_, Wire::Done { .. }) => Answered::Rows(0),
            (Reply::Count | Reply::Max(_), Wire::Kept(rows)) => {
                let ty = if let Reply::Max(ty) = step.reply { ty } else { ColumnType::Int };
                let raw = rows.first().and_then(|r| r.first()).unwrap_or(&MyValue::NULL);
                match (step.reply, decode(ty, raw)?) {
                    (Reply::Count, Value::Null) => Answered::Scalar(Value::Int(0)),
                    (_, value) => Answered::Scalar(value),
                }
            }
            (Reply::Answer(query), Wire::Kept(rows)) => {
                let types = answer_columns(query);
                let mut out = Vec::with_capacity(rows.len());
                for row in &rows {
                    if row.len() != types.len() {
                        return Err(OpError::client(format!("{query:?} returned {} columns, expected {}", row.len(), types.len())));
                    }
                    out.push(types.iter().zip(row).map(|(ty, value)| decode(*ty, value)).collect::<Result<Row, _>>()?);
                }
                Answered::Table(out)
            }
            (_, Wire::Kept(rows)) => Answered::Rows(rows.len() as u64),
        })
    }

    async fn control(&mut self, sql: &str) -> Result<(), OpError> {
        self.reconnect_if_cut_off()?;
        self.query(sql).map(drop)
    }

    /// A statement of a user's script as a text query: its cells as the server's text.
    async fn run_text(&mut self, sql: &str, reads: bool) -> Result<Answered, OpError> {
        self.reconnect_if_cut_off()?;
        let text = |value: &MyValue| match value {
            MyValue::NULL => Value::Null,
            MyValue::Bytes(bytes) => Value::Text(String::from_utf8_lossy(bytes).into()),
            other => Value::Text(other.as_sql(true).into()),
        };
        Ok(match self.conn.query_rows(sql).map_err(|e| self.error(e))? {
            Wire::Kept(rows) if reads => Answered::Table(rows.iter().map(|row| row.iter().map(text).collect()).collect()),
            Wire::Kept(rows) => Answered::Rows(rows.len() as u64),
            Wire::Done { affected } if !reads => Answered::Rows(affected),
            Wire::Done { .. } | Wire::Counted(_) => Answered::Table(Vec::new()),
        })
    }

    fn begin_statement(&self, _writes: bool) -> &'static str {
        "START TRANSACTION"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_past_the_timeout_is_a_timeout_and_a_closed_socket_a_connection_error() {
        use std::io::{Error, ErrorKind};
        let timeout = Duration::from_millis(1500);
        let timed_out = op_error(WireError::Io(Error::from(ErrorKind::WouldBlock)), timeout);
        assert_eq!((timed_out.class, timed_out.message.as_str()), (ErrorClass::Timeout, "no reply within 1.5s"));
        assert_eq!(op_error(WireError::Io(Error::from(ErrorKind::TimedOut)), timeout).class, ErrorClass::Timeout);
        assert_eq!(op_error(WireError::Io(Error::from(ErrorKind::UnexpectedEof)), timeout).class, ErrorClass::Connection);
        let server = WireError::Server { state: "42S02".into(), message: "no table".into(), code: 1146 };
        let server = op_error(server, timeout);
        assert_eq!((server.class, server.message.as_str()), (ErrorClass::Server, "ERROR 1146 (42S02): no table"));
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
    fn values_travel_in_the_encoding_the_server_converts_exactly() {
        let def = crate::data::kv::table_def();
        assert_eq!(column_param(&def, 2, &Value::Int(3)).unwrap(), MyValue::Double(3.0));
        assert!(column_param(&def, 1, &Value::Text("x".into())).is_err());
        assert_eq!(param(&Value::Decimal(Decimal(-5))).unwrap(), MyValue::Bytes(b"-0.05".to_vec()));
        assert_eq!(decode(ColumnType::Decimal, &MyValue::Bytes(b"12.30".to_vec())).unwrap(), Value::Decimal(Decimal(1230)));
        assert_eq!(decode(ColumnType::Float, &MyValue::Int(2)).unwrap(), Value::Float(2.0));
    }
}
