//! The tests whose checks rest on time or memory measured on this machine, and so need it
//! to themselves: `compare` (A/A pairs call almost nothing, an A/B pair calls a real
//! change), `calibration` (a calibrated estimate against the real time), `in_memory` (a
//! server's PSS grows over writes: another test's server starting or stopping changes how
//! shared pages divide) and `tpch_cache` (a run's peak RSS: a child started from a large
//! test process starts its high-water mark at the parent's). A binary of their own, which
//! cargo runs before or after the others and never beside them, and within it one test at
//! a time (`alone`). As separate binaries they passed; beside the other end-to-end tests
//! each failed once.

#[path = "../support/mod.rs"]
mod support;

mod calibration;
mod compare;
mod in_memory;
mod tpch_cache;

use std::sync::{Mutex, MutexGuard};

static ALONE: Mutex<()> = Mutex::new(());

/// Held for a whole test: no other test of this binary runs meanwhile.
pub fn alone() -> MutexGuard<'static, ()> {
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}
