//! A worker of a run (index 1 or more): joins the coordinator (each side proving that it
//! holds the run's worker token), opens the run's targets under the coordinator's lease,
//! and for every run the coordinator sends connects its share of the clients, waits for
//! the word to start, sends its share of the ops and returns its measurement. Loads
//! nothing, cleans nothing up, writes no files.
//!
//! Owns the worker's side of the conversation. Must not decide splits (see `share`) or sum
//! measurements (the coordinator does).

use super::coordinator::share_of;
use super::protocol::{HANDSHAKE_DEADLINE, HandshakeError, Link, RunId, ToCoordinator, ToWorker, unix_nanos};
use super::{JOIN_TIMEOUT_SECS, check_targets};
use crate::adapter::{OpenContext, Target, TargetUrl, registry};
use crate::base::secret::{TOKEN_FILE_VARIABLE, TOKEN_VARIABLE, Token};
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::runner::cancel::{Cancel, StopCause};
use crate::runner::client::{self, StartGate};
use crate::workload::experiment::OpStream;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// How long a worker waits between runs: the coordinator may load data for hours. A
/// coordinator that goes away closes the connection, which is noticed at once.
const BETWEEN_RUNS: Duration = Duration::from_secs(7 * 24 * 3600);

/// The data and op streams of one record count (one round), built when first needed.
struct Round {
    dataset: Dataset,
    streams: Vec<Arc<OpStream>>,
    attached: BTreeSet<String>,
}

/// Serves as worker `index` of `count` until the coordinator at `coordinator` says the run
/// is over. An error: refused (exit 2) or the coordinator lost (exit 1).
pub async fn serve(plan: &Plan, index: usize, count: usize, coordinator: &str, token: Arc<Token>, cancel: &Cancel) -> Result<()> {
    let mut link = join(coordinator, token, cancel).await?;
    link.send(&ToCoordinator::Hello {
        worker: index,
        workers: count,
        plan_hash: plan.hash.clone(),
        version: env!("CARGO_PKG_VERSION").into(),
        host: crate::report::environment::hostname(),
        pid: std::process::id(),
    })
    .await?;
    let lost = |e: Error| Error::runtime(format!("worker {index}: the coordinator at {coordinator} went away: {e}"));
    let (targets, holder) = loop {
        match link.receive::<ToWorker>(Duration::from_secs(JOIN_TIMEOUT_SECS)).await.map_err(lost)? {
            ToWorker::Ping => link.send(&ToCoordinator::Clock { unix_nanos: unix_nanos(SystemTime::now()) }).await?,
            ToWorker::Welcome { targets, holder } => break (targets, holder),
            ToWorker::Refused { reason } => return Err(Error::usage(reason)),
            other => return Err(Error::runtime(format!("worker {index}: unexpected {other:?} from the coordinator"))),
        }
    };
    let scratch = crate::base::scratch::create(&std::env::temp_dir(), "dbsweep-worker-")
        .map_err(|e| Error::runtime(format!("cannot create a scratch directory: {e}")))?;
    let open_ctx = OpenContext {
        scratch_dir: scratch.path().to_path_buf(),
        namespace: plan.namespace.clone(),
        holder,
        durability: plan.durability,
        request_timeout: std::time::Duration::from_secs_f64(plan.timeout_secs),
    };
    let targets: BTreeMap<String, Arc<dyn Target>> = targets
        .iter()
        .map(|(name, url)| Ok((name.clone(), registry::open(name, &login_url(plan, name, url)?, &open_ctx)?)))
        .collect::<Result<_>>()?;
    check_targets(&targets.values().cloned().collect::<Vec<_>>())?;
    let mut rounds: BTreeMap<usize, Round> = BTreeMap::new();
    loop {
        let message = tokio::select! {
            m = link.receive::<ToWorker>(BETWEEN_RUNS) => m.map_err(lost)?,
            () = cancel.stopped() => return Err(cancel.cause().cloned().unwrap_or(StopCause::CtrlC).into_error(None)),
        };
        match message {
            ToWorker::Run(id) => {
                let round = round(&mut rounds, plan, id.round);
                match prepare_run(plan, &targets, round, &id).await {
                    Ok(job) => run(&mut link, id, share_of(&job, index, count), cancel).await.map_err(lost)?,
                    Err(e) => link.send(&ToCoordinator::Failed { reason: format!("worker {index}: {e}") }).await.map_err(lost)?,
                }
            }
            ToWorker::Finish => return Ok(()),
            ToWorker::Ping => link.send(&ToCoordinator::Clock { unix_nanos: unix_nanos(SystemTime::now()) }).await?,
            other => return Err(Error::runtime(format!("worker {index}: unexpected {other:?} from the coordinator"))),
        }
    }
}

/// The URL a worker opens target `name` with: its own (same plan hash: the same target,
/// with the password this worker was given), else the coordinator's, which carries no
/// password (a server the coordinator spawned; the adapter falls back to the system's
/// password variable, e.g. REDISCLI_AUTH).
fn login_url(plan: &Plan, name: &str, coordinators: &str) -> Result<TargetUrl> {
    match plan.targets.iter().find(|t| t.name == name) {
        Some(own) => Ok(own.url.clone()),
        None => TargetUrl::parse(coordinators),
    }
}

