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

use crate::adapter::declaration::{CapabilitySet, OpSet};
use crate::base::op::QueryId;

/// The analytic queries every SQL engine's dialect spells (`tpch`).
pub const QUERIES: [QueryId; 4] = [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14];

/// What a SQL engine runs through this layer: every op, the TPC-H queries, a batch in one
/// transaction, secondary indexes. An engine that does less says so from this
/// (`CapabilitySet { secondary_indexes: false, ..CAPABILITIES }`).
pub const CAPABILITIES: CapabilitySet = CapabilitySet {
    ops: OpSet::ALL,
    queries: &QUERIES,
    native_batch: true,
    secondary_indexes: true,
    statements: Some(crate::base::custom::Family::Sql),
};
