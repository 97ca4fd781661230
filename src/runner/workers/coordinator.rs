//! The coordinator of a run with workers (worker 0): gathers the other workers (checking
//! that each resolved the same plan, measuring its clock offset), and for every run sends
//! the run to all, waits until every worker's clients are connected, starts them together,
//! runs its own share, and adds up the shares exactly. A worker that goes away or falls
//! silent stops the run: its point is marked incomplete and void, the rest is kept, exit 1.
//!
//! Owns the barrier and the bookkeeping of workers. Must not write run directories (the
//! runner saves what `run` returns) and must not start processes (see `local`).

use super::protocol::{Link, RunId, ToCoordinator, ToWorker, from_unix_nanos, unix_nanos};
use super::sum::{Part, sum};
use super::{JOIN_TIMEOUT_SECS, share};
use crate::adapter::TargetUrl;
use crate::adapter::lease::Holder;
use crate::base::measurement::RunMeasurement;
use crate::error::{Error, Result};
use crate::report::model::WorkerRecord;
use crate::runner::cancel::{Cancel, StopCause};
use crate::runner::client::{self, RunJob, StartGate, Window};
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

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
    let ToCoordinator::Clock { unix_nanos: theirs } = link.receive(Duration::from_secs(10)).await? else {
        return Err(Error::runtime(format!("worker {worker} did not answer the clock check")));
    };
    let back = SystemTime::now();
    let middle = (unix_nanos(sent) as i128 + unix_nanos(back) as i128) / 2;
    Ok((theirs as i128 - middle, back.duration_since(sent).unwrap_or_default().as_secs_f64() * 500.0))
}

