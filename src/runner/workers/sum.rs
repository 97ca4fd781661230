//! The exact sum of the workers' measurements of one run: counts and errors add, latency
//! histograms add (percentiles are never averaged; interval histograms interval by interval), answer digests add (they are
//! order-independent sums), and the run's time is the union of the workers' windows, so
//! throughput is all ops over the time any worker was sending.
//!
//! Owns that arithmetic. Must not talk to workers or decide flags.

use crate::base::measurement::{LatencySummary, RunMeasurement};
use crate::runner::client::Window;
use crate::stats::{add_counts, add_errors, merge_summaries};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

/// One worker's share of a run; its window already on the coordinator's clock.
pub struct Part {
    pub measurement: RunMeasurement,
    pub window: Option<Window>,
}

/// The summed run and how well the workers' windows overlapped: the time all of them were
/// sending over the time any was (1 when they ran exactly together; `None` with fewer than
/// two windows).
pub fn sum(parts: Vec<Part>) -> (RunMeasurement, Option<f64>) {
    let windows: Vec<Window> = parts.iter().filter_map(|p| p.window).collect();
    let mut iter = parts.into_iter().map(|p| p.measurement);
    let mut total = iter.next().expect("at least the coordinator's part");
    let mut digest = parse_digest(&total.answer_digest);
    let mut service = vec![total.service.clone()];
    let mut response = vec![total.response.clone()];
    for mut m in iter {
        total.complete &= m.complete;
        add_counts(&mut total, &mut m);
        total.client_cpu_seconds += m.client_cpu_seconds;
        add_errors(&mut total.errors, &mut total.error_samples, m.errors, m.error_samples);
        digest = match (digest, parse_digest(&m.answer_digest)) {
            (Some(a), Some(b)) => Some(a.wrapping_add(b)),
            (a, b) => a.or(b),
        };
        // Worker shares are in sequence order, so the first sample is the lowest op's.
        total.sample_answer = total.sample_answer.take().or(m.sample_answer);
        service.push(m.service);
        response.push(m.response);
        total.intervals = match (total.intervals.take(), m.intervals) {
            // Interval by interval, each worker's counted from its own start (they start
            // together behind the coordinator's gate); undecodable ones are dropped whole
            // rather than half added.
            (Some(mut mine), Some(theirs)) => mine.add(&theirs).map(|()| mine),
            (mine, theirs) => mine.or(theirs),
        };
    }
    total.answer_digest = digest.map(|d| format!("{d:016x}"));
    total.service = add_histograms(&service);
    total.response = add_histograms(&response);
    total.seconds = union_seconds(&windows);
    let overlap = (windows.len() > 1).then(|| {
        let together = windows.iter().map(|w| w.end).min().unwrap().duration_since(windows.iter().map(|w| w.start).max().unwrap());
        together.map_or(0.0, |d| d.as_secs_f64()) / total.seconds.max(f64::MIN_POSITIVE)
    });
    (total, overlap)
}

fn parse_digest(hex: &Option<String>) -> Option<u64> {
    hex.as_deref().and_then(|h| u64::from_str_radix(h, 16).ok())
}

/// Per op kind, the sum of the workers' histograms.
fn add_histograms<K: Ord + Copy>(parts: &[BTreeMap<K, LatencySummary>]) -> BTreeMap<K, LatencySummary> {
    let kinds: BTreeSet<K> = parts.iter().flat_map(|p| p.keys().copied()).collect();
    kinds.into_iter().filter_map(|k| Some((k, merge_summaries(parts.iter().filter_map(|p| p.get(&k)))?))).collect()
}

/// The length of the union of the windows, in seconds.
fn union_seconds(windows: &[Window]) -> f64 {
    let mut sorted: Vec<(SystemTime, SystemTime)> = windows.iter().map(|w| (w.start, w.end.max(w.start))).collect();
    sorted.sort();
    let mut total = Duration::ZERO;
    let mut current: Option<(SystemTime, SystemTime)> = None;
    for (start, end) in sorted {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e.duration_since(s).unwrap_or_default();
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = current {
        total += e.duration_since(s).unwrap_or_default();
    }
    total.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::op::{Answer, ErrorClass, OpKind};
    use crate::stats::Recorder;

    fn recorder(latencies_us: &[u64], first_seq: u64) -> Recorder {
        let mut r = Recorder::default();
        for (i, &us) in latencies_us.iter().enumerate() {
            r.ops += 1;
            r.ok_ops += 1;
            r.requests += 1;
            r.rows += 1;
            r.record_service(OpKind::Get, Duration::from_micros(us));
            r.record_answer(first_seq + i as u64, &Answer::Scalar(crate::base::table::Value::Int(us as i64)));
        }
        r
    }

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn the_sum_of_shares_is_the_measurement_of_one_process_doing_all_of_them() {
        let (a, b) = (&[10, 20, 30, 4000][..], &[15, 25, 5000, 7][..]);
        let mut whole = recorder(a, 0);
        whole.merge(recorder(b, 4));
        let whole = whole.into_measurement(1, false, 2.0, 0.0, true);
        let parts = vec![
            Part {
                measurement: recorder(a, 0).into_measurement(1, false, 1.0, 0.25, true),
                window: Some(Window { start: at(0), end: at(1000) }),
            },
            Part {
                measurement: recorder(b, 4).into_measurement(1, false, 1.5, 0.5, true),
                window: Some(Window { start: at(500), end: at(2000) }),
            },
        ];
        let (total, overlap) = sum(parts);
        assert_eq!((total.ops, total.ok_ops, total.requests, total.rows), (8, 8, 8, 8));
        assert_eq!(total.service, whole.service, "histograms add: the same percentiles as one process");
        assert_eq!(total.answer_digest, whole.answer_digest);
        assert_eq!(total.seconds, 2.0, "the union of [0, 1] and [0.5, 2]");
        assert_eq!(total.client_cpu_seconds, 0.75);
        assert_eq!(overlap, Some(0.25), "both ran for 0.5 of the 2 seconds");
        assert!(total.complete);
    }

    #[test]
    fn a_gap_between_windows_is_not_counted_and_a_failed_share_voids_the_sum() {
        let mut failed = recorder(&[10], 1);
        failed.ops += 1;
        failed.failed_ops += 1;
        failed.record_error(ErrorClass::Connection, "refused");
        let parts = vec![
            Part {
                measurement: recorder(&[10], 0).into_measurement(0, false, 1.0, 0.0, true),
                window: Some(Window { start: at(0), end: at(1000) }),
            },
            Part {
                measurement: failed.into_measurement(0, false, 1.0, 0.0, false),
                window: Some(Window { start: at(3000), end: at(4000) }),
            },
        ];
        let (total, overlap) = sum(parts);
        assert_eq!(total.seconds, 2.0);
        assert_eq!(overlap, Some(0.0));
        assert_eq!((total.ops, total.ok_ops, total.failed_ops, total.errors["connection"]), (3, 2, 1, 1));
        assert!(!total.complete && total.is_void());
        assert_eq!(total.error_samples, ["refused"]);
    }
}
