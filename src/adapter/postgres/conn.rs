//! One PostgreSQL client session: prepared statements (cached per op kind and table) and
//! the translation of ops and batches into them.
//!
//! Batches: gets, multi-gets and deletes of one table are one set-based statement
//! (`= ANY($1)`), inserts one `INSERT ... SELECT FROM UNNEST(arrays)`; both are a single
//! round trip and an implicit transaction, the fastest shape PostgreSQL offers. Every
//! other batch (updates, read-modify-writes, scans, ranges, mixed tables) is
//! `BEGIN; stmt; ...; COMMIT` sent as one pipeline: tokio-postgres writes each request
//! when its future is first polled, so polling them all once in order sends the whole
//! batch before the first reply is awaited.
//!
//! Analytic queries (TPC-H Q1, Q3, Q6, Q14) use the layout's dialect of
//! [`crate::adapter::sql::tpch`], are prepared once per session (at connect when their
//! tables were prepared) and decode every cell into the type `answer_columns` names.
//! Must not time anything.

use super::sql::{Layout, Param, PgTable};
use crate::adapter::Connection;
use crate::adapter::sql::tpch::{self, Dialect};
use crate::base::op::{Answer, ErrorClass, Op, OpError, OpKind, Outcome, QueryId, RangeAgg};
use crate::base::table::{ColumnType, Date, Row, Value};
use crate::data::tpch_queries;
use async_trait::async_trait;
use futures_util::future::{BoxFuture, FutureExt};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::task::Poll;
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, Statement};

/// A statement in the per-session cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Insert(usize),
    InsertMany(usize),
    Get(usize),
    GetMany(usize),
    Delete(usize),
    DeleteMany(usize),
    Update(usize, usize),
    Scan(usize),
    RangeRows(usize, usize),
    RangeCount(usize, usize),
    RangeMax(usize, usize, usize),
    FetchAll(usize),
}

pub struct PgConnection {
    client: Client,
    tables: Arc<Vec<PgTable>>,
    echo: Statement,
    statements: HashMap<Key, Statement>,
    /// The dialect of the analytic queries (from the layout).
    dialect: Dialect,
    /// Prepared analytic queries.
    queries: HashMap<QueryId, Statement>,
}

/// The SQL of `query` over the prepared tables, or which TPC-H table it lacks.
pub fn query_sql(query: QueryId, dialect: Dialect, tables: &[PgTable]) -> Result<String, OpError> {
    let missing = RefCell::new(None::<String>);
    let text = tpch::sql(query, dialect, &|name: &str| match tables.iter().find(|t| t.def.name == name) {
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

/// One result cell of any type an analytic query returns.
struct Cell(Value);

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Cell(match *ty {
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Float(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Float(f64::from_sql(ty, raw)?),
            // Binary DATE: days since 2000-01-01.
            Type::DATE => Value::Date(Date(i32::from_sql(&Type::INT4, raw)? + PG_EPOCH_DAYS)),
            _ => Value::Text(<&str>::from_sql(&Type::TEXT, raw)?.into()),
        }))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Cell(Value::Null))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT2
                | Type::INT4
                | Type::INT8
                | Type::FLOAT4
                | Type::FLOAT8
                | Type::DATE
                | Type::TEXT
                | Type::VARCHAR
                | Type::BPCHAR
                | Type::NAME
        )
    }
}

/// 2000-01-01 in days since 1970-01-01.
const PG_EPOCH_DAYS: i32 = 10_957;

/// Decodes a query's result rows into the types of `answer_columns(query)`.
fn decode_answer(query: QueryId, rows: &[tokio_postgres::Row]) -> Result<Vec<Row>, OpError> {
    let types = tpch_queries::answer_columns(query);
    rows.iter()
        .map(|row| {
            if row.len() != types.len() {
                return Err(OpError::client(format!("{query:?} returned {} columns, expected {}", row.len(), types.len())));
            }
            types
                .iter()
                .enumerate()
                .map(|(i, ty)| {
                    let Cell(v) = row.try_get(i).map_err(|e| OpError::client(format!("{query:?} column {i}: {e}")))?;
                    Ok(match (ty, v) {
                        (_, Value::Null) => Value::Null,
                        (ColumnType::Float, Value::Int(x)) => Value::Float(x as f64),
                        (ColumnType::Text, v @ Value::Text(_))
                        | (ColumnType::Float, v @ Value::Float(_))
                        | (ColumnType::Int, v @ Value::Int(_))
                        | (ColumnType::Date, v @ Value::Date(_)) => v,
                        (ty, v) => return Err(OpError::client(format!("{query:?} column {i}: expected {ty:?}, got {v:?}"))),
                    })
                })
                .collect()
        })
        .collect()
}

