//! What every SQL adapter shares, so that a new SQL engine is a dialect (and, for a
//! PostgreSQL-protocol engine, a flavor of `pgwire`).
//!
//! - `statement`: the one key of every statement cache (`Statement`).
//! - `dialect`: what engines spell differently (`Dialect`) and every statement written
//!   once over it (`SqlTable`); `dialects`: the engines' dialects.
//! - `plan`: ops -> statements with their arguments, replies -> outcomes (the one planner);
//!   `connection`: `SqlConnection`, the session of every SQL engine over its driver's
//!   `Executor`, and the one statement cache.
//! - `script`: one pass of a user's SQL script (`run --sql-file`) and its answer;
//! - `tpch`: the TPC-H query texts, per dialect; `listing`: every statement of every
//!   dialect, locked by `tests/golden/statements.txt`.
//!
//! Must not open connections or decide when statements run.

pub mod connection;
pub mod dialect;
pub mod dialects;
pub mod listing;
pub mod plan;
pub mod script;
pub mod statement;
pub mod tpch;
