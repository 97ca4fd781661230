//! The untimed removal of the rows a run added or left behind, so every experiment leaves
//! the data as it found it: an insert run's keys (checked: every one stored), the
//! preloaded keys a delete run stopped early did not delete, a YCSB workload's inserts.
//! Must not time anything or decide flags.

use super::PointUnit;
use crate::adapter::Target;
use crate::base::measurement::RunMeasurement;
use crate::base::op::{Op, OpKind};
use crate::error::{Error, Result};
use crate::workload::experiment::{Experiment, ExperimentOp, OpStream, Point};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Later experiments (index ranges, analytic queries) expect the generated data: removes,
/// untimed, what an insert run inserted (a run stopped early by `--precision` inserted the
/// keys of its first ops only) and the preloaded rows a delete run stopped early left.
pub(super) async fn remove_leftovers(
    unit: &PointUnit<'_>,
    target: &dyn Target,
    run: u32,
    planned_ops: u64,
    m: &RunMeasurement,
) -> std::result::Result<(), String> {
    let stream = unit.stream;
    match unit.experiment.op {
        ExperimentOp::Insert => {
            // A complete run did exactly its first `m.ops` ops; an interrupted one may have
            // done any of its claimed ops: of an open-ended run (claims of one request) the
            // ones counted and at most one request per client left in flight.
            let done = match (m.complete, stream.open_ended()) {
                (true, _) => m.ops,
                (false, true) => planned_ops.min(m.ops + (unit.point.clients * unit.point.batch.max(1)) as u64),
                (false, false) => planned_ops,
            };
            let keys = stream.inserted_keys(&unit.point, unit.point_index, run, done);
            remove_keys(target, stream.table(), &keys, Some(m.rows)).await.map_err(|e| format!("inserted rows left in place: {e}"))
        }
        ExperimentOp::Delete if m.ops < planned_ops && m.complete => {
            let left: Vec<i64> = (m.ops..planned_ops)
                .filter_map(|seq| match stream.op(&unit.point, unit.point_index, run, seq) {
                    Op::Delete { key, .. } => Some(key),
                    _ => None,
                })
                .collect();
            remove_keys(target, stream.table(), &left, None).await.map_err(|e| format!("preloaded rows left in place: {e}"))
        }
        _ => Ok(()),
    }
}

/// Deletes `keys` in batches, untimed, so every experiment leaves the data as it found it.
/// With `inserted`, the run's count of inserted rows: every one must be found again, which
/// checks that they were stored.
async fn remove_keys(target: &dyn Target, table: crate::base::table::TableId, keys: &[i64], inserted: Option<u64>) -> Result<()> {
    if !target.info().capabilities.supports_kind(OpKind::Delete) {
        return Err(Error::runtime(format!("{} cannot delete", target.info().system)));
    }
    let mut conn = target.connect().await?;
    let mut deleted = 0;
    for chunk in keys.chunks(500) {
        let ops: Vec<Op> = chunk.iter().map(|&key| Op::Delete { table, key }).collect();
        deleted += conn.execute_batch(&ops).await.map_err(|e| Error::runtime(e.to_string()))?.rows;
    }
    match inserted {
        Some(n) if n != deleted => Err(Error::runtime(format!("{n} rows reported inserted, {deleted} found stored"))),
        _ => Ok(()),
    }
}

/// After a YCSB workload with inserts ran its points at one record count: removes the
/// records it inserted from every target, so the next workload reads exactly the loaded
/// records (YCSB's advice: reload between workloads that insert).
pub(super) async fn remove_workload_inserts(
    targets: &[Arc<dyn Target>],
    failed_targets: &BTreeMap<String, String>,
    experiment: &Experiment,
    stream: &OpStream,
    in_round: &dyn Fn(&Point) -> bool,
    warnings: &mut Vec<String>,
) {
    let mut keys = Vec::new();
    for (pi, point) in experiment.points.iter().enumerate().filter(|(_, p)| in_round(p)) {
        for run in 0..experiment.warmup + experiment.runs {
            keys.extend(stream.inserted_keys(point, pi, run, stream.ops_at(point)));
        }
    }
    if keys.is_empty() {
        return;
    }
    for t in targets.iter().filter(|t| t.info().system != "nodb" && !failed_targets.contains_key(&t.info().name)) {
        if let Err(e) = remove_keys(t.as_ref(), stream.table(), &keys, None).await {
            warnings.push(format!("{} / {}: records the workload inserted were left in place: {e}", experiment.name, t.info().name));
        }
    }
}
