//! One run of one point: N clients (tasks or threads), each with its own connection,
//! claiming sequence numbers from a shared counter until the run's ops are done, the
//! run's monitor (`monitor`) ends the claims under `--precision`, or the run's time is up
//! (`--duration`, YCSB's `maxexecutiontime`: no request starts after the deadline, the
//! ones in flight finish and count).
//!
//! Owns the hot loop: generate op, time the request, check it, record. A request counts
//! (ops, rows, latency) only when it succeeded and returned or affected at least the rows
//! the plan expects; a failed one counts as failed ops, a short one as missing rows; the
//! conflicts an adapter retried inside a request count as its retries. The same loop serves
//! network targets (tasks on the shared runtime, or each on a runtime of its own thread, as
//! the target's `Execution` says) and embedded ones (one OS thread per client). Must not
//! print or decide flags.

use super::monitor::{Counters, Monitor, StopRule};
use super::stopping;
use crate::adapter::{Connection, Target};
use crate::base::measurement::RunMeasurement;
use crate::base::op::{ErrorClass, Op, OpError, OpKind, Outcome};
use crate::stats::intervals::IntervalRecorder;
use crate::stats::{Recorder, process_cpu_time};
use crate::workload::experiment::{OpStream, Point};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{Barrier, oneshot};

/// A client stops after this many consecutive connection failures: the server is gone.
const GIVE_UP_AFTER: u32 = 20;

/// Everything one run needs, shared by its clients.
#[derive(Clone)]
pub struct RunJob {
    pub target: Arc<dyn Target>,
    pub stream: Arc<OpStream>,
    pub point: Point,
    pub point_index: usize,
    pub run: u32,
    pub warmup: bool,
    /// The sequence numbers this process sends: all of the run's (`0..ops`), or a worker's
    /// share of them (`--workers`).
    pub seqs: Range<u64>,
    /// Clients this process runs: the point's, or a worker's share of them.
    pub clients: usize,
    pub timeout: Duration,
    pub cancel: Arc<AtomicBool>,
    /// Ops done, for the progress display.
    pub progress: Arc<AtomicU64>,
    /// Fixed-rate (open-loop) runs: total ops per second across all clients. `None` is a
    /// closed loop: each client sends its next request when the previous one returns.
    pub rate: Option<f64>,
    /// `--duration` or YCSB's `maxexecutiontime`: no request starts this long after the
    /// run's start (its first client's); the run is complete with the ops done by then.
    pub time_limit: Option<Duration>,
    /// Compare each request's rows with the rows the plan expects (false for NO-DB, whose
    /// ops do no work and so return no real rows).
    pub check_rows: bool,
    /// `--precision`: end the run once its throughput is known this well (or at its time
    /// cap); `None`: the run does all of its `seqs`.
    pub stop: Option<StopRule>,
    /// Keep the service time per interval of this length (`--hlog-interval`, measured runs);
    /// `None`: only the whole run's histograms.
    pub intervals: Option<Duration>,
}

/// Clients report progress (and the ops completed, for the monitor) in chunks, so the hot
/// loop rarely touches the shared counters: every this many ops ...
const PROGRESS_EVERY: u64 = 1024;
/// ... or when this long has passed since the last report (slow requests).
const REPORT_AFTER: Duration = Duration::from_micros(250);

/// An op counts as late (a missed schedule) when its client reached it this much after its
/// intended start, before any wait. Slip of the client's own timer is not the target's:
/// tokio's timer fires on whole milliseconds, so a client that waits for a slot starts up
/// to about 1 ms after it, and so do the ops that follow it in the same millisecond; the
/// second millisecond is margin for waking up on a busy machine. A target that cannot keep
/// the rate makes its clients fall further behind with every op, far past this.
const LATE: Duration = Duration::from_millis(2);

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
    run_share(job, None).await.0
}

