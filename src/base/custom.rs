//! A user's own operation from a study file (`op = "custom"`): the vocabulary an
//! `Op::Custom` carries.
//!
//! Owns the parsed form: the parameters and the generator each is drawn from
//! (`ParamSource`), the statement of each system family (SQL as a `Script` of one
//! statement with its per-dialect overrides; Redis and Memcached commands as argument
//! templates; a MongoDB command document as a template
//! tree; a CQL statement with bind markers), the setup statements, and whether its answers are compared. The parser lives in
//! `plan::custom`, the draws in `workload::custom`, the execution in each family's adapter.
//! Must not parse, draw random numbers or know a system beyond its family's name.

use super::script::{Script, ScriptValue};
use serde::{Deserialize, Serialize};

/// The families of systems a custom operation has a statement for, as study files name
/// them (`sql = ...`, `redis = [...]`, `memcached = [...]`, `mongodb = {...}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Every SQL engine that runs a script's text (`OpKind::Script`).
    Sql,
    /// Redis and the Redis-protocol servers: one command (EVAL of a Lua script included).
    Redis,
    /// Memcached: text-protocol commands (get, set, incr, ...).
    Memcached,
    /// MongoDB and FerretDB: one command document run on dbsweep's database.
    Mongodb,
    /// Cassandra: one CQL statement run in dbsweep's keyspace.
    Cql,
}

impl Family {
    pub const ALL: [Family; 5] = [Family::Sql, Family::Redis, Family::Memcached, Family::Mongodb, Family::Cql];

    pub fn name(self) -> &'static str {
        match self {
            Family::Sql => "sql",
            Family::Redis => "redis",
            Family::Memcached => "memcached",
            Family::Mongodb => "mongodb",
            Family::Cql => "cql",
        }
    }
}

/// One custom operation: what one op of its experiment runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomOp {
    /// The experiment's name (errors name it).
    pub name: String,
    /// Value slots: `scale` first (slot 0), then the parameters in the order written.
    pub variables: Vec<String>,
    /// How each parameter (slot 1 on) is drawn.
    pub params: Vec<ParamSource>,
    /// True when every statement only reads: answers are then compared across systems.
    pub reads: bool,
    /// The SQL family's statements: one statement (each dialect override a statement of
    /// its own that runs on its dialects only), variables by slot as above.
    pub sql: Option<Script>,
    /// The Redis family's commands, run in order (a measured op has exactly one).
    pub redis: Vec<CommandTemplate>,
    /// The Memcached family's commands, run in order (a measured op has exactly one).
    pub memcached: Vec<CommandTemplate>,
    /// The MongoDB family's command documents, run in order (a measured op has exactly one).
    pub mongodb: Vec<DocumentTemplate>,
    /// The CQL family's statements, run in order (a measured op has exactly one).
    pub cql: Vec<CqlStatement>,
    /// The statements run once per target before loading (no answers, no parameters but
    /// `scale`).
    pub setup: Option<Box<CustomOp>>,
}

impl CustomOp {
    /// The families it has a statement for.
    pub fn families(&self) -> Vec<Family> {
        Family::ALL.into_iter().filter(|f| self.runs_on(*f)).collect()
    }

    pub fn runs_on(&self, family: Family) -> bool {
        match family {
            Family::Sql => self.sql.is_some(),
            Family::Redis => !self.redis.is_empty(),
            Family::Memcached => !self.memcached.is_empty(),
            Family::Mongodb => !self.mongodb.is_empty(),
            Family::Cql => !self.cql.is_empty(),
        }
    }
}

/// Where a parameter's value comes from, for each op's sequence number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ParamSource {
    /// The key of a loaded row of a table (by id), drawn from `distribution` over the
    /// table's rows.
    Key { table: usize, distribution: KeyDistribution },
    /// A uniform integer in `[lo, hi]`.
    Range { lo: i64, hi: i64 },
    /// One of these values, uniformly.
    Pick(Vec<ScriptValue>),
    /// Column `column` of the row the data's generator makes for a key drawn as `Key`'s.
    Column { table: usize, column: usize, distribution: KeyDistribution },
}

/// How a key is drawn from a table's loaded rows (YCSB's request distributions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyDistribution {
    Uniform,
    /// YCSB's scrambled zipfian (constant 0.99): popular keys scattered over the table.
    Zipfian,
    /// YCSB's latest: the most recently loaded keys are the most popular.
    Latest,
    /// Rows in load order, one per op, wrapping around.
    Sequential,
}

/// One Redis or Memcached command: its arguments (the command's name first), each a
/// template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandTemplate {
    pub args: Vec<Vec<Piece>>,
}

/// One CQL statement: its text with a bind marker `?` for each placeholder, and the value
/// slot each marker binds, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CqlStatement {
    pub text: String,
    pub markers: Vec<usize>,
}

/// A MongoDB command document as a tree of templates: its first key is the command and
/// that key's value the collection, a table's name (`find = "kv"` runs on `kv`'s collection).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DocumentTemplate {
    /// Text with placeholders; a text that is one `${name}` alone is the value itself
    /// (a number stays a number).
    Text(Vec<Piece>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Array(Vec<DocumentTemplate>),
    /// Keys in the order written.
    Table(Vec<(String, DocumentTemplate)>),
}

/// A piece of a non-SQL argument template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Piece {
    Text(String),
    /// `${name}`: a value slot.
    Variable(usize),
    /// `${prefix}`: the namespace's key prefix (`dbsweep:`).
    Prefix,
    /// `${row:TABLE}`: the prefix of a table's row keys (`dbsweep:kv`, then the key).
    RowPrefix(String),
    /// `${pk:TABLE}`: the key of a table's primary-key set (`dbsweep:kv:pk`; Redis only).
    KeySet(String),
    /// `${id:name}`: a value slot as the `_id` of the row with that key (MongoDB only).
    DocumentId(usize),
}

impl ScriptValue {
    /// The value as a command argument: numbers as SQL writes them, text as is.
    pub fn raw(&self) -> String {
        match self {
            ScriptValue::Text(t) => t.to_string(),
            other => other.to_string(),
        }
    }
}
