//! How precisely a run's throughput is known: the 95 % confidence interval of the mean
//! throughput by non-overlapping batch means over time windows, from the cumulative op
//! counts sampled while the run goes on.
//!
//! Successive throughput samples of a benchmark are autocorrelated (caches, compaction,
//! garbage collection, the scheduler), so the textbook interval over single requests is
//! far too narrow. Batch means (Law & Kelton, *Simulation Modeling and Analysis*, 5th ed.,
//! §9.5.3; Schmeiser, "Batch Size Effects in the Analysis of Simulation Output",
//! Operations Research 30(3), 1982) cut the run into a fixed number of equally long
//! windows; each window's throughput is one batch mean, and with windows long against the
//! correlation time the batch means are nearly independent and normal, so Student's t over
//! them gives the interval. The number of batches stays fixed (20, inside Schmeiser's
//! 10-30) and the windows grow with the run, which keeps the estimate valid as the run
//! lengthens. Owns the arithmetic only; must not time, sample or decide when to stop.

/// Batches the run is cut into.
pub const BATCHES: usize = 20;
/// Student's t quantile 0.975 for `BATCHES - 1` = 19 degrees of freedom.
const T_975_19: f64 = 2.093;
/// Fewest sampling intervals per batch: a scheduler time slice lasts a few milliseconds,
/// and a window of only a few of them measures the scheduler rather than the system.
const MIN_INTERVALS_PER_BATCH: usize = 5;

/// The run's cumulative completed ops at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Since the run started.
    pub seconds: f64,
    /// Ops completed by then.
    pub ops: u64,
}

/// The relative half-width of the 95 % confidence interval of the run's throughput (0.02:
/// known to ±2 %), from samples in time order starting at the run's start (0 s, 0 ops).
/// `None` when the samples cannot carry `BATCHES` batches of at least
/// `MIN_INTERVALS_PER_BATCH` intervals and, on average, `min_ops_per_batch` ops each (a
/// window holding a handful of requests measures their granularity, not the throughput).
pub fn relative_half_width(samples: &[Sample], min_ops_per_batch: u64) -> Option<f64> {
    let intervals = samples.len().checked_sub(1)?;
    let per_batch = intervals / BATCHES;
    if per_batch < MIN_INTERVALS_PER_BATCH {
        return None;
    }
    // The earliest intervals that do not fill a batch are left out: they are the start.
    let first = intervals - per_batch * BATCHES;
    let total = samples[samples.len() - 1].ops - samples[first].ops;
    if total < min_ops_per_batch.max(1) * BATCHES as u64 {
        return None;
    }
    let rates: Vec<f64> = (0..BATCHES)
        .map(|b| {
            let (from, to) = (samples[first + b * per_batch], samples[first + (b + 1) * per_batch]);
            (to.ops - from.ops) as f64 / (to.seconds - from.seconds).max(f64::MIN_POSITIVE)
        })
        .collect();
    let mean = rates.iter().sum::<f64>() / BATCHES as f64;
    if mean <= 0.0 {
        return None;
    }
    let variance = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (BATCHES - 1) as f64;
    Some(T_975_19 * (variance / BATCHES as f64).sqrt() / mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples every `step` seconds of a run whose throughput in interval i is `rate(i)`.
    fn samples(n: usize, step: f64, rate: impl Fn(usize) -> f64) -> Vec<Sample> {
        let mut ops = 0.0;
        let mut out = vec![Sample { seconds: 0.0, ops: 0 }];
        for i in 0..n {
            ops += rate(i) * step;
            out.push(Sample { seconds: (i + 1) as f64 * step, ops: ops as u64 });
        }
        out
    }

    #[test]
    fn a_steady_rate_is_known_exactly_and_too_few_samples_say_nothing() {
        let steady = samples(400, 0.001, |_| 1_000_000.0);
        assert!(relative_half_width(&steady, 10).unwrap() < 1e-6);
        // 99 intervals cannot make 20 batches of 5.
        assert_eq!(relative_half_width(&steady[..100], 10), None);
        assert!(relative_half_width(&steady[..101], 10).is_some());
        // Too few ops per batch for the windows to mean anything.
        // (0.4 s at 400 ops/s: 160 ops, fewer than 20 batches of 10.)
        assert_eq!(relative_half_width(&samples(400, 0.001, |_| 400.0), 10), None);
        assert_eq!(relative_half_width(&[], 1), None);
    }

    #[test]
    fn the_interval_is_students_t_over_the_batch_means() {
        // 20 batches of 5 intervals, alternating 900 and 1,100 ops/s: mean 1,000, s of the
        // batch means sqrt(20/19) * 100.
        let run = samples(100, 1.0, |i| if (i / 5) % 2 == 0 { 900.0 } else { 1100.0 });
        let expected = T_975_19 * (100.0 * (20.0f64 / 19.0).sqrt()) / 20f64.sqrt() / 1000.0;
        let got = relative_half_width(&run, 1).unwrap();
        assert!((got - expected).abs() < 1e-9, "{got} vs {expected}");
    }

    #[test]
    fn correlated_noise_widens_the_interval_until_the_windows_outgrow_it() {
        // Slow swings (period 64 intervals) are invisible within a window of 5 but not
        // across windows; as the run grows to many periods per window they average out.
        let swing = |i: usize| 1000.0 + 300.0 * ((i as f64) * std::f64::consts::TAU / 64.0).sin();
        let short = relative_half_width(&samples(100, 1.0, swing), 1).unwrap();
        let long = relative_half_width(&samples(20 * 640, 1.0, swing), 1).unwrap();
        assert!(short > 0.05, "{short}");
        assert!(long < 0.01, "{long}");
    }
}
