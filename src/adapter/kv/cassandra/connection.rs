//! One client's connection: its own driver session and prepared statements; ops planned
//! into statements or chunked batches, and their replies read (rows, `[applied]` flags,
//! pages). Must not touch any keyspace but the target's.

use super::table::{TableCql, bound, from_cql, row_values, to_cql, value_bytes};
use super::target::count_pages;
use super::{Affected, BATCH_BYTES, BATCH_CHUNK, BATCH_CHUNKS_IN_FLIGHT, LOAD_CONCURRENCY, MULTI_GET_CHUNK, PAGE_SIZE, op_error};
use crate::adapter::Connection;
use crate::base::op::{Answer, ErrorClass, Op, OpError, Outcome, RangeAgg};
use crate::base::table::{ColumnType, TableId, Value};
use crate::error::Result;
use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::future::{BoxFuture, FutureExt};
use futures_util::stream::{self, TryStreamExt};
use scylla::client::session::Session;
use scylla::statement::batch::{Batch, BatchStatement, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::CqlValue;
use std::collections::HashMap;
use std::sync::Arc;

/// Rows of a result (0 for a result without rows).
fn rows_of(result: scylla::response::query_result::QueryResult) -> Result<u64, OpError> {
    if !result.is_rows() {
        return Ok(0);
    }
    Ok(result.into_rows_result().map_err(|e| OpError::server(format!("cassandra: {e}")))?.rows_num() as u64)
}

/// The `[applied]` flag of a lightweight transaction's result, as 0 or 1.
pub(super) fn applied(result: scylla::response::query_result::QueryResult) -> Result<u64, OpError> {
    let rows = result.into_rows_result().map_err(|e| OpError::server(format!("cassandra: LWT result: {e}")))?;
    let row: scylla::value::Row = rows.first_row().map_err(|e| OpError::server(format!("cassandra: LWT result: {e}")))?;
    match row.columns.first() {
        Some(Some(CqlValue::Boolean(b))) => Ok(u64::from(*b)),
        other => Err(OpError::server(format!("cassandra: LWT result without [applied]: {other:?}"))),
    }
}

/// The single value of a one-row, one-column result.
pub(super) fn single_value(result: scylla::response::query_result::QueryResult) -> Result<Option<CqlValue>, OpError> {
    let rows = result.into_rows_result().map_err(|e| OpError::server(format!("cassandra: {e}")))?;
    let row: scylla::value::Row = rows.first_row().map_err(|e| OpError::server(format!("cassandra: {e}")))?;
    Ok(row.columns.into_iter().next().flatten())
}

/// One client's session and its prepared statements (prepared on first use).
pub struct CassandraConnection {
    pub(super) session: Arc<Session>,
    pub(super) keyspace: String,
    pub(super) affected: Affected,
    pub(super) tables: Arc<Vec<TableCql>>,
    pub(super) prepared: HashMap<String, PreparedStatement>,
    /// Whether the session's keyspace is dbsweep's yet (set for custom CQL, which names
    /// tables unqualified; dbsweep's own statements are qualified).
    pub(super) in_keyspace: bool,
}

impl CassandraConnection {
    pub(super) fn table(&self, id: TableId) -> Result<&TableCql, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("cassandra: no table #{id} (was prepare called?)")))
    }

    pub(super) async fn stmt(&mut self, cql: &str) -> Result<PreparedStatement, OpError> {
        if let Some(s) = self.prepared.get(cql) {
            return Ok(s.clone());
        }
        let mut stmt = self.session.prepare(cql).await.map_err(|e| OpError::server(format!("cassandra: prepare {cql}: {e}")))?;
        stmt.set_page_size(PAGE_SIZE);
        self.prepared.insert(cql.to_string(), stmt.clone());
        Ok(stmt)
    }

    /// Everything an op needs, resolved before it runs (so batches can run concurrently).
    pub(super) async fn plan(&mut self, op: &Op) -> Result<Planned, OpError> {
        let plain = |stmt, values| Planned { stmt, values, how: How::Rows, check: None };
        Ok(match op {
            Op::Echo => plain(self.stmt("SELECT key FROM system.local WHERE key = 'local'").await?, vec![]),
            Op::Insert { table, row } => {
                let t = self.table(*table)?;
                let (cql, values) = (t.insert.clone(), row_values(&t.def, row)?);
                Planned { how: How::Fixed(1), ..plain(self.stmt(&cql).await?, values) }
            }
            Op::Get { table, key } => {
                let cql = self.table(*table)?.get.clone();
                plain(self.stmt(&cql).await?, vec![Some(CqlValue::BigInt(*key))])
            }
            Op::MultiGet { table, keys } => {
                let cql = self.table(*table)?.multi_get.clone();
                let list = CqlValue::List(keys.iter().map(|k| CqlValue::BigInt(*k)).collect());
                plain(self.stmt(&cql).await?, vec![Some(list)])
            }
            Op::Delete { table, key } => {
                let t = self.table(*table)?;
                let key = vec![Some(CqlValue::BigInt(*key))];
                match self.affected {
                    Affected::Plain => {
                        let cql = t.delete.clone();
                        Planned { how: How::Fixed(1), ..plain(self.stmt(&cql).await?, key) }
                    }
                    Affected::Lwt => {
                        let cql = t.delete_lwt.clone();
                        Planned { how: How::Applied, ..plain(self.stmt(&cql).await?, key) }
                    }
                    Affected::Read => {
                        let (cql, exists) = (t.delete.clone(), t.exists.clone());
                        let check = Some((self.stmt(&exists).await?, key.clone()));
                        Planned { how: How::Fixed(1), check, ..plain(self.stmt(&cql).await?, key) }
                    }
                }
            }
            Op::Update { table, key, column, value } => {
                let t = self.table(*table)?;
                let Some(col) = t.def.columns.get(*column).filter(|_| *column > 0) else {
                    return Err(OpError::client(format!("cassandra: cannot update column {column} of {}", t.def.name)));
                };
                let values = vec![to_cql(col.ty, value)?, Some(CqlValue::BigInt(*key))];
                match self.affected {
                    Affected::Lwt | Affected::Plain => {
                        let cql = t.update_lwt[*column].clone().expect("a non-key column");
                        Planned { how: How::Applied, ..plain(self.stmt(&cql).await?, values) }
                    }
                    Affected::Read => {
                        let (cql, exists) = (t.update[*column].clone().expect("a non-key column"), t.exists.clone());
                        let check = Some((self.stmt(&exists).await?, vec![Some(CqlValue::BigInt(*key))]));
                        Planned { how: How::Fixed(1), check, ..plain(self.stmt(&cql).await?, values) }
                    }
                }
            }
            Op::Range { table, column, lo, hi, agg } => {
                let t = self.table(*table)?;
                let ty =
                    t.def.columns.get(*column).map(|c| c.ty).ok_or_else(|| OpError::client(format!("cassandra: no column {column}")))?;
                let unindexed =
                    || OpError::new(ErrorClass::Unsupported, format!("cassandra: column {column} of {} has no index", t.def.name));
                let values = vec![Some(bound(ty, *lo)?), Some(bound(ty, *hi)?)];
                let (cql, how) = match agg {
                    RangeAgg::Rows => (t.range_rows[*column].clone().ok_or_else(unindexed)?, How::Pages),
                    RangeAgg::Count => (t.range_count[*column].clone().ok_or_else(unindexed)?, How::Count),
                    RangeAgg::Max { column: of } => {
                        if t.range_rows[*column].is_none() {
                            return Err(unindexed());
                        }
                        let of_ty =
                            t.def.columns.get(*of).map(|c| c.ty).ok_or_else(|| OpError::client(format!("cassandra: no column {of}")))?;
                        (t.range_max(&self.keyspace, *column, *of), How::Max(of_ty))
                    }
                };
                Planned { how, ..plain(self.stmt(&cql).await?, values) }
            }
            Op::FetchAll { table } => {
                let cql = self.table(*table)?.fetch_all.clone();
                Planned { how: How::Pages, ..plain(self.stmt(&cql).await?, vec![]) }
            }
            Op::Scan { .. } | Op::ReadModifyWrite { .. } | Op::Query(_) | Op::Script { .. } | Op::Custom { .. } => {
                return Err(OpError::unsupported(op.kind(), "cassandra"));
            }
        })
    }
}

