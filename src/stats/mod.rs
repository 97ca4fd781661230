//! Measurement: per-client recorders (HDR histograms per op kind, counts, errors, answer
//! digests), merged into one measurement per run, and process CPU time.
//!
//! Owns how latencies are recorded and merged (histograms are merged, percentiles are
//! never averaged). Must not print, decide flags or know about systems.

use crate::base::measurement::{LatencySummary, RunMeasurement};
use crate::base::op::{Answer, ErrorClass, OpKind};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

pub mod intervals;
pub mod moderated;
pub mod precision;

use intervals::IntervalRecorder;

/// Answers are also digested per block of sequence numbers, the blocks doubling from
/// `[0, ANSWER_BLOCK)`, `[ANSWER_BLOCK, 2 * ANSWER_BLOCK)`, `[2 * ANSWER_BLOCK,
/// 4 * ANSWER_BLOCK)` on: runs that stopped after different numbers of ops (`--precision`)
/// are compared over the blocks both completed, which are the same ops.
pub const ANSWER_BLOCK: u64 = 64;

/// The answer block of sequence number `seq`.
pub fn answer_block(seq: u64) -> usize {
    (u64::BITS - (seq / ANSWER_BLOCK).leading_zeros()) as usize
}

/// The first sequence number after answer block `block`.
pub fn answer_block_end(block: usize) -> u64 {
    ANSWER_BLOCK << block
}

/// How many sequence numbers answer block `block` holds.
fn answer_block_len(block: usize) -> u64 {
    if block == 0 { ANSWER_BLOCK } else { ANSWER_BLOCK << (block - 1) }
}

/// The op counters a run adds up, over its clients (`Recorder::merge`) and over its
/// workers (`runner::workers::sum`): one list, so neither can forget one.
pub trait RunCounts {
    /// ops, ok_ops, failed_ops, short_ops, missing_rows, requests, rows, retries, late_ops.
    fn counts_mut(&mut self) -> [&mut u64; 9];
}

/// Adds `more`'s counters to `into`'s (`more` is only read; `counts_mut` is the one field list).
pub fn add_counts<T: RunCounts>(into: &mut T, more: &mut T) {
    for (mine, theirs) in into.counts_mut().into_iter().zip(more.counts_mut()) {
        *mine += *theirs;
    }
}

/// Adds failed requests by class and keeps the first `ERROR_SAMPLES` distinct messages.
pub fn add_errors<K: Ord>(
    errors: &mut BTreeMap<K, u64>,
    samples: &mut Vec<String>,
    more: impl IntoIterator<Item = (K, u64)>,
    more_samples: impl IntoIterator<Item = String>,
) {
    for (class, n) in more {
        *errors.entry(class).or_default() += n;
    }
    for m in more_samples {
        if samples.len() < ERROR_SAMPLES && !samples.contains(&m) {
            samples.push(m);
        }
    }
}

macro_rules! run_counts {
    ($t:ty) => {
        impl RunCounts for $t {
            fn counts_mut(&mut self) -> [&mut u64; 9] {
                let s = self;
                [
                    &mut s.ops,
                    &mut s.ok_ops,
                    &mut s.failed_ops,
                    &mut s.short_ops,
                    &mut s.missing_rows,
                    &mut s.requests,
                    &mut s.rows,
                    &mut s.retries,
                    &mut s.late_ops,
                ]
            }
        }
    };
}
run_counts!(Recorder);
run_counts!(RunMeasurement);

/// Largest latency a histogram tracks (1 hour); larger ones saturate.
const MAX_NANOS: u64 = 3_600_000_000_000;
/// How many error messages a run keeps as examples.
const ERROR_SAMPLES: usize = 5;

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NANOS, 3).expect("valid histogram bounds")
}

