//! Ops become statements here, and statements' replies become outcomes: the one planner
//! and the one result-to-`Outcome` path of every SQL adapter.
//!
//! Owns which statement (`Statement`) an op runs with which arguments (`Args`, in a
//! driver-neutral form each driver binds in its own encoding), how a key list is split
//! and padded, and what a reply means (`Reply`). Must not bind values or talk to a server.

use super::dialect::{Dialect, KeyList, SqlTable};
use super::statement::Statement;
use crate::base::op::{Answer, Op, OpError, Outcome, QueryId, RangeAgg};
use crate::base::table::{ColumnType, Row, TableId, Value};

/// The arguments of one statement.
#[derive(Debug)]
pub enum Args<'a> {
    None,
    Key(i64),
    /// One array parameter (`Statement::GetMany { keys: 0 }`), else one parameter each.
    Keys(Vec<i64>),
    /// Rows to insert: consecutive parameters, or one array per stored column.
    Rows(Vec<&'a Row>),
    /// `column` of the row with `key` set to `value`.
    Update {
        column: usize,
        value: &'a Value,
        key: i64,
    },
    /// The first key of a scan, and its length when `LIMIT` is a parameter.
    Scan {
        start: i64,
        count: Option<i64>,
    },
    /// Bounds of a range over `column`, in the column's integer representation.
    Range {
        column: usize,
        lo: i64,
        hi: i64,
    },
}

/// What a statement's reply means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Nothing to count (echo).
    Nothing,
    /// Rows changed.
    Affected,
    /// Rows inserted, which must be all of these (a key check that skipped a duplicate,
    /// where the engine has no primary key, is an error).
    Inserted(u64),
    /// Rows returned.
    Rows,
    /// Rows returned, counted as they stream in without holding them (fetch-all).
    Streamed,
    /// One `COUNT(*)`.
    Count,
    /// One `MAX` of a column of this type.
    Max(ColumnType),
    /// The rows of an analytic query, in the types of its answer columns.
    Answer(QueryId),
}

/// One statement to run: which, with what, and what its reply means.
#[derive(Debug)]
pub struct Step<'a> {
    pub statement: Statement,
    pub args: Args<'a>,
    pub reply: Reply,
}

/// What a driver read from a reply: a number of rows (changed, returned or streamed), a
/// scalar (`Count`, `Max`), or an analytic query's rows.
#[derive(Debug)]
pub enum Answered {
    Rows(u64),
    Scalar(Value),
    Table(Vec<Row>),
}

impl Step<'_> {
    /// An error when the reply shows the statement did not do all it should (checked
    /// before a transaction commits).
    pub fn check(&self, answered: &Answered) -> Result<(), OpError> {
        match (self.reply, answered) {
            (Reply::Inserted(expected), Answered::Rows(n)) if *n != expected => {
                Err(OpError::server(format!("duplicate key: {n} of {expected} rows inserted")))
            }
            _ => Ok(()),
        }
    }

    /// Every reply checked, in order.
    pub fn check_all(steps: &[Step<'_>], answers: &[Answered]) -> Result<(), OpError> {
        steps.iter().zip(answers).try_for_each(|(step, answered)| step.check(answered))
    }

    /// The outcome of this step's reply.
    pub fn outcome(&self, answered: Answered) -> Result<Outcome, OpError> {
        self.check(&answered)?;
        Ok(match (self.reply, answered) {
            (Reply::Nothing, _) => Outcome::rows(0),
            (Reply::Count | Reply::Max(_), Answered::Scalar(v)) => Outcome::answer(1, Answer::Scalar(v)),
            (Reply::Answer(_), Answered::Table(rows)) => Outcome::answer(rows.len() as u64, Answer::Table(rows)),
            (_, Answered::Rows(n)) => Outcome::rows(n),
            (reply, answered) => return Err(OpError::client(format!("a {reply:?} statement answered {answered:?}"))),
        })
    }
}

