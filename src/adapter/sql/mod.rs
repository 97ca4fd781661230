//! What the SQL adapters share: the TPC-H query texts per dialect (`tpch`).
//!
//! Must not open connections or decide when statements run.

pub mod tpch;