/// A one-line description of a driver error (the server's message for SQL errors).
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => match std::error::Error::source(e) {
            Some(cause) => format!("{e}: {cause}"),
            None => e.to_string(),
        },
    }
}

pub(crate) fn op_error(e: tokio_postgres::Error) -> OpError {
    let class = if e.as_db_error().is_some() {
        ErrorClass::Server
    } else if e.is_closed() || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()) {
        ErrorClass::Connection
    } else {
        ErrorClass::Client
    };
    OpError::new(class, describe(&e))
}

pub(crate) fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)).collect()
}

/// The same table for every op of a batch, if so.
fn single_table(ops: &[Op]) -> Option<usize> {
    let table_of = |op: &Op| match op {
        Op::Insert { table, .. } | Op::Get { table, .. } | Op::MultiGet { table, .. } | Op::Delete { table, .. } => Some(*table),
        _ => None,
    };
    let first = table_of(ops.first()?)?;
    ops.iter().all(|op| table_of(op) == Some(first)).then_some(first)
}

/// Polls every future once, in order (which makes tokio-postgres send every request),
/// then awaits them in order; returns the results in order.
async fn pipeline<'a, T>(mut futures: Vec<BoxFuture<'a, T>>) -> Vec<T> {
    let mut done: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (future, slot) in futures.iter_mut().zip(done.iter_mut()) {
            if let Poll::Ready(v) = future.as_mut().poll(cx) {
                *slot = Some(v);
            }
        }
        Poll::Ready(())
    })
    .await;
    let mut out = Vec::with_capacity(futures.len());
    for (future, slot) in futures.into_iter().zip(done) {
        out.push(match slot {
            Some(v) => v,
            None => future.await,
        });
    }
    out
}

/// Runs a parameterless statement and counts the rows it returns as they stream in,
/// without holding them all (fetch-all of a million rows stays small in the client).
pub(crate) async fn count_streamed(client: &Client, statement: &Statement) -> Result<u64, OpError> {
    use futures_util::TryStreamExt;
    let stream = client.query_raw(statement, std::iter::empty::<i64>()).await.map_err(op_error)?;
    let mut stream = std::pin::pin!(stream);
    let mut rows = 0;
    while stream.try_next().await.map_err(op_error)?.is_some() {
        rows += 1;
    }
    Ok(rows)
}

/// What one step of a pipelined batch returns.
enum Step {
    Rows(Vec<tokio_postgres::Row>),
    Count(u64),
}

impl PgConnection {
    /// Opens the session's statement cache with the statements every workload uses
    /// (prepared concurrently), so the first measured ops do not pay for preparing.
    /// Updates and range maxima depend on the columns and are prepared on first use.
    pub async fn new(client: Client, tables: Arc<Vec<PgTable>>, layout: Layout) -> Result<Self, tokio_postgres::Error> {
        let echo = client.prepare("SELECT 1").await?;
        let dialect = layout.dialect();
        let mut conn = PgConnection { client, tables, echo, statements: HashMap::new(), dialect, queries: HashMap::new() };
        let mut keys = Vec::new();
        for (id, t) in conn.tables.iter().enumerate() {
            keys.extend([
                Key::Insert(id),
                Key::InsertMany(id),
                Key::Get(id),
                Key::GetMany(id),
                Key::Delete(id),
                Key::DeleteMany(id),
                Key::Scan(id),
            ]);
            for &c in t.def.indexed.iter().filter(|&&c| c != 0) {
                keys.extend([Key::RangeRows(id, c), Key::RangeCount(id, c)]);
            }
        }
        let sql: Vec<String> = keys.iter().map(|k| conn.sql(*k)).collect::<Result<_, _>>().expect("tables exist");
        let prepared = futures_util::future::try_join_all(sql.iter().map(|q| conn.client.prepare(q))).await?;
        conn.statements.extend(keys.into_iter().zip(prepared));
        // The analytic queries whose tables this run prepared.
        let runnable: Vec<(QueryId, String)> = [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14]
            .into_iter()
            .filter_map(|q| query_sql(q, dialect, &conn.tables).ok().map(|sql| (q, sql)))
            .collect();
        let prepared = futures_util::future::try_join_all(runnable.iter().map(|(_, q)| conn.client.prepare(q))).await?;
        conn.queries.extend(runnable.into_iter().map(|(q, _)| q).zip(prepared));
        Ok(conn)
    }

