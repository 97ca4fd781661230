//! The adapter contract between the runner and a system, and the factory that picks the
//! adapter for a target URL.
//!
//! Owns `Target` (one configured system: namespace, schema, loading, connections) and
//! `Connection` (one client's session that executes ops). Adapters declare what they can
//! do in `Capabilities`; the runner reports "not supported" instead of calling them with
//! ops outside it. Adapters must not time anything or keep statistics: the runner does.

pub mod cassandra;
pub mod cli_client;
pub mod duckdb;
pub mod h2;
pub mod hyper;
pub mod lease;
pub mod memcached;
pub mod mock;
pub mod mysql;
pub mod nodb;
pub mod postgres;
pub mod redb;
pub mod redis;
pub mod sqlite;
pub mod url;

use crate::data::table::{Row, TableDef};
use crate::error::{Error, Result};
use crate::workload::op::{Op, OpError, OpKind, Outcome, QueryId};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub use self::url::TargetUrl;

/// How the runner drives a target's clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    /// Network clients: each client is a task on the shared multi-threaded runtime.
    Async,
    /// In-process engines whose calls block: each client gets its own OS thread.
    Blocking,
}

/// What a target can do, declared up front.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Capabilities {
    /// Op kinds the adapter executes natively.
    pub ops: Vec<OpKind>,
    /// Analytic queries it can run.
    pub queries: Vec<QueryId>,
    /// True when `execute_batch` sends one request for the whole batch (a transaction, a
    /// pipeline, a multi-row statement) rather than looping.
    pub native_batch: bool,
    /// True when secondary indexes exist (systems without them scan; the report says so).
    pub secondary_indexes: bool,
}

impl Capabilities {
    pub fn supports(&self, op: &Op) -> bool {
        match op {
            Op::Query(q) => self.queries.contains(q),
            other => self.ops.contains(&other.kind()),
        }
    }

    pub fn supports_kind(&self, kind: OpKind) -> bool {
        self.ops.contains(&kind)
    }
}

/// Self-description of a target, saved in every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TargetInfo {
    /// The user's name for this target (`--target NAME=URL`).
    pub name: String,
    /// The adapter, e.g. `sqlite`, `pg-hstore`.
    pub system: String,
    /// The URL with any password removed.
    pub url: String,
    pub execution: Execution,
    pub capabilities: Capabilities,
    /// Server or library version, as the system reports it.
    pub version: String,
    /// Settings that change results: durability, persistence, isolation, layout, ...
    pub settings: BTreeMap<String, String>,
}

/// Memory as the engine itself reports it (not the process's resident memory, which the
/// runner reads from /proc for spawned servers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineMemory {
    pub bytes: u64,
    /// What the number is, e.g. `INFO memory used_memory`, `stats bytes`,
    /// `pg_total_relation_size of dbsweep's tables`.
    pub source: String,
}

/// Rows to bulk-load into one table, streamed.
pub type RowSource = Box<dyn Iterator<Item = Row> + Send>;

/// One configured system under test.
///
/// Lifecycle: `prepare` (create the namespace and tables, dropping only what dbsweep
/// created earlier), `load` per table, any number of `connect`s, then `cleanup`.
#[async_trait]
pub trait Target: Send + Sync {
    fn info(&self) -> &TargetInfo;

    /// Creates dbsweep's namespace (marked as its own) and empty tables with their
    /// indexes. Refuses with `Error::NotOwned` if a same-named object exists that dbsweep
    /// did not create.
    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()>;

    /// Bulk-loads rows into a prepared table by the system's fastest path; returns the
    /// number of rows loaded.
    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64>;

    /// Opens one client session.
    async fn connect(&self) -> Result<Box<dyn Connection>>;

    /// Number of rows stored in a table (used by tests and load checks).
    async fn count_rows(&self, table: &TableDef) -> Result<u64>;

    /// Removes everything dbsweep created in this target.
    async fn cleanup(&self) -> Result<()>;

