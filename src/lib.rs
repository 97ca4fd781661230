//! dbsweep benchmarks key-value stores and relational databases side by side on the same
//! generated data and the same operations, and turns the runs into tables and charts.
//!
//! # Layout
//! - `app`: dispatch of commands, printing, exit codes (`dbsweep::main`).
//! - `cli`: clap commands, no logic.
//! - `plan`: raw options (CLI + TOML study files) become a validated `Plan`; built-in studies.
//! - `data`: table definitions and generated rows (pure functions of seed and key).
//! - `workload`: the `Op` vocabulary, counter-based randomness, experiments -> op streams.
//! - `adapter`: the `Target`/`Connection` contract and one module per system.
//! - `runner`: clients, batching, warm-up and measured runs, cancellation; lifecycle
//!   studies and memory readings.
//! - `servers`: throwaway local servers for `--spawn` and the end-to-end tests.
//! - `stats`: HDR recorders and summaries, client CPU.
//! - `report`: the saved result model and its exporters (console, CSV, JSON, HTML) and run comparison.
//! - `error`: the error type and the exit-code scheme.

pub mod adapter;
mod app;
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