/// A start held back until other processes are ready too (`--workers`): `ready` is sent
/// once every client of this process has connected, and the clients start when `go`
/// arrives. A `go` dropped unsent stops the run before its first op.
pub struct StartGate {
    pub ready: oneshot::Sender<()>,
    pub go: oneshot::Receiver<()>,
}

/// When a process's clients ran, on the wall clock (so that windows of processes on
/// different machines can be put on one time line).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub start: SystemTime,
    pub end: SystemTime,
}

/// Runs this process's part of a run (all of it, or a worker's share) behind an optional
/// start gate; returns the measurement and the clients' window (`None`: no client ran).
pub async fn run_share(job: Arc<RunJob>, gate: Option<StartGate>) -> (RunMeasurement, Option<Window>) {
    let clients = job.clients;
    let counters = Counters::new(job.seqs.start);
    let connected = Arc::new(Barrier::new(clients + 1));
    let barrier = Arc::new(Barrier::new(clients + 1));
    let run_epoch = Arc::new(OnceLock::new());
    let mut handles = Vec::with_capacity(clients);
    let start_gate = Arc::new(AtomicBool::new(true));
    let spawn_args = || (job.clone(), counters.clone(), [connected.clone(), barrier.clone()], run_epoch.clone(), start_gate.clone());
    if job.target.info().execution.own_threads() {
        for i in 0..clients {
            let (job, counters, barriers, run_epoch, open) = spawn_args();
            let thread = std::thread::Builder::new().name(format!("client-{i}")).spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("client runtime");
                // A task of the runtime, not the future `block_on` polls: woken by a
                // connection task of the same runtime (tokio-postgres), the latter costs
                // a second epoll_wait per request.
                let result = rt
                    .block_on(async move { tokio::spawn(client(job, counters, barriers, run_epoch, open)).await })
                    .map_err(|e| e.to_string());
                rt.block_on(let_spawned_tasks_finish());
                result
            });
            handles.push(ClientHandle::Thread(thread.expect("spawn client thread")));
        }
    } else {
        for _ in 0..clients {
            let (job, counters, barriers, run_epoch, open) = spawn_args();
            handles.push(ClientHandle::Task(tokio::spawn(async move { client(job, counters, barriers, run_epoch, open).await })));
        }
    }
    tokio::select! {
        _ = connected.wait() => {}
        () = stopping::stopped(&job.cancel) => {}
    }
    if let Some(gate) = gate {
        let _ = gate.ready.send(());
        if gate.go.await.is_err() {
            start_gate.store(false, Ordering::Relaxed);
        }
    }
    let cpu_before = process_cpu_time();
    let anchor = (Instant::now(), SystemTime::now());
    tokio::select! {
        _ = barrier.wait() => {}
        () = stopping::stopped(&job.cancel) => {}
    }
    let monitor = Monitor::start(&job.point, job.stop, &counters);
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
    let mut seconds = match (start, end) {
        (Some(s), Some(e)) => e.duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    // A fixed-rate schedule of n ops is n slots of 1/rate: its last op starts at (n-1)/rate
    // (a batch of b ops takes b slots),
    // and a window ending with its reply would count one slot too few (15 requests at
    // 1,000/s read as 7 % over the rate). The run lasts at least its schedule.
    if let Some(rate) = job.rate
        && merged.ops > 0
        && seconds > 0.0
    {
        seconds = seconds.max(merged.ops as f64 / rate);
    }
    let on_wall_clock = |at: Instant| match at.checked_duration_since(anchor.0) {
        Some(after) => anchor.1 + after,
        None => anchor.1 - anchor.0.duration_since(at),
    };
    let window = start.zip(end).map(|(s, e)| Window { start: on_wall_clock(s), end: on_wall_clock(e) });
    let started = start_gate.load(Ordering::Relaxed);
    let ops = job.seqs.end - job.seqs.start;
    let watched = monitor.finish(end.map(|e| (e, merged.ops))).await;
    let complete =
        started && !job.cancel.load(Ordering::Relaxed) && gave_up.is_none() && (merged.ops == ops || time_limited || watched.ended);
    if watched.ended {
        // The progress display counts the ops the run no longer needs as done.
        job.progress.fetch_add(ops.saturating_sub(merged.ops), Ordering::Relaxed);
    }
    let intervals = merged.intervals.take().zip(run_epoch.get().copied()).map(|(i, epoch)| i.finish(on_wall_clock(epoch)));
    let mut m = merged.into_measurement(job.run, job.warmup, seconds, cpu, complete);
    m.intervals = intervals;
    m.precision = watched.precision();
    // Runs of a fixed number of ops compare whole digests; runs that end early by design
    // (a precision stop, a deadline) compare the blocks both completed.
    if job.stop.is_none() && !job.stream.time_based() {
        m.answer_blocks.clear();
    }
    if job.check_rows && job.stream.kind() == OpKind::Delete && job.target.blind_deletes() {
        super::verify::blind_deletes(&job, &mut m).await;
    }
    (m, window)
}

