//! The coordinator of a run with workers (worker 0): gathers the other workers (each
//! connection authenticates with the run's token on a task of its own, so peers that do
//! not hold it are closed and never take a worker's place; then it must have resolved the
//! same plan, and its clock offset is measured), and for every run sends the run to all,
//! waits until every worker's clients are connected, starts them together, runs its own
//! share, checks each worker's result against its share, and adds up the shares exactly.
//! A worker that goes away, falls silent or sends no result within the run's bound stops
//! the run: its point is marked incomplete and void, the rest is kept, exit 1. A result
//! that does not fit its share is left out and voids the point (`share_mismatch`).
//!
//! Owns the barrier and the bookkeeping of workers. Must not write run directories (the
//! runner saves what `run` returns) and must not start processes (see `local`).

use super::protocol::{HANDSHAKE_DEADLINE, Link, RunId, ToCoordinator, ToWorker, from_unix_nanos, unix_nanos};
use super::sum::{Part, sum};
use super::{JOIN_TIMEOUT_SECS, share};
use crate::adapter::TargetUrl;
use crate::adapter::lease::Holder;
use crate::base::measurement::RunMeasurement;
use crate::base::secret::Token;
use crate::error::{Error, Result};
use crate::report::model::WorkerRecord;
use crate::runner::cancel::{Cancel, StopCause};
use crate::runner::client::{self, RunJob, StartGate, Window};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc, oneshot};

/// Clocks that differ by more than this are named in the report's warnings (windows are
/// corrected by the measured offset either way).
pub const CLOCK_BOUND_MS: f64 = 10.0;

/// Runs whose workers' windows overlap for less than this share of the run are named in
/// the report's warnings: their throughput is over the union, but they did not all load
/// the system at once for most of it.
pub const OVERLAP_BOUND: f64 = 0.5;

/// Runs shorter than this are not judged by their overlap: the start message reaches the
/// workers a fraction of a millisecond apart, which is most of a run that short.
pub const OVERLAP_MIN_SECONDS: f64 = 0.1;

/// One joined worker.
struct Member {
    index: usize,
    link: Link,
    /// Worker clock minus coordinator clock, nanoseconds.
    offset_nanos: i128,
}

pub struct Coordinator {
    count: usize,
    members: tokio::sync::Mutex<Vec<Member>>,
    records: Mutex<Vec<WorkerRecord>>,
    warnings: Mutex<Vec<String>>,
    /// A worker that says nothing (no progress, no result) for this long is lost.
    silence: Duration,
    cancel: Cancel,
}

/// Why a worker that said hello is refused, if it is: another plan, another worker count,
/// or an index that is the coordinator's or already taken.
fn refusal(worker: usize, host: &str, (workers, count): (usize, usize), (theirs, plan_hash): (&str, &str), taken: bool) -> Option<String> {
    if theirs != plan_hash {
        Some(format!(
            "worker {worker} on {host} resolved another plan (hash {theirs}, the coordinator's {plan_hash}): give every worker the same study, flags and seed"
        ))
    } else if workers != count {
        Some(format!("worker {worker} on {host} was started with --workers {workers}, the coordinator with --workers {count}"))
    } else if worker == 0 || worker >= count || taken {
        Some(format!("worker {worker} on {host}: index 0 or taken twice; give each worker its own index 1..{}", count - 1))
    } else {
        None
    }
}

/// The worker's clock minus the coordinator's, from one ping (its reading taken as at the
/// middle of the round trip), and half the round trip as its uncertainty in ms.
async fn clock_offset(link: &mut Link, worker: usize) -> Result<(i128, f64)> {
    let sent = SystemTime::now();
    link.send(&ToWorker::Ping).await?;
    let ToCoordinator::Clock { unix_nanos: theirs } = link.receive(HANDSHAKE_DEADLINE).await? else {
        return Err(Error::runtime(format!("worker {worker} did not answer the clock check")));
    };
    let back = SystemTime::now();
    let middle = (unix_nanos(sent) as i128 + unix_nanos(back) as i128) / 2;
    Ok((theirs as i128 - middle, back.duration_since(sent).unwrap_or_default().as_secs_f64() * 500.0))
}

/// A connection that authenticated and said hello, waiting to be taken on as a worker.
struct Arrival {
    link: Link,
    hello: Hello,
    peer: SocketAddr,
}

/// What a worker says about itself in its hello.
struct Hello {
    worker: usize,
    workers: usize,
    plan_hash: String,
    version: String,
    host: String,
    pid: u32,
}