/// What one client records during one run. Cheap to record into; merged at the end.
#[derive(Debug, Default)]
pub struct Recorder {
    /// Service time per request (send to reply), nanoseconds, by op kind.
    service: [Option<Histogram<u64>>; OpKind::ALL.len()],
    /// Response time from the intended start (fixed-rate runs only), by op kind.
    response: [Option<Histogram<u64>>; OpKind::ALL.len()],
    /// Ops sent; `ok_ops + failed_ops + short_ops`.
    pub ops: u64,
    /// Ops of ok requests: the only ones throughput and latency are made of.
    pub ok_ops: u64,
    /// Ops of failed requests.
    pub failed_ops: u64,
    /// Ops of requests that returned or affected fewer rows than expected.
    pub short_ops: u64,
    /// Expected rows those short requests did not return or affect.
    pub missing_rows: u64,
    pub requests: u64,
    /// Rows of ok requests.
    pub rows: u64,
    /// Times requests that returned (ok or short) were run again after a conflict.
    pub retries: u64,
    /// Failed requests by class.
    pub errors: BTreeMap<ErrorClass, u64>,
    pub error_samples: Vec<String>,
    /// Order-independent digest of (sequence number, answer) pairs.
    pub answer_digest: u64,
    /// The same digest per answer block (see `answer_block`), with the answers it holds.
    pub answer_blocks: Vec<(u64, u64)>,
    pub answers: u64,
    /// Fixed-rate runs: ops that started more than 1 ms after their intended start.
    pub late_ops: u64,
    /// The query result of the lowest-numbered op that returned a table, kept whole so
    /// systems can be compared with numeric tolerance.
    pub sample_answer: Option<(u64, Answer)>,
    /// Service time per interval of the run (all op kinds together); `None`: not kept.
    pub intervals: Option<IntervalRecorder>,
    /// The server's own time of the ok requests that reported one (`Outcome::server_time`),
    /// added up, and how many requests reported it.
    pub server_time: Duration,
    pub server_timed: u64,
    /// The first ok request of each client's fresh connection (a cold call), kept out of
    /// the warm histogram when the run asks for it: its kind and service time, the
    /// slowest over the clients.
    pub cold: Option<(OpKind, Duration)>,
}

impl Recorder {
    #[inline]
    /// Whether a service time of this kind was recorded.
    pub fn has_service(&self, kind: OpKind) -> bool {
        self.service[kind.index()].is_some()
    }

    pub fn record_service(&mut self, kind: OpKind, elapsed: Duration) {
        let h = self.service[kind.index()].get_or_insert_with(new_histogram);
        let nanos = (elapsed.as_nanos() as u64).clamp(1, MAX_NANOS);
        h.saturating_record(nanos);
        if let Some(intervals) = &mut self.intervals {
            intervals.record(nanos);
        }
    }

    #[inline]
    pub fn record_response(&mut self, kind: OpKind, elapsed: Duration) {
        let h = self.response[kind.index()].get_or_insert_with(new_histogram);
        h.saturating_record((elapsed.as_nanos() as u64).max(1));
    }

    pub fn record_error(&mut self, class: ErrorClass, message: &str) {
        add_errors(&mut self.errors, &mut self.error_samples, [(class, 1)], [message.to_string()]);
    }

    pub fn record_answer(&mut self, seq: u64, answer: &Answer) {
        let digest = crate::base::rng::mix(seq, answer.fingerprint());
        self.answer_digest = self.answer_digest.wrapping_add(digest);
        let block = answer_block(seq);
        if self.answer_blocks.len() <= block {
            self.answer_blocks.resize(block + 1, (0, 0));
        }
        let (block_digest, answers) = &mut self.answer_blocks[block];
        *block_digest = block_digest.wrapping_add(digest);
        *answers += 1;
        self.answers += 1;
        if matches!(answer, Answer::Table(_)) && self.sample_answer.as_ref().is_none_or(|(s, _)| seq < *s) {
            self.keep_sample(seq, answer.clone());
        }
    }

