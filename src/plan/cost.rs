//! Measured costs (`--calibrate`): what one request and one key or row cost on a target, per
//! experiment, fitted from a short timed sample at a few sizes, so that the estimate of
//! every other size extrapolates from them; and what loading one row costs there.
//!
//! Owns the shape of a run's work (`Work`: its requests and keys, shared among its
//! clients) and the fit. Must not run, time or print anything: the runner's calibration
//! measures the samples this fits.

use crate::base::op::OpKind;
use crate::workload::experiment::{Experiment, Point};
use serde::Serialize;
use std::collections::BTreeMap;

/// What one run at a point asks of a target: its round trips and the keys or rows they
/// touch, each already divided among the clients that overlap them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Work {
    pub requests: f64,
    pub keys: f64,
}

/// Clients overlap their waits on a 2-core machine, up to about twice the throughput.
pub fn parallelism(clients: usize) -> f64 {
    (clients as f64).clamp(1.0, 2.0)
}

/// The work of one run of `ops` ops of `experiment` at `point`, over data of `data_rows`
/// rows: a batch is one request for all of its keys; a range touches its width; a query,
/// a scan or a fetch of everything touches every row.
pub fn work(experiment: &Experiment, point: &Point, ops: u64, data_rows: u64) -> Work {
    let ops = ops as f64;
    let per_request = if point.batched { point.batch.max(1) as f64 } else { 1.0 };
    let keys_per_op = match experiment.op.kind() {
        OpKind::RangeRows | OpKind::RangeCount | OpKind::RangeMax | OpKind::Scan => point.param.unwrap_or(1).max(1) as f64,
        OpKind::Query | OpKind::FetchAll => data_rows.max(1) as f64,
        _ => 1.0,
    };
    let parallel = parallelism(point.clients);
    Work { requests: ops / per_request / parallel, keys: ops * keys_per_op / parallel }
}

/// One timed sample: the work of a run and the seconds it took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub work: Work,
    pub secs: f64,
}

/// The measured cost of one experiment on one target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Cost {
    /// Microseconds per request (round trip, parsing, one key's work).
    pub request_us: f64,
    /// Microseconds per further key or row a request touches.
    pub key_us: f64,
    /// The slowest single request the sample timed, in microseconds: a run cannot stop
    /// sooner than one of these.
    pub slowest_request_us: f64,
}

impl Cost {
    /// Seconds of a run of `work`.
    pub fn secs(&self, work: Work) -> f64 {
        (work.requests * self.request_us + (work.keys - work.requests).max(0.0) * self.key_us) / 1e6
    }

    /// The least-squares fit of `secs = requests * request_us + extra keys * key_us` over
    /// `samples`, neither cost negative: with samples of one shape only (every request one
    /// key) all of the time is the request's. `None` without a sample that did any work.
    pub fn fit(samples: &[Sample], slowest_request_us: f64) -> Option<Cost> {
        let rows: Vec<(f64, f64, f64)> = samples
            .iter()
            .filter(|s| s.work.requests > 0.0 && s.secs.is_finite())
            .map(|s| (s.work.requests, (s.work.keys - s.work.requests).max(0.0), s.secs * 1e6))
            .collect();
        if rows.is_empty() {
            return None;
        }
        // Relative errors count alike at every size: each sample is weighted by 1 / its time.
        let weight = |t: f64| 1.0 / (t * t).max(1e-6);
        let (mut rr, mut rk, mut kk, mut rt, mut kt) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(r, k, t) in &rows {
            let w = weight(t);
            rr += w * r * r;
            rk += w * r * k;
            kk += w * k * k;
            rt += w * r * t;
            kt += w * k * t;
        }
        let only = |x: f64, xt: f64| if x > 0.0 { (xt / x).max(0.0) } else { 0.0 };
        let det = rr * kk - rk * rk;
        let (request_us, key_us) = if kk > 0.0 && det > 1e-9 * rr * kk {
            let (a, b) = ((rt * kk - kt * rk) / det, (kt * rr - rt * rk) / det);
            match (a >= 0.0, b >= 0.0) {
                (true, true) => (a, b),
                (false, _) => (0.0, only(kk, kt)),
                (_, false) => (only(rr, rt), 0.0),
            }
        } else {
            (only(rr, rt), 0.0)
        };
        Some(Cost { request_us, key_us, slowest_request_us })
    }
}

