//! Local workers (`run --workers N` with no worker index anywhere): the coordinator starts
//! workers 1..N as child processes of its own binary with its own arguments, telling each
//! its index and the coordinator's address through `DBSWEEP_WORKER` and
//! `DBSWEEP_COORDINATOR` — the same contract a Slurm or Kubernetes worker meets through
//! its engine's variables.
//!
//! Owns starting and reaping those children. Must not start anything on other machines.

use super::{COORDINATOR_VARIABLE, INDEX_VARIABLES};
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

/// Starts workers 1..count as `dbsweep ARGS` with their index and `coordinator` in their
/// environment (`args`: this process's arguments after the program name).
pub fn start(count: usize, coordinator: &str, args: &[OsString]) -> Result<LocalWorkers> {
    let exe = std::env::current_exe().map_err(|e| Error::runtime(format!("cannot find dbsweep's own binary to start workers: {e}")))?;
    let mut children = Vec::new();
    for index in 1..count {
        let child = Command::new(&exe)
            .args(args)
            .env(INDEX_VARIABLES[0], index.to_string())
            .env(COORDINATOR_VARIABLE, coordinator)
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
