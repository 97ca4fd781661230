//! Untimed row checks after a run, for targets whose replies cannot say how many rows a
//! request touched: a plain Cassandra `DELETE` is acknowledged whether or not the key
//! existed. After such a run the deleted keys are read back on a fresh connection; every
//! key the plan expected to delete that is still there is a missing row, which voids the
//! run as any short request does.
//!
//! Owns that read-back and its accounting. Must not run while ops are timed (the client
//! loop has finished and the run's seconds are fixed) and must not change any data.

use super::client::RunJob;
use crate::adapter::Connection;
use crate::base::measurement::RunMeasurement;
use crate::base::op::{Op, OpKind};
use crate::base::table::TableId;
use std::collections::BTreeMap;

/// Keys per read-back request (one multi-get where the target has one).
const CHUNK: usize = 100;

/// Reads back the keys a delete run removed (those the plan expected to exist) and counts
/// every one still stored as a short op with a missing row. A read-back that fails is an
/// error of class `verify`: the run is void, because its deletes could not be confirmed.
pub async fn blind_deletes(job: &RunJob, m: &mut RunMeasurement) {
    if m.ops != job.seqs.end - job.seqs.start {
        // A time limit stopped the run early: which deletes were sent is not known.
        *m.errors.entry("verify".into()).or_default() += 1;
        m.error_samples.push("deletes cut short by a time limit cannot be read back".into());
        return;
    }
    let mut keys: BTreeMap<TableId, Vec<i64>> = BTreeMap::new();
    for seq in job.seqs.clone() {
        let planned = job.stream.planned_in_share(&job.point, job.point_index, job.run, seq, job.seqs.start, job.clients);
        if let (Op::Delete { table, key }, true) = (&planned.op, planned.expected_rows > 0) {
            keys.entry(*table).or_default().push(*key);
        }
    }
    if keys.is_empty() {
        return;
    }
    let still_there = match job.target.connect().await {
        Ok(mut conn) => {
            let multi = job.target.info().capabilities.supports_kind(OpKind::MultiGet);
            count_present(conn.as_mut(), &keys, multi).await
        }
        Err(e) => Err(e.to_string()),
    };
    match still_there {
        Ok(found) => account(m, found),
        Err(message) => {
            *m.errors.entry("verify".into()).or_default() += 1;
            m.error_samples.push(format!("reading the deleted keys back failed: {message}"));
        }
    }
}

/// How many of `keys` the target still stores.
async fn count_present(conn: &mut dyn Connection, keys: &BTreeMap<TableId, Vec<i64>>, multi: bool) -> Result<u64, String> {
    let mut found = 0;
    for (table, keys) in keys {
        for chunk in keys.chunks(CHUNK) {
            if multi {
                found += conn.execute(&Op::MultiGet { table: *table, keys: chunk.to_vec() }).await.map_err(|e| e.to_string())?.rows;
            } else {
                for key in chunk {
                    found += conn.execute(&Op::Get { table: *table, key: *key }).await.map_err(|e| e.to_string())?.rows;
                }
            }
        }
    }
    Ok(found)
}

/// Moves `found` ops (one key each) from ok to short, with one missing row each.
fn account(m: &mut RunMeasurement, found: u64) {
    let moved = found.min(m.ok_ops);
    m.ok_ops -= moved;
    m.short_ops += moved;
    m.missing_rows += found;
    m.rows = m.rows.saturating_sub(found);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_still_there_move_from_ok_to_short() {
        let mut m = crate::stats::Recorder::default().into_measurement(0, false, 1.0, 0.0, true);
        (m.ops, m.ok_ops, m.rows) = (10, 10, 10);
        account(&mut m, 0);
        assert!(!m.is_void());
        account(&mut m, 3);
        assert_eq!((m.ops, m.ok_ops, m.short_ops, m.missing_rows, m.rows), (10, 7, 3, 3, 7));
        assert!(m.is_void() && m.ops_per_sec().is_none());
    }
}
