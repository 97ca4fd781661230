//! The adapter contract between the runner and a system; one module per system; the
//! factory that picks the adapter for a target URL (`registry`).
//!
//! Owns `Target` (one configured system: namespace, schema, loading, connections) and
//! `Connection` (one client's session that executes ops). Adapters declare what they can
//! do in `Capabilities`; the runner reports "not supported" instead of calling them with
//! ops outside it. Adapters must not time anything or keep statistics: the runner does.
//! The systems' modules import this contract and the shared layers below it (`sql`),
//! never `registry`, which is the only module that names them all.

#[cfg(test)]
mod catalog;
pub mod cli_client;
pub mod declaration;
pub mod embedded;
pub mod kv;
pub mod lease;
pub mod mock;
pub mod mysql;
pub mod nodb;
pub mod pgwire;
pub mod probe;
pub mod registry;
pub mod sql;
pub mod url;

use crate::base::op::{Answer, Needs, Op, OpError, OpKind, Outcome, QueryId};
use crate::base::table::{RowSource, TableDef};
use crate::error::{Error, Result};
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
    /// Network clients, each a task on a single-threaded runtime of its own OS thread;
    /// requests time out as `Async`'s do, or at the socket's read timeout where the
    /// session blocks. For sessions that block on their socket (MariaDB's and PostgreSQL's
    /// sessions of dbsweep's own: a send and a receive per request, no reactor),
    /// which the shared runtime cannot host; measured less client CPU per request than
    /// async drivers on the shared runtime (see bench/README.md).
    AsyncThreads,
}

impl Execution {
    /// The name reports show (as in report.json).
    pub fn name(self) -> &'static str {
        match self {
            Execution::Async => "async",
            Execution::Blocking => "blocking",
            Execution::AsyncThreads => "async_threads",
        }
    }

    /// Whether each client runs on an OS thread of its own.
    pub fn own_threads(self) -> bool {
        matches!(self, Execution::Blocking | Execution::AsyncThreads)
    }

    /// Whether a request can be timed out (a blocking call cannot be interrupted).
    pub fn timed(self) -> bool {
        self != Execution::Blocking
    }
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
    /// The family of a custom operation's statements it runs (`op = "custom"`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statements: Option<crate::base::custom::Family>,
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

    /// True when the target offers everything an experiment needs.
    pub fn meets(&self, needs: &Needs) -> bool {
        match needs {
            Needs::Query(q) => self.queries.contains(q),
            Needs::Kinds(kinds) => kinds.iter().all(|k| self.supports_kind(*k)),
            // No family with `Custom`: the NO-DB ceiling, which runs any as no work.
            Needs::Custom(families) => self.supports_kind(OpKind::Custom) && self.statements.is_none_or(|f| families.contains(&f)),
        }
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

/// How many more connections a server accepts now, as it reports them: its limit, less
/// what it keeps for other roles and what other sessions hold (see
/// [`Target::connection_room`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRoom {
    /// Connections this run can still open.
    pub free: u64,
    /// The figures `free` comes from, as the server names them, e.g. `max_connections=100,
    /// 3 reserved, 2 in use`.
    pub limit: String,
    /// The server setting that raises the limit, e.g. `max_connections`.
    pub setting: &'static str,
}

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

    /// Whether a worker process of a run (`run --workers N`) can join this target's data
    /// with [`Target::attach`] after the coordinator prepared and loaded it. False for
    /// in-process engines (each process would have a database of its own) and for
    /// adapters that cannot yet learn a prepared layout without creating it.
    fn joins_workers(&self) -> bool {
        false
    }

    /// In a worker process: takes up `tables` as another process of this run prepared and
    /// loaded them, so `connect` works here, without creating, changing or removing
    /// anything. Only called where [`Target::joins_workers`] is true.
    async fn attach(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let _ = tables;
        Err(Error::usage(format!("{}: cannot take part in a run with --workers", self.info().system)))
    }

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

    /// How many more connections the server accepts, read from it on a connection of its
    /// own (not counted as taken: it is closed when this returns). `None` when the system
    /// has no such limit or does not tell it to this user; `Err` only when the server
    /// cannot be reached, as `connect` would fail.
    async fn connection_room(&self) -> Result<Option<ConnectionRoom>> {
        Ok(None)
    }

    /// True when a delete's reply cannot say whether the key existed (a plain Cassandra
    /// `DELETE`): the adapter then reports one row per key sent, and the runner reads the
    /// deleted keys back after the run, untimed, counting any still stored as missing rows.
    fn blind_deletes(&self) -> bool {
        false
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

/// A batch of ops that each are a request of their own (scripts, custom operations): run
/// one after another, rows and retries summed, and their answers, when each has one,
/// folded in order into the batch's answer (so batches of the same ops compare).
pub async fn one_by_one<C: Connection + ?Sized>(conn: &mut C, ops: &[Op]) -> Result<Outcome, OpError> {
    let (mut rows, mut retries, mut digest) = (0, 0, Some(0x000B_47C4_u64));
    for op in ops {
        let outcome = conn.execute(op).await?;
        (rows, retries) = (rows + outcome.rows, retries + outcome.retries);
        digest = digest.zip(outcome.answer).map(|(d, a)| crate::base::rng::mix(d, a.fingerprint()));
    }
    let outcome = match digest {
        Some(d) if !ops.is_empty() => Outcome::answer(rows, Answer::Scalar(crate::base::table::Value::Int(d as i64))),
        _ => Outcome::rows(rows),
    };
    Ok(outcome.after_retries(retries))
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
    /// `--durability`: embedded engines open at this level unless their URL sets one.
    pub durability: Option<crate::base::durability::Durability>,
    /// `--timeout`: how long one request may wait for its reply, for drivers whose requests
    /// block (a blocking read cannot be cut short by the runner's timer).
    pub request_timeout: std::time::Duration,
}

impl OpenContext {
    /// The default namespace and a fresh run identity.
    pub fn new(scratch_dir: impl Into<PathBuf>) -> Self {
        OpenContext {
            scratch_dir: scratch_dir.into(),
            namespace: lease::Namespace::default(),
            holder: lease::Holder::this_process(),
            durability: None,
            request_timeout: std::time::Duration::from_secs(60),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn execution_names_are_the_ones_reports_save() {
        for execution in [Execution::Async, Execution::Blocking, Execution::AsyncThreads] {
            assert_eq!(serde_json::to_string(&execution).unwrap(), format!("\"{}\"", execution.name()));
        }
        assert!(Execution::AsyncThreads.own_threads() && Execution::AsyncThreads.timed());
        assert!(Execution::Blocking.own_threads() && !Execution::Blocking.timed());
        assert!(!Execution::Async.own_threads() && Execution::Async.timed());
    }
}