/// Splits an insert batch into UNLOGGED BATCH chunks of at most `BATCH_CHUNK` statements
/// and about `BATCH_BYTES` of values (a chunk always has at least one statement).
pub(super) fn batch_chunks<T>(plans: &[T], values: impl Fn(&T) -> &[Option<CqlValue>]) -> Vec<&[T]> {
    let mut chunks = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, p) in plans.iter().enumerate() {
        let size = value_bytes(values(p));
        if i > start && (i - start == BATCH_CHUNK || bytes + size > BATCH_BYTES) {
            chunks.push(&plans[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < plans.len() {
        chunks.push(&plans[start..]);
    }
    chunks
}

/// How a planned statement's result becomes an outcome.
#[derive(Debug, Clone, Copy)]
pub(super) enum How {
    /// The rows of a single-page result.
    Rows,
    /// A fixed count (written rows).
    Fixed(u64),
    /// The `[applied]` flag of an LWT.
    Applied,
    /// Every page's rows.
    Pages,
    /// COUNT(*) as `Answer::Scalar(Int)`.
    Count,
    /// MAX(column) as `Answer::Scalar` of the column's type.
    Max(ColumnType),
}

pub(super) struct Planned {
    pub(super) stmt: PreparedStatement,
    pub(super) values: Vec<Option<CqlValue>>,
    pub(super) how: How,
    /// For `affected=read`: a read that must find the key before the write runs.
    pub(super) check: Option<(PreparedStatement, Vec<Option<CqlValue>>)>,
}

impl Planned {
    pub(super) async fn run(&self, session: &Session) -> Result<Outcome, OpError> {
        if let Some((read, key)) = &self.check
            && rows_of(session.execute_unpaged(read, key).await.map_err(op_error)?)? == 0
        {
            return Ok(Outcome::rows(0));
        }
        if let How::Pages = self.how {
            let values: Vec<CqlValue> = self.values.iter().flatten().cloned().collect();
            return Ok(Outcome::rows(count_pages(session, &self.stmt, &values).await.map_err(op_error)?));
        }
        let result = session.execute_unpaged(&self.stmt, &self.values).await.map_err(op_error)?;
        Ok(match self.how {
            How::Rows => Outcome::rows(rows_of(result)?),
            How::Fixed(n) => Outcome::rows(n),
            How::Applied => Outcome::rows(applied(result)?),
            How::Count => {
                let n = match single_value(result)? {
                    Some(CqlValue::BigInt(n)) => n,
                    other => return Err(OpError::server(format!("cassandra: COUNT returned {other:?}"))),
                };
                Outcome::answer(1, Answer::Scalar(Value::Int(n)))
            }
            How::Max(ty) => Outcome::answer(1, Answer::Scalar(from_cql(ty, single_value(result)?)?)),
            How::Pages => unreachable!("handled above"),
        })
    }
}

/// Sends one chunk of an insert batch as one UNLOGGED BATCH; returns its row count.
async fn send_chunk(session: &Session, chunk: &[Planned]) -> Result<u64, OpError> {
    let mut batch = Batch::new(BatchType::Unlogged);
    for p in chunk {
        batch.append_statement(BatchStatement::PreparedStatement(p.stmt.clone()));
    }
    let values: Vec<&Vec<Option<CqlValue>>> = chunk.iter().map(|p| &p.values).collect();
    session.batch(&batch, values).await.map_err(op_error)?;
    Ok(chunk.len() as u64)
}

#[async_trait]
impl Connection for CassandraConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        if let Op::Custom { op, values } = op {
            return self.custom(op, values).await;
        }
        if let Op::MultiGet { table, keys } = op
            && keys.len() > MULTI_GET_CHUNK
        {
            // One coordinator read of 70,000 partitions times out on a single node: IN
            // requests of MULTI_GET_CHUNK keys, a few in flight.
            let mut plans = Vec::with_capacity(keys.len().div_ceil(MULTI_GET_CHUNK));
            for chunk in keys.chunks(MULTI_GET_CHUNK) {
                plans.push(self.plan(&Op::MultiGet { table: *table, keys: chunk.to_vec() }).await?);
            }
            let session = &*self.session;
            let runs: Vec<BoxFuture<'_, Result<Outcome, OpError>>> = plans.iter().map(|p| p.run(session).boxed()).collect();
            let outcomes: Vec<Outcome> = stream::iter(runs).buffer_unordered(BATCH_CHUNKS_IN_FLIGHT).try_collect().await?;
            return Ok(Outcome::rows(outcomes.iter().map(|o| o.rows).sum()));
        }
        let planned = self.plan(op).await?;
        planned.run(&self.session).await
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        if ops.first().is_some_and(|op| op.kind() == crate::base::op::OpKind::Custom) {
            return crate::adapter::one_by_one(self, ops).await;
        }
        let mut plans = Vec::with_capacity(ops.len());
        for op in ops {
            plans.push(self.plan(op).await?);
        }
        let session = &*self.session;
        if ops.iter().all(|op| matches!(op, Op::Insert { .. })) {
            // Writes to different partitions: UNLOGGED BATCHes (no batch log), one request
            // per chunk, a few chunks concurrently.
            let chunks: Vec<BoxFuture<'_, Result<u64, OpError>>> =
                batch_chunks(&plans, |p| &p.values).into_iter().map(|chunk| send_chunk(session, chunk).boxed()).collect();
            let done: Vec<u64> = stream::iter(chunks).buffer_unordered(BATCH_CHUNKS_IN_FLIGHT).try_collect().await?;
            return Ok(Outcome::rows(done.iter().sum()));
        }
        let runs: Vec<BoxFuture<'_, Result<Outcome, OpError>>> = plans.iter().map(|p| p.run(session).boxed()).collect();
        let outcomes: Vec<Outcome> = stream::iter(runs).buffer_unordered(LOAD_CONCURRENCY).try_collect().await?;
        Ok(Outcome::rows(outcomes.iter().map(|o| o.rows).sum()))
    }
}
