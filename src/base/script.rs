//! A user's SQL script in pgbench's language, parsed: the vocabulary an `Op::Script` carries.
//!
//! Owns the parsed form (`Script`: `\set` commands with their expressions, SQL statements
//! cut into text, `:variable` references and dbsweep table names) and the values one pass
//! of it binds (`ScriptValue`). The parser lives in `plan::script`, the seeded evaluation in
//! `workload::script`, the execution in `adapter::sql::script`. Must not parse, draw random
//! numbers or know a system.

use serde::{Deserialize, Serialize};

/// One parsed script: what one op (one pass, one pgbench "transaction") runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Script {
    /// `select-only`, or the file's name.
    pub name: String,
    /// The variables, by slot: `scale` first, then each `\set` name in order of first use.
    pub variables: Vec<String>,
    pub commands: Vec<Command>,
}

impl Script {
    /// True when no statement writes: its answers are then a function of the loaded data
    /// and its parameters alone, and are compared across systems.
    pub fn read_only(&self) -> bool {
        self.commands.iter().all(|c| !matches!(c, Command::Sql(s) if s.kind == SqlKind::Write))
    }

    /// The `\set` commands, in order.
    pub fn sets(&self) -> impl Iterator<Item = (usize, &Expr)> {
        self.commands.iter().filter_map(|c| match c {
            Command::Set { slot, expr, .. } => Some((*slot, expr)),
            Command::Sql(_) => None,
        })
    }
}

/// One command of a script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    /// `\set name expr` (line `line` of the file).
    Set {
        slot: usize,
        expr: Expr,
        line: usize,
    },
    Sql(SqlStatement),
}

/// One SQL statement of a script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SqlStatement {
    pub parts: Vec<SqlPart>,
    pub kind: SqlKind,
    /// The line it starts on.
    pub line: usize,
    /// `-- dbsweep:on=a,b` before it: it runs only on these dialects; `-- dbsweep:not=a,b`:
    /// everywhere else. Empty `only` and `not`: everywhere.
    pub only: Vec<String>,
    pub not: Vec<String>,
}

impl SqlStatement {
    /// Whether it runs on the dialect named `dialect` (a name in `only`/`not` also names
    /// its layouts: `postgres` is `postgres-row`).
    pub fn runs_on(&self, dialect: &str) -> bool {
        let named = |d: &String| d == dialect || dialect.split('-').next() == Some(d.as_str());
        (self.only.is_empty() || self.only.iter().any(named)) && !self.not.iter().any(named)
    }
}

/// What a statement does, as its first word says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SqlKind {
    /// `BEGIN` / `START TRANSACTION`: the system's own begin.
    Begin,
    /// `END` / `COMMIT`.
    Commit,
    Rollback,
    /// `SELECT`, `WITH`, `VALUES`, `TABLE`: returns rows, compared across systems.
    Read,
    /// Anything else (`UPDATE`, `INSERT`, ...).
    Write,
}

/// A piece of a statement's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SqlPart {
    Text(String),
    /// `:name`, by slot.
    Variable(usize),
    /// A table of dbsweep's data set named in the script (`pgbench_accounts`): each system
    /// writes its own qualified name of it.
    Table(String),
}

/// A `\set` expression, as pgbench's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    Int(i64),
    Float(f64),
    Variable(usize),
    Negate(Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Call(Function, Vec<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
}

/// The functions of `\set` dbsweep evaluates (pgbench's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Function {
    /// `random(lo, hi)`: uniform.
    Random,
    /// `random_zipfian(lo, hi, s)`.
    RandomZipfian,
    /// `random_exponential(lo, hi, parameter)`.
    RandomExponential,
    Abs,
    Least,
    Greatest,
    Int,
    Double,
}

impl Function {
    /// The function pgbench calls `name`, with its argument counts.
    pub fn named(name: &str) -> Option<(Function, std::ops::RangeInclusive<usize>)> {
        Some(match name {
            "random" => (Function::Random, 2..=2),
            "random_zipfian" => (Function::RandomZipfian, 3..=3),
            "random_exponential" => (Function::RandomExponential, 3..=3),
            "abs" => (Function::Abs, 1..=1),
            "least" => (Function::Least, 1..=usize::MAX),
            "greatest" => (Function::Greatest, 1..=usize::MAX),
            "int" => (Function::Int, 1..=1),
            "double" => (Function::Double, 1..=1),
            _ => return None,
        })
    }
}

/// A variable's value in one pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ScriptValue {
    Int(i64),
    Float(f64),
    /// Text (a custom operation's pick from a list, or a text column of a row); `\set`
    /// makes numbers only.
    Text(String),
}

impl std::fmt::Display for ScriptValue {
    /// As it is written into a statement's text (floats always with a decimal point or
    /// exponent, so every engine reads a number; text as a quoted SQL literal).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScriptValue::Int(i) => write!(f, "{i}"),
            ScriptValue::Float(x) => write!(f, "{x:?}"),
            ScriptValue::Text(t) => write!(f, "'{}'", t.replace('\'', "''")),
        }
    }
}