enum ClientHandle {
    Task(tokio::task::JoinHandle<ClientResult>),
    Thread(std::thread::JoinHandle<Result<ClientResult, String>>),
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
                .unwrap_or_else(|e| Err(e.to_string()))
                .and_then(|result| result),
        }
    }
}

/// How long a client thread's runtime waits for the tasks its connection left behind.
const CLOSE_GRACE: Duration = Duration::from_millis(200);

/// On a client thread's own runtime, after the client is done: lets the tasks a dropped
/// connection spawned (a driver's goodbye to the server) finish, for at most
/// `CLOSE_GRACE`, before the runtime and what it still runs are dropped.
async fn let_spawned_tasks_finish() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let until = tokio::time::Instant::now() + CLOSE_GRACE;
    while metrics.num_alive_tasks() > 0 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// How long clients get after a stop request to finish the request they are in.
const STOP_GRACE: Duration = Duration::from_millis(300);

/// Resolves `STOP_GRACE` after the run is asked to stop.
async fn grace_after_stop(cancel: &AtomicBool) {
    stopping::stopped(cancel).await;
    tokio::time::sleep(STOP_GRACE).await;
}

async fn client(
    job: Arc<RunJob>,
    counters: Counters,
    [connected, barrier]: [Arc<Barrier>; 2],
    run_epoch: Arc<OnceLock<Instant>>,
    open: Arc<AtomicBool>,
) -> ClientResult {
    let mut recorder = Recorder::default();
    let ready = async {
        let connection = job.target.connect().await;
        connected.wait().await;
        barrier.wait().await;
        connection
    };
    let connection = tokio::select! {
        connection = ready => connection,
        () = stopping::stopped(&job.cancel) => {
            return ClientResult { recorder, started: Instant::now(), finished: Instant::now(), gave_up: None, time_limited: false };
        }
    };
    // The start gate is decided before the clients pass the barrier: closed, no op is sent.
    if !open.load(Ordering::Relaxed) {
        return ClientResult { recorder, started: Instant::now(), finished: Instant::now(), gave_up: None, time_limited: false };
    }
    let started = Instant::now();
    // The run's clock starts with its first client: the fixed-rate schedule and interval 0.
    let epoch = *run_epoch.get_or_init(Instant::now);
    let schedule = job.rate.map(|rate| (epoch, 1.0 / rate));
    let mut conn = match connection {
        Ok(c) => c,
        Err(e) => {
            recorder.record_error(ErrorClass::Connection, &e.to_string());
            return ClientResult { recorder, started, finished: Instant::now(), gave_up: Some(e.to_string()), time_limited: false };
        }
    };
    let ended = send_requests(&job, conn.as_mut(), &counters, (epoch, schedule), &mut recorder).await;
    drop(conn);
    ClientResult { recorder, started, finished: Instant::now(), gave_up: ended.gave_up, time_limited: ended.time_limited }
}

