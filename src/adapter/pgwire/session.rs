//! One PostgreSQL-protocol client session (tokio-postgres), for PostgreSQL, HyPer and H2
//! alike: the `Executor` of `sql::SqlConnection`, told apart only by its `Flavor`.
//!
//! Statements are prepared once per session (the common ones at connect, concurrently, so
//! the first measured ops do not pay for preparing; the rest on first use) and cached by
//! `Statement`. Several statements are sent as one pipeline: tokio-postgres writes each
//! request when its future is first polled, so polling them all once in order sends the
//! whole batch before the first reply is awaited. Must not time anything.

use super::encode::{Cell, Param, Wire, as_type, parse_cell, pg_type};
use super::{Commit, Flavor, op_error};
use crate::adapter::sql::QUERIES;
use crate::adapter::sql::connection::{Executor, StatementCache, returns_rows};
use crate::adapter::sql::dialect::{KeyList, RowBatch, SqlTable};
use crate::adapter::sql::plan::{Answered, Args, Reply, Step};
use crate::adapter::sql::statement::Statement;
use crate::base::op::{OpError, QueryId, RangeAgg};
use crate::base::table::{Row, Value};
use crate::data::tpch_queries::answer_columns;
use async_trait::async_trait;
use futures_util::future::{BoxFuture, FutureExt};
use std::sync::Arc;
use std::task::Poll;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Statement as Prepared};

/// What one sent statement returned, before it is read as the step expects: the rows it
/// counted (CommandComplete's tag, or DataRows counted), or its rows' cells.
pub(super) enum Raw {
    Count(u64),
    Rows(Vec<Row>),
}

pub struct PgSession {
    client: Client,
    flavor: &'static Flavor,
    statements: StatementCache<Prepared>,
}

impl PgSession {
    /// A session with the echo statement prepared, and the statements every workload uses
    /// where the flavor prepares them on connecting.
    pub async fn new(client: Client, flavor: &'static Flavor, tables: Arc<Vec<SqlTable>>) -> Result<Self, OpError> {
        let mut session = PgSession { client, flavor, statements: StatementCache::new(flavor.dialect, tables) };
        let common = common_statements(flavor, &session.statements);
        let texts = common.iter().map(|s| session.statements.text(*s)).collect::<Result<Vec<_>, _>>()?;
        let types = common.iter().map(|s| param_types(&session.statements, flavor, *s)).collect::<Result<Vec<_>, _>>()?;
        let client = &session.client;
        let prepared = futures_util::future::try_join_all(texts.iter().zip(&types).map(|(text, types)| client.prepare_typed(text, types)))
            .await
            .map_err(op_error)?;
        for (statement, prepared) in common.into_iter().zip(prepared) {
            session.statements.insert(statement, prepared);
        }
        Ok(session)
    }

    /// The prepared statement, prepared on first use.
    async fn prepared(&mut self, statement: Statement) -> Result<Prepared, OpError> {
        if let Some(prepared) = self.statements.get(&statement) {
            return Ok(prepared);
        }
        let text = self.statements.text(statement)?;
        let prepared = self.client.prepare_typed(&text, &param_types(&self.statements, self.flavor, statement)?).await.map_err(op_error)?;
        self.statements.insert(statement, prepared.clone());
        Ok(prepared)
    }

