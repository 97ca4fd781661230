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
    /// Keep the first request of each client's fresh connection out of the warm
    /// histograms, as the run's cold call (`RunMeasurement::cold_call_us`; lifecycle runs).
    pub cold_call: bool,
    /// `--budget`: what is left of it when the run starts; `None`: no budget.
    pub budget: Option<BudgetEnd>,
    /// `--quick`: the run goes on past its ops until it has lasted this long; `None`: it
    /// ends with its sequence numbers or its time limit.
    pub min_run: Option<MinRun>,
}

/// The shortest run (`--quick`): no client stops before the run has done `ops` ops and
/// lasted `lasting` from its start; then each stops at its next claim. The ops sent stay a
/// prefix of the run's sequence numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MinRun {
    pub ops: u64,
    pub lasting: Duration,
}

/// The end of a run's `--budget`: no request starts that would not end before it, judged
/// by the slowest request the client has seen (at first the slowest one calibration
/// timed). The run is complete with the ops done by then, as at a time limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetEnd {
    /// Time left of the budget from the run's start.
    pub left: Duration,
    /// The slowest single request expected before any was timed.
    pub slowest_request: Duration,
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
    if job.stop.is_none() && !job.stream.open_ended() {
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
    /// The run's time limit came first, or its shortest length had passed with its ops
    /// done (`MinRun`).
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
    let mut claims = Claims::new(job, &counters.claimed, epoch);
    let mut unreported = 0u64;
    let mut reported_at = clock.raw();
    let deadline = job.time_limit.map(|limit| epoch + limit);
    let mut cold = job.cold_call;
    let budget_end = job.budget.map(|b| epoch + b.left);
    let mut slowest = job.budget.map_or(Duration::ZERO, |b| b.slowest_request);
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
        if let Some(at) = budget_end
            && Instant::now() + slowest >= at
        {
            end.time_limited = true;
            break;
        }
        let Some((first, n)) = claims.next() else {
            end.time_limited |= claims.ran_long_enough;
            break;
        };
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
        slowest = slowest.max(clock.delta(t0, now));
        let request = Request {
            first,
            n,
            kind,
            expected,
            elapsed: clock.delta(t0, now),
            responded: intended.map(|at| Instant::now() - at),
            late: late == Some(true),
            cold: std::mem::take(&mut cold),
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
    // A client whose only request was the cold call: that call is its warm time too.
    if let Some((kind, elapsed)) = recorder.cold
        && !recorder.has_service(kind)
    {
        recorder.record_service(kind, elapsed);
    }
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
    /// `MinRun`: once the run has claimed this sequence number and reached this instant,
    /// claiming stops.
    long_enough: Option<(u64, Instant)>,
    /// Claiming stopped at `long_enough`.
    ran_long_enough: bool,
}

impl<'a> Claims<'a> {
    fn new(job: &RunJob, counter: &'a AtomicU64, epoch: Instant) -> Self {
        let batch = job.point.batch.max(1) as u64;
        let time_based = job.stream.open_ended();
        // A time-based run's sequence space is far larger than what it sends: chunks are
        // sized from the ops a fixed run would do. Its inserts are claimed one request at a
        // time, so every key claimed is sent and the keys inserted are a prefix (cleanup).
        let ops = if time_based { job.stream.ops_at(&job.point) } else { job.seqs.end - job.seqs.start };
        let one_at_a_time = job.rate.is_some() || job.point.batched || (time_based && job.stream.kind() == OpKind::Insert);
        let chunk = if one_at_a_time { 1 } else { (ops / (job.clients as u64 * 256)).clamp(1, 64) };
        let long_enough = job.min_run.map(|m| (job.seqs.start + m.ops, epoch + m.lasting));
        Claims { counter, batch, claim: batch * chunk, end: job.seqs.end, claimed: 0..0, long_enough, ran_long_enough: false }
    }

    /// The next request's first sequence number and its number of ops; `None` once every
    /// op of the run is claimed.
    #[inline(always)]
    fn next(&mut self) -> Option<(u64, u64)> {
        if self.claimed.is_empty() {
            if let Some((ops_end, at)) = self.long_enough
                && self.counter.load(Ordering::Relaxed) >= ops_end
                && Instant::now() >= at
            {
                self.ran_long_enough = true;
                return None;
            }
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
    /// The client's first request on its connection, timed apart (`RunJob::cold_call`).
    cold: bool,
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
                if request.cold {
                    recorder.cold = Some((request.kind, request.elapsed));
                } else {
                    recorder.record_service(request.kind, request.elapsed);
                }
                if let Some(server) = outcome.server_time {
                    recorder.server_time += server;
                    recorder.server_timed += 1;
                }
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
mod tests;