impl Coordinator {
    /// Accepts the other `count - 1` workers on `listener`: each must have resolved the
    /// plan with `plan_hash` for `count` workers, under a distinct index. Each gets the
    /// run's targets (spawned servers included) with their passwords removed, and its lease
    /// holder: a password never crosses the network; a worker logs in with its own.
    pub async fn gather(
        listener: TcpListener,
        count: usize,
        plan_hash: &str,
        targets: Vec<(String, TargetUrl)>,
        holder: Holder,
        timeout_secs: f64,
        cancel: Cancel,
    ) -> Result<Coordinator> {
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
        let deadline = tokio::time::Instant::now() + Duration::from_secs(JOIN_TIMEOUT_SECS);
        while members.len() + 1 < count {
            let accepted = tokio::select! {
                a = tokio::time::timeout_at(deadline, listener.accept()) => a,
                () = cancel.stopped() => return Err(Error::runtime(format!("{} while waiting for workers", cancel.reason()))),
            };
            let (stream, peer) = match accepted {
                Err(_) => {
                    let joined: Vec<String> = members.iter().map(|m| m.index.to_string()).collect();
                    return Err(Error::runtime(format!(
                        "only {} of {count} workers joined within {JOIN_TIMEOUT_SECS} s (joined: 0{}); start every worker with the same study, flags and --workers {count}",
                        members.len() + 1,
                        joined.iter().map(|j| format!(", {j}")).collect::<String>()
                    )));
                }
                Ok(Err(e)) => return Err(Error::runtime(format!("cannot accept workers: {e}"))),
                Ok(Ok(a)) => a,
            };
            let mut link = Link::new(stream);
            let hello: ToCoordinator = match link.receive(Duration::from_secs(10)).await {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!("a connection from {peer} that is no dbsweep worker: {e}");
                    continue;
                }
            };
            let ToCoordinator::Hello { worker, workers, plan_hash: theirs, version, host, pid } = hello else {
                continue;
            };
            let taken = members.iter().any(|m| m.index == worker);
            if let Some(reason) = refusal(worker, &host, (workers, count), (&theirs, plan_hash), taken) {
                let _ = link.send(&ToWorker::Refused { reason: reason.clone() }).await;
                return Err(Error::usage(reason));
            }
            let (offset_nanos, uncertainty_ms) = clock_offset(&mut link, worker).await?;
            let offset_ms = offset_nanos as f64 / 1e6;
            if offset_ms.abs() > CLOCK_BOUND_MS {
                warnings.push(format!(
                    "worker {worker} on {host}: its clock differs from the coordinator's by {offset_ms:.1} ms (more than {CLOCK_BOUND_MS} ms); its run windows were corrected by that offset"
                ));
            }
            link.send(&ToWorker::Welcome { targets: targets.clone(), holder: holder.clone() }).await?;
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
    /// their measurements. A lost worker stops the run (see the module comment).
    /// `label` names the run in warnings.
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
        let _ = go_tx.send(());
        let mut parts = Vec::with_capacity(self.count);
        let own_result = (&mut own_run).await;
        let Ok((own_measurement, own_window)) = own_result else {
            return self.lost(&mut members, None, label, &id, 0, "the coordinator's own clients crashed");
        };
        parts.push(Part { measurement: own_measurement, window: own_window });
        for i in 0..members.len() {
            let m = &mut members[i];
            let mut reported = 0u64;
            let result = loop {
                let message = tokio::select! {
                    message = m.link.receive::<ToCoordinator>(self.silence) => message,
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
                    Ok(ToCoordinator::Done { measurement, window }) => {
                        progress.fetch_add(measurement.ops.saturating_sub(reported), Ordering::Relaxed);
                        break Ok((*measurement, window));
                    }
                    Ok(ToCoordinator::Failed { reason }) => break Err(reason),
                    Ok(other) => break Err(format!("unexpected message {other:?}")),
                    Err(e) => break Err(e.to_string()),
                }
            };
            match result {
                Ok((measurement, window)) => {
                    let window = window.map(|(s, e)| Window { start: corrected(s, m.offset_nanos), end: corrected(e, m.offset_nanos) });
                    parts.push(Part { measurement, window });
                }
                Err(why) => {
                    let index = m.index;
                    let own = parts.swap_remove(0).measurement;
                    return self.lost(&mut members, Some(own), label, &id, index, &why);
                }
            }
        }
        self.account(&parts);
        let (total, overlap) = sum(parts);
        if let Some(overlap) = overlap.filter(|o| *o < OVERLAP_BOUND && total.seconds >= OVERLAP_MIN_SECONDS) {
            self.warnings.lock().unwrap().push(format!(
                "{label}: the workers' run windows overlapped for only {:.0}% of the run's {:.2} s (bound {:.0}%)",
                overlap * 100.0,
                total.seconds,
                OVERLAP_BOUND * 100.0
            ));
        }
        total
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
    use tokio::net::TcpStream;

    /// A worker that says hello with `plan_hash` and answers the clock check; returns what
    /// the coordinator answered.
    async fn hello(address: std::net::SocketAddr, worker: usize, plan_hash: &str) -> ToWorker {
        let mut link = Link::new(TcpStream::connect(address).await.unwrap());
        let hello = ToCoordinator::Hello { worker, workers: 2, plan_hash: plan_hash.into(), version: "0".into(), host: "h".into(), pid: 1 };
        link.send(&hello).await.unwrap();
        loop {
            match link.receive::<ToWorker>(Duration::from_secs(10)).await.unwrap() {
                ToWorker::Ping => link.send(&ToCoordinator::Clock { unix_nanos: unix_nanos(SystemTime::now()) }).await.unwrap(),
                other => return other,
            }
        }
    }

    async fn gather_one(worker_hash: &'static str) -> (Result<Coordinator>, ToWorker) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let worker = tokio::spawn(hello(address, 1, worker_hash));
        let targets = vec![("r".to_string(), TargetUrl::parse("redis://:secret@127.0.0.1:1/0?password=secret&batch=multi").unwrap())];
        let gathered = Coordinator::gather(listener, 2, "abc", targets, Holder::this_process(), 5.0, Cancel::default()).await;
        (gathered, worker.await.unwrap())
    }

    #[tokio::test]
    async fn a_worker_of_the_same_plan_is_welcomed_with_the_targets_and_its_clock_measured() {
        let (gathered, answer) = gather_one("abc").await;
        let coordinator = gathered.unwrap();
        let ToWorker::Welcome { targets, .. } = answer else { panic!("{answer:?}") };
        assert_eq!(targets[0].1, "redis://127.0.0.1:1/0?batch=multi", "no password crosses the network");
        let records = coordinator.records();
        assert_eq!(records.iter().map(|r| r.index).collect::<Vec<_>>(), [0, 1]);
        assert!(records[1].clock_offset_ms.abs() < CLOCK_BOUND_MS, "one machine, one clock: {:?}", records[1]);
        assert!(coordinator.take_warnings().is_empty());
    }

    #[tokio::test]
    async fn a_worker_of_another_plan_is_refused_with_exit_2() {
        let (gathered, answer) = gather_one("xyz").await;
        let e = gathered.err().unwrap();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("same study, flags and seed"), "{e}");
        assert!(matches!(answer, ToWorker::Refused { .. }), "{answer:?}");
    }
}
