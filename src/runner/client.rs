//! One run of one point: N clients (tasks or threads), each with its own connection,
//! claiming sequence numbers from a shared counter until the run's ops are done, and a
//! monitor thread that samples the ops completed for the run's precision and, under a
//! stop rule (`--precision`), ends the run once its throughput is known well enough. A run
//! ended early has done exactly the ops `0..n` of its sequence (a prefix), as a shorter
//! fixed-ops run would.
//!
//! Owns the hot loop: generate op, time the request, check it, record. A request counts
//! (ops, rows, latency) only when it succeeded and returned or affected at least the rows
//! the plan expects; a failed one counts as failed ops, a short one as missing rows; the
//! conflicts an adapter retried inside a request count as its retries. The same loop serves network targets (tasks on the shared runtime) and embedded ones (one
//! OS thread per client). Must not print or decide flags.

use super::stopping;
use crate::adapter::{Execution, Target};
use crate::base::measurement::RunMeasurement;
use crate::base::op::{ErrorClass, OpError, Outcome};
use crate::stats::precision::{self, Sample};
use crate::stats::{Recorder, process_cpu_time};
use crate::workload::experiment::{OpStream, Point};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::Barrier;

/// A client stops after this many consecutive connection failures: the server is gone.
const GIVE_UP_AFTER: u32 = 20;

/// Everything one run needs, shared by its clients.
pub struct RunJob {
    pub target: Arc<dyn Target>,
    pub stream: Arc<OpStream>,
    pub point: Point,
    pub point_index: usize,
    pub run: u32,
    pub warmup: bool,
    pub ops: u64,
    pub timeout: Duration,
    pub cancel: Arc<AtomicBool>,
    /// Ops done, for the progress display.
    pub progress: Arc<AtomicU64>,
    /// Fixed-rate (open-loop) runs: total ops per second across all clients. `None` is a
    /// closed loop: each client sends its next request when the previous one returns.
    pub rate: Option<f64>,
    /// YCSB's `maxexecutiontime`: clients stop claiming ops this long after the start; the
    /// run is complete with the ops done by then.
    pub time_limit: Option<Duration>,
    /// Compare each request's rows with the rows the plan expects (false for NO-DB, whose
    /// ops do no work and so return no real rows).
    pub check_rows: bool,
    /// `--precision`: end the run once its throughput is known this well (or at its time
    /// cap); `None`: the run does all of its `ops`.
    pub stop: Option<StopRule>,
}

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

/// Clients report progress (and the ops completed, for the monitor) in chunks, so the hot
/// loop rarely touches the shared counters: every this many ops ...
const PROGRESS_EVERY: u64 = 1024;
/// ... or when this long has passed since the last report (slow requests).
const REPORT_AFTER: Duration = Duration::from_micros(250);

/// An op that starts this much after its intended start counts as a missed schedule.
const LATE: Duration = Duration::from_millis(1);

struct ClientResult {
    recorder: Recorder,
    /// When this client passed the start barrier; the run starts at the earliest one.
    started: Instant,
    finished: Instant,
    /// Set when the client gave up on a dead server.
    gave_up: Option<String>,
    /// The run's time limit stopped this client before the ops ran out.
    time_limited: bool,
}

