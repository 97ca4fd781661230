//! Workers of one run (`run --workers N`): N processes, on one machine or many, send
//! together exactly the ops one process would send, each a share of every run's clients and
//! sequence numbers. Worker 0 is the coordinator: it alone loads the data, holds the run's
//! leases and cleans up; before each run every worker connects its clients and waits at the
//! coordinator's barrier, all start on its word, and after the run each sends its
//! measurement, which the coordinator adds up exactly (HDR histograms add; throughput is all
//! ops over the union of the workers' windows).
//!
//! Owns who is which worker (flags and the engines' variables), whether the run's worker
//! token may be made here or must be given, how many workers a machine holds, the split of
//! a run into shares and the sum of the shares' measurements. Must not place or start processes on
//! machines (an engine such as Slurm or Kubernetes does; local workers are children of the
//! coordinator) and must not write run directories (the runner does).

pub mod coordinator;
pub mod local;
pub mod protocol;
pub mod sum;
pub mod worker;

use crate::adapter::Target;
use crate::base::measurement::RunMeasurement;
use crate::base::secret::{TOKEN_FILE_VARIABLE, TOKEN_VARIABLE, Token};
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::runner::client::RunJob;
use std::ops::Range;
use std::sync::Arc;

/// How long a worker or the coordinator waits for the other side to appear at the start.
pub const JOIN_TIMEOUT_SECS: u64 = 120;

/// Which part of a run with workers this process plays.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// Worker 0: listens at `listen` (`--listen`, else `--coordinator`; any free loopback
    /// port when `None`) for the other `count - 1` workers; with `spawn_local`, starts them
    /// itself as child processes.
    Coordinator { count: usize, listen: Option<String>, spawn_local: bool },
    /// Worker `index` (1 or more) of `count`, meeting the coordinator at `coordinator`.
    Worker { index: usize, count: usize, coordinator: String },
}

/// The variables a worker's index is read from when `--worker` is not given, in order:
/// dbsweep's own (set for local workers), Slurm's task rank (only when Slurm's task count
/// is the worker count) and a Kubernetes Indexed Job's completion index.
pub const INDEX_VARIABLES: [&str; 3] = ["DBSWEEP_WORKER", "SLURM_PROCID", "JOB_COMPLETION_INDEX"];

/// The variable the coordinator's address is read from when `--coordinator` is not given.
pub const COORDINATOR_VARIABLE: &str = "DBSWEEP_COORDINATOR";

