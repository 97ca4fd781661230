//! One client session of any SQL engine: `SqlConnection` runs ops and batches through the
//! planner on an `Executor`, the driver's part (prepare, bind, send, read replies,
//! transactions).
//!
//! Batches: inserts into one table are one statement (arrays, or multi-row `VALUES`
//! chunks in a transaction) where the dialect has them; gets, multi-gets and deletes of one
//! table are key-list statements; every other batch is one transaction of its ops'
//! statements, sent back to back where the protocol pipelines. A read-modify-write reads,
//! then writes the row if it was found (a batch of them: all reads, then the writes).
//!
//! Conflicts: a request the system aborted for a concurrent one (`ErrorClass::Conflict`,
//! optimistic concurrency) runs again from the start, as the system's users do, up to
//! `CONFLICT_RETRIES` times; its outcome carries the retries. Only whole requests are
//! retried: a single statement, or statements in one transaction (which the system rolled
//! back); a conflict after other statements of the request committed is a server error.
//! Must not time anything.

use super::dialect::{Dialect, RowBatch, SqlTable};
use super::plan::{Answered, Planner, Reply, Step, total_rows};
use crate::adapter::Connection;
use crate::base::op::{ErrorClass, Op, OpError, OpKind, Outcome};
use crate::base::table::Row;
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Arc;

/// The driver's part of an SQL session.
#[async_trait]
pub trait Executor: Send {
    /// Runs one statement.
    async fn run(&mut self, step: &Step<'_>) -> Result<Answered, OpError>;

    /// Runs statements in order; the first error ends it. Protocols that pipeline send
    /// them all before awaiting the first reply.
    async fn run_all(&mut self, steps: &[Step<'_>]) -> Result<Vec<Answered>, OpError> {
        let mut answers = Vec::with_capacity(steps.len());
        for step in steps {
            answers.push(self.run(step).await?);
        }
        Ok(answers)
    }

    /// Runs one statement of a user's script as text, without parameters: its rows
    /// (`reads`), each cell as its own type reads, or the rows it changed.
    async fn run_text(&mut self, sql: &str, reads: bool) -> Result<Answered, OpError> {
        let _ = (sql, reads);
        Err(OpError::unsupported(OpKind::Script, "this SQL session"))
    }

    /// Runs a statement without parameters or results (transaction control).
    async fn control(&mut self, sql: &str) -> Result<(), OpError>;

    /// The statement that opens a transaction that will (or will not) write.
    fn begin_statement(&self, _writes: bool) -> &'static str {
        "BEGIN"
    }

    /// Opens a transaction (`writes`: it will write).
    async fn begin(&mut self, writes: bool) -> Result<(), OpError> {
        let begin = self.begin_statement(writes);
        self.control(begin).await
    }

    /// Commits; if that fails, rolls back so the session is usable again.
    async fn commit(&mut self) -> Result<(), OpError> {
        if let Err(e) = self.control("COMMIT").await {
            self.rollback().await;
            return Err(e);
        }
        Ok(())
    }

    async fn rollback(&mut self) {
        let _ = self.control("ROLLBACK").await;
    }

    /// Runs statements in one transaction, committed only if all succeeded.
    async fn transaction(&mut self, steps: &[Step<'_>], writes: bool) -> Result<Vec<Answered>, OpError> {
        self.begin(writes).await?;
        let result = self.run_all(steps).await.and_then(|answers| Step::check_all(steps, &answers).map(|()| answers));
        finish(self, result).await
    }

    /// True when an op of several statements (a read-modify-write, a key list split in
    /// parts) runs in its own transaction outside batches (embedded engines).
    fn atomic_ops(&self) -> bool {
        false
    }
}

/// Prepared statements by `Statement`: the one statement cache of the SQL adapters.
pub struct StatementCache<S> {
    dialect: &'static dyn Dialect,
    tables: Arc<Vec<SqlTable>>,
    prepared: HashMap<super::statement::Statement, S>,
}

impl<S: Clone> StatementCache<S> {
    pub fn new(dialect: &'static dyn Dialect, tables: Arc<Vec<SqlTable>>) -> Self {
        StatementCache { dialect, tables, prepared: HashMap::new() }
    }

    pub fn get(&self, statement: &super::statement::Statement) -> Option<S> {
        self.prepared.get(statement).cloned()
    }

    pub fn insert(&mut self, statement: super::statement::Statement, prepared: S) {
        self.prepared.insert(statement, prepared);
    }

    /// How many statements are kept.
    pub fn len(&self) -> usize {
        self.prepared.len()
    }

    /// Whether no statement is kept.
    pub fn is_empty(&self) -> bool {
        self.prepared.is_empty()
    }

    /// Every statement kept, leaving none.
    pub fn take_all(&mut self) -> Vec<S> {
        self.prepared.drain().map(|(_, prepared)| prepared).collect()
    }

    /// The text to prepare for a statement.
    pub fn text(&self, statement: super::statement::Statement) -> Result<String, OpError> {
        statement.text(self.dialect, &self.tables)
    }

    pub fn tables(&self) -> &Arc<Vec<SqlTable>> {
        &self.tables
    }

    pub fn table(&self, id: usize) -> Result<&SqlTable, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("no table #{id} was prepared")))
    }

    pub fn dialect(&self) -> &'static dyn Dialect {
        self.dialect
    }
}

