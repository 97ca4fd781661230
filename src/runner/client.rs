//! One run of one point: N clients (tasks or threads), each with its own connection,
//! claiming sequence numbers from a shared counter until the run's ops are done.
//!
//! Owns the hot loop: generate op, time the request, record. The same loop serves network
//! targets (tasks on the shared runtime) and embedded ones (one OS thread per client).
//! Must not print or decide flags.

use crate::adapter::{Execution, Target};
use crate::base::measurement::RunMeasurement;
use crate::base::op::{ErrorClass, OpError, Outcome};
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
}

/// Clients report progress in chunks, so the hot loop rarely touches the shared counter.
const PROGRESS_EVERY: u64 = 1024;

/// An op that starts this much after its intended start counts as a missed schedule.
const LATE: Duration = Duration::from_millis(1);

struct ClientResult {
    recorder: Recorder,
    /// When this client passed the start barrier; the run starts at the earliest one.
    started: Instant,
    finished: Instant,
    /// Set when the client gave up on a dead server.
    gave_up: Option<String>,
}

/// Runs one warm-up or measured run and returns its measurement.
pub async fn run_once(job: Arc<RunJob>) -> RunMeasurement {
    let clients = job.point.clients;
    let counter = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(clients + 1));
    let schedule_start = Arc::new(OnceLock::new());
    let mut handles = Vec::with_capacity(clients);
    match job.target.info().execution {
        Execution::Async => {
            for _ in 0..clients {
                let (job, counter, barrier, schedule_start) = (job.clone(), counter.clone(), barrier.clone(), schedule_start.clone());
                handles.push(ClientHandle::Task(tokio::spawn(async move { client(job, counter, barrier, schedule_start).await })));
            }
        }
        Execution::Blocking => {
            for i in 0..clients {
                let (job, counter, barrier, schedule_start) = (job.clone(), counter.clone(), barrier.clone(), schedule_start.clone());
                let thread = std::thread::Builder::new().name(format!("client-{i}")).spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("client runtime");
                    rt.block_on(client(job, counter, barrier, schedule_start))
                });
                handles.push(ClientHandle::Thread(thread.expect("spawn client thread")));
            }
        }
    }
    let cpu_before = process_cpu_time();
    barrier.wait().await;
    let mut start: Option<Instant> = None;
    let mut end: Option<Instant> = None;
    let mut merged = Recorder::default();
    let mut gave_up = None;
    for h in handles {
        let result = match h {
            ClientHandle::Task(t) => t.await.map_err(|e| e.to_string()),
            ClientHandle::Thread(t) => tokio::task::spawn_blocking(move || t.join().map_err(|_| "client thread panicked".to_string()))
                .await
                .unwrap_or_else(|e| Err(e.to_string())),
        };
        match result {
            Ok(r) => {
                start = Some(start.map_or(r.started, |s| s.min(r.started)));
                end = Some(end.map_or(r.finished, |e| e.max(r.finished)));
                merged.merge(r.recorder);
                gave_up = gave_up.or(r.gave_up);
            }
            Err(e) => merged.record_error(ErrorClass::Client, &format!("client crashed: {e}")),
        }
    }
    let cpu = process_cpu_time().saturating_sub(cpu_before).as_secs_f64();
    let seconds = match (start, end) {
        (Some(s), Some(e)) => e.duration_since(s).as_secs_f64(),
        _ => 0.0,
    };
    let complete = !job.cancel.load(Ordering::Relaxed) && gave_up.is_none() && merged.ops == job.ops;
    merged.into_measurement(job.run, job.warmup, seconds, cpu, complete)
}

enum ClientHandle {
    Task(tokio::task::JoinHandle<ClientResult>),
    Thread(std::thread::JoinHandle<ClientResult>),
}

async fn client(job: Arc<RunJob>, counter: Arc<AtomicU64>, barrier: Arc<Barrier>, schedule_start: Arc<OnceLock<Instant>>) -> ClientResult {
    let mut recorder = Recorder::default();
    let connection = job.target.connect().await;
    barrier.wait().await;
    let started = Instant::now();
    let schedule = job.rate.map(|rate| (*schedule_start.get_or_init(Instant::now), 1.0 / rate));
    let mut conn = match connection {
        Ok(c) => c,
        Err(e) => {
            recorder.record_error(ErrorClass::Connection, &e.to_string());
            return ClientResult { recorder, started, finished: Instant::now(), gave_up: Some(e.to_string()) };
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
    loop {
        if job.cancel.load(Ordering::Relaxed) {
            break;
        }
        // Sequence numbers are claimed a chunk at a time so clients rarely contend on the
        // shared counter; the chunk is small against the run so the tail stays balanced.
        if claimed.is_empty() {
            let start = counter.fetch_add(batch * chunk, Ordering::Relaxed);
            if start >= job.ops {
                break;
            }
            claimed = start..(start + batch * chunk).min(job.ops);
        }
        let first = claimed.start;
        let n = batch.min(claimed.end - first);
        claimed.start += n;
        let intended = schedule.map(|(start, interval)| start + Duration::from_secs_f64(first as f64 * interval));
        if job.point.batched {
            ops_buf.clear();
            ops_buf.extend((first..first + n).map(|seq| job.stream.op(&job.point, job.point_index, job.run, seq)));
        } else {
            ops_buf.clear();
            ops_buf.push(job.stream.op(&job.point, job.point_index, job.run, first));
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
        let elapsed = clock.delta(t0, clock.raw());
        if let Some(at) = intended {
            recorder.record_response(kind, Instant::now() - at);
            if late == Some(true) {
                recorder.late_ops += n;
            }
        }
        recorder.ops += n;
        recorder.requests += 1;
        match result {
            Ok(outcome) => {
                consecutive_failures = 0;
                recorder.record_service(kind, elapsed);
                recorder.rows += outcome.rows;
                if let Some(answer) = &outcome.answer {
                    recorder.record_answer(first, answer);
                }
            }
            Err(e) => {
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
        if unreported >= PROGRESS_EVERY {
            job.progress.fetch_add(unreported, Ordering::Relaxed);
            unreported = 0;
        }
    }
    job.progress.fetch_add(unreported, Ordering::Relaxed);
    drop(conn);
    ClientResult { recorder, started, finished: Instant::now(), gave_up }
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
