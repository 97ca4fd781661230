//! A running throwaway server (`Server`): its address, version and settings, the targets
//! dbsweep benchmarks on it, what a run keeps of it (`SpawnedServer`), and its end
//! (`stop`, or a kill when dropped), which also removes its data directory. Must not start
//! anything: `spawn` makes these.

use super::process::{self, group_alive, kill_group, log_tail, signal, signal_group};
use super::{LOG_FILE, STOP_TIMEOUT, ServerKind};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio::process::Child;

/// A running throwaway server. `stop` shuts it down gracefully; dropping it kills it.
/// Either way its data directory is removed.
pub struct Server {
    /// Which system this is; decides the URL scheme and the stop signal.
    pub(super) kind: ServerKind,
    /// The loopback TCP port the server listens on.
    pub(super) port: u16,
    /// The server process itself (also its process-group id).
    pub(super) pid: u32,
    /// The version the server reported over its protocol.
    pub(super) version: String,
    /// Settings that change results (durability, persistence, memory limit, data_dir).
    pub(super) settings: BTreeMap<String, String>,
    /// The root of the temporary directory: data files, socket, log.
    pub(super) data_dir: PathBuf,
    /// The running process; `None` once it has been stopped.
    pub(super) child: Option<Child>,
    /// Owns the data directory; removing it is the last step of `stop`/`Drop`.
    pub(super) dir: Option<TempDir>,
    /// The other nodes of a system of several processes (a cluster), stopped with it.
    pub(super) members: Vec<Server>,
}

/// What a run keeps of a spawned server beside the handle that owns it (`Server`): which
/// server, its process, its version, the settings it was started with and the targets
/// dbsweep benchmarks on it. A plain value: the plan carries it on each of the server's
/// targets (`plan::TargetOrigin::Spawned`) to the runner and the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnedServer {
    pub kind: ServerKind,
    /// The server process itself (also its process-group id): the runner waits for it to
    /// settle after a load and reads its memory.
    pub pid: u32,
    /// The version the server reported over its protocol.
    pub version: String,
    /// Settings that change results (durability, persistence, memory limit, data_dir).
    pub settings: BTreeMap<String, String>,
    /// `Server::targets`: (name, URL) as the server is reached.
    pub targets: Vec<(String, String)>,
    /// `Server::client_targets`: the same server through its command-line client.
    pub client_targets: Vec<(String, String)>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("kind", &self.kind)
            .field("port", &self.port)
            .field("pid", &self.pid)
            .field("version", &self.version)
            .field("data_dir", &self.data_dir)
            .finish()
    }
}

impl Server {
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A target URL the adapters accept. The user has full rights and no password:
    /// PostgreSQL `postgres` (trust authentication), MariaDB `root@127.0.0.1` (created
    /// without a password by `mariadb-install-db --auth-root-authentication-method=normal`;
    /// the readiness probe logs in over TCP as that user); HyPer `tableau_internal_user`
    /// (`--no-password`) with the URL's path naming the database file
    /// `DATA_DIR/dbsweep.hyper`, which the `hyper` adapter creates.
    pub fn url(&self) -> String {
        self.kind.system().url(self.port, &self.data_dir)
    }

    /// The targets dbsweep benchmarks on this server, as (name, URL): PostgreSQL in its
    /// three layouts, every other system once.
    pub fn targets(&self) -> Vec<(String, String)> {
        let (system, url) = (self.kind.system(), self.url());
        match system.variants() {
            [] => vec![(system.name().to_string(), url)],
            variants => variants.iter().map(|(name, suffix)| (name.to_string(), format!("{url}{suffix}"))).collect(),
        }
    }

    /// The same server through its command-line client, as (name, URL): `mariadb-cli`
    /// (`mysql-cli://`) and `redis-cli`; none for the other systems.
    pub fn client_targets(&self) -> Vec<(String, String)> {
        let (Some(scheme), Some(name)) = (self.kind.system().client_scheme(), self.kind.client_target_name()) else { return Vec::new() };
        let url = self.url();
        let (_, rest) = url.split_once("://").expect("server URLs have a scheme");
        vec![(name, format!("{scheme}://{rest}"))]
    }

    /// The pid of the server process itself (never a wrapper), e.g. for SIGSTOP in tests.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn settings(&self) -> &BTreeMap<String, String> {
        &self.settings
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// What a run keeps of this server (see `SpawnedServer`).
    pub fn spawned(&self) -> SpawnedServer {
        SpawnedServer {
            kind: self.kind,
            pid: self.pid,
            version: self.version.clone(),
            settings: self.settings.clone(),
            targets: self.targets(),
            client_targets: self.client_targets(),
        }
    }

    /// The last lines of the server's log when its process has ended on its own (crashed,
    /// killed) while dbsweep still holds it; `None` while it runs.
    pub fn died(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        matches!(child.try_wait(), Ok(Some(_))).then(|| log_tail(&self.data_dir.join(LOG_FILE)))
    }

    /// Shuts the server down gracefully (killing its process group if that takes longer
    /// than 30 s), then removes its data directory.
    pub async fn stop(mut self) -> Result<()> {
        for member in std::mem::take(&mut self.members) {
            Box::pin(member.stop()).await?;
        }
        // The child stays in `self` until it is gone: if this future is dropped halfway,
        // `Drop` still kills the process group before it removes the directory.
        if let Some(child) = self.child.as_mut() {
            signal(self.pid, self.kind.system().stop_signal());
            // A server paused with SIGSTOP (tests do that) must run to shut down.
            signal_group(self.pid, libc::SIGCONT);
            let exited = tokio::time::timeout(STOP_TIMEOUT, child.wait()).await;
            if !matches!(exited, Ok(Ok(_))) {
                kill_group(self.pid);
                let _ = child.wait().await;
            }
            // Helpers of the server (PostgreSQL backends) share its process group.
            let deadline = Instant::now() + Duration::from_secs(5);
            while group_alive(self.pid) && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            kill_group(self.pid);
            self.child = None;
        }
        if let Some(dir) = self.dir.take() {
            dir.close().map_err(|e| {
                Error::runtime(format!("{} stopped but its data dir {} could not be removed: {e}", self.kind, self.data_dir.display()))
            })?;
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            process::kill_and_wait(&mut child, self.pid);
        }
        // Dropping the TempDir removes the directory; errors are ignored there.
        drop(self.dir.take());
    }
}