/// Runs one warm-up or measured run and returns its measurement.
pub async fn run_once(job: Arc<RunJob>) -> RunMeasurement {
    let clients = job.point.clients;
    let shared = Shared {
        claimed: Arc::new(AtomicU64::new(0)),
        completed: Arc::new(AtomicU64::new(0)),
        barrier: Arc::new(Barrier::new(clients + 1)),
        schedule_start: Arc::new(OnceLock::new()),
    };
    let mut handles = Vec::with_capacity(clients);
    match job.target.info().execution {
        Execution::Async => {
            for _ in 0..clients {
                let (job, shared) = (job.clone(), shared.clone());
                handles.push(ClientHandle::Task(tokio::spawn(async move { client(job, shared).await })));
            }
        }
        Execution::Blocking => {
            for i in 0..clients {
                let (job, shared) = (job.clone(), shared.clone());
                let thread = std::thread::Builder::new().name(format!("client-{i}")).spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("client runtime");
                    rt.block_on(client(job, shared))
                });
                handles.push(ClientHandle::Thread(thread.expect("spawn client thread")));
            }
        }
    }
    let cpu_before = process_cpu_time();
    tokio::select! {
        _ = shared.barrier.wait() => {}
        () = stopping::stopped(&job.cancel) => {}
    }
    let monitor = Monitor::start(&job, &shared);
    let mut start: Option<Instant> = None;
    let mut end: Option<Instant> = None;
    let mut merged = Recorder::default();
    let mut gave_up = None;
    let mut time_limited = false;
    for h in handles {
        let result = tokio::select! {
            result = h.join() => result,
            // A request in flight when the run stops is not waited for (a long query, a
            // server that stopped answering): the run is incomplete anyway.
            () = grace_after_stop(&job.cancel) => continue,
        };
        match result {
            Ok(r) => {
                start = Some(start.map_or(r.started, |s| s.min(r.started)));
                end = Some(end.map_or(r.finished, |e| e.max(r.finished)));
                merged.merge(r.recorder);
                gave_up = gave_up.or(r.gave_up);
                time_limited |= r.time_limited;
            }
            Err(e) => merged.record_error(ErrorClass::Client, &format!("client crashed: {e}")),
        }
    }
    let cpu = process_cpu_time().saturating_sub(cpu_before).as_secs_f64();
    let seconds = match (start, end) {
        (Some(s), Some(e)) => e.duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    let watched = monitor.finish(end.map(|e| (e, merged.ops))).await;
    let complete = !job.cancel.load(Ordering::Relaxed) && gave_up.is_none() && (merged.ops == job.ops || time_limited || watched.ended);
    if watched.ended {
        // The progress display counts the ops the run no longer needs as done.
        job.progress.fetch_add(job.ops.saturating_sub(merged.ops), Ordering::Relaxed);
    }
    // A run the stop rule ended is as precise as the rule saw it when it ended it (the
    // requests that were under way then only finish); any other over all of its samples.
    let run_precision =
        watched.precision_at_end.or_else(|| precision::relative_half_width(&watched.samples, min_ops_per_batch(&job.point)));
    let mut m = merged.into_measurement(job.run, job.warmup, seconds, cpu, complete);
    m.precision = run_precision;
    if job.stop.is_none() {
        m.answer_blocks.clear();
    }
    if job.check_rows && job.stream.kind() == crate::base::op::OpKind::Delete && job.target.blind_deletes() {
        super::verify::blind_deletes(&job, &mut m).await;
    }
    m
}

/// What the clients of one run share.
#[derive(Clone)]
struct Shared {
    /// The next sequence number to claim.
    claimed: Arc<AtomicU64>,
    /// Ops completed so far (reported in chunks), for the monitor.
    completed: Arc<AtomicU64>,
    barrier: Arc<Barrier>,
    /// Fixed-rate runs: the moment op 0 is scheduled for.
    schedule_start: Arc<OnceLock<Instant>>,
}

/// The thread that watches a run: samples the ops completed, and under a stop rule ends
/// the claims once the run's throughput is precise enough or its time is up.
struct Monitor {
    started: Instant,
    finished: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Watched>,
}

/// What the monitor saw.
struct Watched {
    /// The ops completed over time, from (0 s, 0 ops).
    samples: Vec<Sample>,
    /// The stop rule ended the run before its ops ran out.
    ended: bool,
    /// The precision the stop rule saw when it ended the run because it was reached.
    precision_at_end: Option<f64>,
}

impl Monitor {
    fn start(job: &Arc<RunJob>, shared: &Shared) -> Monitor {
        let started = Instant::now();
        let finished = Arc::new(AtomicBool::new(false));
        let (job, shared, done) = (job.clone(), shared.clone(), finished.clone());
        let thread = std::thread::Builder::new()
            .name("run-monitor".into())
            .spawn(move || watch(&job, &shared, started, &done))
            .expect("spawn the run monitor thread");
        Monitor { started, finished, thread }
    }

