//! NO-DB: a target whose every op only bumps a counter.
//!
//! It runs through exactly the same runner path as real systems, so its throughput is the
//! ceiling of dbsweep's client machinery for the same settings: a result near it is
//! client-bound. Must not do any work per op beyond the counter.

use super::declaration::{CapabilitySet, Declaration, Needs, OpSet, UrlOptions};
use super::{Connection, Execution, RowSource, Target, TargetInfo, TargetUrl};
use crate::base::op::{Op, OpError, OpKind, Outcome, QueryId};
use crate::base::table::TableDef;
use crate::error::Result;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

pub const SYSTEM: Declaration = Declaration {
    system: "nodb",
    url: "nodb:",
    description: "no database: each op only bumps a counter (the client-overhead ceiling)",
    needs: Needs::BuiltIn,
    schemes: &["nodb"],
    options: UrlOptions::Only(&[]),
    several_hosts: false,
    capabilities: CapabilitySet {
        ops: OpSet::ALL.without(OpKind::Mixed),
        queries: &[QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14],
        native_batch: true,
        secondary_indexes: false,
        // Every family's: the ceiling runs any custom operation as no work.
        statements: None,
    },
    open: Some(|name, url, _| Ok(Arc::new(NoDb::new(name, url)))),
};

pub struct NoDb {
    info: TargetInfo,
}

impl NoDb {
    pub fn new(name: &str, url: &TargetUrl) -> Self {
        NoDb {
            info: SYSTEM.target_info(
                name,
                url,
                // Each client on a thread of its own: its requests never wait, so as tasks of
                // the shared runtime two clients woken on one worker ran one after the other
                // (that worker's LIFO slot is never stolen) and the ceiling came out as one
                // client's. Timed like any network request.
                Execution::AsyncThreads,
                env!("CARGO_PKG_VERSION"),
                BTreeMap::from([("work_per_op".into(), "counter increment".into())]),
            ),
        }
    }
}

#[async_trait]
impl Target for NoDb {
    fn info(&self) -> &TargetInfo {
        &self.info
    }

    async fn prepare(&self, _tables: &[Arc<TableDef>]) -> Result<()> {
        Ok(())
    }

    async fn load(&self, _table: &TableDef, rows: RowSource) -> Result<u64> {
        Ok(rows.count() as u64)
    }

    fn joins_workers(&self) -> bool {
        true
    }

    async fn attach(&self, _tables: &[Arc<TableDef>]) -> Result<()> {
        Ok(())
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        Ok(Box::new(NoDbConnection { counter: 0 }))
    }

    async fn count_rows(&self, _table: &TableDef) -> Result<u64> {
        Ok(0)
    }

    async fn cleanup(&self) -> Result<()> {
        Ok(())
    }
}

/// Aligned to two cache lines (the adjacent-line prefetcher pairs them): connections are
/// allocated one after another, and two clients' counters on one line made every increment
/// a cache miss on the other core (two clients ran no faster than one).
#[repr(align(128))]
struct NoDbConnection {
    counter: u64,
}

#[async_trait]
impl Connection for NoDbConnection {
    async fn execute(&mut self, op: &Op) -> Result<Outcome, OpError> {
        black_box(op);
        self.counter = black_box(self.counter + 1);
        Ok(Outcome::rows(1))
    }

    async fn execute_batch(&mut self, ops: &[Op]) -> Result<Outcome, OpError> {
        black_box(ops);
        self.counter = black_box(self.counter + ops.len() as u64);
        Ok(Outcome::rows(ops.len() as u64))
    }
}