/// Handshakes under way at once; a connection beyond them is closed at once (a genuine
/// worker whose connection is closed before the handshake tries again).
const MAX_PENDING_HANDSHAKES: usize = 256;

/// Accepts connections on `listener` for as long as it runs, each handshaking on a task
/// of its own within [`HANDSHAKE_DEADLINE`], so a peer that says nothing holds up no one.
/// Those that authenticate and say hello are sent to `arrived`; the others are closed and
/// counted nowhere.
async fn accept(listener: TcpListener, token: Arc<Token>, arrived: mpsc::Sender<Arrival>) {
    let pending = Arc::new(Semaphore::new(MAX_PENDING_HANDSHAKES));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, or a connection reset before it was accepted:
                // try again shortly rather than spin.
                tracing::warn!("cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = pending.clone().try_acquire_owned() else {
            tracing::warn!("a connection from {peer} was closed: {MAX_PENDING_HANDSHAKES} others are still handshaking");
            continue;
        };
        let (token, arrived) = (token.clone(), arrived.clone());
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout(HANDSHAKE_DEADLINE, introduce(stream, token)).await {
                Ok(Ok((link, hello))) => {
                    let _ = arrived.send(Arrival { link, hello, peer }).await;
                }
                Ok(Err(why)) => tracing::warn!("a connection from {peer} was closed: {why}"),
                Err(_) => {
                    tracing::warn!("a connection from {peer} was closed: it did not authenticate within {} s", HANDSHAKE_DEADLINE.as_secs())
                }
            }
        });
    }
}