/// Why a client's request loop ended, when not because the run's ops ran out.
#[derive(Default)]
struct LoopEnd {
    /// The client gave up on a dead server.
    gave_up: Option<String>,
    /// The run's time limit came first.
    time_limited: bool,
}

/// The client's request loop: claim the next sequence numbers, plan their ops, wait for
/// their turn on a fixed-rate schedule, time the request and record its result, until the
/// run's ops are claimed, the run is stopped or timed out, or the server is gone.
async fn send_requests(
    job: &RunJob,
    conn: &mut dyn Connection,
    counters: &Counters,
    (epoch, schedule): (Instant, Option<(Instant, f64)>),
    recorder: &mut Recorder,
) -> LoopEnd {
    let kind = job.stream.kind();
    let mixed = kind == OpKind::Mixed;
    let mut watchdog = Watchdog::new(job.target.info().execution.timed(), job.timeout);
    let mut consecutive_failures = 0u32;
    let mut end = LoopEnd::default();
    let mut ops_buf = Vec::with_capacity(job.point.batch.max(1));
    // Service time is read from the CPU's time-stamp counter (quanta): a third of the cost
    // of the OS clock on these VMs, which matters for the NO-DB ceiling.
    let clock = quanta::Clock::new();
    let mut claims = Claims::new(job, &counters.claimed);
    let mut unreported = 0u64;
    let mut reported_at = clock.raw();
    let deadline = job.time_limit.map(|limit| epoch + limit);
    if let Some(width) = job.intervals {
        recorder.intervals = Some(IntervalRecorder::new(width, clock.now() - Instant::now().saturating_duration_since(epoch)));
    }
    loop {
        if job.cancel.load(Ordering::Relaxed) {
            break;
        }
        if let Some(at) = deadline
            && Instant::now() >= at
        {
            end.time_limited = true;
            break;
        }
        let Some((first, n)) = claims.next() else { break };
        let intended = schedule.map(|(start, interval)| start + Duration::from_secs_f64((first - job.seqs.start) as f64 * interval));
        // At a fixed rate, the first op due after the deadline ends the client's run (every
        // later sequence number is due later still: the ops sent stay a prefix).
        if let (Some(at), Some(end_at)) = (intended, deadline)
            && at >= end_at
        {
            end.time_limited = true;
            break;
        }
        let expected = plan_request(job, first, n, &mut ops_buf);
        let late = intended.map(|at| Instant::now().saturating_duration_since(at) > LATE);
        if let Some(at) = intended {
            tokio::time::sleep_until(at.into()).await;
        }
        let t0 = clock.raw();
        let kind = if mixed { ops_buf[0].kind() } else { kind };
        let result = if job.point.batched {
            with_timeout(&mut watchdog, &clock, t0, conn.execute_batch(&ops_buf)).await
        } else {
            with_timeout(&mut watchdog, &clock, t0, conn.execute(&ops_buf[0])).await
        };
        let now = clock.raw();
        if let Some(intervals) = &mut recorder.intervals {
            intervals.advance(clock.scaled(now));
        }
        let request = Request {
            first,
            n,
            kind,
            expected,
            elapsed: clock.delta(t0, now),
            responded: intended.map(|at| Instant::now() - at),
            late: late == Some(true),
        };
        match record_request(recorder, result, &request) {
            Tally::Answered => consecutive_failures = 0,
            Tally::Failed => {}
            Tally::Unreachable(e) => {
                consecutive_failures += 1;
                if consecutive_failures >= GIVE_UP_AFTER {
                    end.gave_up = Some(format!("{consecutive_failures} consecutive failures, last: {e}"));
                    break;
                }
            }
        }
        unreported += n;
        if unreported >= PROGRESS_EVERY || clock.delta(reported_at, now) >= REPORT_AFTER {
            job.progress.fetch_add(unreported, Ordering::Relaxed);
            counters.completed.fetch_add(unreported, Ordering::Relaxed);
            unreported = 0;
            reported_at = now;
        }
    }
    job.progress.fetch_add(unreported, Ordering::Relaxed);
    counters.completed.fetch_add(unreported, Ordering::Relaxed);
    end
}

