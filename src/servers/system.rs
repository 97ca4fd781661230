//! What one server system brings to the shared spawn machinery (`System`, one
//! implementation per kind in the kind's own module) and what its steps share
//! (`Context`, `Ready`). Must not start anything itself: `spawn` drives these steps.

use super::{Installed, PORT_TAKEN_WORDS, SPARE_CONNECTIONS, STARTUP_TIMEOUT};
use crate::base::durability::Durability;
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// What one server system brings to the shared spawn machinery: its programs, how its
/// data directory is prepared, its command line, its readiness probe and its URLs.
#[async_trait::async_trait]
pub(crate) trait System: Send + Sync {
    /// The canonical name used on the command line (`--spawn postgres,redis`), in the data
    /// directory's name and as the target name.
    fn name(&self) -> &'static str;
    /// Other spellings `--spawn` accepts.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// What carries the programs (a Debian package, or where else they come from), for the
    /// "not found" message.
    fn package(&self) -> &'static str;
    /// The programs a spawn needs, in the order `Context::program` indexes them.
    fn programs(&self) -> &'static [&'static str];
    /// Directories searched before PATH and the sbin directories.
    fn search_dirs(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    /// The programs named by the user (an environment variable) instead of a search;
    /// `None` = search.
    fn programs_from_env(&self) -> Option<Result<Vec<PathBuf>>> {
        None
    }
    /// The error for a program that was not found.
    fn missing(&self, program: &str) -> Error {
        Error::Missing(format!("{program} not found: install it with scripts/setup-servers (apt-get install {})", self.package()))
    }
    /// The installed server as `--spawn` would start it, from its located `programs` (in
    /// the order of `programs()`), without starting it: its version from the program
    /// itself and any file besides the programs it needs (a jar). An error says what is
    /// missing or broken, in words for a user.
    async fn installed(&self, programs: Vec<PathBuf>) -> Result<Installed>;
    /// Prepares the fresh data directory once, before the first start (initdb, a yaml).
    async fn init(&self, ctx: Context) -> Result<Context> {
        Ok(ctx)
    }
    /// The server's command line for one start on `port`.
    fn command(&self, ctx: &Context, port: u16) -> Command;
    /// One readiness check: "not ready yet" is any I/O error, a refused login is
    /// `PermissionDenied` (which ends the wait at once). It must make sure the server on
    /// `port` is our child `pid`, never a foreign one.
    async fn probe(&self, ctx: &Context, port: u16, pid: u32) -> io::Result<Ready>;
    /// How long the server may take from process start until it answers.
    fn startup_timeout(&self) -> Duration {
        STARTUP_TIMEOUT
    }
    /// Lower-case words of this system's log that mean its port was taken, besides
    /// `PORT_TAKEN_WORDS`.
    fn port_taken_words(&self) -> &'static [&'static str] {
        &[]
    }
    /// The signal for a graceful shutdown.
    fn stop_signal(&self) -> i32 {
        libc::SIGTERM
    }
    /// A target URL the adapters accept, for a server on `port` with its data in `data_dir`.
    fn url(&self, port: u16, data_dir: &Path) -> String;
    /// The targets benchmarked on one server as (name, suffix of the URL); empty = one
    /// target named after the system.
    fn variants(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// The URL scheme of the adapter that drives this server through its command-line
    /// client (`mysql-cli`), if dbsweep has one.
    fn client_scheme(&self) -> Option<&'static str> {
        None
    }
    /// How many server processes one spawn starts (a cluster's nodes); 1 for most.
    fn nodes(&self) -> usize {
        1
    }
    /// Whether the nodes listen on the first node's port, each on its own address
    /// (`node_address`), instead of each on a free port of 127.0.0.1.
    fn shares_port(&self) -> bool {
        false
    }
    /// The loopback address node `node` (0-based) of this system listens on.
    fn node_address(&self, _node: usize) -> String {
        "127.0.0.1".into()
    }
    /// Joins the started nodes (their ports, the first the one the URL names) into one
    /// system; nothing to do for a single process.
    async fn form(&self, _ports: &[u16]) -> Result<()> {
        Ok(())
    }
}

/// Whether a server's log says its port was taken.
pub(super) fn port_in_use(system: &dyn System, log: &str) -> bool {
    let log = log.to_ascii_lowercase();
    PORT_TAKEN_WORDS.iter().chain(system.port_taken_words()).any(|words| log.contains(words))
}

/// What the per-system steps share.
pub(crate) struct Context {
    /// The temporary directory (data, socket, log).
    pub(super) dir: PathBuf,
    /// The located programs, in the order of `System::programs` (`init` may add files).
    pub(super) programs: Vec<PathBuf>,
    /// uid/gid to run the server as (PostgreSQL refuses root); `None` = as ourselves.
    pub(super) run_as: Option<(u32, u32)>,
    /// Which node of its system this process is (0 for a single process).
    pub(super) node: usize,
    /// The durability asked for (`SpawnOptions::durability`).
    pub(super) durability: Option<Durability>,
    /// The run's most clients at once (`SpawnOptions::clients`).
    pub(super) clients: Option<usize>,
}

impl Context {
    pub(super) fn program(&self, index: usize) -> &Path {
        &self.programs[index]
    }

    /// The connection limit to start the server with, when the run's clients and
    /// [`SPARE_CONNECTIONS`] need more than the system's `default`; `None`: keep it.
    pub(super) fn connection_limit(&self, default: u64) -> Option<u64> {
        raised_connection_limit(self.clients, default)
    }
}

/// The connection limit `clients` need (with [`SPARE_CONNECTIONS`]) when it is above a
/// system's `default`.
pub(super) fn raised_connection_limit(clients: Option<usize>, default: u64) -> Option<u64> {
    let needed = clients? as u64 + SPARE_CONNECTIONS;
    (needed > default).then_some(needed)
}

/// What a successful readiness probe learned from the server.
pub(crate) struct Ready {
    pub(super) version: String,
    pub(super) settings: BTreeMap<String, String>,
}
