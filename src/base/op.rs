//! The backend-neutral operation vocabulary and what executing one yields.
//!
//! Owns `Op`, `OpKind`, `Outcome`, `Answer` and the op error classes. Adapters translate
//! these to their systems; nothing here may know a system's syntax.

use crate::base::table::{LazyValue, Row, TableId, Value};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// What a range operation computes over `lo <= column <= hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RangeAgg {
    /// Return the matching rows.
    Rows,
    /// `COUNT(*)` of the matching rows.
    Count,
    /// `MAX` of another (usually unindexed) column over the matching rows.
    Max { column: usize },
}

/// Identifies an analytic query; adapters that support it carry their own text for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum QueryId {
    TpchQ1,
    TpchQ3,
    TpchQ6,
    TpchQ14,
}

/// One operation. Batches are slices of ops of one kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A round trip that does no work (`SELECT 1`, `ECHO`).
    Echo,
    Insert {
        table: TableId,
        row: Row,
    },
    /// Primary-key lookup of the whole row.
    Get {
        table: TableId,
        key: i64,
    },
    /// Lookup of several keys in one request (`IN (...)`, `MGET`).
    MultiGet {
        table: TableId,
        keys: Vec<i64>,
    },
    Delete {
        table: TableId,
        key: i64,
    },
    /// Overwrite one column of an existing row (the value made when the adapter reads it).
    Update {
        table: TableId,
        key: i64,
        column: usize,
        value: LazyValue,
    },
    /// Read the row, then write one column of it, as one client-side step.
    ReadModifyWrite {
        table: TableId,
        key: i64,
        column: usize,
        value: LazyValue,
    },
    /// Up to `count` rows in key order starting at `start`.
    Scan {
        table: TableId,
        start: i64,
        count: usize,
    },
    /// Over rows with `lo <= column <= hi` (a secondary-indexed column).
    Range {
        table: TableId,
        column: usize,
        lo: i64,
        hi: i64,
        agg: RangeAgg,
    },
    Query(QueryId),
    /// Every row of the table, in any order (the in-memory study's "fetch all data");
    /// `Outcome.rows` = rows returned. Systems that cannot list their data do not offer it.
    FetchAll {
        table: TableId,
    },
    /// One pass of a user's SQL script (one pgbench "transaction") with the values of its
    /// variables, by slot (see [`crate::base::script`]), or why they could not be drawn
    /// (a `\set` that failed for this pass: the op fails).
    Script {
        script: std::sync::Arc<crate::base::script::Script>,
        values: Result<Vec<crate::base::script::ScriptValue>, String>,
    },
    /// One op of a user's custom operation (a study's `op = "custom"` experiment) with its
    /// values by slot (see [`crate::base::custom`]).
    Custom {
        op: std::sync::Arc<crate::base::custom::CustomOp>,
        values: Vec<crate::base::script::ScriptValue>,
    },
}

/// What a stream of ops needs from a target: an analytic query, or op kinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Needs {
    Query(QueryId),
    Kinds(Vec<OpKind>),
    /// A custom operation: a statement for the target's family (one of these).
    Custom(Vec<crate::base::custom::Family>),
}

/// The kind of an op: histograms, capabilities and errors are kept per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    Echo,
    Insert,
    Get,
    MultiGet,
    Delete,
    Update,
    ReadModifyWrite,
    Scan,
    RangeRows,
    RangeCount,
    RangeMax,
    Query,
    FetchAll,
    /// One pass of a user's SQL script (`run --sql-file`, `--builtin`).
    Script,
    /// One op of a custom operation a study defines (`op = "custom"`).
    Custom,
    /// A point whose ops mix several kinds (YCSB workloads); never an op's own kind.
    Mixed,
}

impl OpKind {
    pub const ALL: [OpKind; 16] = [
        OpKind::Echo,
        OpKind::Insert,
        OpKind::Get,
        OpKind::MultiGet,
        OpKind::Delete,
        OpKind::Update,
        OpKind::ReadModifyWrite,
        OpKind::Scan,
        OpKind::RangeRows,
        OpKind::RangeCount,
        OpKind::RangeMax,
        OpKind::Query,
        OpKind::FetchAll,
        OpKind::Script,
        OpKind::Custom,
        OpKind::Mixed,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Echo => "echo",
            OpKind::Insert => "insert",
            OpKind::Get => "get",
            OpKind::MultiGet => "multi_get",
            OpKind::Delete => "delete",
            OpKind::Update => "update",
            OpKind::ReadModifyWrite => "read_modify_write",
            OpKind::Scan => "scan",
            OpKind::RangeRows => "range_rows",
            OpKind::RangeCount => "range_count",
            OpKind::RangeMax => "range_max",
            OpKind::Query => "query",
            OpKind::FetchAll => "fetch_all",
            OpKind::Script => "script",
            OpKind::Custom => "custom",
            OpKind::Mixed => "mixed",
        }
    }
}

