//! The thread that watches one run: it samples the ops the run's clients completed (for
//! the run's precision, `stats::precision`) and, under a stop rule (`--precision`), ends
//! the run's claims once its throughput is known well enough or its time cap is up. A run
//! ended this way has done exactly the ops `0..n` of its sequence (a prefix), as a shorter
//! fixed-ops run would. Must not send requests or record their results (the clients do).

use crate::stats::precision::{self, Sample};
use crate::workload::experiment::Point;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// When a run under `--precision` ends before its ops (the op cap) run out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopRule {
    /// The relative half-width of the 95 % confidence interval to reach (0.02: ±2 %).
    pub precision: f64,
    /// The run ends after this long even if not precise enough.
    pub max_time: Duration,
}

/// How often the monitor samples the ops completed.
const SAMPLE_EVERY: Duration = Duration::from_millis(1);
/// The monitor checks the stop rule every this many samples.
const CHECK_EVERY: usize = 8;
/// The samples a run keeps; beyond, every other one is dropped (the batches of
/// `precision` only need their boundaries, and these stay evenly spaced).
const MAX_SAMPLES: usize = 16_384;
/// A batch of the precision estimate must hold on average this many requests per client:
/// fewer measure the requests' granularity rather than the throughput.
const MIN_REQUESTS_PER_BATCH_PER_CLIENT: u64 = 4;
/// Added to the claim counter to end a run: every later claim is past the ops.
const END_OF_CLAIMS: u64 = 1 << 62;

/// The counters a run's clients share with its monitor.
#[derive(Clone)]
pub struct Counters {
    /// The next sequence number to claim.
    pub claimed: Arc<AtomicU64>,
    /// Ops completed so far (reported in chunks).
    pub completed: Arc<AtomicU64>,
}

impl Counters {
    /// Counters of a run whose first sequence number is `first`.
    pub fn new(first: u64) -> Counters {
        Counters { claimed: Arc::new(AtomicU64::new(first)), completed: Arc::new(AtomicU64::new(0)) }
    }
}

/// A running monitor (see the module doc).
pub struct Monitor {
    started: Instant,
    finished: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Watched>,
}

/// What the monitor saw.
pub struct Watched {
    /// The ops completed over time, from (0 s, 0 ops).
    samples: Vec<Sample>,
    /// The stop rule ended the run before its ops ran out.
    pub ended: bool,
    /// The precision the stop rule saw when it ended the run because it was reached.
    precision_at_end: Option<f64>,
    /// The fewest ops a batch of the precision estimate holds on average.
    min_ops_per_batch: u64,
}

impl Watched {
    /// The run's precision: a run the stop rule ended is as precise as the rule saw it when
    /// it ended it (the requests under way then only finish); any other over all of its
    /// samples. `None`: too few samples to say.
    pub fn precision(&self) -> Option<f64> {
        self.precision_at_end.or_else(|| precision::relative_half_width(&self.samples, self.min_ops_per_batch))
    }
}

impl Monitor {
    /// Starts watching a run of `point` whose clients just passed the start barrier.
    pub fn start(point: &Point, stop: Option<StopRule>, counters: &Counters) -> Monitor {
        let started = Instant::now();
        let finished = Arc::new(AtomicBool::new(false));
        let (counters, done, min_ops) = (counters.clone(), finished.clone(), min_ops_per_batch(point));
        let thread = std::thread::Builder::new()
            .name("run-monitor".into())
            .spawn(move || watch(stop, min_ops, &counters, started, &done))
            .expect("spawn the run monitor thread");
        Monitor { started, finished, thread }
    }

    /// Stops the monitor after the clients ended; `last` is the run's end and its ops.
    pub async fn finish(self, last: Option<(Instant, u64)>) -> Watched {
        self.finished.store(true, Ordering::Release);
        let thread = self.thread;
        let mut watched = tokio::task::spawn_blocking(move || thread.join().expect("the run monitor does not panic"))
            .await
            .expect("the run monitor joins");
        if let Some((end, ops)) = last {
            let seconds = end.saturating_duration_since(self.started).as_secs_f64();
            if watched.samples.last().is_none_or(|s| s.seconds < seconds) {
                watched.samples.push(Sample { seconds, ops });
            }
        }
        watched
    }
}

/// The fewest ops a batch of the precision estimate holds on average at `point`.
fn min_ops_per_batch(point: &Point) -> u64 {
    let ops_per_request = if point.batched { point.batch.max(1) as u64 } else { 1 };
    MIN_REQUESTS_PER_BATCH_PER_CLIENT * point.clients as u64 * ops_per_request
}

/// The monitor's loop (see `Monitor`).
fn watch(stop: Option<StopRule>, min_ops: u64, counters: &Counters, started: Instant, finished: &AtomicBool) -> Watched {
    let mut samples = vec![Sample { seconds: 0.0, ops: 0 }];
    let mut step = SAMPLE_EVERY;
    let mut next = started;
    let mut ended = false;
    let mut precision_at_end = None;
    while !finished.load(Ordering::Acquire) {
        next += step;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let ops = counters.completed.load(Ordering::Relaxed);
        let elapsed = started.elapsed();
        samples.push(Sample { seconds: elapsed.as_secs_f64(), ops });
        if samples.len() > MAX_SAMPLES {
            samples = samples.iter().step_by(2).copied().collect();
            step *= 2;
        }
        let Some(rule) = stop.filter(|_| !ended) else { continue };
        let reached = samples.len().is_multiple_of(CHECK_EVERY).then(|| precision::relative_half_width(&samples, min_ops)).flatten();
        if reached.is_some_and(|p| p <= rule.precision) {
            precision_at_end = reached;
        }
        if precision_at_end.is_some() || elapsed >= rule.max_time {
            counters.claimed.fetch_add(END_OF_CLAIMS, Ordering::Relaxed);
            ended = true;
        }
    }
    Watched { samples, ended, precision_at_end, min_ops_per_batch: min_ops }
}