/// The handshake of one accepted connection, then the worker's hello.
async fn introduce(stream: TcpStream, token: Arc<Token>) -> std::result::Result<(Link, Hello), String> {
    let mut link = Link::open_as_coordinator(stream, token).await.map_err(|e| e.to_string())?;
    match link.receive::<ToCoordinator>(HANDSHAKE_DEADLINE).await {
        Ok(ToCoordinator::Hello { worker, workers, plan_hash, version, host, pid }) => {
            Ok((link, Hello { worker, workers, plan_hash, version, host, pid }))
        }
        Ok(_) => Err("an authenticated peer did not start with a hello".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Aborts a task when dropped (the acceptor ends with the gathering).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What [`Coordinator::gather`] needs besides the listener.
pub struct Gathering {
    /// Workers in all, the coordinator included.
    pub count: usize,
    pub plan_hash: String,
    pub token: Arc<Token>,
    /// The run's targets (spawned servers included).
    pub targets: Vec<(String, TargetUrl)>,
    pub holder: Holder,
    /// The plan's per-request timeout, in seconds.
    pub timeout_secs: f64,
    pub cancel: Cancel,
}

impl Coordinator {
    /// Accepts the other `count - 1` workers on `listener`: each must authenticate with the
    /// run's token and have resolved the plan with `plan_hash` for `count` workers, under a
    /// distinct index. Each gets the run's targets (spawned servers included) with their
    /// passwords removed, and its lease holder: a password never crosses the network; a
    /// worker logs in with its own.
    pub async fn gather(listener: TcpListener, gathering: Gathering) -> Result<Coordinator> {
        let Gathering { count, plan_hash, token, targets, holder, timeout_secs, cancel } = gathering;
        let targets: Vec<(String, String)> = targets.into_iter().map(|(name, url)| (name, url.without_password().redacted())).collect();
        let mut members: Vec<Member> = Vec::new();
        let mut records = vec![WorkerRecord {
            index: 0,
            host: crate::report::environment::hostname(),
            pid: std::process::id(),
            dbsweep_version: env!("CARGO_PKG_VERSION").into(),
            clock_offset_ms: 0.0,
            clock_uncertainty_ms: 0.0,
            ops: 0,
            share: 0.0,
        }];
        let mut warnings = Vec::new();
        let (arrived_tx, mut arrived) = mpsc::channel(count.max(1));
        let _acceptor = AbortOnDrop(tokio::spawn(accept(listener, token, arrived_tx)));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(JOIN_TIMEOUT_SECS);
        while members.len() + 1 < count {
            let arrival = tokio::select! {
                a = tokio::time::timeout_at(deadline, arrived.recv()) => a,
                () = cancel.stopped() => return Err(Error::runtime(format!("{} while waiting for workers", cancel.reason()))),
            };
            let Ok(Some(Arrival { mut link, hello, peer })) = arrival else {
                let joined: Vec<String> = members.iter().map(|m| m.index.to_string()).collect();
                return Err(Error::runtime(format!(
                    "only {} of {count} workers joined within {JOIN_TIMEOUT_SECS} s (joined: 0{}); start every worker with the same study, flags, --workers {count} and {}",
                    members.len() + 1,
                    joined.iter().map(|j| format!(", {j}")).collect::<String>(),
                    crate::base::secret::TOKEN_VARIABLE,
                )));
            };
            let Hello { worker, workers, plan_hash: theirs, version, host, pid } = hello;
            let taken = members.iter().any(|m| m.index == worker);
            if let Some(reason) = refusal(worker, &host, (workers, count), (&theirs, &plan_hash), taken) {
                let _ = link.send(&ToWorker::Refused { reason: reason.clone() }).await;
                return Err(Error::usage(reason));
            }
            let (offset_nanos, uncertainty_ms) = match clock_offset(&mut link, worker).await {
                Ok(measured) => measured,
                Err(e) => {
                    tracing::warn!("worker {worker} from {peer} was closed: {e}");
                    continue;
                }
            };
            let offset_ms = offset_nanos as f64 / 1e6;
            if offset_ms.abs() > CLOCK_BOUND_MS {
                warnings.push(format!(
                    "worker {worker} on {host}: its clock differs from the coordinator's by {offset_ms:.1} ms (more than {CLOCK_BOUND_MS} ms); its run windows were corrected by that offset"
                ));
            }
            if let Err(e) = link.send(&ToWorker::Welcome { targets: targets.clone(), holder: holder.clone() }).await {
                tracing::warn!("worker {worker} from {peer} was closed: {e}");
                continue;
            }
            records.push(WorkerRecord {
                index: worker,
                host,
                pid,
                dbsweep_version: version,
                clock_offset_ms: offset_ms,
                clock_uncertainty_ms: uncertainty_ms,
                ops: 0,
                share: 0.0,
            });
            members.push(Member { index: worker, link, offset_nanos });
        }
        members.sort_by_key(|m| m.index);
        records.sort_by_key(|r| r.index);
        // A worker is lost when silent for twice the op timeout (it reports progress every
        // second while it runs), and never sooner than 10 s.
        let silence = Duration::from_secs_f64((2.0 * timeout_secs).max(10.0));
        Ok(Coordinator {
            count,
            members: tokio::sync::Mutex::new(members),
            records: Mutex::new(records),
            warnings: Mutex::new(warnings),
            silence,
            cancel,
        })
    }

    /// Runs `job` (the whole run) on all workers together and returns the exact sum of
    /// their measurements. A lost worker stops the run (see the module comment); a worker
    /// whose result does not fit its share is left out of the sum, and the run is void
    /// with the reason in `share_mismatch`. `label` names the run in warnings.
    pub async fn run(&self, id: RunId, label: &str, job: RunJob) -> RunMeasurement {
        let mut members = self.members.lock().await;
        let own = share_of(&job, 0, self.count);
        let progress = job.progress.clone();
        let (ready_tx, ready_rx) = oneshot::channel();
        let (go_tx, go_rx) = oneshot::channel();
        let mut own_run = tokio::spawn(client::run_share(std::sync::Arc::new(own), Some(StartGate { ready: ready_tx, go: go_rx })));
        let barrier = async {
            for m in members.iter_mut() {
                m.link.send(&ToWorker::Run(id.clone())).await.map_err(|e| (m.index, e.to_string()))?;
            }
            let _ = ready_rx.await;
            for m in members.iter_mut() {
                wait_for(m, self.silence, |message| matches!(message, ToCoordinator::Ready)).await?;
            }
            for m in members.iter_mut() {
                m.link.send(&ToWorker::Go).await.map_err(|e| (m.index, e.to_string()))?;
            }
            Ok::<(), (usize, String)>(())
        };
        if let Err((index, why)) = barrier.await {
            drop(go_tx);
            return self.lost(&mut members, own_run.await.map(|(m, _)| m).ok(), label, &id, index, &why);
        }
        let went = (tokio::time::Instant::now(), SystemTime::now());
        let _ = go_tx.send(());
        let mut parts = Vec::with_capacity(self.count);
        let own_result = (&mut own_run).await;
        let Ok((own_measurement, own_window)) = own_result else {
            return self.lost(&mut members, None, label, &id, 0, "the coordinator's own clients crashed");
        };
        let bound = self.result_bound(&job, went.0.elapsed());
        let deadline = went.0 + bound;
        parts.push(Part { measurement: own_measurement, window: own_window });
        let mut mismatches = Vec::new();
        for i in 0..members.len() {
            let m = &mut members[i];
            let mut reported = 0u64;
            let result = loop {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if left.is_zero() {
                    break Err(format!(
                        "no result within {:.0} s of the start (the run's planned time plus a margin)",
                        bound.as_secs_f64()
                    ));
                }
                let message = tokio::select! {
                    message = m.link.receive::<ToCoordinator>(self.silence.min(left)) => message,
                    // Stopped (Ctrl-C, SIGTERM, a lost lease): the workers' connections
                    // close, which stops their clients within about a second.
                    () = self.cancel.stopped() => {
                        let own = parts.swap_remove(0).measurement;
                        return self.stopped(&mut members, own);
                    }
                };
                match message {
                    Ok(ToCoordinator::Progress { ops }) => {
                        progress.fetch_add(ops.saturating_sub(reported), Ordering::Relaxed);
                        reported = reported.max(ops);
                    }
                    Ok(ToCoordinator::Done { id: theirs, clients, measurement, window }) => {
                        progress.fetch_add(measurement.ops.saturating_sub(reported), Ordering::Relaxed);
                        break Ok((theirs, clients, *measurement, window));
                    }
                    Ok(ToCoordinator::Failed { reason }) => break Err(reason),
                    Ok(other) => break Err(format!("unexpected message {other:?}")),
                    Err(_) if tokio::time::Instant::now() >= deadline => continue,
                    Err(e) => break Err(e.to_string()),
                }
            };
            match result {
                Ok((theirs, clients, measurement, window)) => {
                    let window = window.map(|(s, e)| Window { start: corrected(s, m.offset_nanos), end: corrected(e, m.offset_nanos) });
                    let given = share_of(&job, m.index, self.count);
                    match misfit(&given, (&id, &theirs), clients, &measurement, window, (went.1, SystemTime::now())) {
                        None => parts.push(Part { measurement, window }),
                        Some(why) => {
                            let why = format!("worker {}'s result does not fit its share of {label}: {why}", m.index);
                            self.warnings.lock().unwrap().push(why.clone());
                            mismatches.push(why);
                        }
                    }
                }
                Err(why) => {
                    let index = m.index;
                    let own = parts.swap_remove(0).measurement;
                    return self.lost(&mut members, Some(own), label, &id, index, &why);
                }
            }
        }
        self.account(&parts);
        let (mut total, overlap) = sum(parts);
        if let Some(overlap) = overlap.filter(|o| *o < OVERLAP_BOUND && total.seconds >= OVERLAP_MIN_SECONDS) {
            self.warnings.lock().unwrap().push(format!(
                "{label}: the workers' run windows overlapped for only {:.0}% of the run's {:.2} s (bound {:.0}%)",
                overlap * 100.0,
                total.seconds,
                OVERLAP_BOUND * 100.0
            ));
        }
        if !mismatches.is_empty() {
            total.share_mismatch = Some(mismatches.join("; "));
        }
        total
    }

    /// How long after the start the workers' results may take: the run's planned time
    /// (its time limit, or its ops at a fixed rate), or what the coordinator's own share
    /// took if that was longer, twice over, plus the silence a lost worker is allowed.
    fn result_bound(&self, job: &RunJob, own: Duration) -> Duration {
        let ops = (job.seqs.end - job.seqs.start) as f64;
        let planned = match (job.time_limit, job.rate) {
            (Some(limit), _) => limit.as_secs_f64(),
            (None, Some(rate)) if rate > 0.0 => ops / rate,
            _ => 0.0,
        };
        let secs = 2.0 * planned.max(own.as_secs_f64()) + self.silence.as_secs_f64();
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX / 2)
    }

    /// Adds each worker's ops to its record.
    fn account(&self, parts: &[Part]) {
        let mut records = self.records.lock().unwrap();
        for (record, part) in records.iter_mut().zip(parts) {
            record.ops += part.measurement.ops;
        }
        let total: u64 = records.iter().map(|r| r.ops).sum();
        for r in records.iter_mut() {
            r.share = if total == 0 { 0.0 } else { r.ops as f64 / total as f64 };
        }
    }

    /// Worker `index` was lost during run `id`: stops the run (exit 1), lets the other
    /// workers go (their connections close) and returns the coordinator's own share marked
    /// incomplete and void.
    fn lost(
        &self,
        members: &mut Vec<Member>,
        own: Option<RunMeasurement>,
        label: &str,
        id: &RunId,
        index: usize,
        why: &str,
    ) -> RunMeasurement {
        let what = format!("worker {index} was lost during {label}: {why}");
        self.cancel.stop(StopCause::Failure(what.clone()));
        members.clear();
        let mut m = own.unwrap_or_else(|| crate::stats::Recorder::default().into_measurement(id.run, false, 0.0, 0.0, false));
        m.complete = false;
        *m.errors.entry("worker".into()).or_default() += 1;
        m.error_samples.insert(0, what);
        m
    }

    /// The run was stopped while the workers ran: lets them go (their connections close, so
    /// they stop sending) and returns the coordinator's own share, incomplete.
    fn stopped(&self, members: &mut Vec<Member>, mut own: RunMeasurement) -> RunMeasurement {
        members.clear();
        own.complete = false;
        own
    }

    /// Warnings gathered since the last call (clock offsets, poor overlap).
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap())
    }

    /// Every worker, with its ops so far.
    pub fn records(&self) -> Vec<WorkerRecord> {
        self.records.lock().unwrap().clone()
    }

    /// Tells the workers that the run is over.
    pub async fn finish(&self) {
        for m in self.members.lock().await.iter_mut() {
            let _ = m.link.send(&ToWorker::Finish).await;
        }
    }
}