    /// Where this target keeps its run's ownership lease (see [`lease`]); `None` when no
    /// other run can reach its data (in-process stores, throwaway files, file engines that
    /// hold a [`lease::FileLease`] from `open` on).
    fn lease(self: Arc<Self>) -> Option<Arc<dyn lease::LeaseStore>> {
        None
    }

    /// The memory the engine reports for dbsweep's data (or, where it cannot tell data
    /// apart, for the whole engine), read without changing anything. `None` when the
    /// system has no such figure. Read between runs only, never while ops are timed.
    async fn engine_memory(&self) -> Result<Option<EngineMemory>> {
        Ok(None)
    }
}

/// One client's session with a target.
#[async_trait]
pub trait Connection: Send {
    /// Executes one op as one request.
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError>;

    /// Executes a batch (all ops of one kind) as one request where the system can; the
    /// default loops over `execute`. A failure fails the whole batch.
    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        let mut rows = 0;
        for op in ops {
            rows += self.execute(op).await?.rows;
        }
        Ok(Outcome::rows(rows))
    }
}

/// What every adapter of a run shares.
#[derive(Debug, Clone)]
pub struct OpenContext {
    /// Where embedded engines without an explicit path keep their files.
    pub scratch_dir: PathBuf,
    /// dbsweep's namespace in shared targets (`--namespace`).
    pub namespace: lease::Namespace,
    /// This run, as its leases name it.
    pub holder: lease::Holder,
}

impl OpenContext {
    /// The default namespace and a fresh run identity.
    pub fn new(scratch_dir: impl Into<PathBuf>) -> Self {
        OpenContext { scratch_dir: scratch_dir.into(), namespace: lease::Namespace::default(), holder: lease::Holder::this_process() }
    }
}

/// Systems dbsweep knows of, runnable here or not, for `dbsweep targets`.
pub struct SystemEntry {
    pub scheme: &'static str,
    pub system: &'static str,
    pub description: &'static str,
    /// `None` when runnable; otherwise why not.
    pub unavailable: Option<&'static str>,
}

pub const SYSTEMS: &[SystemEntry] = &[
    SystemEntry {
        scheme: "nodb:",
        system: "nodb",
        description: "no database: each op only bumps a counter (the client-overhead ceiling)",
        unavailable: None,
    },
    SystemEntry {
        scheme: "mock:",
        system: "mock",
        description: "deterministic in-process reference store (a BTreeMap); answers every op exactly",
        unavailable: None,
    },
    SystemEntry {
        scheme: "sqlite:[PATH]",
        system: "sqlite",
        description: "SQLite, embedded row store (WAL, synchronous=NORMAL)",
        unavailable: None,
    },
    SystemEntry {
        scheme: "duckdb:[PATH]",
        system: "duckdb",
        description: "DuckDB, embedded column store (prebuilt libduckdb)",
        unavailable: None,
    },
    SystemEntry {
        scheme: "redb:[PATH]",
        system: "redb",
        description: "redb, embedded copy-on-write B-tree key-value store",
        unavailable: None,
    },
    SystemEntry {
        scheme: "redis://",
        system: "redis",
        description: "Redis: a hash per row, sorted sets for keys and indexes, Lua for MAX (?batch=multi|pipeline)",
        unavailable: None,
    },
    SystemEntry {
        scheme: "memcached://",
        system: "memcached",
        description: "Memcached: one item per row (text protocol); no scans, ranges or queries",
        unavailable: None,
    },
    SystemEntry {
        scheme: "postgres://",
        system: "pg-row",
        description: "PostgreSQL, a typed column per attribute (?layout=row, the default)",
        unavailable: None,
    },
    SystemEntry {
        scheme: "postgres://?layout=hstore",
        system: "pg-hstore",
        description: "PostgreSQL, key-value table (pk, hstore) with expression indexes",
        unavailable: None,
    },
    SystemEntry {
        scheme: "postgres://?layout=jsonb",
        system: "pg-jsonb",
        description: "PostgreSQL, key-value table (pk, jsonb) with expression indexes",
        unavailable: None,
    },
    SystemEntry {
        scheme: "mysql://",
        system: "mariadb",
        description: "MariaDB or MySQL, InnoDB tables (also mariadb://)",
        unavailable: None,
    },
    SystemEntry {
        scheme: "mysql-cli://",
        system: "mariadb-cli",
        description: "MariaDB through the `mariadb`/`mysql` command-line client over stdin (?spawn=per-op); echo, insert, get, multi-get, delete",
        unavailable: None,
    },
    SystemEntry {
        scheme: "redis-cli://",
        system: "redis-cli",
        description: "Redis through `redis-cli` over stdin (?spawn=per-op); echo, insert, get, multi-get, delete",
        unavailable: None,
    },
    SystemEntry {
        scheme: "hyper://",
        system: "hyper",
        description: "HyPer (Tableau Hyper's hyperd), PostgreSQL wire protocol; no indexes (every op scans)",
        unavailable: None,
    },
    SystemEntry {
        scheme: "h2://",
        system: "h2",
        description: "H2 (Java), PostgreSQL wire protocol of its PG server; in-memory database mem:NAME, typed columns",
        unavailable: None,
    },
    SystemEntry {
        scheme: "cassandra://",
        system: "cassandra",
        description: "Apache Cassandra (CQL, scylla driver): prepared statements, token-aware; SAI indexes for ranges; IF EXISTS deletes/updates (?affected=read: read then write); no scans",
        unavailable: None,
    },
    SystemEntry {
        scheme: "monetdb://",
        system: "monetdb",
        description: "MonetDB column store",
        unavailable: Some("no MonetDB server package is reachable from these machines"),
    },
    SystemEntry {
        scheme: "aerospike://",
        system: "aerospike",
        description: "Aerospike key-value store",
        unavailable: Some("no Aerospike server package is reachable from these machines"),
    },
    SystemEntry {
        scheme: "ssdb://",
        system: "ssdb",
        description: "SSDB (Redis protocol on LevelDB)",
        unavailable: Some("no SSDB server package is reachable from these machines"),
    },
    SystemEntry {
        scheme: "mongodb://",
        system: "mongodb",
        description: "MongoDB document store",
        unavailable: Some("no MongoDB server package is reachable from these machines"),
    },
];