impl Role {
    /// The role from `--workers N`, `--worker I`, `--coordinator HOST:PORT`, `--listen
    /// HOST:PORT` and the environment (`var` reads a variable). `None`: one process runs
    /// everything.
    pub fn resolve(
        workers: Option<usize>,
        worker: Option<usize>,
        coordinator: Option<String>,
        listen: Option<String>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Role>> {
        let Some(count) = workers else {
            if worker.is_some() || coordinator.is_some() || listen.is_some() {
                return Err(Error::usage("--worker, --coordinator and --listen need --workers N (the number of workers of the run)"));
            }
            return Ok(None);
        };
        if count == 0 {
            return Err(Error::usage("--workers 0: give the number of worker processes, 1 or more"));
        }
        let coordinator = coordinator.or_else(|| var(COORDINATOR_VARIABLE)).filter(|c| !c.is_empty());
        let listen = listen.filter(|l| !l.is_empty());
        let index = match worker {
            Some(i) => Some(i),
            None => Self::index_from_environment(count, &var)?,
        };
        let Some(index) = index else {
            // No index anywhere: this process starts the other workers itself.
            return Ok(Some(Role::Coordinator { count, listen: listen.or(coordinator), spawn_local: true }));
        };
        if index >= count {
            return Err(Error::usage(format!(
                "--worker {index} of --workers {count}: the index must be below the count (0 is the coordinator)"
            )));
        }
        if index == 0 {
            return Ok(Some(Role::Coordinator { count, listen: listen.or(coordinator), spawn_local: false }));
        }
        // `--listen` is the coordinator's: every worker of an engine gets the same flags
        // and variables, and a worker meets the coordinator at `--coordinator`.
        let coordinator = coordinator.ok_or_else(|| {
            Error::usage(format!("worker {index}: give the coordinator's address with --coordinator HOST:PORT (or {COORDINATOR_VARIABLE})"))
        })?;
        Ok(Some(Role::Worker { index, count, coordinator }))
    }

    fn index_from_environment(count: usize, var: &impl Fn(&str) -> Option<String>) -> Result<Option<usize>> {
        for name in INDEX_VARIABLES {
            let Some(text) = var(name) else { continue };
            if name == "SLURM_PROCID" && var("SLURM_NTASKS").and_then(|n| n.parse::<usize>().ok()) != Some(count) {
                // A batch script's own step (one task) is not a worker of this run.
                continue;
            }
            let index = text.trim().parse::<usize>().map_err(|_| Error::usage(format!("{name}={text}: not a worker index")))?;
            return Ok(Some(index));
        }
        Ok(None)
    }
}

/// The run's worker token for `role`, from `from_environment` (what
/// [`Token::from_environment`] found): a coordinator whose workers are all its own
/// children, listening on loopback only, makes one when none is given (its children get it
/// in their environment). Every other setup has workers that start on their own, on this
/// machine or others, and needs the token given to all of them: without one it is a usage
/// error (exit 2).
pub fn token(role: &Role, from_environment: Option<Token>) -> Result<Arc<Token>> {
    if let Some(token) = from_environment {
        return Ok(Arc::new(token));
    }
    let missing = |who: String| {
        Error::usage(format!(
            "{who} needs the run's worker token: set {TOKEN_VARIABLE} (e.g. to the output of `openssl rand -hex 32`) or {TOKEN_FILE_VARIABLE} to a file holding it, the same for the coordinator and every worker"
        ))
    };
    match role {
        Role::Worker { index, .. } => Err(missing(format!("worker {index}"))),
        Role::Coordinator { spawn_local: false, .. } => {
            Err(missing("a coordinator of workers that start on their own (worker index 0)".into()))
        }
        Role::Coordinator { listen: Some(address), .. } if !loopback_only(address) => {
            Err(missing(format!("a coordinator listening on {address}, which is not a loopback address,")))
        }
        Role::Coordinator { .. } => Token::generate().map(Arc::new),
    }
}

/// Whether `address` (`HOST:PORT`) names loopback addresses only.
fn loopback_only(address: &str) -> bool {
    use std::net::ToSocketAddrs;
    match address.to_socket_addrs() {
        Ok(resolved) => {
            let resolved: Vec<std::net::SocketAddr> = resolved.collect();
            !resolved.is_empty() && resolved.iter().all(|a| a.ip().is_loopback())
        }
        Err(_) => false,
    }
}

/// Refuses (exit 2) more workers than this machine can hold: local workers (`spawn_local`)
/// by [`local::capacity`]; workers that start on their own by the coordinator's
/// file-descriptor limit (one connection each, half of the limit left for the targets).
pub fn check_count(role: &Role) -> Result<()> {
    let (count, spawn_local) = match role {
        Role::Coordinator { count, spawn_local, .. } => (*count, *spawn_local),
        Role::Worker { count, .. } => (*count, false),
    };
    let (cap, why) = if spawn_local { local::capacity() } else { remote_capacity() };
    if count > cap {
        return Err(Error::usage(format!(
            "--workers {count}: this machine holds at most {cap} workers ({why}); use --workers {cap} or fewer"
        )));
    }
    Ok(())
}

/// The most workers a coordinator can hold connections to, and why.
fn remote_capacity() -> (usize, String) {
    let open_files = local::limit(libc::RLIMIT_NOFILE).unwrap_or(1024);
    let cap = usize::try_from(open_files / 2).unwrap_or(usize::MAX).max(1);
    (cap, format!("one connection each, half of the {open_files} open files allowed"))
}

/// Refuses (exit 2) a plan workers cannot run: lifecycle studies (their phases build on
/// each other in one table) and shards (give each shard its own workers' run instead).
pub fn check_plan(plan: &Plan) -> Result<()> {
    if plan.lifecycle {
        return Err(Error::usage(format!(
            "--workers: the {} study's phases build on each other in one table; run it without --workers",
            plan.study
        )));
    }
    if plan.shard.is_some() {
        return Err(Error::usage("--workers and --shard together: run each shard on its own, or one run with workers"));
    }
    if plan.precision.is_some() {
        // Each worker's monitor sees only its own share of a run's ops, and the stop must
        // be one decision for the whole run.
        return Err(Error::usage(
            "--workers and --precision together: run with --precision in one process, or with workers and fixed --ops",
        ));
    }
    if let Some(e) = plan.experiments.iter().find(|e| e.duration_secs.is_some() && e.op.writes()) {
        // Each worker inserts a prefix of its own share of the run's keys, which the
        // coordinator's cleanup, seeing only the summed ops, could not name.
        return Err(Error::usage(format!(
            "--workers and --duration: experiment {} inserts; leave it out with -e, or run it in one process or with --ops",
            e.name
        )));
    }
    Ok(())
}

/// Refuses (exit 2) targets the workers cannot share: in-process engines and adapters
/// that cannot join data another process loaded.
pub fn check_targets(targets: &[Arc<dyn Target>]) -> Result<()> {
    match targets.iter().find(|t| !t.joins_workers()) {
        Some(t) => Err(Error::usage(format!(
            "--workers: target {} ({}) cannot be shared by worker processes; workers run against Redis or NO-DB targets so far: drop the target (--target NAME=URL replaces the study's) or run without --workers",
            t.info().name,
            t.info().system
        ))),
        None => Ok(()),
    }
}

/// Runs `job` in this process alone or, with a coordinator, shared out to the workers.
/// What a run costs beyond its measured window (connecting; with workers the barrier and
/// the collection too) is logged at debug level for bench/workers.
pub async fn run(coordinator: Option<&coordinator::Coordinator>, id: protocol::RunId, label: &str, job: RunJob) -> RunMeasurement {
    let called = std::time::Instant::now();
    let m = match coordinator {
        None => crate::runner::client::run_once(Arc::new(job)).await,
        Some(coordinator) => coordinator.run(id, label, job).await,
    };
    tracing::debug!(target: "dbsweep::run_cost", call_s = called.elapsed().as_secs_f64(), measured_s = m.seconds, "{label}");
    m
}

/// Worker `index`'s share of a run of `clients` clients over the sequence numbers `seqs`
/// in requests of `batch` ops: its clients (the first `clients % count` workers get one
/// more) and a contiguous stretch of the sequence numbers in proportion to them, cut at
/// whole requests so the requests are those one process would send. A worker with no
/// client sends nothing.
pub fn share(index: usize, count: usize, clients: usize, seqs: &Range<u64>, batch: usize) -> (usize, Range<u64>) {
    let clients_of = |w: usize| clients / count + usize::from(w < clients % count);
    let before: usize = (0..index).map(clients_of).sum();
    let mine = clients_of(index);
    let ops = seqs.end - seqs.start;
    let batch = batch.max(1) as u64;
    let cut = |c: usize| {
        if c >= clients {
            return ops;
        }
        let at = (u128::from(ops) * c as u128 / clients.max(1) as u128) as u64;
        (at / batch * batch).min(ops)
    };
    (mine, seqs.start + cut(before)..seqs.start + cut(before + mine))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn shares_cover_every_client_and_sequence_number_once() {
        for (count, clients, ops, batch) in
            [(3, 8, 1000, 1), (3, 1, 1000, 1), (2, 8, 999, 10), (3, 4, 7, 1), (1, 5, 100, 1), (3, 3, 10, 100)]
        {
            let shares: Vec<(usize, Range<u64>)> = (0..count).map(|i| share(i, count, clients, &(0..ops), batch)).collect();
            assert_eq!(shares.iter().map(|s| s.0).sum::<usize>(), clients);
            assert_eq!(shares[0].1.start, 0);
            assert_eq!(shares.last().unwrap().1.end, ops);
            for pair in shares.windows(2) {
                assert_eq!(pair[0].1.end, pair[1].1.start, "{count} {clients} {ops}");
            }
            for (c, seqs) in &shares {
                assert!(*c > 0 || seqs.is_empty(), "no client, no ops");
                assert!(seqs.start % batch as u64 == 0 || seqs.is_empty(), "whole requests");
            }
        }
        // 8 clients over 3 workers: 3, 3, 2, and ops in that proportion.
        assert_eq!(share(0, 3, 8, &(0..800), 1), (3, 0..300));
        assert_eq!(share(2, 3, 8, &(0..800), 1), (2, 600..800));
        // A share of a run that does not start at 0.
        assert_eq!(share(1, 2, 2, &(100..200), 1), (1, 150..200));
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        move |k: &str| map.get(k).map(|v| v.to_string())
    }

    #[test]
    fn the_role_comes_from_flags_then_dbsweep_slurm_and_kubernetes_variables() {
        assert_eq!(Role::resolve(None, None, None, None, env(&[("SLURM_PROCID", "1")])).unwrap(), None);
        assert_eq!(
            Role::resolve(Some(3), None, None, None, env(&[])).unwrap(),
            Some(Role::Coordinator { count: 3, listen: None, spawn_local: true })
        );
        assert_eq!(
            Role::resolve(
                Some(3),
                None,
                None,
                None,
                env(&[("SLURM_PROCID", "2"), ("SLURM_NTASKS", "3"), ("DBSWEEP_COORDINATOR", "n1:7070")])
            )
            .unwrap(),
            Some(Role::Worker { index: 2, count: 3, coordinator: "n1:7070".into() })
        );
        // A batch script's step is one task: not a worker index.
        assert_eq!(
            Role::resolve(Some(3), None, Some("n1:7070".into()), None, env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1")])).unwrap(),
            Some(Role::Coordinator { count: 3, listen: Some("n1:7070".into()), spawn_local: true })
        );
        assert_eq!(
            Role::resolve(Some(3), None, Some("c:1".into()), None, env(&[("JOB_COMPLETION_INDEX", "0")])).unwrap(),
            Some(Role::Coordinator { count: 3, listen: Some("c:1".into()), spawn_local: false })
        );
        assert_eq!(
            Role::resolve(Some(3), Some(1), Some("c:1".into()), None, env(&[("JOB_COMPLETION_INDEX", "2")])).unwrap(),
            Some(Role::Worker { index: 1, count: 3, coordinator: "c:1".into() })
        );
        for (workers, worker, coordinator) in
            [(Some(3), Some(3), Some("c:1")), (Some(3), Some(1), None), (None, Some(1), None), (Some(0), None, None)]
        {
            let e = Role::resolve(workers, worker, coordinator.map(str::to_string), None, env(&[])).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e}");
        }
    }

    #[test]
    fn listen_is_where_the_coordinator_binds_and_workers_meet_it_at_coordinator() {
        assert_eq!(
            Role::resolve(Some(3), Some(0), Some("node1:7070".into()), Some("[::]:7070".into()), env(&[])).unwrap(),
            Some(Role::Coordinator { count: 3, listen: Some("[::]:7070".into()), spawn_local: false })
        );
        // Every task of an engine gets the same flags: a worker's --listen is the coordinator's.
        assert_eq!(
            Role::resolve(Some(3), Some(1), Some("node1:7070".into()), Some("[::]:7070".into()), env(&[])).unwrap(),
            Some(Role::Worker { index: 1, count: 3, coordinator: "node1:7070".into() })
        );
        let e = Role::resolve(None, None, None, Some("0.0.0.0:1".into()), env(&[])).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("--listen"), "{e}");
    }