/// The sequence numbers a client claims from the run's shared counter, a chunk at a time
/// so clients rarely contend on it; the chunk is small against the run so the tail stays
/// balanced.
struct Claims<'a> {
    counter: &'a AtomicU64,
    /// Ops per request.
    batch: u64,
    /// Sequence numbers per claim.
    claim: u64,
    /// The end of this process's sequence numbers (the run's ops, or a worker's share).
    end: u64,
    claimed: std::ops::Range<u64>,
}

impl<'a> Claims<'a> {
    fn new(job: &RunJob, counter: &'a AtomicU64) -> Self {
        let batch = job.point.batch.max(1) as u64;
        let time_based = job.stream.time_based();
        // A time-based run's sequence space is far larger than what it sends: chunks are
        // sized from the ops a fixed run would do. Its inserts are claimed one request at a
        // time, so every key claimed is sent and the keys inserted are a prefix (cleanup).
        let ops = if time_based { job.stream.ops_at(&job.point) } else { job.seqs.end - job.seqs.start };
        let one_at_a_time = job.rate.is_some() || job.point.batched || (time_based && job.stream.kind() == OpKind::Insert);
        let chunk = if one_at_a_time { 1 } else { (ops / (job.clients as u64 * 256)).clamp(1, 64) };
        Claims { counter, batch, claim: batch * chunk, end: job.seqs.end, claimed: 0..0 }
    }

    /// The next request's first sequence number and its number of ops; `None` once every
    /// op of the run is claimed.
    #[inline(always)]
    fn next(&mut self) -> Option<(u64, u64)> {
        if self.claimed.is_empty() {
            let start = self.counter.fetch_add(self.claim, Ordering::Relaxed);
            if start >= self.end {
                return None;
            }
            self.claimed = start..(start + self.claim).min(self.end);
        }
        let first = self.claimed.start;
        let n = self.batch.min(self.claimed.end - first);
        self.claimed.start += n;
        Some((first, n))
    }
}

/// Fills `ops` with the request's ops (the batch's `n`, or the one op of an unbatched
/// request) and returns the rows the plan knows they must return or affect (0: nothing
/// known, or rows not checked).
#[inline(always)]
fn plan_request(job: &RunJob, first: u64, n: u64, ops: &mut Vec<Op>) -> u64 {
    let mut expected = 0u64;
    ops.clear();
    let seqs = if job.point.batched { first..first + n } else { first..first + 1 };
    ops.extend(seqs.map(|seq| {
        let planned = job.stream.planned_in_share(&job.point, job.point_index, job.run, seq, job.seqs.start, job.clients);
        expected += planned.expected_rows;
        planned.op
    }));
    if job.check_rows { expected } else { 0 }
}

/// One request as it was sent and timed.
struct Request {
    /// Its first sequence number.
    first: u64,
    /// Its ops.
    n: u64,
    kind: OpKind,
    /// The rows it must return or affect (0: not checked).
    expected: u64,
    /// Service time: send to reply.
    elapsed: Duration,
    /// Fixed-rate runs: response time, from the intended start to the reply.
    responded: Option<Duration>,
    /// It started later than its turn on the schedule.
    late: bool,
}

/// How a request's result counts towards giving up on the server.
enum Tally {
    /// The server answered (rows short or not).
    Answered,
    /// A failure that says nothing about the server being gone.
    Failed,
    /// A connection failure or timeout.
    Unreachable(OpError),
}

