//! One pass of a user's SQL script on any SQL session: each statement's text written for
//! this engine (dbsweep's qualified table names, the pass's values as literals, as pgbench
//! sends them with `-M simple`), run in order through the `Executor`, and what the reads
//! returned turned into one comparable answer.
//!
//! Owns the answer of a pass: the rows of every read statement that ran, as one digest
//! (`base::digest`: row order within a statement, numeric types and trailing blanks do not
//! count). Only read-only scripts carry it: a script that writes reads what earlier passes
//! wrote, which differs with the clients' interleaving. `BEGIN`/`END` are the executor's
//! own begin and commit (so MySQL, which has no `END`, runs pgbench's scripts too); a
//! failed statement inside them rolls back. Must not time anything or decide which
//! systems run a script (capabilities do).

use super::connection::{Executor, SqlConnection};
use super::plan::Answered;
use crate::base::digest::{READS_SEED, add_read};
use crate::base::op::{Answer, ErrorClass, OpError, Outcome};
use crate::base::script::{Command, Script, ScriptValue, SqlKind, SqlPart, SqlStatement};
use crate::base::table::Value;

impl<E: Executor> SqlConnection<E> {
    /// Runs one pass of `script` with `values` (by slot).
    pub(super) async fn run_script(&mut self, script: &Script, values: &[ScriptValue]) -> Result<Outcome, OpError> {
        let dialect = self.dialect.name();
        let (mut rows, mut digest, mut in_transaction, mut ran, mut reads) = (0u64, READS_SEED, false, 0, 0u64);
        for command in &script.commands {
            let Command::Sql(statement) = command else { continue };
            if !statement.runs_on(dialect) {
                continue;
            }
            let result = match statement.kind {
                SqlKind::Begin => self.executor.begin(!script.read_only()).await.map(|()| in_transaction = true),
                SqlKind::Commit => {
                    in_transaction = false;
                    self.executor.commit().await
                }
                SqlKind::Rollback => {
                    in_transaction = false;
                    self.executor.rollback().await;
                    Ok(())
                }
                kind => match self.executor.run_text(&self.text(statement, values)?, kind == SqlKind::Read).await {
                    Ok(Answered::Table(found)) => {
                        rows += found.len() as u64;
                        // By the read's place among those that ran here: a per-dialect
                        // override is another statement of the script, but the same read.
                        digest = add_read(digest, reads, &found);
                        reads += 1;
                        Ok(())
                    }
                    Ok(Answered::Rows(n)) => {
                        rows += n;
                        Ok(())
                    }
                    Ok(other) => Err(OpError::client(format!("a script statement answered {other:?}"))),
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = result {
                // A conflict is retried only where nothing of the pass stands: inside its
                // transaction (rolled back here), or at its first statement.
                let class = match e.class {
                    ErrorClass::Conflict if !in_transaction && ran > 0 => ErrorClass::Server,
                    class => class,
                };
                if in_transaction {
                    self.executor.rollback().await;
                }
                return Err(OpError::new(class, format!("{} line {}: {}", script.name, statement.line, e.message)));
            }
            ran += 1;
        }
        if in_transaction {
            self.executor.commit().await?;
        }
        Ok(match script.read_only() {
            true => Outcome::answer(rows, Answer::Scalar(Value::Int(digest as i64))),
            false => Outcome::rows(rows),
        })
    }

    /// The statement's text for this engine with the pass's values.
    fn text(&self, statement: &SqlStatement, values: &[ScriptValue]) -> Result<String, OpError> {
        let mut text = String::new();
        for part in &statement.parts {
            match part {
                SqlPart::Text(t) => text.push_str(t),
                SqlPart::Variable(slot) => text.push_str(&values[*slot].to_string()),
                SqlPart::Table(name) => match self.tables.iter().find(|t| t.def.name == *name) {
                    Some(table) => text.push_str(&table.name),
                    None => return Err(OpError::client(format!("the script names {name}, which this run did not prepare"))),
                },
            }
        }
        Ok(text)
    }
}
