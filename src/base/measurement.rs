//! The measured result of one run, as `report.json` saves it: counts, time, errors,
//! answers, latency summaries (with their HDR histograms) and memory readings.
//!
//! Owns the shape of a run's measurement, which `stats` fills and `report` saves. Must
//! not record, compute or render anything.

use crate::base::op::{Answer, OpKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One warm-up or measured run.
///
/// Accounting: every op sent is in `ops`, and `ops = ok_ops + failed_ops + short_ops`.
/// Throughput, rows and latency are made of the ok requests only; a run with a failed or a
/// short request has no throughput at all (see [`RunMeasurement::is_void`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunMeasurement {
    /// 0-based; warm-up runs come first.
    pub run: u32,
    pub warmup: bool,
    pub complete: bool,
    /// Ops sent, whatever their outcome.
    pub ops: u64,
    /// Ops of requests that succeeded and returned or affected every row the plan expects.
    #[serde(default)]
    pub ok_ops: u64,
    /// Ops of requests that failed (a server error, a broken connection, a timeout); a
    /// failed batch fails all of its ops.
    #[serde(default)]
    pub failed_ops: u64,
    /// Ops of requests that succeeded but returned or affected fewer rows than the plan
    /// expects (a key that should exist was not found).
    #[serde(default)]
    pub short_ops: u64,
    /// Rows the plan expects that those short requests did not return or affect.
    #[serde(default)]
    pub missing_rows: u64,
    /// Requests sent (one per op, or one per batch).
    pub requests: u64,
    /// Rows written, deleted, found or returned by the ok requests.
    pub rows: u64,
    /// Times the requests that returned were run again after the system aborted them for
    /// a concurrent one (optimistic concurrency, e.g. MonetDB's "concurrency conflicts").
    /// Their latency includes the retries; a request whose retries ran out is a failed
    /// request (error class `conflict`), not counted here.
    #[serde(default)]
    pub retries: u64,
    /// Wall time of the run, from the first client's start to the last client's end.
    pub seconds: f64,
    /// CPU time of the dbsweep process during the run (for embedded engines this includes
    /// the engine itself).
    pub client_cpu_seconds: f64,
    /// Failed requests by error class.
    pub errors: BTreeMap<String, u64>,
    pub error_samples: Vec<String>,
    /// Fixed-rate runs: ops that started more than 1 ms after their intended start (the
    /// schedule was missed; their response time includes the wait).
    #[serde(default)]
    pub late_ops: u64,
    /// Digest of the answers of COUNT/MAX/query ops, to compare systems.
    pub answer_digest: Option<String>,
    /// Runs stopped by `--precision`: the same digest per block of sequence numbers (the
    /// blocks double in length: 0..64, 64..128, 128..256, ...), so runs that
    /// stopped after different numbers of ops are compared over the ops both did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answer_blocks: Vec<String>,
    /// Relative half-width of the 95 % confidence interval of this run's throughput by
    /// batch means over time windows (0.02: ±2 %); `None` when the run was too short or
    /// held too few requests to tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// The first query result of the run, whole (query experiments only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_answer: Option<Answer>,
    /// Service time per request, by op kind.
    pub service: BTreeMap<OpKind, LatencySummary>,
    /// Response time from the intended start (fixed-rate runs), by op kind.
    pub response: BTreeMap<OpKind, LatencySummary>,
    /// Memory read just before and just after the run (studies that measure memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryMeasurement>,
    /// Measured runs (unless `--hlog-interval 0`): service time over the run's time, one
    /// histogram per interval, every op kind together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervals: Option<IntervalHistograms>,
    /// This host's load average just before and just after the run (`None` where the OS
    /// has no /proc/loadavg): other work on the machine shows here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<HostLoad>,
    /// With `--workers`: why a worker's result did not fit the share of the run it was
    /// given (other ops, clients or run); that result is left out and the run is void.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_mismatch: Option<String>,
    /// The server's own time for the ok requests, added up, where the target reports it
    /// (`?timing=server` on `redis-cli://` and `mysql-cli://`: the paper's way of timing
    /// insert-find); `None`: not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_seconds: Option<f64>,
    /// Requests that reported `server_seconds`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub server_timed_requests: u64,
    /// Lifecycle studies: the service time of the first request on each client's fresh
    /// connection (the slowest over the clients), in microseconds. It is not in `service`
    /// when the client sent more requests than that one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_call_us: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Latency over time: the service time (send to reply) of the ok requests of one run, one
/// HDR histogram per interval, all op kinds together. A request counts in the interval in
/// which its reply arrived. The same histograms make the run's `.hlog` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IntervalHistograms {
    /// The length of each interval (`--hlog-interval`), in seconds.
    pub interval_seconds: f64,
    /// When interval 0 began (the run's first client started), in seconds since the Unix
    /// epoch.
    pub started_at_unix_seconds: f64,
    /// One histogram per interval, in order from interval 0 to the last one in which a
    /// request completed (an interval without a request is an empty histogram). Values are
    /// latencies in nanoseconds (1 ns to 1 hour, 3 significant digits), counts are requests;
    /// each is encoded in HdrHistogram's V2 format compressed with deflate, in base64 (the
    /// encoding of `.hlog` lines, readable by any HdrHistogram implementation).
    pub histograms: Vec<String>,
}