/// Records one request: only an ok request (no error, every expected row) adds ops, rows
/// and time; a failed one counts as failed ops, a short one as missing rows.
#[inline(always)]
fn record_request(recorder: &mut Recorder, result: Result<Outcome, OpError>, request: &Request) -> Tally {
    let n = request.n;
    if request.late {
        recorder.late_ops += n;
    }
    recorder.ops += n;
    recorder.requests += 1;
    match result {
        Ok(outcome) => {
            recorder.retries += u64::from(outcome.retries);
            let found = outcome.found_rows(request.kind);
            if found >= request.expected {
                recorder.ok_ops += n;
                recorder.record_service(request.kind, request.elapsed);
                if let Some(response) = request.responded {
                    recorder.record_response(request.kind, response);
                }
                recorder.rows += outcome.rows;
                if let Some(answer) = &outcome.answer {
                    recorder.record_answer(request.first, answer);
                }
            } else {
                recorder.short_ops += n;
                recorder.missing_rows += request.expected - found;
            }
            Tally::Answered
        }
        Err(e) => {
            recorder.failed_ops += n;
            recorder.record_error(e.class, &e.message);
            if matches!(e.class, ErrorClass::Connection | ErrorClass::Timeout) { Tally::Unreachable(e) } else { Tally::Failed }
        }
    }
}