impl OpKind {
    /// The operation types of a YCSB workload, in the order YCSB reports them.
    pub const YCSB: [OpKind; 5] = [OpKind::Get, OpKind::Update, OpKind::Insert, OpKind::Scan, OpKind::ReadModifyWrite];

    /// YCSB's name of an operation type of a workload (`READ`, `UPDATE`, `INSERT`, `SCAN`,
    /// `READ-MODIFY-WRITE`), as in YCSB's output and the ycsb study's figures.
    pub fn ycsb_name(self) -> Option<&'static str> {
        match self {
            OpKind::Get => Some("READ"),
            OpKind::Update => Some("UPDATE"),
            OpKind::Insert => Some("INSERT"),
            OpKind::Scan => Some("SCAN"),
            OpKind::ReadModifyWrite => Some("READ-MODIFY-WRITE"),
            _ => None,
        }
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Op {
    /// The table the op works on (`None` for echo and analytic queries).
    pub fn table(&self) -> Option<TableId> {
        match self {
            Op::Echo | Op::Query(_) | Op::Script { .. } | Op::Custom { .. } => None,
            Op::Insert { table, .. }
            | Op::Get { table, .. }
            | Op::MultiGet { table, .. }
            | Op::Delete { table, .. }
            | Op::Update { table, .. }
            | Op::ReadModifyWrite { table, .. }
            | Op::Scan { table, .. }
            | Op::Range { table, .. }
            | Op::FetchAll { table } => Some(*table),
        }
    }

    pub fn kind(&self) -> OpKind {
        match self {
            Op::Echo => OpKind::Echo,
            Op::Insert { .. } => OpKind::Insert,
            Op::Get { .. } => OpKind::Get,
            Op::MultiGet { .. } => OpKind::MultiGet,
            Op::Delete { .. } => OpKind::Delete,
            Op::Update { .. } => OpKind::Update,
            Op::ReadModifyWrite { .. } => OpKind::ReadModifyWrite,
            Op::Scan { .. } => OpKind::Scan,
            Op::Range { agg: RangeAgg::Rows, .. } => OpKind::RangeRows,
            Op::Range { agg: RangeAgg::Count, .. } => OpKind::RangeCount,
            Op::Range { agg: RangeAgg::Max { .. }, .. } => OpKind::RangeMax,
            Op::Query(_) => OpKind::Query,
            Op::FetchAll { .. } => OpKind::FetchAll,
            Op::Script { .. } => OpKind::Script,
            Op::Custom { .. } => OpKind::Custom,
        }
    }
}

/// A value-level answer worth comparing across systems (counts, maxima, query results).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Scalar(Value),
    Table(Vec<Row>),
}

impl Answer {
    /// Order-sensitive fingerprint of the whole answer (query results are ordered).
    pub fn fingerprint(&self) -> u64 {
        use crate::base::rng::mix;
        match self {
            Answer::Scalar(v) => v.fingerprint(),
            Answer::Table(rows) => rows.iter().flatten().fold(0x7AB1E, |h, v| mix(h, v.fingerprint())),
        }
    }
}

/// Numeric closeness for answers: within a cent, or one part in 10^9 of large sums (engines
/// sum in different orders and in decimal or binary arithmetic).
fn numbers_agree(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.01 + 1e-9 * a.abs().max(b.abs())
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Decimal(d) => Some(d.0 as f64 / 100.0),
        _ => None,
    }
}

fn values_agree(a: &Value, b: &Value) -> bool {
    match (as_number(a), as_number(b)) {
        (Some(x), Some(y)) => numbers_agree(x, y),
        _ => match (a, b) {
            // CHAR columns come back blank-padded from some engines.
            (Value::Text(x), Value::Text(y)) => x.trim_end() == y.trim_end(),
            _ => a == b,
        },
    }
}

impl Answer {
    /// True when two answers are the same up to numeric tolerance and CHAR padding.
    pub fn agrees_with(&self, other: &Answer) -> bool {
        match (self, other) {
            (Answer::Scalar(a), Answer::Scalar(b)) => values_agree(a, b),
            (Answer::Table(a), Answer::Table(b)) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|(ra, rb)| ra.len() == rb.len() && ra.iter().zip(rb).all(|(x, y)| values_agree(x, y)))
            }
            _ => false,
        }
    }
}

