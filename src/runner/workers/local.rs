//! Local workers (`run --workers N` with no worker index anywhere): the coordinator starts
//! workers 1..N as child processes of its own binary with its own arguments, telling each
//! its index, the coordinator's address and the run's worker token through
//! `DBSWEEP_WORKER`, `DBSWEEP_COORDINATOR` and `DBSWEEP_WORKER_TOKEN` — the same contract a
//! Slurm or Kubernetes worker meets through its engine's variables. The token goes in the
//! environment only, never in the arguments (which any user of the machine can read).
//!
//! Owns starting and reaping those children, and how many this machine can hold. Must not
//! start anything on other machines.

use super::{COORDINATOR_VARIABLE, INDEX_VARIABLES};
use crate::base::secret::{TOKEN_FILE_VARIABLE, TOKEN_VARIABLE, Token};
use crate::error::{Error, Result};
use std::ffi::OsString;
use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// How long the coordinator waits for its local workers to exit after the run.
const EXIT_WAIT: Duration = Duration::from_secs(30);

/// The running local workers; dropping them kills them.
pub struct LocalWorkers {
    children: Vec<(usize, Child)>,
}

/// Memory a local worker may take: its runtime, its clients' connections and buffers, and
/// the op stream of a round (measured: 55 MB resident for a YCSB worker of 100,000 records
/// and 8 clients; about twice that leaves room for larger data sets and client counts).
const WORKER_MEMORY_BYTES: u64 = 128 << 20;

/// Local workers per core beyond which more only compete for the CPU (a worker's clients
/// mostly wait on the network, so several per core still add load).
const WORKERS_PER_CORE: usize = 8;

/// Threads a worker process runs (its runtime's, one per core, and a few more).
fn threads_per_worker(cores: usize) -> u64 {
    cores as u64 + 4
}

/// The soft limit `resource` (`getrlimit`), `None` when unlimited or unknown.
pub(super) fn limit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    let got = unsafe { libc::getrlimit(resource, &mut limit) };
    (got == 0 && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// Memory available for new processes (`MemAvailable` of /proc/meminfo), in bytes.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The most workers (the coordinator included) this machine can run as local processes,
/// and why: the least of its available memory at [`WORKER_MEMORY_BYTES`] each,
/// [`WORKERS_PER_CORE`] per core, and the user's process limit at a runtime's threads each.
pub fn capacity() -> (usize, String) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut bounds = vec![(cores * WORKERS_PER_CORE, format!("{WORKERS_PER_CORE} per core on {cores} cores"))];
    if let Some(bytes) = available_memory() {
        let cap = usize::try_from(bytes / WORKER_MEMORY_BYTES).unwrap_or(usize::MAX);
        bounds.push((cap, format!("{} MB each of {} MB available", WORKER_MEMORY_BYTES >> 20, bytes >> 20)));
    }
    if let Some(processes) = limit(libc::RLIMIT_NPROC) {
        let threads = threads_per_worker(cores);
        let cap = usize::try_from(processes / threads).unwrap_or(usize::MAX);
        bounds.push((cap, format!("{threads} threads each of the {processes} processes allowed")));
    }
    let (cap, why) = bounds.into_iter().min_by_key(|(cap, _)| *cap).expect("the cores bound");
    (cap.max(1), why)
}

/// Starts workers 1..count as `dbsweep ARGS` with their index, `coordinator` and `token`
/// in their environment (`args`: this process's arguments after the program name).
pub fn start(count: usize, coordinator: &str, token: &Token, args: &[OsString]) -> Result<LocalWorkers> {
    let exe = std::env::current_exe().map_err(|e| Error::runtime(format!("cannot find dbsweep's own binary to start workers: {e}")))?;
    let mut children = Vec::new();
    for index in 1..count {
        let child = Command::new(&exe)
            .args(args)
            .env(INDEX_VARIABLES[0], index.to_string())
            .env(COORDINATOR_VARIABLE, coordinator)
            .env(TOKEN_VARIABLE, token.expose_for_child_environment())
            .env_remove(TOKEN_FILE_VARIABLE)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Error::runtime(format!("cannot start local worker {index}: {e}")))?;
        children.push((index, child));
    }
    Ok(LocalWorkers { children })
}

impl LocalWorkers {
    /// Waits for every worker to exit; returns a warning for each that failed or hung
    /// (a hung one is killed).
    pub async fn wait(self) -> Vec<String> {
        let mut warnings = Vec::new();
        for (index, mut child) in self.children {
            match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
                Ok(Ok(status)) if status.success() => {}
                Ok(Ok(status)) => warnings.push(format!("local worker {index} exited with {status}")),
                Ok(Err(e)) => warnings.push(format!("local worker {index}: {e}")),
                Err(_) => {
                    let _ = child.kill().await;
                    warnings.push(format!("local worker {index} did not exit within {} s and was killed", EXIT_WAIT.as_secs()));
                }
            }
        }
        warnings
    }
}