/// The per-request timeout of one client of a network target (on the shared runtime or a
/// client thread's own): one timer for all of the client's requests instead of a timer
/// entry made and dropped for each. Embedded calls block the thread, so a timer could not
/// interrupt them; they run untimed (no watchdog).
///
/// The timer's deadline is never later than the running request's start + `timeout`: it
/// starts at the client's first request (or earlier), and each request starts after the
/// one before. When it fires, a request that has run for `timeout` fails with a timeout;
/// one that has not moves the timer to its own start + `timeout`. So the timer fires at
/// most once per `timeout` of a run's requests, and a request still times out at its start
/// + `timeout`.
struct Watchdog {
    timeout: Duration,
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl Watchdog {
    /// A watchdog for `timed` requests (`Execution::timed`), else none.
    fn new(timed: bool, timeout: Duration) -> Option<Self> {
        timed.then(|| Watchdog { timeout, timer: Box::pin(tokio::time::sleep(timeout)) })
    }

    /// Runs one request that started at `started` (on `clock`), failing it with a timeout
    /// once it has run for `timeout`.
    async fn guard<F>(&mut self, clock: &quanta::Clock, started: u64, fut: F) -> Result<Outcome, OpError>
    where
        F: std::future::Future<Output = Result<Outcome, OpError>>,
    {
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(r) = fut.as_mut().poll(cx) {
                return std::task::Poll::Ready(r);
            }
            while self.timer.as_mut().poll(cx).is_ready() {
                let ran = clock.delta(started, clock.raw());
                if ran >= self.timeout {
                    // The next request starts later than now: its deadline is later too.
                    self.timer.as_mut().reset(tokio::time::Instant::now() + self.timeout);
                    let timeout = self.timeout.as_secs_f64();
                    return std::task::Poll::Ready(Err(OpError::new(ErrorClass::Timeout, format!("no reply within {timeout:.1}s"))));
                }
                self.timer.as_mut().reset(tokio::time::Instant::now() + (self.timeout - ran));
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// Runs a request under the client's watchdog, or untimed without one.
#[inline(always)]
async fn with_timeout<F>(watchdog: &mut Option<Watchdog>, clock: &quanta::Clock, started: u64, fut: F) -> Result<Outcome, OpError>
where
    F: std::future::Future<Output = Result<Outcome, OpError>>,
{
    match watchdog {
        Some(watchdog) => watchdog.guard(clock, started, fut).await,
        None => fut.await,
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
        run_once(Arc::new(mock_job(options, op, batch, ops, 1).await)).await
    }

    /// The job of one run of `op` by `clients` clients on a mock with these URL options and
    /// 1,000 loaded rows.
    async fn mock_job(options: &str, op: ExperimentOp, batch: usize, ops: u64, clients: usize) -> RunJob {
        timed_mock_job(options, op, batch, ops, clients, None).await
    }

    /// As `mock_job`, with runs that last `duration_secs` when given (`--duration`).
    async fn timed_mock_job(options: &str, op: ExperimentOp, batch: usize, ops: u64, clients: usize, duration_secs: Option<f64>) -> RunJob {
        let url = TargetUrl::parse(&if options.is_empty() { "mock:".to_string() } else { format!("mock:?{options}") }).unwrap();
        let target = crate::adapter::registry::open("flaky", &url, &OpenContext::new(std::env::temp_dir())).unwrap();
        let dataset = Dataset::new(&DataSpec::Kv { rows: 1000, payload_bytes: 8 }, 1);
        target.prepare(&dataset.tables).await.unwrap();
        target.load(&dataset.tables[0], dataset.initial(0)).await.unwrap();
        let point = Point { clients, batch, batched: batch > 1, param: None, rate: None };
        let experiment = Experiment {
            name: "run".into(),
            op,
            workload: None,
            script: None,
            ycsb: None,
            time_limit_secs: None,
            duration_secs,
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
        let seqs = 0..stream.seqs_per_run(&point);
        RunJob {
            target,
            stream,
            point,
            point_index: 0,
            run: 0,
            warmup: false,
            seqs,
            clients,
            timeout: Duration::from_secs(5),
            cancel: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(AtomicU64::new(0)),
            rate: None,
            time_limit: duration_secs.map(Duration::from_secs_f64),
            check_rows: true,
            stop: None,
            intervals: Some(Duration::from_millis(100)),
        }
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
    async fn clients_on_threads_of_their_own_count_every_op() {
        let job = mock_job("execution=async_threads", ExperimentOp::Get, 1, 2000, 2).await;
        let progress = job.progress.clone();
        let m = run_once(Arc::new(job)).await;
        assert_eq!((m.ops, m.ok_ops, m.failed_ops, m.rows, m.requests), (2000, 2000, 0, 2000, 2000));
        assert_eq!(m.service[&OpKind::Get].count, 2000);
        assert_eq!(progress.load(Ordering::Relaxed), 2000);
        assert!(m.complete && m.ops_per_sec().is_some());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn clients_on_threads_of_their_own_time_out_slow_requests() {
        // Every request takes 300 ms; the timeout is 50 ms.
        let mut job = mock_job("execution=async_threads&latency_us=300000", ExperimentOp::Get, 1, 4, 2).await;
        job.timeout = Duration::from_millis(50);
        let m = run_once(Arc::new(job)).await;
        assert_eq!((m.ops, m.ok_ops, m.failed_ops), (4, 0, 4));
        assert_eq!(m.errors["timeout"], 4);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_shorter_than_the_timeout_never_time_out_however_long_the_run() {
        // Every request takes 20 ms, the timeout is 50 ms: each client's 12 requests run
        // for 240 ms, past the timeout several times over, on one timer per client.
        for execution in ["async_threads", "async"] {
            let mut job = mock_job(&format!("execution={execution}&latency_us=20000"), ExperimentOp::Get, 1, 24, 2).await;
            job.timeout = Duration::from_millis(50);
            let m = run_once(Arc::new(job)).await;
            assert_eq!((m.ops, m.ok_ops, m.failed_ops), (24, 24, 0), "{execution}: {:?}", m.errors);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn clients_on_threads_of_their_own_stop_when_the_run_is_cancelled() {
        let job = Arc::new(mock_job("execution=async_threads&latency_us=1000", ExperimentOp::Get, 1, 1_000_000, 2).await);
        let cancel = job.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.store(true, Ordering::Relaxed);
        });
        let m = tokio::time::timeout(Duration::from_secs(30), run_once(job)).await.expect("the run ends once cancelled");
        assert!(!m.complete && m.ops > 0 && m.ops < 1_000_000, "{} ops", m.ops);
        assert_eq!(m.failed_ops, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_time_based_run_lasts_its_duration_and_counts_every_op_sent() {
        // Every request takes 2 ms; 2 clients for 300 ms, far past the 10 ops of a fixed run.
        let job = timed_mock_job("latency_us=2000", ExperimentOp::Get, 1, 10, 2, Some(0.3)).await;
        let progress = job.progress.clone();
        let m = run_once(Arc::new(job)).await;
        assert!((0.3..0.3 + 0.1).contains(&m.seconds), "{} s", m.seconds);
        assert!(m.ops > 10 && m.ops <= 2 * 150, "{} ops", m.ops);
        assert_eq!((m.ok_ops, m.failed_ops, m.requests, m.service[&OpKind::Get].count), (m.ops, 0, m.ops, m.ops));
        assert_eq!(progress.load(Ordering::Relaxed), m.ops);
        assert!(m.complete && m.ops_per_sec().is_some_and(|v| (v - m.ops as f64 / m.seconds).abs() < 1e-6));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_time_based_run_at_a_fixed_rate_sends_the_ops_due_before_its_deadline() {
        // 100 ops/s for 0.5 s: ops 0..50 are due at 0, 10, ..., 490 ms; op 50 at the deadline.
        let mut job = timed_mock_job("", ExperimentOp::Get, 1, 10, 2, Some(0.5)).await;
        job.rate = Some(100.0);
        let m = run_once(Arc::new(job)).await;
        assert_eq!((m.ops, m.ok_ops), (50, 50));
        assert!(m.complete && (0.49..0.6).contains(&m.seconds), "{} s", m.seconds);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fixed_rate_run_that_keeps_up_achieves_its_rate_not_one_slot_more() {
        // 10 requests at 50 ops/s: due at 0, 20, ..., 180 ms; the schedule is 200 ms long.
        let mut job = mock_job("", ExperimentOp::Get, 1, 10, 1).await;
        job.rate = Some(50.0);
        let m = run_once(Arc::new(job)).await;
        assert_eq!((m.ops, m.ok_ops), (10, 10));
        let achieved = m.ops_per_sec().unwrap();
        assert!((45.0..=50.0).contains(&achieved), "{achieved} ops/s over {} s (the last start alone gives 55.6)", m.seconds);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_time_based_insert_run_inserts_a_prefix_of_its_keys() {
        let job = timed_mock_job("latency_us=1000", ExperimentOp::Insert, 1, 10, 3, Some(0.2)).await;
        let (stream, point) = (job.stream.clone(), job.point);
        let m = run_once(Arc::new(job)).await;
        assert!(m.complete && m.ops > 10 && m.ok_ops == m.ops, "{} ops", m.ops);
        // Every key of the first `ops` sequence numbers was claimed and sent once.
        let keys = stream.inserted_keys(&point, 0, 0, m.ops);
        assert_eq!(keys.iter().collect::<std::collections::HashSet<_>>().len() as u64, m.ops);
        assert_eq!(m.rows, m.ops, "each insert stored its row (none was a duplicate)");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_clean_run_is_all_ok_ops() {
        let m = run_on_flaky_mock(1_000_000, 1, 50).await;
        assert_eq!((m.ops, m.ok_ops, m.failed_ops, m.rows), (50, 50, 0, 50));
        assert!(!m.is_void() && m.ops_per_sec().is_some_and(|v| v > 0.0));
        let intervals = m.intervals.as_ref().expect("a measured run keeps its intervals").decoded().unwrap();
        assert_eq!(intervals.iter().map(|h| h.len()).sum::<u64>(), 50, "every ok request is in one interval");
        assert_eq!(m.intervals.as_ref().unwrap().interval_seconds, 0.1);
    }
}