/// Builds the adapter for a target URL.
pub fn open(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Arc<dyn Target>> {
    match url.scheme() {
        "nodb" => Ok(Arc::new(nodb::NoDb::new(name, url))),
        "mock" => Ok(Arc::new(mock::Mock::new(name, url)?)),
        "sqlite" => Ok(Arc::new(sqlite::Sqlite::open(name, url, ctx)?)),
        "redb" => Ok(Arc::new(redb::Redb::open(name, url, ctx)?)),
        "duckdb" => Ok(Arc::new(duckdb::DuckDb::open(name, url, ctx)?)),
        "redis" => Ok(Arc::new(redis::Redis::new(name, url, ctx)?)),
        "memcached" => Ok(Arc::new(memcached::Memcached::new(name, url, ctx)?)),
        "postgres" | "postgresql" => Ok(Arc::new(postgres::Postgres::new(name, url, ctx)?)),
        "hyper" => Ok(Arc::new(hyper::Hyper::new(name, url, ctx)?)),
        "h2" => Ok(Arc::new(h2::H2::new(name, url, ctx)?)),
        "cassandra" => Ok(Arc::new(cassandra::Cassandra::new(name, url, ctx)?)),
        "mysql" | "mariadb" => Ok(Arc::new(mysql::MySql::new(name, url, ctx)?)),
        "mysql-cli" | "mariadb-cli" | "redis-cli" => Ok(Arc::new(cli_client::CliTarget::new(name, url, ctx)?)),
        other => match SYSTEMS.iter().find(|s| s.scheme.trim_end_matches(":[PATH]").trim_end_matches("://").trim_end_matches(':') == other)
        {
            Some(SystemEntry { unavailable: Some(why), .. }) => {
                Err(Error::usage(format!("target '{name}': {other} cannot run here: {why}")))
            }
            _ => Err(Error::usage(format!("target '{name}': unknown URL scheme '{other}:'; see `dbsweep targets` for the supported ones"))),
        },
    }
}