/// The measured costs of a run's targets, from `--calibrate`'s sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostModel {
    /// (target, experiment index in the plan) → its cost.
    pub costs: BTreeMap<(String, usize), Cost>,
    /// target → microseconds to load one row.
    pub load_us_per_row: BTreeMap<String, f64>,
    /// The seconds the sample took.
    pub calibration_secs: f64,
    /// Seconds around each point on each target that no run counts: preloading and
    /// removing its rows, connecting its clients, saving the report after it.
    pub point_overhead_secs: f64,
}

impl CostModel {
    pub fn cost(&self, target: &str, experiment: usize) -> Option<&Cost> {
        self.costs.get(&(target.to_string(), experiment))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(requests: f64, keys: f64, secs: f64) -> Sample {
        Sample { work: Work { requests, keys }, secs }
    }

    #[test]
    fn per_request_and_per_key_costs_come_apart_and_extrapolate_over_sizes() {
        // 300 µs a request, 5 µs a further key: ranges of width 10 and 100, 200 requests each.
        let truth = Cost { request_us: 300.0, key_us: 5.0, slowest_request_us: 0.0 };
        let at = |width: f64| Work { requests: 200.0, keys: 200.0 * width };
        let samples = [sample(200.0, 2000.0, truth.secs(at(10.0))), sample(200.0, 20000.0, truth.secs(at(100.0)))];
        let fit = Cost::fit(&samples, 900.0).unwrap();
        assert!((fit.request_us - 300.0).abs() < 1e-6 && (fit.key_us - 5.0).abs() < 1e-6, "{fit:?}");
        assert_eq!(fit.slowest_request_us, 900.0);
        // Width 1,000 (never sampled): 200 * (300 + 999 * 5) µs.
        assert!((fit.secs(at(1000.0)) - 200.0 * (300.0 + 999.0 * 5.0) / 1e6).abs() < 1e-9);
        // A batch of 1,000 keys in one request costs one request and 999 keys, not 1,000 requests.
        let batch = Work { requests: 1.0, keys: 1000.0 };
        assert!(fit.secs(batch) < 0.01 && fit.secs(batch) > 0.005, "{}", fit.secs(batch));
    }

    #[test]
    fn one_shape_of_sample_charges_the_request_and_no_cost_is_negative() {
        // Single-key gets at two sizes: all of the time is per request.
        let fit = Cost::fit(&[sample(100.0, 100.0, 0.01), sample(400.0, 400.0, 0.04)], 0.0).unwrap();
        assert!((fit.request_us - 100.0).abs() < 1e-6 && fit.key_us == 0.0, "{fit:?}");
        // Noise that would make the key cost negative keeps it at zero.
        let fit = Cost::fit(&[sample(100.0, 1000.0, 0.05), sample(100.0, 10000.0, 0.04)], 0.0).unwrap();
        assert!(fit.request_us > 0.0 && fit.key_us == 0.0, "{fit:?}");
        assert_eq!(Cost::fit(&[], 0.0), None);
        assert_eq!(Cost::fit(&[sample(0.0, 0.0, 1.0)], 0.0), None);
    }

    #[test]
    fn the_work_of_a_run_counts_requests_keys_and_clients() {
        let get = crate::plan::resolve(&crate::plan::RunOptions::default()).unwrap();
        let e = get.experiments.iter().find(|e| e.op.kind() == OpKind::Get).unwrap();
        let one = Point { clients: 1, batch: 1, batched: false, param: None, rate: None };
        assert_eq!(work(e, &one, 1000, 50), Work { requests: 1000.0, keys: 1000.0 });
        let batched = Point { clients: 4, batch: 100, batched: true, ..one };
        assert_eq!(work(e, &batched, 1000, 50), Work { requests: 5.0, keys: 500.0 });
    }
}