    /// Adds another client's recordings to this one.
    pub fn merge(&mut self, mut other: Recorder) {
        add_counts(self, &mut other);
        for (mine, theirs) in self.service.iter_mut().zip(other.service).chain(self.response.iter_mut().zip(other.response)) {
            match (mine.as_mut(), theirs) {
                (Some(m), Some(t)) => m.add(&t).expect("histograms with equal bounds merge"),
                (None, Some(t)) => *mine = Some(t),
                _ => {}
            }
        }
        add_errors(&mut self.errors, &mut self.error_samples, other.errors, other.error_samples);
        match (&mut self.intervals, other.intervals) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (mine @ None, theirs) => *mine = theirs,
            _ => {}
        }
        self.answer_digest = self.answer_digest.wrapping_add(other.answer_digest);
        if self.answer_blocks.len() < other.answer_blocks.len() {
            self.answer_blocks.resize(other.answer_blocks.len(), (0, 0));
        }
        for (mine, theirs) in self.answer_blocks.iter_mut().zip(other.answer_blocks) {
            *mine = (mine.0.wrapping_add(theirs.0), mine.1 + theirs.1);
        }
        self.answers += other.answers;
        self.server_time += other.server_time;
        self.server_timed += other.server_timed;
        if other.cold.is_some_and(|(_, theirs)| self.cold.is_none_or(|(_, mine)| theirs > mine)) {
            self.cold = other.cold;
        }
        if let Some((seq, answer)) = other.sample_answer {
            self.keep_sample(seq, answer);
        }
    }

    fn keep_sample(&mut self, seq: u64, answer: Answer) {
        if self.sample_answer.as_ref().is_none_or(|(s, _)| seq < *s) {
            self.sample_answer = Some((seq, answer));
        }
    }

    /// Turns the merged recordings of a run into its saved measurement (the caller, which
    /// knows when the run started on the wall clock, finishes `intervals` first).
    pub fn into_measurement(self, run: u32, warmup: bool, seconds: f64, client_cpu_seconds: f64, complete: bool) -> RunMeasurement {
        let summaries = |hists: [Option<Histogram<u64>>; OpKind::ALL.len()]| -> BTreeMap<OpKind, LatencySummary> {
            OpKind::ALL.iter().zip(hists).filter_map(|(kind, h)| h.map(|h| (*kind, LatencySummary::from_histogram(&h)))).collect()
        };
        RunMeasurement {
            run,
            warmup,
            complete,
            ops: self.ops,
            ok_ops: self.ok_ops,
            failed_ops: self.failed_ops,
            short_ops: self.short_ops,
            missing_rows: self.missing_rows,
            requests: self.requests,
            rows: self.rows,
            retries: self.retries,
            seconds,
            client_cpu_seconds,
            errors: self.errors.into_iter().map(|(c, n)| (c.name().to_string(), n)).collect(),
            error_samples: self.error_samples,
            answer_digest: (self.answers > 0).then(|| format!("{:016x}", self.answer_digest)),
            // Only the leading blocks whose every sequence number was answered: a run cut
            // short (a deadline, a precision stop, a failed request) leaves holes where its
            // clients stopped, and a block with a hole is not the same ops as another run's.
            answer_blocks: (0..)
                .zip(&self.answer_blocks)
                .take_while(|(block, (_, answers))| *answers == answer_block_len(*block))
                .map(|(_, (digest, _))| format!("{digest:016x}"))
                .collect(),
            precision: None,
            late_ops: self.late_ops,
            sample_answer: self.sample_answer.map(|(_, a)| a),
            service: summaries(self.service),
            response: summaries(self.response),
            memory: None,
            intervals: None,
            load: None,
            share_mismatch: None,
            server_seconds: (self.server_timed > 0).then_some(self.server_time.as_secs_f64()),
            server_timed_requests: self.server_timed,
            cold_call_us: self.cold.map(|(_, d)| d.as_secs_f64() * 1e6),
        }
    }
}