    /// Prepares and binds every step (before any is sent).
    async fn ready(&mut self, steps: &[Step<'_>]) -> Result<Vec<(Prepared, Vec<Param>)>, OpError> {
        let mut ready = Vec::with_capacity(steps.len());
        for step in steps {
            ready.push((self.prepared(step.statement).await?, bind(&self.statements, self.flavor, step)?));
        }
        Ok(ready)
    }

    /// An analytic query over the simple (text) protocol.
    async fn text_answer(&self, query: QueryId) -> Result<Answered, OpError> {
        let text = self.statements.text(Statement::Query(query))?;
        let messages = self.client.simple_query(&text).await.map_err(op_error)?;
        let types = answer_columns(query);
        let mut out = Vec::new();
        for message in &messages {
            if let tokio_postgres::SimpleQueryMessage::Row(row) = message {
                if row.len() != types.len() {
                    return Err(wrong_width(query, row.len(), types.len()));
                }
                out.push(types.iter().enumerate().map(|(i, ty)| parse_cell(*ty, row.get(i))).collect::<Result<Row, _>>()?);
            }
        }
        Ok(Answered::Table(out))
    }
}

/// The statements a session prepares when it opens: echo, and where the flavor prepares on
/// connecting, those every workload on the prepared tables uses.
pub(super) fn common_statements<S: Clone>(flavor: &Flavor, statements: &StatementCache<S>) -> Vec<Statement> {
    let mut common = vec![Statement::Echo];
    let tables = if flavor.prepare_on_connect { statements.tables().clone() } else { Arc::default() };
    for (table, t) in tables.iter().enumerate() {
        common.extend([Statement::Insert { table, rows: 1 }, Statement::Get { table }, Statement::Delete { table }]);
        if flavor.dialect.row_batch() == RowBatch::Arrays {
            common.push(Statement::Insert { table, rows: 0 });
        }
        if flavor.dialect.key_list(2) == KeyList::Array {
            common.extend([Statement::GetMany { table, keys: 0 }, Statement::DeleteMany { table, keys: 0 }]);
        }
        if flavor.dialect.limit_parameter() {
            common.push(Statement::Scan { table, limit: None });
        }
        for &column in t.def.indexed.iter().filter(|&&c| c != 0) {
            common.extend([RangeAgg::Rows, RangeAgg::Count].map(|agg| Statement::Range { table, column, agg }));
        }
    }
    if !flavor.text_answers && flavor.prepare_on_connect {
        // The analytic queries whose tables this run prepared.
        common.extend(QUERIES.into_iter().filter(|q| Statement::Query(*q).text(flavor.dialect, &tables).is_ok()).map(Statement::Query));
    }
    common
}

/// Parameter types for flavors that state them; none (the server infers them from
/// the casts) otherwise.
pub(super) fn param_types<S: Clone>(statements: &StatementCache<S>, flavor: &Flavor, statement: Statement) -> Result<Vec<Type>, OpError> {
    if !flavor.typed_parameters {
        return Ok(Vec::new());
    }
    let layout = flavor.layout;
    let column_types = |table, array| -> Result<Vec<Type>, OpError> {
        Ok(statements.table(table)?.def.columns.iter().map(|c| pg_type(c.ty, layout, array)).collect())
    };
    Ok(match statement {
        Statement::Echo | Statement::FetchAll { .. } | Statement::Query(_) => vec![],
        Statement::Get { .. } | Statement::Delete { .. } | Statement::Scan { limit: Some(_), .. } => vec![Type::INT8],
        Statement::Scan { limit: None, .. } => vec![Type::INT8, Type::INT8],
        Statement::GetMany { keys: 0, .. } | Statement::DeleteMany { keys: 0, .. } => vec![Type::INT8_ARRAY],
        Statement::GetMany { keys, .. } | Statement::DeleteMany { keys, .. } => vec![Type::INT8; keys],
        Statement::Insert { table, rows: 0 } => column_types(table, true)?,
        Statement::Insert { table, rows } => {
            let row = column_types(table, false)?;
            row.iter().cycle().take(rows * row.len()).cloned().collect()
        }
        Statement::Update { table, column } => vec![column_types(table, false)?[column].clone(), Type::INT8],
        Statement::Range { table, column, .. } => vec![column_types(table, false)?[column].clone(); 2],
    })
}

/// The parameters of a step, in the flavor's wire encoding.
pub(super) fn bind<S: Clone>(statements: &StatementCache<S>, flavor: &Flavor, step: &Step<'_>) -> Result<Vec<Param>, OpError> {
    let wire = |table| statements.table(table).map(|t| Wire { def: &t.def, layout: flavor.layout });
    let table = step.statement.table().unwrap_or_default();
    Ok(match (&step.args, step.statement) {
        (Args::None, _) => vec![],
        (Args::Key(key), _) => vec![Box::new(*key)],
        (Args::Keys(keys), Statement::GetMany { keys: 0, .. } | Statement::DeleteMany { keys: 0, .. }) => vec![Box::new(keys.clone())],
        (Args::Keys(keys), _) => keys.iter().map(|k| Box::new(*k) as Param).collect(),
        (Args::Rows(rows), Statement::Insert { rows: 0, .. }) => wire(table)?.insert_many_params(rows)?,
        (Args::Rows(rows), _) => {
            let wire = wire(table)?;
            let mut params = Vec::with_capacity(rows.len() * wire.def.columns.len());
            for row in rows {
                params.extend(wire.insert_params(row)?);
            }
            params
        }
        (Args::Update { column, value, key }, _) => vec![wire(table)?.update_value(*column, value)?, Box::new(*key)],
        (Args::Scan { start, count }, _) => std::iter::once(*start).chain(*count).map(|v| Box::new(v) as Param).collect(),
        (Args::Range { column, lo, hi }, _) => {
            let wire = wire(table)?;
            vec![wire.range_bound(*column, *lo)?, wire.range_bound(*column, *hi)?]
        }
    })
}

/// Reads a reply as the step expects it.
pub(super) fn answer(step: &Step<'_>, raw: Raw) -> Result<Answered, OpError> {
    let first = |rows: Vec<Row>| -> Result<Value, OpError> {
        let row = rows.into_iter().next().ok_or_else(|| OpError::server("an aggregate returned no row"))?;
        row.into_iter().next().ok_or_else(|| OpError::server("an aggregate returned no column"))
    };
    Ok(match (step.reply, raw) {
        (_, Raw::Count(n)) => Answered::Rows(n),
        (Reply::Count, Raw::Rows(rows)) => Answered::Scalar(as_type(crate::base::table::ColumnType::Int, first(rows)?)?),
        (Reply::Max(ty), Raw::Rows(rows)) => Answered::Scalar(as_type(ty, first(rows)?)?),
        (Reply::Answer(query), Raw::Rows(rows)) => Answered::Table(decode_answer(query, rows)?),
        (_, Raw::Rows(rows)) => Answered::Rows(rows.len() as u64),
    })
}

/// Sends one prepared statement; its future sends the request when first polled.
fn send<'c>(
    client: &'c Client,
    flavor: &'static Flavor,
    reply: Reply,
    statement: &'c Prepared,
    params: &'c [Param],
) -> BoxFuture<'c, Result<Raw, tokio_postgres::Error>> {
    request(client, flavor, reply, statement, params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync))).boxed()
}