/// The rows of several steps' outcomes.
pub fn total_rows(steps: &[Step<'_>], answers: Vec<Answered>) -> Result<u64, OpError> {
    steps.iter().zip(answers).try_fold(0, |rows, (step, answered)| Ok(rows + step.outcome(answered)?.rows))
}

/// Turns ops into steps for one dialect over the prepared tables.
pub struct Planner<'t> {
    pub dialect: &'t dyn Dialect,
    pub tables: &'t [SqlTable],
}

impl<'t> Planner<'t> {
    fn table(&self, id: TableId) -> Result<&'t SqlTable, OpError> {
        self.tables.get(id).ok_or_else(|| OpError::client(format!("no table #{id} was prepared")))
    }

    fn column_type(&self, table: TableId, column: usize) -> Result<ColumnType, OpError> {
        let t = self.table(table)?;
        t.def.columns.get(column).map(|c| c.ty).ok_or_else(|| OpError::client(format!("{} has no column #{column}", t.def.name)))
    }

    /// The steps of one op: one, or several when a key list is longer than one statement
    /// takes (none for an empty one). A read-modify-write plans as its write.
    pub fn op<'a>(&self, op: &'a Op) -> Result<Vec<Step<'a>>, OpError> {
        let one = |statement, args, reply| Ok(vec![Step { statement, args, reply }]);
        match op {
            Op::Echo => one(Statement::Echo, Args::None, Reply::Nothing),
            Op::Insert { table, row } => self.insert(*table, vec![row]),
            Op::Get { table, key } => one(Statement::Get { table: *table }, Args::Key(*key), Reply::Rows),
            Op::MultiGet { table, keys } => self.keys(*table, keys, false),
            Op::Delete { table, key } => one(Statement::Delete { table: *table }, Args::Key(*key), Reply::Affected),
            Op::Update { table, key, column, value } | Op::ReadModifyWrite { table, key, column, value } => {
                self.column_type(*table, *column)?;
                if *column == 0 {
                    return Err(OpError::client(format!("{}: cannot update the key column", self.table(*table)?.def.name)));
                }
                let args = Args::Update { column: *column, value, key: *key };
                one(Statement::Update { table: *table, column: *column }, args, Reply::Affected)
            }
            Op::Scan { table, start, count } => {
                let count = i64::try_from(*count).unwrap_or(i64::MAX);
                let (limit, count) = if self.dialect.limit_parameter() { (None, Some(count)) } else { (Some(count as u64), None) };
                one(Statement::Scan { table: *table, limit }, Args::Scan { start: *start, count }, Reply::Rows)
            }
            Op::Range { table, column, lo, hi, agg } => {
                self.column_type(*table, *column)?;
                let reply = match agg {
                    RangeAgg::Rows => Reply::Rows,
                    RangeAgg::Count => Reply::Count,
                    RangeAgg::Max { column: of } => Reply::Max(self.column_type(*table, *of)?),
                };
                let statement = Statement::Range { table: *table, column: *column, agg: *agg };
                one(statement, Args::Range { column: *column, lo: *lo, hi: *hi }, reply)
            }
            Op::FetchAll { table } => one(Statement::FetchAll { table: *table }, Args::None, Reply::Streamed),
            Op::Query(query) => one(Statement::Query(*query), Args::None, Reply::Answer(*query)),
            Op::Script { .. } | Op::Custom { .. } => Err(OpError::client("a script runs as text, not as a planned statement")),
        }
    }

    /// The steps of several ops, in order.
    pub fn ops<'a>(&self, ops: &'a [Op]) -> Result<Vec<Step<'a>>, OpError> {
        let mut steps = Vec::with_capacity(ops.len());
        for op in ops {
            steps.extend(self.op(op)?);
        }
        Ok(steps)
    }

    /// Inserts into one table: one statement (`rows: 1` for a single row).
    pub fn insert<'a>(&self, table: TableId, rows: Vec<&'a Row>) -> Result<Vec<Step<'a>>, OpError> {
        let t = self.table(table)?;
        if let Some(row) = rows.iter().find(|r| r.len() != t.def.columns.len()) {
            return Err(OpError::client(format!(
                "{}: row has {} values, table has {} columns",
                t.def.name,
                row.len(),
                t.def.columns.len()
            )));
        }
        let n = rows.len() as u64;
        let statement = Statement::Insert { table, rows: rows.len() };
        Ok(vec![Step { statement, args: Args::Rows(rows), reply: Reply::Inserted(n) }])
    }

    /// Inserts of many rows into one table as one array statement.
    pub fn insert_arrays<'a>(&self, table: TableId, rows: Vec<&'a Row>) -> Result<Step<'a>, OpError> {
        let mut steps = self.insert(table, rows)?;
        let mut step = steps.pop().expect("one insert step");
        step.statement = Statement::Insert { table, rows: 0 };
        Ok(step)
    }

    /// Gets (or deletes) of a list of keys: one array statement, or key-list statements
    /// of at most `Dialect::max_keys` keys each.
    pub fn keys<'a>(&self, table: TableId, keys: &[i64], delete: bool) -> Result<Vec<Step<'a>>, OpError> {
        self.table(table)?;
        let reply = if delete { Reply::Affected } else { Reply::Rows };
        let statement = |keys| if delete { Statement::DeleteMany { table, keys } } else { Statement::GetMany { table, keys } };
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        if self.dialect.key_list(keys.len()) == KeyList::Array {
            return Ok(vec![Step { statement: statement(0), args: Args::Keys(keys.to_vec()), reply }]);
        }
        let max = self.dialect.max_keys();
        let lists = if self.dialect.pad_keys() { padded_lists(keys, max) } else { keys.chunks(max).map(<[i64]>::to_vec).collect() };
        Ok(lists.into_iter().map(|list| Step { statement: statement(list.len()), args: Args::Keys(list), reply }).collect())
    }
}

