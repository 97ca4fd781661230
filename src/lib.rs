//! dbsweep benchmarks key-value stores and relational databases side by side on the same
//! generated data and the same operations, and turns the runs into tables and charts.
//!
//! # Layout
//! Modules stand on floors; a module imports only from floors below its own (and from its
//! own children), so data and calls flow one way: plan -> data/workload -> runner ->
//! adapter -> system, and measurements back up through stats into report.
//!
//! ```text
//! 5  app            dispatch of commands, printing, exit codes (`dbsweep::main`)
//! 4  runner  cli    runner: clients, batching, warm-up and measured runs, cancellation;
//!                   lifecycle studies and memory readings; merging shards' run directories;
//!                   workers of one run (coordinator barrier, exact sum of their shares);
//!                   cli: clap commands, no logic (`run` parses into `plan::RunOptions`)
//! 3  plan   report  plan: raw options (CLI + TOML) -> validated `Plan` with typed targets
//!                   (spawned servers' too), built-in studies;
//!                   report: the saved result model, exporters, run comparison
//! 2  adapter  workload  servers
//!                   adapter: the `Target`/`Connection` contract (mod.rs), the systems, the
//!                   layers they share (`sql`) and the factory (`registry`, the only module
//!                   that names every system); workload: experiments -> seeded op streams,
//!                   YCSB; servers: throwaway local servers (`--spawn`, end-to-end tests)
//!                   Inside adapter, again downward only:
//!                     registry -> a system's module -> its family's shared session and
//!                     target (pgwire, embedded) -> sql -> the contract
//!                   sql: statements, dialects, the planner, the one SQL session; pgwire: the
//!                   PostgreSQL-protocol session and target (flavors; PostgreSQL's measured
//!                   clients on a session of their own, `pgwire::direct`); embedded: the
//!                   in-process SQL session and target (engines). A SQL system is a dialect
//!                   plus a flavor (pgwire), an engine (embedded) or its own
//!                   `Executor` (mysql: on a connection of its own, `mysql::direct`;
//!                   cli_client). One system stands on others:
//!                   cli_client's targets prepare and load through the mysql and redis
//!                   adapters, then query with the command-line clients.
//! 1  data   stats   data: generated rows (TPC-H, kv, YCSB records, shuffled keys) and the
//!                   TPC-H queries' parameters and answer shapes; stats: HDR recorders,
//!                   client CPU
//! 0  base   error
//!                   base: the vocabulary everyone speaks (`Op`, table definitions and
//!                   values, counter-based randomness, one run's measurement);
//!                   error: the error type and exit codes
//! ```
//!
//! Siblings on one floor do not import each other (adapter and workload meet only in the
//! runner). `cargo doc` or a look at the `use crate::` lines of a file shows its floor.

pub mod adapter;
mod app;
pub mod base;
pub mod cli;
pub mod data;
pub mod error;
pub mod plan;
pub mod report;
pub mod runner;
pub mod servers;
pub mod stats;
pub mod workload;

pub use app::main;