/// Worker `index`'s share of `job`, with a fixed rate split in proportion.
pub(super) fn share_of(job: &RunJob, index: usize, count: usize) -> RunJob {
    let (clients, seqs) = share(index, count, job.clients, &job.seqs, job.point.batch);
    let all = (job.seqs.end - job.seqs.start).max(1) as f64;
    let rate = job.rate.map(|r| r * (seqs.end - seqs.start) as f64 / all);
    RunJob { clients, seqs, rate, ..job.clone() }
}

/// Leeway for a worker's window on the coordinator's clock: the clock offset is measured
/// once, at the start, and may drift by this much over a long run.
const WINDOW_LEEWAY: Duration = Duration::from_secs(5);

/// Why a worker's result does not fit `given`, the share it was given of run `id`
/// (`(id, theirs)`: the run sent and the run the result names), if it does not: another
/// run, other clients, more ops than its share (or, in a run that is not cut by a time
/// limit, fewer without a failure to account for them), counts that do not add up, or a
/// window outside the time between the start (`during.0`) and its arrival (`during.1`).
fn misfit(
    given: &RunJob,
    (id, theirs): (&RunId, &RunId),
    clients: usize,
    m: &RunMeasurement,
    window: Option<Window>,
    during: (SystemTime, SystemTime),
) -> Option<String> {
    let planned = given.seqs.end - given.seqs.start;
    let timed: u64 = m.service.values().map(|l| l.count).sum();
    if theirs != id || m.run != id.run || m.warmup != given.warmup {
        Some(format!("a result for another run ({theirs:?}, run {} warm-up {})", m.run, m.warmup))
    } else if clients != given.clients {
        Some(format!("{clients} clients, its share has {}", given.clients))
    } else if m.ops > planned {
        Some(format!("{} ops, its share has {planned}", m.ops))
    } else if m.complete && given.time_limit.is_none() && m.ops < planned {
        Some(format!("{} ops of its {planned}, complete with no failure accounting for the rest", m.ops))
    } else if m.ok_ops + m.failed_ops + m.short_ops != m.ops || m.requests > m.ops || timed > m.requests {
        Some(format!(
            "counts that do not add up ({} ops: {} ok, {} failed, {} short; {} requests, {timed} timed)",
            m.ops, m.ok_ops, m.failed_ops, m.short_ops, m.requests
        ))
    } else if let Some(w) = window.filter(|w| w.start + WINDOW_LEEWAY < during.0 || w.end > during.1 + WINDOW_LEEWAY || w.end < w.start) {
        let secs =
            |t: SystemTime, from: SystemTime| t.duration_since(from).map_or_else(|e| -e.duration().as_secs_f64(), |d| d.as_secs_f64());
        Some(format!("a window from {:.3} s to {:.3} s after the start, outside the run", secs(w.start, during.0), secs(w.end, during.0)))
    } else if window.is_none() && m.ops > 0 {
        Some(format!("{} ops without a window", m.ops))
    } else {
        None
    }
}