/// The lists for `keys`: distinct keys, at most `max` per list, each list padded with its
/// own last key to a power of two (a repeated key matches its row once within one
/// statement, so results do not change and few statement shapes are prepared).
fn padded_lists(keys: &[i64], max: usize) -> Vec<Vec<i64>> {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys.dedup();
    keys.chunks(max)
        .map(|chunk| {
            let mut list = chunk.to_vec();
            list.resize(chunk.len().next_power_of_two(), chunk[chunk.len() - 1]);
            list
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_lists_are_distinct_and_padded_to_a_power_of_two() {
        assert_eq!(padded_lists(&[5, 1, 5, 3, 9], 1024), vec![vec![1, 3, 5, 9]]);
        assert_eq!(padded_lists(&[4, 2, 7], 1024), vec![vec![2, 4, 7, 7]]);
        assert_eq!(padded_lists(&[1, 2, 3, 4, 5], 1024), vec![vec![1, 2, 3, 4, 5, 5, 5, 5]]);
        assert!(padded_lists(&[], 1024).is_empty());
        // Beyond one list, every list pads with its own keys: no key is counted twice.
        let many: Vec<i64> = (0..1024 * 2 + 3).collect();
        let lists = padded_lists(&many, 1024);
        assert_eq!(lists.iter().map(Vec::len).collect::<Vec<_>>(), [1024, 1024, 4]);
        assert_eq!(lists[2], vec![2048, 2049, 2050, 2050]);
    }

    #[test]
    fn an_insert_that_skipped_a_row_is_an_error() {
        let row = vec![Value::Int(1)];
        let step = Step { statement: Statement::Insert { table: 0, rows: 1 }, args: Args::Rows(vec![&row]), reply: Reply::Inserted(1) };
        assert_eq!(step.outcome(Answered::Rows(1)).unwrap().rows, 1);
        assert!(step.outcome(Answered::Rows(0)).unwrap_err().message.contains("duplicate key"));
    }
}
