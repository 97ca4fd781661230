//! Throwaway local servers (PostgreSQL, MariaDB, Redis, Redis Cluster, Memcached, HyPer, H2, Cassandra, a two-node
//! Cassandra ring, LedisDB, FerretDB) for `--spawn` and for every end-to-end test.
//!
//! Owns: the machinery every system shares — finding the server programs, a fresh data
//! directory per server (a `TempDir` under `SpawnOptions::data_root`, marked with its
//! owner's pid so that a later run removes it if dbsweep dies: `base::scratch`), a free loopback
//! port (retried when another process takes it first), starting the process with its
//! output in a log file inside its data directory, waiting for a protocol-level readiness
//! check, and stopping it again (gracefully in `stop`, by SIGKILL of its process group in
//! `Drop`) with the data directory removed. Children get `PR_SET_PDEATHSIG` so they die if
//! dbsweep dies (`process`). Also what is installed without starting anything
//! (`installed`, for `dbsweep targets`): the programs found as a spawn finds them, and
//! the version they print. What differs per system is one `System` implementation in
//! the system's own module (`system.rs` says what one brings); `server_kinds!` below is
//! the only place that lists them. A system of several processes (Redis Cluster, the
//! Cassandra ring) is started node by node the same way and then formed by its
//! `System::form`; the first node's `Server` holds the others. The machinery: `spawn.rs`
//! starts, `running.rs` is the running `Server` and stops it, `process.rs` runs programs.
//!
//! Must not: touch any server it did not start (the distribution's own services keep
//! running), read configuration files (`--no-defaults`, command-line settings only), or
//! change durability settings away from each system's defaults; the settings that change
//! results are recorded in `Server::settings`.

mod cassandra;
mod cassandra_cluster;
mod ferretdb;
mod h2;
pub mod hyper;
mod ledisdb;
mod mariadb;
mod memcached;
mod pg_login;
mod postgres;
mod process;
mod redis;
mod redis_cluster;
mod running;
mod spawn;
mod system;
#[cfg(test)]
mod tests;

pub use running::{Server, SpawnedServer};
pub use spawn::{spawn, spawn_all, spawn_all_until, spawn_with_search_path};
use system::{Context, Ready, System};

use crate::base::durability::Durability;
use crate::error::{Error, Result};
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;
/// How long a server may take from process start until it answers its protocol.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `stop` waits for a graceful shutdown before it kills the process group.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a port is re-picked when another process took it between our probe and the
/// server's bind.
const PORT_ATTEMPTS: usize = 4;
/// The server's stdout and stderr, inside its data directory.
const LOG_FILE: &str = "server.log";
/// What every system's log says when its port is taken (each `System` may add its own words).
const PORT_TAKEN_WORDS: &[&str] = &["address already in use", "address in use"];
/// Declares every server kind once, each as `Variant => its module's System`: the
/// `ServerKind` enum, `ServerKind::ALL` in this order (the order of `--spawn all` and of
/// its help) and `ServerKind::system`. A new server system is one line here.
macro_rules! server_kinds {
    ($($kind:ident => $system:expr,)+) => {
        /// A server system dbsweep can start by itself.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ServerKind {
            $($kind,)+
        }

        impl ServerKind {
            pub const ALL: [ServerKind; [$(ServerKind::$kind),+].len()] = [$(ServerKind::$kind),+];

            /// What this kind of server brings to the spawn machinery.
            fn system(self) -> &'static dyn System {
                match self {
                    $(ServerKind::$kind => &$system,)+
                }
            }
        }
    };
}

server_kinds! {
    Postgres => postgres::Postgres,
    Mariadb => mariadb::Mariadb,
    Redis => redis::Redis,
    Memcached => memcached::Memcached,
    Hyper => hyper::Hyper,
    H2 => h2::H2,
    Cassandra => cassandra::Cassandra,
    LedisDb => ledisdb::LedisDb,
    FerretDb => ferretdb::FerretDb,
    RedisCluster => redis_cluster::RedisCluster,
    CassandraCluster => cassandra_cluster::CassandraCluster,
}

impl ServerKind {
    /// A cluster of several server processes: one more deployment of a system that
    /// `--spawn all` leaves out (it is named on its own).
    pub fn is_cluster(self) -> bool {
        self.system().nodes() > 1
    }

    /// The canonical name used on the command line (`--spawn postgres,redis`).
    pub fn name(self) -> &'static str {
        self.system().name()
    }

    /// The names of the targets a server of this kind adds (PostgreSQL: one per layout).
    pub fn target_names(self) -> Vec<String> {
        let system = self.system();
        match system.variants() {
            [] => vec![system.name().to_string()],
            variants => variants.iter().map(|(name, _)| name.to_string()).collect(),
        }
    }

    /// The name of the target that drives this server through its command-line client
    /// (`mariadb-cli`, `redis-cli`), if there is a client adapter.
    pub fn client_target_name(self) -> Option<String> {
        self.system().client_scheme().map(|_| format!("{}-cli", self.name()))
    }
}

impl fmt::Display for ServerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ServerKind {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim().to_ascii_lowercase();
        ServerKind::ALL.into_iter().find(|kind| kind.name() == text || kind.system().aliases().contains(&text.as_str())).ok_or_else(|| {
            let names: Vec<&str> = ServerKind::ALL.iter().map(|kind| kind.name()).collect();
            let hint = crate::base::suggest::did_you_mean(&text, names.iter().copied());
            Error::usage(format!("unknown server '{text}' for --spawn{hint}; choose from {} (or all)", names.join(", ")))
        })
    }
}
/// A server system as `--spawn` would find it, for `dbsweep targets`: nothing is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The version the installed programs report (`redis-server --version`).
    pub version: String,
    /// The programs `--spawn` would run, then any other file it needs (H2's jar).
    pub files: Vec<PathBuf>,
}

/// Finds the programs of `kind` the way `--spawn` does and asks them their version.
pub async fn installed(kind: ServerKind) -> Result<Installed> {
    installed_in(kind, None).await
}

/// `installed`, with the programs looked up only in `search_path` when it is given.
async fn installed_in(kind: ServerKind, search_path: Option<&[PathBuf]>) -> Result<Installed> {
    let system = kind.system();
    system.installed(process::locate_programs(system, search_path)?).await
}
/// Where and how throwaway servers are started.
#[derive(Debug, Default, Clone)]
pub struct SpawnOptions {
    /// The directory that receives each server's temporary data directory (e.g. a tmpfs
    /// versus a disk, which changes results); `None` = the system temp directory.
    pub data_root: Option<PathBuf>,
    /// `--durability`: how much of a commit the server must make crash-safe; `None`: each
    /// system's default (Redis: no persistence; PostgreSQL, MariaDB: fsync per commit).
    pub durability: Option<Durability>,
    /// The most clients a point of the run connects at once; a server whose default
    /// connection limit leaves less room than these and [`SPARE_CONNECTIONS`] starts with
    /// a higher one (PostgreSQL, MariaDB, Redis, Memcached). `None`: each system's default.
    pub clients: Option<usize>,
}

/// Connections a spawned server keeps beyond a run's clients when its limit is raised:
/// dbsweep's lease renewal and setup sessions, and PostgreSQL's slots reserved for
/// superusers (3).
pub const SPARE_CONNECTIONS: u64 = 10;
/// Reads one CR-LF terminated line (for the text protocols of Redis and Memcached).
async fn read_line<S: tokio::io::AsyncBufRead + Unpin>(stream: &mut S) -> io::Result<String> {
    use tokio::io::AsyncBufReadExt;
    let mut line = String::new();
    if stream.read_line(&mut line).await? == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}