/// Reads from worker `m` until `wanted` arrives (progress messages are skipped).
async fn wait_for(m: &mut Member, silence: Duration, wanted: impl Fn(&ToCoordinator) -> bool) -> std::result::Result<(), (usize, String)> {
    loop {
        match m.link.receive::<ToCoordinator>(silence).await {
            Ok(message) if wanted(&message) => return Ok(()),
            Ok(ToCoordinator::Progress { .. }) => {}
            Ok(ToCoordinator::Failed { reason }) => return Err((m.index, reason)),
            Ok(other) => return Err((m.index, format!("unexpected message {other:?}"))),
            Err(e) => return Err((m.index, e.to_string())),
        }
    }
}

/// A worker's wall-clock time on the coordinator's clock.
fn corrected(worker_nanos: u64, offset_nanos: i128) -> SystemTime {
    from_unix_nanos((worker_nanos as i128 - offset_nanos).max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::{OpenContext, registry};
    use crate::base::secret::Token;
    use crate::data::{DataSpec, Dataset};
    use crate::workload::experiment::{Experiment, ExperimentOp, OpStream, Point};
    use std::sync::atomic::{AtomicBool, AtomicU64};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    const TOKEN: &str = "the-runs-worker-token-0123";
    const PLAN_HASH: &str = "abc";
    const SILENCE: Duration = Duration::from_secs(10);

    fn token(text: &str) -> Arc<Token> {
        Arc::new(Token::from_text(text, "a test").unwrap())
    }

    /// Worker `worker` of 2 joining with `plan_hash`: authenticates with `token`, says
    /// hello, answers the clock check; returns its link and the coordinator's answer.
    async fn join(address: SocketAddr, token_text: &str, worker: usize, plan_hash: &str) -> (Link, ToWorker) {
        let stream = TcpStream::connect(address).await.unwrap();
        let mut link = Link::open_as_worker(stream, token(token_text)).await.unwrap();
        let hello = ToCoordinator::Hello { worker, workers: 2, plan_hash: plan_hash.into(), version: "0".into(), host: "h".into(), pid: 1 };
        link.send(&hello).await.unwrap();
        loop {
            match link.receive::<ToWorker>(SILENCE).await.unwrap() {
                ToWorker::Ping => link.send(&ToCoordinator::Clock { unix_nanos: unix_nanos(SystemTime::now()) }).await.unwrap(),
                other => return (link, other),
            }
        }
    }

    fn gathering(timeout_secs: f64) -> Gathering {
        Gathering {
            count: 2,
            plan_hash: PLAN_HASH.into(),
            token: token(TOKEN),
            targets: vec![("r".to_string(), TargetUrl::parse("redis://:secret@127.0.0.1:1/0?password=secret&batch=multi").unwrap())],
            holder: Holder::this_process(),
            timeout_secs,
            cancel: Cancel::default(),
        }
    }

    /// A coordinator of 2 listening on loopback, and its address.
    async fn listening() -> (TcpListener, SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        (listener, address)
    }

    async fn gather_one(worker_hash: &'static str) -> (Result<Coordinator>, ToWorker) {
        let (listener, address) = listening().await;
        let worker = tokio::spawn(async move { join(address, TOKEN, 1, worker_hash).await.1 });
        let gathered = Coordinator::gather(listener, gathering(5.0)).await;
        (gathered, worker.await.unwrap())
    }

    #[tokio::test]
    async fn a_worker_of_the_same_plan_is_welcomed_with_the_targets_and_its_clock_measured() {
        let (gathered, answer) = gather_one(PLAN_HASH).await;
        let coordinator = gathered.unwrap();
        let ToWorker::Welcome { targets, .. } = answer else { panic!("{answer:?}") };
        assert_eq!(targets[0].1, "redis://127.0.0.1:1/0?batch=multi", "no password crosses the network");
        let records = coordinator.records();
        assert_eq!(records.iter().map(|r| r.index).collect::<Vec<_>>(), [0, 1]);
        assert!(records[1].clock_offset_ms.abs() < CLOCK_BOUND_MS, "one machine, one clock: {:?}", records[1]);
        assert!(coordinator.take_warnings().is_empty());
    }

    #[tokio::test]
    async fn an_authenticated_worker_of_another_plan_is_refused_with_exit_2() {
        let (gathered, answer) = gather_one("xyz").await;
        let e = gathered.err().unwrap();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("same study, flags and seed"), "{e}");
        assert!(matches!(answer, ToWorker::Refused { .. }), "{answer:?}");
    }

    /// Reads what the coordinator sends a peer until it closes the connection.
    async fn read_to_end(stream: &mut TcpStream) -> Vec<u8> {
        let mut heard = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut heard)).await.expect("the coordinator closes");
        heard
    }

    #[tokio::test]
    async fn peers_without_the_token_are_closed_told_nothing_and_take_no_place() {
        let (listener, address) = listening().await;
        let coordinator = tokio::spawn(Coordinator::gather(listener, gathering(5.0)));
        // Idle peers, a peer with another token, an old-style hello with a guessed hash,
        // and a line far over the bound, all before the real worker.
        let mut idle = Vec::new();
        for _ in 0..20 {
            idle.push(TcpStream::connect(address).await.unwrap());
        }
        let wrong_token = tokio::spawn(async move {
            Link::open_as_worker(TcpStream::connect(address).await.unwrap(), token("another-token-entirely"))
                .await
                .err()
                .map(|e| e.to_string())
        });
        let mut hello = TcpStream::connect(address).await.unwrap();
        hello
            .write_all(
                b"{\"type\":\"hello\",\"worker\":1,\"workers\":2,\"plan_hash\":\"xyz\",\"version\":\"0\",\"host\":\"evil\",\"pid\":1}\n",
            )
            .await
            .unwrap();
        let mut flood = TcpStream::connect(address).await.unwrap();
        let _ = flood.write_all(&vec![b'x'; 4 * super::super::protocol::MAX_HANDSHAKE_BYTES]).await;
        let (_link, welcome) = join(address, TOKEN, 1, PLAN_HASH).await;
        assert!(matches!(welcome, ToWorker::Welcome { .. }), "{welcome:?}");
        let coordinator = coordinator.await.unwrap().unwrap();
        assert_eq!(coordinator.records().iter().map(|r| r.host.as_str()).filter(|h| *h == "h").count(), 1, "the real worker joined");
        let refused = wrong_token.await.unwrap().expect("refused");
        assert!(refused.contains("DBSWEEP_WORKER_TOKEN"), "{refused}");
        for mut stream in [hello, flood].into_iter().chain(idle.into_iter().take(1)) {
            let heard = String::from_utf8_lossy(&read_to_end(&mut stream).await).into_owned();
            assert!(!heard.contains(PLAN_HASH) && !heard.contains("plan") && !heard.contains("redis"), "{heard}");
        }
    }

    /// The job of one run of 300 gets by 3 clients on NO-DB.
    async fn nodb_job() -> RunJob {
        let target = registry::open("nodb", &TargetUrl::parse("nodb:").unwrap(), &OpenContext::new(std::env::temp_dir())).unwrap();
        let dataset = Dataset::new(&DataSpec::Kv { rows: 100, payload_bytes: 8 }, 1);
        let point = Point { clients: 3, batch: 1, batched: false, param: None, rate: None };
        let experiment = Experiment {
            name: "get".into(),
            op: ExperimentOp::Get,
            workload: None,
            script: None,
            ycsb: None,
            time_limit_secs: None,
            duration_secs: None,
            table: 0,
            column: 0,
            max_column: 0,
            ops: 300,
            sized: false,
            lifecycle: false,
            runs: 1,
            warmup: 0,
            points: vec![point],
        };
        let stream = Arc::new(OpStream::new(&experiment, 0, &dataset, 1, 1));
        RunJob {
            target,
            seqs: 0..stream.seqs_per_run(&point),
            stream,
            point,
            point_index: 0,
            run: 0,
            warmup: false,
            clients: 3,
            timeout: Duration::from_secs(1),
            cancel: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(AtomicU64::new(0)),
            rate: None,
            time_limit: None,
            check_rows: false,
            stop: None,
            intervals: None,
        }
    }

    fn run_id() -> RunId {
        RunId { round: 0, experiment: 0, point: 0, target: "nodb".into(), run: 0 }
    }

    /// What worker 1 does after the start.
    enum After {
        /// Runs its share and sends its result as measured, or changed by `tamper`.
        Honest(fn(&mut RunMeasurement)),
        /// Reports progress every 100 ms and never a result.
        ProgressForever,
        /// Runs its share and sends its result tagged with another token.
        Forged,
    }

    /// One run of the NO-DB job with the coordinator and worker 1 behaving as `after` says.
    async fn run_with(after: After) -> (RunMeasurement, Vec<String>, Vec<WorkerRecord>) {
        let (listener, address) = listening().await;
        let job = nodb_job().await;
        let share = share_of(&job, 1, 2);
        let worker = tokio::spawn(async move {
            let (mut link, _) = join(address, TOKEN, 1, PLAN_HASH).await;
            let Ok(ToWorker::Run(id)) = link.receive::<ToWorker>(SILENCE).await else { panic!("no run") };
            link.send(&ToCoordinator::Ready).await.unwrap();
            let Ok(ToWorker::Go) = link.receive::<ToWorker>(SILENCE).await else { panic!("no start") };
            let clients = share.clients;
            let done = |measurement: RunMeasurement, window: Option<Window>| ToCoordinator::Done {
                id: id.clone(),
                clients,
                measurement: Box::new(measurement),
                window: window.map(|w| (unix_nanos(w.start), unix_nanos(w.end))),
            };
            match after {
                After::Honest(tamper) => {
                    let (mut m, window) = client::run_share(Arc::new(share), None).await;
                    tamper(&mut m);
                    link.send(&done(m, window)).await.unwrap();
                }
                After::Forged => {
                    let (m, window) = client::run_share(Arc::new(share), None).await;
                    link.send_forged(&done(m, window), Token::from_text("a-forgers-own-token-0", "a test").unwrap()).await.unwrap();
                }
                After::ProgressForever => loop {
                    if link.send(&ToCoordinator::Progress { ops: 1 }).await.is_err() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                },
            }
            // Hold the connection until the coordinator lets go.
            let _ = link.receive::<ToWorker>(Duration::from_secs(60)).await;
        });
        let coordinator = Coordinator::gather(listener, gathering(1.0)).await.unwrap();
        let m = coordinator.run(run_id(), "get / nodb run 0", job).await;
        let (warnings, records) = (coordinator.take_warnings(), coordinator.records());
        drop(coordinator);
        worker.await.unwrap();
        (m, warnings, records)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_honest_share_is_summed_into_the_whole_run() {
        let (m, warnings, records) = run_with(After::Honest(|_| {})).await;
        assert_eq!((m.ops, m.ok_ops, m.requests), (300, 300, 300));
        assert!(m.complete && !m.is_void() && m.share_mismatch.is_none(), "{m:?}");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(records.iter().map(|r| r.ops).collect::<Vec<_>>(), [200, 100], "2 clients and 1");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_share_with_a_thousand_times_its_ops_is_left_out_and_voids_the_run() {
        let (m, warnings, records) = run_with(After::Honest(|m| {
            m.ops *= 1000;
            m.ok_ops *= 1000;
            m.requests *= 1000;
        }))
        .await;
        let why = m.share_mismatch.clone().expect("a mismatch");
        assert!(why.contains("worker 1") && why.contains("100000 ops, its share has 100"), "{why}");
        assert_eq!(m.ops, 200, "only the coordinator's own share is summed");
        assert!(m.is_void() && m.ops_per_sec().is_none());
        assert_eq!(records.iter().map(|r| r.ops).collect::<Vec<_>>(), [200, 0], "the worker's claim is counted nowhere");
        assert_eq!(warnings, [why]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_share_that_claims_fewer_ops_or_other_clients_does_not_fit() {
        let (m, ..) = run_with(After::Honest(|m| {
            m.ops -= 10;
            m.ok_ops -= 10;
            m.requests -= 10;
        }))
        .await;
        assert!(m.share_mismatch.as_deref().is_some_and(|w| w.contains("90 ops of its 100")), "{:?}", m.share_mismatch);
        let (m, ..) = run_with(After::Honest(|m| m.run = 7)).await;
        assert!(m.share_mismatch.as_deref().is_some_and(|w| w.contains("another run")), "{:?}", m.share_mismatch);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_forged_result_loses_the_worker_and_voids_the_run() {
        let (m, ..) = run_with(After::Forged).await;
        assert!(!m.complete && m.is_void(), "{m:?}");
        assert_eq!(m.errors["worker"], 1);
        assert!(
            m.error_samples[0].contains("worker 1 was lost") && m.error_samples[0].contains("failed authentication"),
            "{:?}",
            m.error_samples
        );
        assert_eq!(m.ops, 200, "the forged share is not summed");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worker_that_reports_progress_but_never_a_result_is_lost_at_the_runs_bound() {
        let (m, ..) = run_with(After::ProgressForever).await;
        assert!(!m.complete && m.is_void(), "{m:?}");
        assert!(m.error_samples[0].contains("no result within"), "{:?}", m.error_samples);
    }
}