/// Connects to the coordinator and authenticates, retrying while it is not listening yet
/// (the engine starts all workers at about the same time) or closes the connection before
/// the handshake (it is busy with other connections). A coordinator that refuses this
/// worker's token, or cannot prove that it holds it, ends the worker (exit 2).
async fn join(coordinator: &str, token: Arc<Token>, cancel: &Cancel) -> Result<Link> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(JOIN_TIMEOUT_SECS);
    loop {
        let why = match TcpStream::connect(coordinator).await {
            Ok(stream) => match tokio::time::timeout(HANDSHAKE_DEADLINE, Link::open_as_worker(stream, token.clone())).await {
                Err(_) => format!("no handshake within {} s", HANDSHAKE_DEADLINE.as_secs()),
                Ok(Ok(link)) => return Ok(link),
                Ok(Err(HandshakeError::Refused(reason))) => return Err(Error::usage(reason)),
                Ok(Err(HandshakeError::NotAuthenticated(why))) => {
                    return Err(Error::usage(format!(
                        "{coordinator}: {why}; give the coordinator and every worker the same {TOKEN_VARIABLE} (or {TOKEN_FILE_VARIABLE})"
                    )));
                }
                Ok(Err(HandshakeError::Connection(why))) => why,
            },
            Err(e) => e.to_string(),
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::runtime(format!("cannot reach the coordinator at {coordinator} within {JOIN_TIMEOUT_SECS} s: {why}")));
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
            () = cancel.stopped() => return Err(cancel.cause().cloned().unwrap_or(StopCause::CtrlC).into_error(None)),
        }
    }
}

/// The data and streams of round `index`, as the coordinator's runner builds them.
fn round<'a>(rounds: &'a mut BTreeMap<usize, Round>, plan: &Plan, index: usize) -> &'a mut Round {
    rounds.entry(index).or_insert_with(|| {
        let counts = plan.data.record_counts();
        // Round 0 runs on the plan's data as given, later rounds on their record count.
        let spec = match counts.get(index) {
            Some(&records) if index > 0 => plan.data.with_records(records),
            _ => plan.data.clone(),
        };
        let dataset = Dataset::new(&spec, plan.seed);
        let streams = crate::workload::experiment::streams(&plan.experiments, &dataset, plan.seed).into_iter().map(Arc::new).collect();
        Round { dataset, streams, attached: BTreeSet::new() }
    })
}

/// The whole job of run `id`, its target joined for this round.
async fn prepare_run(plan: &Plan, targets: &BTreeMap<String, Arc<dyn Target>>, round: &mut Round, id: &RunId) -> Result<client::RunJob> {
    let target = targets.get(&id.target).ok_or_else(|| Error::runtime(format!("no target named {}", id.target)))?;
    let experiment = plan.experiments.get(id.experiment).ok_or_else(|| Error::runtime(format!("no experiment #{}", id.experiment)))?;
    if id.point >= experiment.points.len() {
        return Err(Error::runtime(format!("no point #{} in {}", id.point, experiment.name)));
    }
    if !round.attached.contains(&id.target) {
        target.attach(&round.dataset.tables).await?;
        round.attached.insert(id.target.clone());
    }
    let stream = &round.streams[id.experiment];
    Ok(crate::runner::run_job(
        plan,
        experiment,
        target,
        stream,
        id.point,
        id.run,
        Arc::new(Default::default()),
        Arc::new(AtomicU64::new(0)),
    ))
}

/// Runs this worker's share behind the coordinator's barrier and sends its measurement;
/// reports progress every second meanwhile. An error: the coordinator went away.
async fn run(link: &mut Link, id: RunId, mut job: client::RunJob, cancel: &Cancel) -> Result<()> {
    job.cancel = cancel.flag();
    let progress = job.progress.clone();
    let job_clients = job.clients;
    let (ready_tx, ready_rx) = oneshot::channel();
    let (go_tx, go_rx) = oneshot::channel();
    let mut task = tokio::spawn(client::run_share(Arc::new(job), Some(StartGate { ready: ready_tx, go: go_rx })));
    let _ = ready_rx.await;
    link.send(&ToCoordinator::Ready).await?;
    match link.receive::<ToWorker>(BETWEEN_RUNS).await {
        Ok(ToWorker::Go) => {
            let _ = go_tx.send(());
        }
        Ok(other) => {
            drop(go_tx);
            let _ = task.await;
            return Err(Error::runtime(format!("expected the start, got {other:?}")));
        }
        Err(e) => {
            drop(go_tx);
            let _ = task.await;
            return Err(e);
        }
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let (measurement, window) = loop {
        tokio::select! {
            done = &mut task => break done.map_err(|e| Error::runtime(format!("the clients crashed: {e}")))?,
            _ = tick.tick() => {
                if let Err(e) = link.send(&ToCoordinator::Progress { ops: progress.load(Ordering::Relaxed) }).await {
                    // The coordinator is gone: stop sending ops to its targets.
                    cancel.stop(StopCause::Failure(format!("the coordinator went away: {e}")));
                    let _ = task.await;
                    return Err(e);
                }
            }
        }
    };
    let window = window.map(|w| (unix_nanos(w.start), unix_nanos(w.end)));
    link.send(&ToCoordinator::Done { id, clients: job_clients, measurement: Box::new(measurement), window }).await
}