impl LatencySummary {
    pub fn from_histogram(h: &Histogram<u64>) -> Self {
        let us = |nanos: u64| nanos as f64 / 1000.0;
        LatencySummary {
            count: h.len(),
            mean_us: h.mean() / 1000.0,
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
            histogram: intervals::encode_saved(h),
        }
    }

    /// The histogram saved in this summary.
    pub fn decode(&self) -> Option<Histogram<u64>> {
        intervals::decode_saved(&self.histogram)
    }
}

/// Merges the saved histograms of several runs into one summary (for medians over runs we
/// keep throughput per run; for latency we merge, never average percentiles).
pub fn merge_summaries<'a>(summaries: impl IntoIterator<Item = &'a LatencySummary>) -> Option<LatencySummary> {
    let mut merged: Option<Histogram<u64>> = None;
    for s in summaries {
        let h = s.decode()?;
        match merged.as_mut() {
            Some(m) => m.add(&h).ok()?,
            None => merged = Some(h),
        }
    }
    merged.map(|h| LatencySummary::from_histogram(&h))
}

/// CPU time (user + system) this process has used so far.
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage writes into the struct we pass and has no other effects.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Median of a non-empty slice (mean of the middle two for even lengths).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_histograms_keep_every_sample() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        for i in 1..=100 {
            a.record_service(OpKind::Get, Duration::from_micros(i));
        }
        for _ in 0..100 {
            b.record_service(OpKind::Get, Duration::from_millis(10));
        }
        b.record_error(ErrorClass::Server, "boom");
        a.merge(b);
        let m = a.into_measurement(1, false, 1.0, 0.0, true);
        let get = &m.service[&OpKind::Get];
        assert_eq!(get.count, 200);
        assert!((get.p50_us - 100.0).abs() < 1.0, "p50 {}", get.p50_us);
        assert!((get.p99_us - 10_000.0).abs() < 20.0, "p99 {}", get.p99_us);
        assert_eq!(m.errors["server"], 1);
        let decoded = get.decode().unwrap();
        assert_eq!(decoded.len(), 200);
        let merged = merge_summaries([get, get]).unwrap();
        assert_eq!(merged.count, 400);
    }

    #[test]
    fn answer_digest_ignores_client_order() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        let ans = |n: i64| Answer::Scalar(crate::base::table::Value::Int(n));
        a.record_answer(1, &ans(10));
        b.record_answer(2, &ans(20));
        let mut c = Recorder::default();
        let mut d = Recorder::default();
        c.record_answer(2, &ans(20));
        d.record_answer(1, &ans(10));
        a.merge(b);
        c.merge(d);
        assert_eq!(a.answer_digest, c.answer_digest);
        let mut e = Recorder::default();
        e.record_answer(1, &ans(11));
        e.record_answer(2, &ans(20));
        assert_ne!(a.answer_digest, e.answer_digest);
    }

    #[test]
    fn only_complete_leading_answer_blocks_are_saved() {
        let ans = |n: i64| Answer::Scalar(crate::base::table::Value::Int(n));
        let blocks = |seqs: &mut dyn Iterator<Item = u64>| {
            let mut r = Recorder::default();
            seqs.for_each(|seq| r.record_answer(seq, &ans(seq as i64)));
            r.into_measurement(1, false, 1.0, 0.0, true).answer_blocks.len()
        };
        // Blocks [0, 64), [64, 128), [128, 256), [256, 512).
        assert_eq!(blocks(&mut (0..300)), 3);
        assert_eq!(blocks(&mut (0..256)), 3);
        assert_eq!(blocks(&mut (0..255)), 2);
        // A hole (a client stopped at a deadline with sequence number 70 claimed, unsent).
        assert_eq!(blocks(&mut (0..300).filter(|&seq| seq != 70)), 1);
        assert_eq!(blocks(&mut (1..300)), 0);
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