/// Sends one prepared statement and reads its reply. Rows that only count (`Reply::Rows`,
/// `Reply::Streamed`) are read from the CommandComplete tag where the flavor's server
/// names them there (`Flavor::rows_in_tag`), else counted as they stream in, without
/// holding them; the messages sent are the same either way.
async fn request<P, I>(
    client: &Client,
    flavor: &Flavor,
    reply: Reply,
    statement: &Prepared,
    params: I,
) -> Result<Raw, tokio_postgres::Error>
where
    P: tokio_postgres::types::BorrowToSql,
    I: IntoIterator<Item = P>,
    I::IntoIter: ExactSizeIterator,
{
    use futures_util::TryStreamExt;
    match reply {
        Reply::Rows | Reply::Streamed if flavor.rows_in_tag => client.execute_raw(statement, params).await.map(Raw::Count),
        Reply::Rows | Reply::Streamed => {
            let stream = client.query_raw(statement, params).await?;
            let mut stream = std::pin::pin!(stream);
            let mut rows = 0;
            while stream.try_next().await?.is_some() {
                rows += 1;
            }
            Ok(Raw::Count(rows))
        }
        reply if returns_rows(reply) => {
            let rows: Vec<tokio_postgres::Row> = client.query_raw(statement, params).await?.try_collect().await?;
            Ok(Raw::Rows(rows.iter().map(cells).collect::<Result<_, _>>()?))
        }
        _ => client.execute_raw(statement, params).await.map(Raw::Count),
    }
}

