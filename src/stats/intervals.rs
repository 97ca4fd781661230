//! Latency over time: one histogram per fixed interval of a measured run (the interval log
//! that `report::exports` writes as `.hlog`).
//!
//! Owns the per-client interval histograms and their merge. Recording stays cheap: a client
//! records into its own live histogram (no lock, no allocation per request) and, when a
//! request completes past the interval's end, swaps it out — the live histogram is encoded
//! (V2, uncompressed) and reset — the way HdrHistogram's interval recorder swaps its
//! histograms at interval ends, except that the client swaps its own at the first request
//! of a new interval, so no other thread touches it. A request counts in the interval in
//! which it completed. Must not print, time requests or write files.

use crate::base::measurement::IntervalHistograms;
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer, V2Serializer};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// One client's interval histograms during one run.
#[derive(Debug)]
pub struct IntervalRecorder {
    width: Duration,
    /// Where interval 0 starts, on the client's clock.
    epoch: quanta::Instant,
    /// The interval being recorded and its end.
    current: u64,
    ends_at: quanta::Instant,
    /// Auto-resizing, so an interval of short latencies stays small in memory.
    live: Histogram<u64>,
    /// Finished intervals by index, V2-encoded (compact; merged at the run's end).
    done: BTreeMap<u64, Vec<u8>>,
}

impl IntervalRecorder {
    /// A recorder whose interval 0 starts at `epoch` (the run's start, on the client's clock).
    pub fn new(width: Duration, epoch: quanta::Instant) -> Self {
        IntervalRecorder {
            width,
            epoch,
            current: 0,
            ends_at: epoch + width,
            live: Histogram::new(3).expect("3 significant digits is valid"),
            done: BTreeMap::new(),
        }
    }

    /// Moves to the interval holding `now` (the completion of the request about to be
    /// recorded); a no-op while `now` is inside the current interval.
    #[inline]
    pub fn advance(&mut self, now: quanta::Instant) {
        if now >= self.ends_at {
            self.swap(now);
        }
    }

    #[cold]
    fn swap(&mut self, now: quanta::Instant) {
        self.flush();
        let width = self.width.as_nanos().max(1);
        self.current = (now.saturating_duration_since(self.epoch).as_nanos() / width) as u64;
        self.ends_at = self.epoch + Duration::from_nanos((width as u64).saturating_mul(self.current + 1));
    }

    /// Keeps the live histogram as the current interval's (when it holds anything).
    fn flush(&mut self) {
        if self.live.is_empty() {
            return;
        }
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&self.live, &mut bytes).expect("histogram serializes to memory");
        match self.done.remove(&self.current) {
            Some(earlier) => self.done.insert(self.current, add_encoded(&earlier, &bytes)),
            None => self.done.insert(self.current, bytes),
        };
        self.live.reset();
    }

    /// Records one latency, in nanoseconds (already clamped to the whole-run histogram's range).
    #[inline]
    pub fn record(&mut self, nanos: u64) {
        // Auto-resizing: a value beyond the current range grows the histogram (rarely).
        let _ = self.live.record(nanos);
    }

    /// Adds another client's intervals (same width and epoch) to this one's.
    pub fn merge(&mut self, mut other: IntervalRecorder) {
        self.flush();
        other.flush();
        for (index, bytes) in other.done {
            let merged = match self.done.remove(&index) {
                Some(mine) => add_encoded(&mine, &bytes),
                None => bytes,
            };
            self.done.insert(index, merged);
        }
    }

    /// The run's interval histograms as saved: every interval from 0 to the last one with a
    /// request (empty ones included, so position is time), each V2 + deflate, base64.
    pub fn finish(mut self, started_at: SystemTime) -> IntervalHistograms {
        self.flush();
        let last = self.done.keys().next_back().map_or(0, |i| i + 1);
        let histograms = (0..last)
            .map(|i| {
                let h = self.done.get(&i).map_or_else(|| Histogram::new(3).expect("valid"), |bytes| decode(bytes));
                encode_saved(&h)
            })
            .collect();
        IntervalHistograms {
            interval_seconds: self.width.as_secs_f64(),
            started_at_unix_seconds: started_at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs_f64(),
            histograms,
        }
    }
}

/// A histogram `flush` encoded, auto-resizing again (decoding does not keep it).
fn decode(bytes: &[u8]) -> Histogram<u64> {
    let mut h: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).expect("an interval histogram this process encoded");
    h.auto(true);
    h
}

fn add_encoded(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut sum = decode(a);
    sum.add(decode(b)).expect("auto-resizing histograms add");
    let mut bytes = Vec::new();
    V2Serializer::new().serialize(&sum, &mut bytes).expect("histogram serializes to memory");
    bytes
}

/// A histogram as report.json saves them: V2 + deflate, base64 (standard alphabet).
pub fn encode_saved(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut bytes).expect("histogram serializes to memory");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A histogram saved by `encode_saved`.
pub fn decode_saved(saved: &str) -> Option<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(saved).ok()?;
    Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
}

impl IntervalHistograms {
    /// The intervals decoded, in order (`None` for one that does not decode).
    pub fn decoded(&self) -> Option<Vec<Histogram<u64>>> {
        self.histograms.iter().map(|s| decode_saved(s)).collect()
    }

    /// The sum of several processes' intervals of one run (`--workers`): added interval by
    /// interval, each process's intervals counted from its own start (the workers start
    /// together behind one gate); the earliest start is kept.
    pub fn add(&mut self, other: &IntervalHistograms) -> Option<()> {
        let mut mine = self.decoded()?;
        mine.iter_mut().for_each(|h| h.auto(true));
        let theirs = other.decoded()?;
        if mine.len() < theirs.len() {
            mine.resize_with(theirs.len(), || Histogram::new(3).expect("valid"));
        }
        for (m, t) in mine.iter_mut().zip(&theirs) {
            m.add(t).ok()?;
        }
        self.histograms = mine.iter().map(encode_saved).collect();
        self.started_at_unix_seconds = self.started_at_unix_seconds.min(other.started_at_unix_seconds);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_count_in_the_interval_they_completed_in_and_clients_merge() {
        let epoch = quanta::Instant::now();
        let second = Duration::from_secs(1);
        let mut a = IntervalRecorder::new(second, epoch);
        let mut b = IntervalRecorder::new(second, epoch);
        for (at_ms, nanos) in [(10, 1_000), (999, 2_000), (1_000, 3_000), (3_500, 4_000)] {
            a.advance(epoch + Duration::from_millis(at_ms));
            a.record(nanos);
        }
        b.advance(epoch + Duration::from_millis(1_500));
        b.record(50_000_000);
        a.merge(b);
        let saved = a.finish(SystemTime::UNIX_EPOCH + Duration::from_secs(100));
        assert_eq!(saved.interval_seconds, 1.0);
        assert_eq!(saved.started_at_unix_seconds, 100.0);
        let h = saved.decoded().unwrap();
        assert_eq!(h.iter().map(|h| h.len()).collect::<Vec<_>>(), [2, 2, 0, 1], "an empty interval stays in its place");
        assert_eq!(h[0].max(), h[0].highest_equivalent(2_000));
        assert_eq!(h[1].max(), h[1].highest_equivalent(50_000_000));
        let mut twice = saved.clone();
        twice.add(&saved).unwrap();
        assert_eq!(twice.decoded().unwrap().iter().map(|h| h.len()).sum::<u64>(), 10);
    }
}