    /// Stops the monitor after the clients ended; `last` is the run's end and its ops.
    async fn finish(self, last: Option<(Instant, u64)>) -> Watched {
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
fn watch(job: &RunJob, shared: &Shared, started: Instant, finished: &AtomicBool) -> Watched {
    let min_ops = min_ops_per_batch(&job.point);
    let mut samples = vec![Sample { seconds: 0.0, ops: 0 }];
    let mut step = SAMPLE_EVERY;
    let mut next = started;
    let mut ended = false;
    let mut precision_at_end = None;
    while !finished.load(Ordering::Acquire) {
        next += step;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let ops = shared.completed.load(Ordering::Relaxed);
        let elapsed = started.elapsed();
        samples.push(Sample { seconds: elapsed.as_secs_f64(), ops });
        if samples.len() > MAX_SAMPLES {
            samples = samples.iter().step_by(2).copied().collect();
            step *= 2;
        }
        let Some(rule) = job.stop.filter(|_| !ended) else { continue };
        let reached = samples.len().is_multiple_of(CHECK_EVERY).then(|| precision::relative_half_width(&samples, min_ops)).flatten();
        if reached.is_some_and(|p| p <= rule.precision) {
            precision_at_end = reached;
        }
        if precision_at_end.is_some() || elapsed >= rule.max_time {
            shared.claimed.fetch_add(END_OF_CLAIMS, Ordering::Relaxed);
            ended = true;
        }
    }
    Watched { samples, ended, precision_at_end }
}

enum ClientHandle {
    Task(tokio::task::JoinHandle<ClientResult>),
    Thread(std::thread::JoinHandle<ClientResult>),
}

impl ClientHandle {
    /// Waits for the client's result. Dropped before it is done, a task is aborted and a
    /// thread (blocked in an embedded call) is left to finish on its own.
    async fn join(self) -> Result<ClientResult, String> {
        match self {
            ClientHandle::Task(t) => {
                struct AbortOnDrop(tokio::task::AbortHandle);
                impl Drop for AbortOnDrop {
                    fn drop(&mut self) {
                        self.0.abort();
                    }
                }
                let _abort = AbortOnDrop(t.abort_handle());
                t.await.map_err(|e| e.to_string())
            }
            ClientHandle::Thread(t) => tokio::task::spawn_blocking(move || t.join().map_err(|_| "client thread panicked".to_string()))
                .await
                .unwrap_or_else(|e| Err(e.to_string())),
        }
    }
}

/// How long clients get after a stop request to finish the request they are in.
const STOP_GRACE: Duration = Duration::from_millis(300);

/// Resolves `STOP_GRACE` after the run is asked to stop.
async fn grace_after_stop(cancel: &AtomicBool) {
    stopping::stopped(cancel).await;
    tokio::time::sleep(STOP_GRACE).await;
}

async fn client(job: Arc<RunJob>, shared: Shared) -> ClientResult {
    let mut recorder = Recorder::default();
    let ready = async {
        let connection = job.target.connect().await;
        shared.barrier.wait().await;
        connection
    };
    let connection = tokio::select! {
        connection = ready => connection,
        () = stopping::stopped(&job.cancel) => {
            return ClientResult { recorder, started: Instant::now(), finished: Instant::now(), gave_up: None, time_limited: false };
        }
    };
    let started = Instant::now();
    let schedule = job.rate.map(|rate| (*shared.schedule_start.get_or_init(Instant::now), 1.0 / rate));
    let mut conn = match connection {
        Ok(c) => c,
        Err(e) => {
            recorder.record_error(ErrorClass::Connection, &e.to_string());
            return ClientResult { recorder, started, finished: Instant::now(), gave_up: Some(e.to_string()), time_limited: false };
        }
    };
    let kind = job.stream.kind();
    let mixed = kind == crate::base::op::OpKind::Mixed;
    let batch = job.point.batch.max(1) as u64;
    let timed = job.target.info().execution == Execution::Async;
    let mut consecutive_failures = 0u32;
    let mut gave_up = None;
    let mut ops_buf = Vec::with_capacity(batch as usize);
    // Service time is read from the CPU's time-stamp counter (quanta): a third of the cost
    // of the OS clock on these VMs, which matters for the NO-DB ceiling.
    let clock = quanta::Clock::new();
    let chunk = if job.rate.is_some() || job.point.batched { 1 } else { (job.ops / (job.point.clients as u64 * 256)).clamp(1, 64) };
    let mut claimed = 0..0u64;
    let mut unreported = 0u64;
    let mut reported_at = clock.raw();
    let deadline = job.time_limit.map(|limit| started + limit);
    let mut time_limited = false;
    loop {
        if job.cancel.load(Ordering::Relaxed) {
            break;
        }
        if let Some(at) = deadline
            && Instant::now() >= at
        {
            time_limited = true;
            break;
        }
        // Sequence numbers are claimed a chunk at a time so clients rarely contend on the
        // shared counter; the chunk is small against the run so the tail stays balanced.
        if claimed.is_empty() {
            let start = shared.claimed.fetch_add(batch * chunk, Ordering::Relaxed);
            if start >= job.ops {
                break;
            }
            claimed = start..(start + batch * chunk).min(job.ops);
        }
        let first = claimed.start;
        let n = batch.min(claimed.end - first);
        claimed.start += n;
        let intended = schedule.map(|(start, interval)| start + Duration::from_secs_f64(first as f64 * interval));
        // The rows the plan knows these ops must return or affect (0: nothing known).
        let mut expected = 0u64;
        ops_buf.clear();
        let seqs = if job.point.batched { first..first + n } else { first..first + 1 };
        ops_buf.extend(seqs.map(|seq| {
            let planned = job.stream.planned(&job.point, job.point_index, job.run, seq);
            expected += planned.expected_rows;
            planned.op
        }));
        if !job.check_rows {
            expected = 0;
        }
        if let Some(at) = intended {
            tokio::time::sleep_until(at.into()).await;
        }
        let late = intended.map(|at| Instant::now().saturating_duration_since(at) > LATE);
        let t0 = clock.raw();
        let kind = if mixed { ops_buf[0].kind() } else { kind };
        let result = if job.point.batched {
            with_timeout(timed, job.timeout, conn.execute_batch(&ops_buf)).await
        } else {
            with_timeout(timed, job.timeout, conn.execute(&ops_buf[0])).await
        };
        let now = clock.raw();
        let elapsed = clock.delta(t0, now);
        let responded = intended.map(|at| Instant::now() - at);
        if late == Some(true) {
            recorder.late_ops += n;
        }
        recorder.ops += n;
        recorder.requests += 1;
        // Only an ok request (no error, every expected row) adds ops, rows and time.
        match result {
            Ok(outcome) => {
                consecutive_failures = 0;
                recorder.retries += u64::from(outcome.retries);
                let found = outcome.found_rows(kind);
                if found >= expected {
                    recorder.ok_ops += n;
                    recorder.record_service(kind, elapsed);
                    if let Some(response) = responded {
                        recorder.record_response(kind, response);
                    }
                    recorder.rows += outcome.rows;
                    if let Some(answer) = &outcome.answer {
                        recorder.record_answer(first, answer);
                    }
                } else {
                    recorder.short_ops += n;
                    recorder.missing_rows += expected - found;
                }
            }
            Err(e) => {
                recorder.failed_ops += n;
                recorder.record_error(e.class, &e.message);
                if matches!(e.class, ErrorClass::Connection | ErrorClass::Timeout) {
                    consecutive_failures += 1;
                    if consecutive_failures >= GIVE_UP_AFTER {
                        gave_up = Some(format!("{consecutive_failures} consecutive failures, last: {e}"));
                        break;
                    }
                }
            }
        }
        unreported += n;
        if unreported >= PROGRESS_EVERY || clock.delta(reported_at, now) >= REPORT_AFTER {
            job.progress.fetch_add(unreported, Ordering::Relaxed);
            shared.completed.fetch_add(unreported, Ordering::Relaxed);
            unreported = 0;
            reported_at = now;
        }
    }
    job.progress.fetch_add(unreported, Ordering::Relaxed);
    shared.completed.fetch_add(unreported, Ordering::Relaxed);
    drop(conn);
    ClientResult { recorder, started, finished: Instant::now(), gave_up, time_limited }
}

/// Applies the per-op timeout to network requests. Embedded calls block the thread, so a
/// timer could not interrupt them; they run untimed.
async fn with_timeout<F>(timed: bool, timeout: Duration, fut: F) -> Result<Outcome, OpError>
where
    F: std::future::Future<Output = Result<Outcome, OpError>>,
{
    if !timed {
        return fut.await;
    }
    // Most requests to an in-process target finish on their first poll: no timer needed.
    let mut fut = std::pin::pin!(fut);
    if let std::task::Poll::Ready(r) = futures_util::poll!(fut.as_mut()) {
        return r;
    }
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(OpError::new(ErrorClass::Timeout, format!("no reply within {:.1}s", timeout.as_secs_f64()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::{OpenContext, TargetUrl};
    use crate::base::op::OpKind;
    use crate::data::{DataSpec, Dataset};
    use crate::workload::experiment::{Experiment, ExperimentOp};

    /// One run of `get` on a mock whose every `fail_every`-th request fails.
    async fn run_on_flaky_mock(fail_every: u64, batch: usize, ops: u64) -> RunMeasurement {
        run_on_mock(&format!("fail_every={fail_every}"), ExperimentOp::Get, batch, ops).await
    }

    /// One run of `op` on a mock with these URL options and 1,000 loaded rows.
    async fn run_on_mock(options: &str, op: ExperimentOp, batch: usize, ops: u64) -> RunMeasurement {
        let url = TargetUrl::parse(&if options.is_empty() { "mock:".to_string() } else { format!("mock:?{options}") }).unwrap();
        let target = crate::adapter::registry::open("flaky", &url, &OpenContext::new(std::env::temp_dir())).unwrap();
        let dataset = Dataset::new(&DataSpec::Kv { rows: 1000, payload_bytes: 8 }, 1);
        target.prepare(&dataset.tables).await.unwrap();
        target.load(&dataset.tables[0], dataset.initial(0)).await.unwrap();
        let point = Point { clients: 1, batch, batched: batch > 1, param: None };
        let experiment = Experiment {
            name: "run".into(),
            op,
            workload: None,
            ycsb: None,
            time_limit_secs: None,
            table: 0,
            column: 0,
            max_column: 0,
            ops,
            sized: false,
            lifecycle: false,
            runs: 1,
            warmup: 0,
            points: vec![point],
        };
        let stream = Arc::new(OpStream::new(&experiment, 0, &dataset, 1, 1));
        // As the runner does: a delete run's keys are loaded before it starts.
        if let Some(keys) = stream.rows_to_preload(0, 0) {
            target.load(&dataset.tables[0], dataset.new_rows(0, keys)).await.unwrap();
        }
        let job = RunJob {
            target,
            stream,
            point,
            point_index: 0,
            run: 0,
            warmup: false,
            ops,
            timeout: Duration::from_secs(5),
            cancel: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(AtomicU64::new(0)),
            rate: None,
            time_limit: None,
            check_rows: true,
            stop: None,
        };
        run_once(Arc::new(job)).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_request_adds_failed_ops_and_nothing_else() {
        let m = run_on_flaky_mock(4, 1, 100).await;
        assert_eq!((m.ops, m.ok_ops, m.failed_ops, m.short_ops), (100, 75, 25, 0));
        assert_eq!(m.errors["server"], 25);
        assert_eq!(m.rows, 75, "rows of ok requests only");
        assert_eq!(m.service[&OpKind::Get].count, 75, "only ok requests are timed");
        assert!(m.complete && m.is_void() && m.ops_per_sec().is_none(), "a run with a failure has no throughput");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_batch_fails_all_of_its_ops() {
        // 10 requests of 10 gets; requests 3, 6 and 9 fail.
        let m = run_on_flaky_mock(3, 10, 100).await;
        assert_eq!((m.requests, m.ok_ops, m.failed_ops), (10, 70, 30));
        assert_eq!(m.errors["server"], 3);
        assert_eq!((m.rows, m.service[&OpKind::Get].count), (70, 7));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn blind_deletes_are_read_back_and_a_key_still_there_is_a_missing_row() {
        // Every delete replies "1 row"; the read-back after the run confirms them all.
        let m = run_on_mock("blind_deletes=1", ExperimentOp::Delete, 1, 100).await;
        assert_eq!((m.ok_ops, m.short_ops, m.missing_rows, m.rows), (100, 0, 0, 100));
        assert!(!m.is_void());
        // Without blind deletes the same run needs no read-back and counts the same.
        let m = run_on_mock("", ExperimentOp::Delete, 1, 100).await;
        assert_eq!((m.ok_ops, m.short_ops, m.rows), (100, 0, 100));
        // Every 10th delete is silently skipped: 10 keys are still there, the run is void.
        let m = run_on_mock("lose_deletes_every=10", ExperimentOp::Delete, 1, 100).await;
        assert_eq!((m.ok_ops, m.short_ops, m.missing_rows, m.rows), (90, 10, 10, 90));
        assert!(m.is_void() && m.ops_per_sec().is_none());
        // The same in batches of 10 (one request each).
        let m = run_on_mock("lose_deletes_every=25", ExperimentOp::Delete, 10, 100).await;
        assert_eq!((m.requests, m.short_ops, m.missing_rows), (10, 4, 4));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_clean_run_is_all_ok_ops() {
        let m = run_on_flaky_mock(1_000_000, 1, 50).await;
        assert_eq!((m.ops, m.ok_ops, m.failed_ops, m.rows), (50, 50, 0, 50));
        assert!(!m.is_void() && m.ops_per_sec().is_some_and(|v| v > 0.0));
    }
}