    #[test]
    fn only_a_coordinator_of_local_children_on_loopback_makes_its_own_token() {
        let given = Token::from_text("a-token-of-the-environment", "a test").unwrap();
        let local = |listen: Option<&str>| Role::Coordinator { count: 3, listen: listen.map(str::to_string), spawn_local: true };
        for loopback in [None, Some("127.0.0.1:7070"), Some("[::1]:7070"), Some("localhost:7070")] {
            let made = token(&local(loopback), None).unwrap();
            assert_ne!(*made, given, "{loopback:?}: a fresh token");
        }
        assert_eq!(*token(&local(Some("0.0.0.0:7070")), Some(given.clone())).unwrap(), given, "the environment's wins");
        let remote = [
            local(Some("0.0.0.0:7070")),
            local(Some("[::]:7070")),
            Role::Coordinator { count: 3, listen: Some("127.0.0.1:7070".into()), spawn_local: false },
            Role::Worker { index: 1, count: 3, coordinator: "127.0.0.1:7070".into() },
        ];
        for role in remote {
            let e = token(&role, None).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{role:?}");
            assert!(e.to_string().contains("DBSWEEP_WORKER_TOKEN") && e.to_string().contains("DBSWEEP_WORKER_TOKEN_FILE"), "{e}");
        }
    }

    #[test]
    fn more_workers_than_the_machine_holds_are_refused_with_the_cap_and_why() {
        let (cap, why) = local::capacity();
        assert!(cap >= 1 && !why.is_empty());
        let role = |count: usize, spawn_local: bool| Role::Coordinator { count, listen: None, spawn_local };
        check_count(&role(cap, true)).unwrap();
        let e = check_count(&role(cap + 1, true)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains(&format!("at most {cap} workers ({why})")), "{e}");
        let e = check_count(&role(100_000_000, false)).unwrap_err();
        assert!(e.to_string().contains("open files"), "{e}");
    }
}