    fn sql(&self, key: Key) -> Result<String, OpError> {
        let t = |id: usize| self.table(id);
        Ok(match key {
            Key::Insert(id) => t(id)?.insert_sql(),
            Key::InsertMany(id) => t(id)?.insert_many_sql(),
            Key::Get(id) => t(id)?.get_sql(),
            Key::GetMany(id) => t(id)?.get_many_sql(),
            Key::Delete(id) => t(id)?.delete_sql(),
            Key::DeleteMany(id) => t(id)?.delete_many_sql(),
            Key::Update(id, c) => t(id)?.update_sql(c),
            Key::Scan(id) => t(id)?.scan_sql(),
            Key::RangeRows(id, c) => t(id)?.range_sql(c, RangeAgg::Rows),
            Key::RangeCount(id, c) => t(id)?.range_sql(c, RangeAgg::Count),
            Key::RangeMax(id, c, of) => t(id)?.range_sql(c, RangeAgg::Max { column: of }),
            Key::FetchAll(id) => format!("SELECT * FROM {}", t(id)?.qualified),
        })
    }

    fn table(&self, id: usize) -> Result<&PgTable, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("no table #{id} was prepared")))
    }

    fn column(&self, table: usize, column: usize) -> Result<(), OpError> {
        let t = self.table(table)?;
        if column < t.def.columns.len() { Ok(()) } else { Err(OpError::client(format!("{} has no column #{column}", t.def.name))) }
    }

    /// The prepared statement for `key`, preparing it on first use.
    async fn statement(&mut self, key: Key) -> Result<Statement, OpError> {
        if let Some(s) = self.statements.get(&key) {
            return Ok(s.clone());
        }
        let sql = self.sql(key)?;
        let statement = self.client.prepare(&sql).await.map_err(op_error)?;
        self.statements.insert(key, statement.clone());
        Ok(statement)
    }

    /// Runs an analytic query (prepared on first use if connect did not).
    async fn query(&mut self, query: QueryId) -> Result<Outcome, OpError> {
        let statement = match self.queries.get(&query) {
            Some(s) => s.clone(),
            None => {
                let sql = query_sql(query, self.dialect, &self.tables)?;
                let s = self.client.prepare(&sql).await.map_err(op_error)?;
                self.queries.insert(query, s.clone());
                s
            }
        };
        let rows = self.client.query(&statement, &[]).await.map_err(op_error)?;
        let decoded = decode_answer(query, &rows)?;
        Ok(Outcome::answer(decoded.len() as u64, Answer::Table(decoded)))
    }

    /// The statement and parameters of a single op (not RMW, which is two steps).
    async fn plan(&mut self, op: &Op) -> Result<(Statement, Vec<Param>), OpError> {
        Ok(match op {
            Op::Echo => (self.echo.clone(), vec![]),
            Op::Insert { table, row } => {
                let params = self.table(*table)?.insert_params(row)?;
                (self.statement(Key::Insert(*table)).await?, params)
            }
            Op::Get { table, key } => (self.statement(Key::Get(*table)).await?, vec![Box::new(*key)]),
            Op::MultiGet { table, keys } => (self.statement(Key::GetMany(*table)).await?, vec![Box::new(keys.clone())]),
            Op::Delete { table, key } => (self.statement(Key::Delete(*table)).await?, vec![Box::new(*key)]),
            Op::Update { table, key, column, value } | Op::ReadModifyWrite { table, key, column, value } => {
                self.column(*table, *column)?;
                let v = self.table(*table)?.update_value(*column, value)?;
                (self.statement(Key::Update(*table, *column)).await?, vec![v, Box::new(*key)])
            }
            Op::Scan { table, start, count } => (self.statement(Key::Scan(*table)).await?, vec![Box::new(*start), Box::new(*count as i64)]),
            Op::Range { table, column, lo, hi, agg } => {
                self.column(*table, *column)?;
                let key = match agg {
                    RangeAgg::Rows => Key::RangeRows(*table, *column),
                    RangeAgg::Count => Key::RangeCount(*table, *column),
                    RangeAgg::Max { column: of } => {
                        self.column(*table, *of)?;
                        Key::RangeMax(*table, *column, *of)
                    }
                };
                let t = self.table(*table)?;
                let params = vec![t.range_bound(*column, *lo)?, t.range_bound(*column, *hi)?];
                (self.statement(key).await?, params)
            }
            Op::FetchAll { table } => (self.statement(Key::FetchAll(*table)).await?, vec![]),
            Op::Query(q) => return Err(OpError::client(format!("{q:?} runs through PgConnection::query, not a plan"))),
        })
    }

    /// Whether the op's result is rows (queries) or an affected-row count.
    fn returns_rows(op: &Op) -> bool {
        !matches!(op, Op::Insert { .. } | Op::Delete { .. } | Op::Update { .. } | Op::ReadModifyWrite { .. })
    }

    fn outcome(&self, op: &Op, step: Step) -> Result<Outcome, OpError> {
        Ok(match (op, step) {
            (Op::Echo, _) => Outcome::rows(0),
            (_, Step::Count(n)) => Outcome::rows(n),
            (Op::Range { table, agg: RangeAgg::Count, .. }, Step::Rows(rows)) => {
                let _ = self.table(*table)?;
                let n: i64 = rows.first().ok_or_else(|| OpError::server("count returned no row"))?.try_get(0).map_err(op_error)?;
                Outcome::answer(1, Answer::Scalar(Value::Int(n)))
            }
            (Op::Range { table, agg: RangeAgg::Max { column }, .. }, Step::Rows(rows)) => {
                let row = rows.first().ok_or_else(|| OpError::server("max returned no row"))?;
                Outcome::answer(1, Answer::Scalar(self.table(*table)?.decode_max(*column, row)?))
            }
            (_, Step::Rows(rows)) => Outcome::rows(rows.len() as u64),
        })
    }

    async fn run_one(&mut self, op: &Op) -> Result<Outcome, OpError> {
        let (statement, params) = self.plan(op).await?;
        if let Op::FetchAll { .. } = op {
            return Ok(Outcome::rows(count_streamed(&self.client, &statement).await?));
        }
        let step = if Self::returns_rows(op) {
            Step::Rows(self.client.query(&statement, &refs(&params)).await.map_err(op_error)?)
        } else {
            Step::Count(self.client.execute(&statement, &refs(&params)).await.map_err(op_error)?)
        };
        self.outcome(op, step)
    }

    /// `BEGIN; ...; COMMIT` as one pipeline; `planned` holds each op's statement.
    async fn run_pipelined(&self, ops: &[Op], planned: &[(Statement, Vec<Param>)]) -> Result<Vec<Step>, OpError> {
        let client = &self.client;
        let mut futures: Vec<BoxFuture<'_, Result<Step, tokio_postgres::Error>>> = Vec::with_capacity(ops.len() + 2);
        futures.push(client.batch_execute("BEGIN").map(|r| r.map(|()| Step::Count(0))).boxed());
        for (op, (statement, params)) in ops.iter().zip(planned) {
            if Self::returns_rows(op) {
                futures.push(async move { client.query(statement, &refs(params)).await.map(Step::Rows) }.boxed());
            } else {
                futures.push(async move { client.execute(statement, &refs(params)).await.map(Step::Count) }.boxed());
            }
        }
        // After a failed statement COMMIT only rolls back; the first error is reported.
        futures.push(client.batch_execute("COMMIT").map(|r| r.map(|()| Step::Count(0))).boxed());
        let mut results = pipeline(futures).await;
        results.pop();
        results.into_iter().skip(1).map(|r| r.map_err(op_error)).collect()
    }

    async fn batch_pipelined(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        if ops.iter().any(|op| matches!(op, Op::ReadModifyWrite { .. })) {
            return self.batch_rmw(ops).await;
        }
        let mut planned = Vec::with_capacity(ops.len());
        for op in ops {
            planned.push(self.plan(op).await?);
        }
        let steps = self.run_pipelined(ops, &planned).await?;
        let mut rows = 0;
        for (op, step) in ops.iter().zip(steps) {
            rows += self.outcome(op, step)?.rows;
        }
        Ok(Outcome::rows(rows))
    }

    /// Read-modify-writes: all reads, then all writes of the rows found, in one
    /// transaction of two pipelines.
    async fn batch_rmw(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let reads: Vec<Op> = ops
            .iter()
            .map(|op| match op {
                Op::ReadModifyWrite { table, key, .. } => Ok(Op::Get { table: *table, key: *key }),
                other => Err(OpError::client(format!("a batch mixes read_modify_write with {}", other.kind()))),
            })
            .collect::<Result<_, _>>()?;
        let mut planned = Vec::with_capacity(ops.len());
        for op in &reads {
            planned.push(self.plan(op).await?);
        }
        self.client.batch_execute("BEGIN").await.map_err(op_error)?;
        let result = async {
            let found = self.pipelined_plain(&reads, &planned).await?;
            let writes: Vec<Op> = ops
                .iter()
                .zip(found)
                .filter(|(_, step)| matches!(step, Step::Rows(r) if !r.is_empty()))
                .map(|(op, _)| op.clone())
                .collect();
            let mut planned = Vec::with_capacity(writes.len());
            for op in &writes {
                planned.push(self.plan(op).await?);
            }
            let steps = self.pipelined_plain(&writes, &planned).await?;
            Ok::<u64, OpError>(steps.iter().map(|s| if let Step::Count(n) = s { *n } else { 0 }).sum())
        }
        .await;
        match result {
            Ok(rows) => {
                self.client.batch_execute("COMMIT").await.map_err(op_error)?;
                Ok(Outcome::rows(rows))
            }
            Err(e) => {
                let _ = self.client.batch_execute("ROLLBACK").await;
                Err(e)
            }
        }
    }

    /// A pipeline without its own transaction.
    async fn pipelined_plain(&self, ops: &[Op], planned: &[(Statement, Vec<Param>)]) -> Result<Vec<Step>, OpError> {
        let client = &self.client;
        let futures: Vec<BoxFuture<'_, Result<Step, tokio_postgres::Error>>> = ops
            .iter()
            .zip(planned)
            .map(|(op, (statement, params))| {
                if Self::returns_rows(op) {
                    async move { client.query(statement, &refs(params)).await.map(Step::Rows) }.boxed()
                } else {
                    async move { client.execute(statement, &refs(params)).await.map(Step::Count) }.boxed()
                }
            })
            .collect();
        pipeline(futures).await.into_iter().map(|r| r.map_err(op_error)).collect()
    }
}