/// Polls every future once, in order (which makes tokio-postgres send every request),
/// then awaits them in order; returns the results in order.
async fn pipeline<T>(mut futures: Vec<BoxFuture<'_, T>>) -> Vec<T> {
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

/// A result row's cells as values.
fn cells(row: &tokio_postgres::Row) -> Result<Row, tokio_postgres::Error> {
    (0..row.len()).map(|i| row.try_get::<_, Cell>(i).map(|Cell(v)| v)).collect()
}

/// Reads a query's result rows as the types of `answer_columns(query)`.
fn decode_answer(query: QueryId, rows: Vec<Row>) -> Result<Vec<Row>, OpError> {
    let types = answer_columns(query);
    rows.into_iter()
        .map(|row| {
            if row.len() != types.len() {
                return Err(wrong_width(query, row.len(), types.len()));
            }
            (types.iter().zip(row).enumerate())
                .map(|(i, (ty, v))| as_type(*ty, v).map_err(|e| OpError::client(format!("{query:?} column {i}: {}", e.message))))
                .collect()
        })
        .collect()
}

fn wrong_width(query: QueryId, got: usize, expected: usize) -> OpError {
    OpError::new(crate::base::op::ErrorClass::WrongResult, format!("{query:?} returned {got} columns, expected {expected}"))
}

#[async_trait]
impl Executor for PgSession {
    async fn run(&mut self, step: &Step<'_>) -> Result<Answered, OpError> {
        if let (Reply::Answer(query), true) = (step.reply, self.flavor.text_answers) {
            return self.text_answer(query).await;
        }
        let statement = self.prepared(step.statement).await?;
        let raw = match step.args {
            // A one-key statement (get, delete) binds its key as it is: nothing to allocate.
            Args::Key(key) => request(&self.client, self.flavor, step.reply, &statement, [key]).await,
            _ => {
                request(
                    &self.client,
                    self.flavor,
                    step.reply,
                    &statement,
                    bind(&self.statements, self.flavor, step)?.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)),
                )
                .await
            }
        };
        answer(step, raw.map_err(op_error)?)
    }

    /// Every statement sent before the first reply is awaited; every reply is awaited
    /// even after an error (the first error is reported).
    async fn run_all(&mut self, steps: &[Step<'_>]) -> Result<Vec<Answered>, OpError> {
        if steps.iter().any(|s| matches!(s.reply, Reply::Answer(_))) {
            let mut answers = Vec::with_capacity(steps.len());
            for step in steps {
                answers.push(self.run(step).await?);
            }
            return Ok(answers);
        }
        let ready = self.ready(steps).await?;
        let futures = steps
            .iter()
            .zip(&ready)
            .map(|(step, (statement, params))| send(&self.client, self.flavor, step.reply, statement, params))
            .collect();
        let replies = pipeline(futures).await;
        steps.iter().zip(replies).map(|(step, raw)| answer(step, raw.map_err(op_error)?)).collect()
    }

    async fn control(&mut self, sql: &str) -> Result<(), OpError> {
        self.client.batch_execute(sql).await.map_err(op_error)
    }

    /// A statement of a user's script as a simple query: its rows' cells as text.
    async fn run_text(&mut self, sql: &str, reads: bool) -> Result<Answered, OpError> {
        use tokio_postgres::SimpleQueryMessage;
        let (mut rows, mut changed) = (Vec::new(), 0);
        for message in self.client.simple_query(sql).await.map_err(op_error)? {
            match message {
                SimpleQueryMessage::Row(row) => rows.push(
                    (0..row.len())
                        .map(|i| row.get(i).map_or(crate::base::table::Value::Null, |t| crate::base::table::Value::Text(t.into())))
                        .collect(),
                ),
                SimpleQueryMessage::CommandComplete(n) => changed += n,
                _ => {}
            }
        }
        Ok(if reads { Answered::Table(rows) } else { Answered::Rows(changed) })
    }

    async fn transaction(&mut self, steps: &[Step<'_>], writes: bool) -> Result<Vec<Answered>, OpError> {
        if self.flavor.commit == Commit::WhenAllSucceeded || steps.iter().any(|s| matches!(s.reply, Reply::Answer(_))) {
            self.begin(writes).await?;
            let result = self.run_all(steps).await.and_then(|answers| Step::check_all(steps, &answers).map(|()| answers));
            return match result {
                Ok(answers) => self.commit().await.map(|()| answers),
                Err(e) => {
                    self.rollback().await;
                    Err(e)
                }
            };
        }
        // BEGIN; ...; COMMIT as one pipeline: after a failed statement COMMIT only rolls
        // back, and the first error is reported.
        let ready = self.ready(steps).await?;
        let client = &self.client;
        let control = |sql: &'static str| client.batch_execute(sql).map(|r| r.map(|()| Raw::Count(0))).boxed();
        let mut futures = Vec::with_capacity(steps.len() + 2);
        futures.push(control("BEGIN"));
        futures
            .extend(steps.iter().zip(&ready).map(|(step, (statement, params))| send(client, self.flavor, step.reply, statement, params)));
        futures.push(control("COMMIT"));
        let mut replies = pipeline(futures).await;
        let commit = replies.pop().expect("COMMIT was sent");
        let replies: Vec<Raw> = replies.into_iter().skip(1).collect::<Result<_, _>>().map_err(op_error)?;
        commit.map_err(op_error)?;
        steps.iter().zip(replies).map(|(step, raw)| answer(step, raw)).collect()
    }
}