impl StatementCache<Arc<str>> {
    /// The text of a statement, written once per session (for drivers that prepare and
    /// cache statements by their text).
    pub fn cached_text(&mut self, statement: super::statement::Statement) -> Result<Arc<str>, OpError> {
        if let Some(text) = self.get(&statement) {
            return Ok(text);
        }
        let text: Arc<str> = self.text(statement)?.into();
        self.insert(statement, text.clone());
        Ok(text)
    }
}

/// One SQL client session: ops in, outcomes out.
pub struct SqlConnection<E> {
    pub(super) dialect: &'static dyn Dialect,
    pub(super) tables: Arc<Vec<SqlTable>>,
    pub(super) executor: E,
}

impl<E: Executor> SqlConnection<E> {
    pub fn new(dialect: &'static dyn Dialect, tables: Arc<Vec<SqlTable>>, executor: E) -> Self {
        SqlConnection { dialect, tables, executor }
    }

    fn planner(&self) -> Planner<'_> {
        Planner { dialect: self.dialect, tables: &self.tables }
    }

    /// One op's steps, in a transaction when they are several and the executor wants that.
    async fn run_op(&mut self, op: &Op) -> Result<Outcome, OpError> {
        let steps = self.planner().op(op)?;
        match steps.as_slice() {
            [step] => step.outcome(self.executor.run(step).await?),
            steps => Ok(Outcome::rows(total_rows(steps, self.run_parts(steps, writes(op.kind())).await?)?)),
        }
    }

    /// The statements of one request: alone, in one transaction where the executor makes
    /// ops atomic, else back to back (a conflict there is not retryable: the statements
    /// before it stand).
    async fn run_parts(&mut self, steps: &[Step<'_>], writes: bool) -> Result<Vec<Answered>, OpError> {
        if steps.len() > 1 && self.executor.atomic_ops() {
            return self.executor.transaction(steps, writes).await;
        }
        let result = self.executor.run_all(steps).await;
        if steps.len() > 1 { result.map_err(not_retryable) } else { result }
    }

    /// Runs one op; see the module's conflicts rule.
    async fn execute_once(&mut self, op: &Op) -> Result<Outcome, OpError> {
        match op {
            Op::ReadModifyWrite { .. } => self.read_modify_write(op).await,
            Op::Script { script, values } => self.run_script(script, values.as_deref().map_err(OpError::client)?).await,
            Op::Custom { op, values } => match &op.sql {
                Some(script) => self.run_script(script, values).await,
                None => Err(OpError::unsupported(OpKind::Custom, "SQL (no sql statement for this experiment)")),
            },
            op => self.run_op(op).await,
        }
    }

    /// Reads the row, then writes it if found: two requests, as a client-side RMW is.
    async fn read_modify_write(&mut self, op: &Op) -> Result<Outcome, OpError> {
        let Op::ReadModifyWrite { table, key, .. } = op else { unreachable!("only read-modify-writes") };
        let read = Op::Get { table: *table, key: *key };
        let planner = Planner { dialect: self.dialect, tables: &self.tables };
        let (read, write) = (planner.op(&read)?, planner.op(op)?);
        if !self.executor.atomic_ops() {
            return Ok(Outcome::rows(self.read_then_write(&read, &write).await.map_err(not_retryable)?));
        }
        self.executor.begin(true).await?;
        let result = self.read_then_write(&read, &write).await;
        finish(&mut self.executor, result).await.map(Outcome::rows)
    }

    async fn read_then_write(&mut self, read: &[Step<'_>], write: &[Step<'_>]) -> Result<u64, OpError> {
        if total_rows(read, self.executor.run_all(read).await?)? == 0 {
            return Ok(0);
        }
        total_rows(write, self.executor.run_all(write).await?)
    }

    /// A batch of read-modify-writes in one transaction: every read, then the writes of
    /// the rows found.
    async fn read_modify_writes(&mut self, ops: &[Op]) -> Result<u64, OpError> {
        let mut reads = Vec::with_capacity(ops.len());
        for op in ops {
            match op {
                Op::ReadModifyWrite { table, key, .. } => reads.push(Op::Get { table: *table, key: *key }),
                other => return Err(OpError::client(format!("a batch mixes read_modify_write with {}", other.kind()))),
            }
        }
        let planner = Planner { dialect: self.dialect, tables: &self.tables };
        let read_steps = planner.ops(&reads)?;
        self.executor.begin(true).await?;
        let result = self.writes_of_found(ops, &read_steps).await;
        finish(&mut self.executor, result).await
    }

    /// Runs the reads (one step per op), then the writes of the ops whose row was found.
    async fn writes_of_found(&mut self, ops: &[Op], reads: &[Step<'_>]) -> Result<u64, OpError> {
        let found = self.executor.run_all(reads).await?;
        let planner = Planner { dialect: self.dialect, tables: &self.tables };
        let mut writes = Vec::new();
        for (op, answered) in ops.iter().zip(found) {
            if matches!(answered, Answered::Rows(n) if n > 0) {
                writes.extend(planner.op(op)?);
            }
        }
        total_rows(&writes, self.executor.run_all(&writes).await?)
    }

    /// Inserts into one table as the dialect batches rows.
    async fn insert_rows(&mut self, table: usize, rows: Vec<&Row>) -> Result<u64, OpError> {
        let planner = Planner { dialect: self.dialect, tables: &self.tables };
        let steps = match self.dialect.row_batch() {
            RowBatch::Arrays => vec![planner.insert_arrays(table, rows)?],
            RowBatch::Values { max_params } => {
                let t = planner.tables.get(table).ok_or_else(|| OpError::client(format!("no table #{table} was prepared")))?;
                let per_statement = t.rows_per_statement(self.dialect, max_params);
                let chunks: Vec<Vec<&Row>> = rows.chunks(per_statement).map(<[&Row]>::to_vec).collect();
                chunks
                    .into_iter()
                    .map(|chunk| planner.insert(table, chunk))
                    .collect::<Result<Vec<Vec<_>>, _>>()?
                    .into_iter()
                    .flatten()
                    .collect()
            }
            RowBatch::Each => rows
                .into_iter()
                .map(|row| planner.insert(table, vec![row]))
                .collect::<Result<Vec<Vec<_>>, _>>()?
                .into_iter()
                .flatten()
                .collect(),
        };
        // Alone, one statement is atomic; a guarded insert must be undone if it skipped a row.
        if steps.len() == 1 && !self.dialect.guard_inserts() {
            return Ok(steps[0].outcome(self.executor.run(&steps[0]).await?)?.rows);
        }
        total_rows(&steps, self.executor.transaction(&steps, true).await?)
    }
}

/// Times a request the system aborted for a concurrent one runs again before the conflict
/// counts as its error.
pub const CONFLICT_RETRIES: u32 = 100;

/// Runs a request until it is not aborted by a conflict (at most `CONFLICT_RETRIES` times
/// again); the outcome carries the retries, a conflict that outlasts them is the error.
macro_rules! retrying_conflicts {
    ($attempt:expr) => {{
        let mut retries = 0u32;
        loop {
            match $attempt {
                Err(e) if e.class == ErrorClass::Conflict && retries < CONFLICT_RETRIES => retries += 1,
                Err(e) if e.class == ErrorClass::Conflict => {
                    break Err(OpError::conflict(format!("{} (still after {retries} retries)", e.message)));
                }
                result => break result.map(|outcome| outcome.after_retries(retries)),
            }
        }
    }};
}

/// A conflict after statements of the same request already stood: not a whole request the
/// system rolled back, so it is not retried.
fn not_retryable(e: OpError) -> OpError {
    if e.class == ErrorClass::Conflict { OpError::server(e.message) } else { e }
}

/// Commits after a successful transaction body, rolls back after a failed one.
async fn finish<E: Executor + ?Sized, T: Send>(executor: &mut E, result: Result<T, OpError>) -> Result<T, OpError> {
    match result {
        Ok(value) => {
            executor.commit().await?;
            Ok(value)
        }
        Err(e) => {
            executor.rollback().await;
            Err(e)
        }
    }
}

/// True for op kinds that write.
pub fn writes(kind: OpKind) -> bool {
    matches!(kind, OpKind::Insert | OpKind::Delete | OpKind::Update | OpKind::ReadModifyWrite)
}

/// The table every op of a batch works on, for inserts, gets, multi-gets and deletes.
fn single_table(ops: &[Op]) -> Option<usize> {
    let table_of = |op: &Op| match op {
        Op::Insert { table, .. } | Op::Get { table, .. } | Op::MultiGet { table, .. } | Op::Delete { table, .. } => Some(*table),
        _ => None,
    };
    let first = table_of(ops.first()?)?;
    ops.iter().all(|op| table_of(op) == Some(first)).then_some(first)
}

impl<E: Executor> SqlConnection<E> {
    /// Runs one batch; see the module's batches and conflicts rules.
    async fn execute_batch_once(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let Some(first) = ops.first() else { return Ok(Outcome::rows(0)) };
        if first.kind() == OpKind::ReadModifyWrite {
            return Ok(Outcome::rows(self.read_modify_writes(ops).await?));
        }
        if let Some(table) = single_table(ops).filter(|_| self.dialect.batch_keys()) {
            match first.kind() {
                OpKind::Insert => {
                    let rows: Vec<&Row> =
                        ops.iter().filter_map(|op| if let Op::Insert { row, .. } = op { Some(row) } else { None }).collect();
                    if rows.len() == ops.len() {
                        return Ok(Outcome::rows(self.insert_rows(table, rows).await?));
                    }
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
                    let steps = self.planner().keys(table, &keys, kind == OpKind::Delete)?;
                    return Ok(Outcome::rows(total_rows(&steps, self.run_parts(&steps, kind == OpKind::Delete).await?)?));
                }
                _ => {}
            }
        }
        let planner = self.planner();
        let steps = planner.ops(ops)?;
        let answers = self.executor.transaction(&steps, writes(first.kind())).await?;
        Ok(Outcome::rows(total_rows(&steps, answers)?))
    }
}

#[async_trait]
impl<E: Executor> Connection for SqlConnection<E> {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        retrying_conflicts!(self.execute_once(op).await)
    }

    /// A batch is one request: aborted by a conflict, it runs again as a whole. Analytic
    /// queries are long, scripts transactions of their own: a batch of them runs one after
    /// another, each retried on its own.
    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        if ops.first().is_some_and(|op| matches!(op.kind(), OpKind::Script | OpKind::Custom)) {
            return crate::adapter::one_by_one(self, ops).await;
        }
        if ops.first().is_some_and(|op| op.kind() == OpKind::Query) {
            let (mut rows, mut retries) = (0, 0);
            for op in ops {
                let outcome = self.execute(op).await?;
                (rows, retries) = (rows + outcome.rows, retries + outcome.retries);
            }
            return Ok(Outcome::rows(rows).after_retries(retries));
        }
        retrying_conflicts!(self.execute_batch_once(ops).await)
    }
}

/// Whether a reply of this kind returns rows (as opposed to a count of changed rows).
pub fn returns_rows(reply: Reply) -> bool {
    !matches!(reply, Reply::Affected | Reply::Inserted(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::sql::dialects::MYSQL;
    use crate::adapter::sql::statement::Statement;

    #[test]
    fn a_statement_cache_hands_back_what_it_keeps_and_empties_on_take_all() {
        let mut cache: StatementCache<u32> = StatementCache::new(&MYSQL, Arc::default());
        cache.insert(Statement::Echo, 7);
        cache.insert(Statement::Get { table: 0 }, 9);
        assert_eq!((cache.get(&Statement::Echo), cache.get(&Statement::Get { table: 0 }), cache.len()), (Some(7), Some(9), 2));
        let mut taken = cache.take_all();
        taken.sort_unstable();
        assert_eq!(taken, [7, 9]);
        assert_eq!((cache.len(), cache.get(&Statement::Echo)), (0, None));
    }
}