#[async_trait]
impl Connection for PgConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::ReadModifyWrite { table, key, .. } => {
                // Read the row, then write it: two requests, as a client-side RMW is.
                let found = self.run_one(&Op::Get { table: *table, key: *key }).await?.rows;
                if found == 0 {
                    return Ok(Outcome::rows(0));
                }
                self.run_one(op).await
            }
            Op::Query(q) => self.query(*q).await,
            op => self.run_one(op).await,
        }
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let Some(first) = ops.first() else { return Ok(Outcome::rows(0)) };
        if first.kind() == OpKind::Query {
            // Analytic queries are long; a batch of them runs one after another.
            let mut rows = 0;
            for op in ops {
                rows += self.execute(op).await?.rows;
            }
            return Ok(Outcome::rows(rows));
        }
        if let Some(table) = single_table(ops) {
            match first.kind() {
                OpKind::Insert => {
                    let rows: Vec<&crate::base::table::Row> =
                        ops.iter().filter_map(|op| if let Op::Insert { row, .. } = op { Some(row) } else { None }).collect();
                    if rows.len() == ops.len() {
                        let params = self.table(table)?.insert_many_params(&rows)?;
                        let statement = self.statement(Key::InsertMany(table)).await?;
                        let n = self.client.execute(&statement, &refs(&params)).await.map_err(op_error)?;
                        return Ok(Outcome::rows(n));
                    }
                }
                OpKind::Get | OpKind::MultiGet | OpKind::Delete => {
                    let mut keys = Vec::new();
                    for op in ops {
                        match op {
                            Op::Get { key, .. } | Op::Delete { key, .. } => keys.push(*key),
                            Op::MultiGet { keys: more, .. } => keys.extend_from_slice(more),
                            _ => return Err(OpError::client("a batch mixes op kinds")),
                        }
                    }
                    let params: Vec<Param> = vec![Box::new(keys)];
                    let n = if first.kind() == OpKind::Delete {
                        let statement = self.statement(Key::DeleteMany(table)).await?;
                        self.client.execute(&statement, &refs(&params)).await.map_err(op_error)?
                    } else {
                        let statement = self.statement(Key::GetMany(table)).await?;
                        self.client.query(&statement, &refs(&params)).await.map_err(op_error)?.len() as u64
                    };
                    return Ok(Outcome::rows(n));
                }
                _ => {}
            }
        }
        self.batch_pipelined(ops).await
    }
}
