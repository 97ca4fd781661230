//! One pass of a user's SQL script on any SQL session: each statement's text written for
//! this engine (dbsweep's qualified table names, the pass's values as literals, as pgbench
//! sends them with `-M simple`), run in order through the `Executor`, and what the reads
//! returned turned into one comparable answer.
//!
//! Owns the answer of a pass: the rows of every read statement, as a digest that ignores
//! row order within a statement, numeric types (an integer, a float and a decimal of the
//! same number agree) and trailing blanks, and rounds other numbers to 12 significant
//! digits. Only read-only scripts carry it: a script that writes reads what earlier passes
//! wrote, which differs with the clients' interleaving. `BEGIN`/`END` are the executor's
//! own begin and commit (so MySQL, which has no `END`, runs pgbench's scripts too); a
//! failed statement inside them rolls back. Must not time anything or decide which
//! systems run a script (capabilities do).

use super::connection::{Executor, SqlConnection};
use super::plan::Answered;
use crate::base::op::{Answer, ErrorClass, OpError, Outcome};
use crate::base::rng::{hash_str, mix};
use crate::base::script::{Command, Script, ScriptValue, SqlKind, SqlPart, SqlStatement};
use crate::base::table::Value;

impl<E: Executor> SqlConnection<E> {
    /// Runs one pass of `script` with `values` (by slot).
    pub(super) async fn run_script(&mut self, script: &Script, values: &[ScriptValue]) -> Result<Outcome, OpError> {
        let dialect = self.dialect.name();
        let (mut rows, mut digest, mut in_transaction, mut ran) = (0u64, ROWS_SEED, false, 0);
        for (index, command) in script.commands.iter().enumerate() {
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
                        digest = mix(digest, mix(index as u64, rows_digest(&found)));
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

const ROWS_SEED: u64 = 0x005C_21B7;

/// The digest of one statement's rows, whatever their order: a sum of the rows' digests,
/// mixed with their count.
pub fn rows_digest(rows: &[Vec<Value>]) -> u64 {
    let sum = rows.iter().fold(0u64, |sum, row| sum.wrapping_add(row.iter().fold(ROWS_SEED, |h, v| mix(h, cell_digest(v)))));
    mix(sum, rows.len() as u64)
}

/// One cell, as systems agree on it: numbers by value (text that reads as a number too),
/// text without trailing blanks.
fn cell_digest(value: &Value) -> u64 {
    let number = match value {
        Value::Null => return 0x4E55_4C4C,
        Value::Int(i) => *i as f64,
        Value::Float(x) => *x,
        Value::Decimal(d) => d.0 as f64 / 100.0,
        Value::Date(d) => return mix(0xDA7E, d.0 as u64),
        Value::Text(t) => match t.trim().parse::<f64>() {
            Ok(x) if !t.trim().is_empty() => x,
            _ => return hash_str(t.trim_end()),
        },
    };
    if number.fract() == 0.0 && number.abs() < 9e15 { mix(0x1A7, number as i64 as u64) } else { hash_str(&format!("{number:.11e}")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_agree_whatever_their_order_type_or_padding() {
        let a = vec![vec![Value::Int(3), Value::Text("x  ".into())], vec![Value::Float(2.5), Value::Null]];
        let b = vec![
            vec![Value::Text("2.5".into()), Value::Null],
            vec![Value::Decimal(crate::base::table::Decimal(300)), Value::Text("x".into())],
        ];
        assert_eq!(rows_digest(&a), rows_digest(&b));
        let c = vec![vec![Value::Int(4), Value::Text("x".into())], vec![Value::Float(2.5), Value::Null]];
        assert_ne!(rows_digest(&a), rows_digest(&c), "a different number");
        assert_ne!(rows_digest(&a), rows_digest(&a[..1]), "a row fewer");
        assert_eq!(rows_digest(&[vec![Value::Float(0.1 + 0.2)]]), rows_digest(&[vec![Value::Float(0.3)]]), "within float noise");
    }
}