/// An op and the rows the plan knows it must return or affect: at least this many (a
/// point read of a loaded key: 1; a multi-get: one per key; a delete or update of a key
/// that exists: 1; an insert: its row). 0 when the plan cannot know. Fewer rows than
/// expected are missing rows: the request did not do what the plan asked.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedOp {
    pub op: Op,
    pub expected_rows: u64,
}

/// What executing an op (or a batch) produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Rows written, deleted, found or returned (a `Get` of a missing key is 0).
    pub rows: u64,
    /// Set for `RangeCount`, `RangeMax` and `Query` ops (not for batches).
    pub answer: Option<Answer>,
    /// Times the adapter ran the request again after the system aborted it for a
    /// concurrent one (`ErrorClass::Conflict`); the request's latency includes them.
    pub retries: u32,
    /// The time the server itself reported for the request, where the adapter asks for it
    /// (`redis-cli://…?timing=server`: `TIME` before and after the command in one `MULTI`).
    pub server_time: Option<Duration>,
}

impl Outcome {
    pub fn rows(rows: u64) -> Self {
        Outcome { rows, ..Outcome::default() }
    }

    pub fn answer(rows: u64, answer: Answer) -> Self {
        Outcome { rows, answer: Some(answer), ..Outcome::default() }
    }

    /// This outcome, reached after `retries` conflicts.
    pub fn after_retries(self, retries: u32) -> Self {
        Outcome { retries, ..self }
    }

    /// The rows this outcome found, to compare with `PlannedOp::expected_rows`: the count a
    /// `RangeCount` answered (its one result row is not what it found), else `rows`.
    #[inline]
    pub fn found_rows(&self, kind: OpKind) -> u64 {
        match (kind, &self.answer) {
            (OpKind::RangeCount, Some(Answer::Scalar(Value::Int(n)))) => (*n).max(0) as u64,
            _ => self.rows,
        }
    }
}

/// Why an op failed, coarse enough to count and compare across systems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Could not reach the server or the connection broke.
    Connection,
    /// The server answered with an error.
    Server,
    /// The op took longer than the per-op timeout.
    Timeout,
    /// The adapter cannot do this op (should be caught by capabilities first).
    Unsupported,
    /// The op succeeded but returned a result that contradicts the generated data.
    WrongResult,
    /// Anything else (client-side encoding failures, ...).
    Client,
    /// The system aborted the request for a concurrent one (optimistic concurrency:
    /// MonetDB's "concurrency conflicts") and nothing of it was applied, so it can run
    /// again from the start; the adapter retries it a bounded number of times and reports
    /// this class only once the retries are used up.
    Conflict,
}

impl ErrorClass {
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connection => "connection",
            ErrorClass::Server => "server",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Unsupported => "unsupported",
            ErrorClass::WrongResult => "wrong_result",
            ErrorClass::Client => "client",
            ErrorClass::Conflict => "conflict",
        }
    }
}

/// A failed op: its class and a message that must never contain credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpError {
    pub class: ErrorClass,
    pub message: String,
}

impl OpError {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        OpError { class, message: message.into() }
    }

    pub fn server(message: impl fmt::Display) -> Self {
        OpError::new(ErrorClass::Server, message.to_string())
    }

    pub fn connection(message: impl fmt::Display) -> Self {
        OpError::new(ErrorClass::Connection, message.to_string())
    }

    pub fn client(message: impl fmt::Display) -> Self {
        OpError::new(ErrorClass::Client, message.to_string())
    }

    pub fn conflict(message: impl fmt::Display) -> Self {
        OpError::new(ErrorClass::Conflict, message.to_string())
    }

    pub fn unsupported(kind: OpKind, system: &str) -> Self {
        OpError::new(ErrorClass::Unsupported, format!("{system} does not support {kind}"))
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class.name(), self.message)
    }
}

impl std::error::Error for OpError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::Decimal;

    #[test]
    fn answers_agree_up_to_tolerance_and_padding() {
        let a = Answer::Table(vec![vec![Value::Text("A ".into()), Value::Decimal(Decimal(123_456_789_012)), Value::Float(25.5)]]);
        let b = Answer::Table(vec![vec![Value::Text("A".into()), Value::Float(1_234_567_890.1200001), Value::Float(25.504)]]);
        assert!(a.agrees_with(&b));
        let c = Answer::Table(vec![vec![Value::Text("A".into()), Value::Float(1_234_567_900.0), Value::Float(25.5)]]);
        assert!(!a.agrees_with(&c));
        assert!(!a.agrees_with(&Answer::Table(vec![])));
        assert!(Answer::Scalar(Value::Int(3)).agrees_with(&Answer::Scalar(Value::Float(3.0))));
    }
}