/// The 1-minute load average of the host that ran the clients (the coordinator's under
/// `--workers`), read from /proc/loadavg. It is smoothed over a minute and includes
/// dbsweep and a local server themselves: compare it with the core count and with the
/// other points rather than reading it as "foreign" load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HostLoad {
    pub before: f64,
    pub after: f64,
}

impl HostLoad {
    /// The 1-minute load average now; `None` without /proc/loadavg.
    pub fn now() -> Option<f64> {
        std::fs::read_to_string("/proc/loadavg").ok().as_deref().and_then(parse_loadavg)
    }

    /// The load from `before` (read with `now` as a run started) to now.
    pub fn since(before: Option<f64>) -> Option<HostLoad> {
        Some(HostLoad { before: before?, after: HostLoad::now()? })
    }
}

/// The first field of /proc/loadavg ("0.52 0.58 0.59 1/467 12345").
fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_ascii_whitespace().next()?.parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0)
}

/// Memory at one moment, read between runs (never while ops are timed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryReading {
    /// As the engine reports it (`Target::engine_memory`); `None` when it has no figure.
    pub engine_bytes: Option<u64>,
    /// Proportional set size (PSS) of the server's whole process group, from
    /// /proc/PID/smaps_rollup; only for servers dbsweep spawned.
    pub server_bytes: Option<u64>,
    /// Resident set size of the dbsweep process (the client side; for embedded engines
    /// it includes the engine).
    pub client_bytes: u64,
}

/// Memory before and after one run, and what the engine's figure means.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryMeasurement {
    /// What `engine_bytes` is, e.g. `INFO memory used_memory`.
    pub engine_source: Option<String>,
    pub before: MemoryReading,
    pub after: MemoryReading,
}

impl MemoryMeasurement {
    pub fn engine_delta(&self) -> Option<i64> {
        Some(self.after.engine_bytes? as i64 - self.before.engine_bytes? as i64)
    }

    pub fn server_delta(&self) -> Option<i64> {
        Some(self.after.server_bytes? as i64 - self.before.server_bytes? as i64)
    }

    pub fn client_delta(&self) -> i64 {
        self.after.client_bytes as i64 - self.before.client_bytes as i64
    }
}

impl RunMeasurement {
    /// Failed requests, of every class.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// True when a request of this run failed or came back short: its timing counts
    /// something that did not happen, so the run (and its point) has no throughput.
    pub fn is_void(&self) -> bool {
        self.failed_ops > 0 || self.short_ops > 0 || self.missing_rows > 0 || self.error_count() > 0 || self.share_mismatch.is_some()
    }

    fn per_sec(&self, n: u64) -> Option<f64> {
        (!self.is_void() && self.seconds > 0.0).then(|| n as f64 / self.seconds)
    }

    /// Ok ops per second; `None` for a void run.
    pub fn ops_per_sec(&self) -> Option<f64> {
        self.per_sec(self.ok_ops)
    }

    /// Rows per second; `None` for a void run.
    pub fn rows_per_sec(&self) -> Option<f64> {
        self.per_sec(self.rows)
    }

    /// Requests per second; `None` for a void run (where every request was ok).
    pub fn requests_per_sec(&self) -> Option<f64> {
        self.per_sec(self.requests)
    }

    /// Fills the accounting fields of a run saved in report format 1, which counted failed
    /// ops in `ops` and had no `ok_ops`: each failed request is taken as one failed op (the
    /// run is void either way).
    pub fn upgrade_from_v1(&mut self) {
        self.failed_ops = self.error_count().min(self.ops);
        self.ok_ops = self.ops - self.failed_ops;
    }
}

/// Latency of one op kind in one run (or merged over runs): the `*_us` figures are in
/// microseconds, read from `histogram`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// The whole HDR histogram, so latencies can be merged later: values are latencies in
    /// nanoseconds (1 ns to 1 hour, 3 significant digits), counts are requests; encoded in
    /// HdrHistogram's V2 format compressed with deflate, in base64 (standard alphabet).
    pub histogram: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_load_average_is_the_first_field_of_proc_loadavg() {
        assert_eq!(parse_loadavg("0.52 0.58 0.59 1/467 12345\n"), Some(0.52));
        assert_eq!(parse_loadavg("-1 0 0"), None);
        assert_eq!(parse_loadavg(""), None);
        assert!(HostLoad::now().is_some(), "Linux has /proc/loadavg");
    }
}
