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
//! the system's own module; `ServerKind::system` is the only place that lists them. A
//! system of several processes (Redis Cluster, the Cassandra ring) is started node by node the same way and
//! then formed by its `System::form`; the first node's `Server` holds the others.
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

use crate::base::durability::Durability;
use crate::error::{Error, Result};
use process::{group_alive, kill_group, log_tail, signal, signal_group};
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio::process::{Child, Command};

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

/// What one server system brings to the shared spawn machinery: its programs, how its
/// data directory is prepared, its command line, its readiness probe and its URLs.
#[async_trait::async_trait]
trait System: Send + Sync {
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

/// A server system dbsweep can start by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerKind {
    Postgres,
    Mariadb,
    Redis,
    Memcached,
    Hyper,
    H2,
    Cassandra,
    LedisDb,
    FerretDb,
    RedisCluster,
    CassandraCluster,
}

impl ServerKind {
    pub const ALL: [ServerKind; 11] = [
        ServerKind::Postgres,
        ServerKind::Mariadb,
        ServerKind::Redis,
        ServerKind::Memcached,
        ServerKind::Hyper,
        ServerKind::H2,
        ServerKind::Cassandra,
        ServerKind::LedisDb,
        ServerKind::FerretDb,
        ServerKind::RedisCluster,
        ServerKind::CassandraCluster,
    ];

    /// A cluster of several server processes: one more deployment of a system that
    /// `--spawn all` leaves out (it is named on its own).
    pub fn is_cluster(self) -> bool {
        matches!(self, ServerKind::RedisCluster | ServerKind::CassandraCluster)
    }

    /// What this kind of server brings to the spawn machinery.
    fn system(self) -> &'static dyn System {
        match self {
            ServerKind::Postgres => &postgres::Postgres,
            ServerKind::Mariadb => &mariadb::Mariadb,
            ServerKind::Redis => &redis::Redis,
            ServerKind::RedisCluster => &redis_cluster::RedisCluster,
            ServerKind::Memcached => &memcached::Memcached,
            ServerKind::Hyper => &hyper::Hyper,
            ServerKind::H2 => &h2::H2,
            ServerKind::Cassandra => &cassandra::Cassandra,
            ServerKind::CassandraCluster => &cassandra_cluster::CassandraCluster,
            ServerKind::LedisDb => &ledisdb::LedisDb,
            ServerKind::FerretDb => &ferretdb::FerretDb,
        }
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

/// A running throwaway server. `stop` shuts it down gracefully; dropping it kills it.
/// Either way its data directory is removed.
pub struct Server {
    /// Which system this is; decides the URL scheme and the stop signal.
    kind: ServerKind,
    /// The loopback TCP port the server listens on.
    port: u16,
    /// The server process itself (also its process-group id).
    pid: u32,
    /// The version the server reported over its protocol.
    version: String,
    /// Settings that change results (durability, persistence, memory limit, data_dir).
    settings: BTreeMap<String, String>,
    /// The root of the temporary directory: data files, socket, log.
    data_dir: PathBuf,
    /// The running process; `None` once it has been stopped.
    child: Option<Child>,
    /// Owns the data directory; removing it is the last step of `stop`/`Drop`.
    dir: Option<TempDir>,
    /// The other nodes of a system of several processes (a cluster), stopped with it.
    members: Vec<Server>,
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

/// Starts a throwaway server of `kind` and waits until it answers its protocol.
pub async fn spawn(kind: ServerKind, opts: &SpawnOptions) -> Result<Server> {
    spawn_with_search_path(kind, opts, None).await
}

/// Starts several servers in parallel; on any failure the ones already started are
/// killed and the first error is returned. The result is in the order of `kinds`.
pub async fn spawn_all(kinds: &[ServerKind], opts: &SpawnOptions) -> Result<Vec<Server>> {
    let started = spawn_all_inner(kinds, opts, None, std::future::pending()).await?;
    Ok(started.expect("a start that is never stopped finishes"))
}

/// `spawn_all`, given up when `stop` completes first: the starts under way are aborted and
/// waited for (their half-started servers and setup programs killed, directories removed)
/// before it returns `Ok(None)`, so nothing of them outlives dbsweep's exit.
pub async fn spawn_all_until(kinds: &[ServerKind], opts: &SpawnOptions, stop: impl Future<Output = ()>) -> Result<Option<Vec<Server>>> {
    spawn_all_inner(kinds, opts, None, stop).await
}

async fn spawn_all_inner(
    kinds: &[ServerKind],
    opts: &SpawnOptions,
    search_path: Option<Vec<PathBuf>>,
    stop: impl Future<Output = ()>,
) -> Result<Option<Vec<Server>>> {
    let mut set = tokio::task::JoinSet::new();
    for (index, &kind) in kinds.iter().enumerate() {
        let opts = opts.clone();
        let search_path = search_path.clone();
        set.spawn(async move { (index, spawn_with_search_path(kind, &opts, search_path.as_deref()).await) });
    }
    let mut started: Vec<Option<Server>> = kinds.iter().map(|_| None).collect();
    let mut failure = None;
    tokio::pin!(stop);
    loop {
        let joined = tokio::select! {
            joined = set.join_next() => match joined {
                Some(joined) => joined,
                None => break,
            },
            () = &mut stop => {
                set.shutdown().await;
                return Ok(None);
            }
        };
        match joined {
            Ok((index, Ok(server))) => started[index] = Some(server),
            Ok((_, Err(e))) => {
                failure = Some(e);
                break;
            }
            Err(e) => {
                failure = Some(Error::runtime(format!("starting a server panicked or was cancelled: {e}")));
                break;
            }
        }
    }
    if let Some(e) = failure {
        // Aborting the other starts drops their half-started servers, which kills them
        // and removes their directories; so does dropping the ones already up.
        set.shutdown().await;
        drop(started);
        return Err(e);
    }
    Ok(Some(started.into_iter().map(|s| s.expect("every task reported")).collect()))
}

/// `spawn`, but the programs are looked up only in `search_path` when it is given
/// (instead of PATH, /usr/sbin and /usr/lib/postgresql/*/bin). Lets tests check the
/// missing-program error without uninstalling anything.
#[doc(hidden)]
pub async fn spawn_with_search_path(kind: ServerKind, opts: &SpawnOptions, search_path: Option<&[PathBuf]>) -> Result<Server> {
    spawn_inner(kind, opts, search_path, &mut process::free_port).await
}

/// The whole spawn: every process of the system (see `spawn_process`; the first on the
/// ports `next_port` supplies, the other nodes of a cluster on free ones), then the system
/// formed from them.
async fn spawn_inner(
    kind: ServerKind,
    opts: &SpawnOptions,
    search_path: Option<&[PathBuf]>,
    next_port: &mut (dyn FnMut() -> Result<u16> + Send),
) -> Result<Server> {
    let mut server = spawn_process(kind, opts, search_path, 0, next_port).await?;
    let system = kind.system();
    for node in 1..system.nodes() {
        let first_port = server.port;
        let member = if system.shares_port() {
            spawn_process(kind, opts, search_path, node, &mut || Ok(first_port)).await?
        } else {
            spawn_process(kind, opts, search_path, node, &mut process::free_port).await?
        };
        server.members.push(member);
    }
    if system.nodes() > 1 {
        let ports: Vec<u16> = std::iter::once(server.port).chain(server.members.iter().map(|m| m.port)).collect();
        system.form(&ports).await?;
        let nodes: Vec<String> = ports.iter().enumerate().map(|(i, p)| format!("{}:{p}", system.node_address(i))).collect();
        server.settings.insert("nodes".into(), nodes.join(", "));
    }
    Ok(server)
}

/// One process (node `node` of its system): locate the programs, prepare a data
/// directory, then start on a free port until the server answers; `next_port` supplies
/// the port of each attempt (tests hand it a taken port first to exercise the retry).
async fn spawn_process(
    kind: ServerKind,
    opts: &SpawnOptions,
    search_path: Option<&[PathBuf]>,
    node: usize,
    next_port: &mut (dyn FnMut() -> Result<u16> + Send),
) -> Result<Server> {
    let system = kind.system();
    let programs = process::locate_programs(system, search_path)?;
    let dir = data_dir(kind, opts)?;
    let ctx = system
        .init(Context { dir: dir.path().to_path_buf(), programs, run_as: None, node, durability: opts.durability, clients: opts.clients })
        .await?;

    let mut dir = Some(dir);
    let mut last_error = None;
    for _ in 0..PORT_ATTEMPTS {
        let port = next_port()?;
        let mut server = launch(kind, &ctx, port, dir.take().expect("dir kept between attempts")).await?;
        match wait_ready(&mut server, &ctx).await {
            Ok(ready) => {
                server.version = ready.version;
                server.settings = ready.settings;
                server.settings.insert("data_dir".into(), ctx.dir.display().to_string());
                if let Some(fs) = filesystem_of(&ctx.dir) {
                    server.settings.insert("data_fs".into(), fs);
                }
                return Ok(server);
            }
            Err(Failure::PortTaken) => {
                // Someone took the port between our probe and the server's bind: kill
                // what is left, keep the initialized data directory, try another port.
                dir = server.dir.take();
                drop(server);
                last_error = Some(Error::runtime(format!("{kind}: port {port} was taken before the server could bind it")));
            }
            Err(Failure::Fatal(e)) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| Error::runtime(format!("{kind}: no free port found"))))
}

/// The file system type and mount point holding `path` (`tmpfs on /dev/shm`), from the
/// longest matching mount point in `/proc/self/mounts`.
fn filesystem_of(path: &Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let path = path.canonicalize().ok()?;
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (device, point, fs) = (fields.next()?, fields.next()?, fields.next()?);
            // Mount points escape spaces and tabs as octal.
            let point = point.replace("\\040", " ").replace("\\011", "\t");
            path.starts_with(&point).then(|| (point.len(), format!("{fs} on {point} ({device})")))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, text)| text)
}

/// A fresh private directory `dbsweep-KIND-PID-*` under the data root, marked as this
/// process's (`base::scratch`: a later run removes it if this process dies without doing so).
fn data_dir(kind: ServerKind, opts: &SpawnOptions) -> Result<TempDir> {
    let root = match &opts.data_root {
        // Absolute, because the servers run with their data directory as working directory.
        Some(root) => std::path::absolute(root).map_err(|e| Error::usage(format!("bad data root {}: {e}", root.display())))?,
        None => std::env::temp_dir(),
    };
    crate::base::scratch::create(&root, &format!("dbsweep-{kind}-"))
        .map_err(|e| Error::usage(format!("cannot create a data directory under {}: {e}; pick a writable data root", root.display())))
}

/// What the per-system steps share.
pub(crate) struct Context {
    /// The temporary directory (data, socket, log).
    dir: PathBuf,
    /// The located programs, in the order of `System::programs` (`init` may add files).
    programs: Vec<PathBuf>,
    /// uid/gid to run the server as (PostgreSQL refuses root); `None` = as ourselves.
    run_as: Option<(u32, u32)>,
    /// Which node of its system this process is (0 for a single process).
    node: usize,
    /// The durability asked for (`SpawnOptions::durability`).
    durability: Option<Durability>,
    /// The run's most clients at once (`SpawnOptions::clients`).
    clients: Option<usize>,
}

impl Context {
    fn program(&self, index: usize) -> &Path {
        &self.programs[index]
    }

    /// The connection limit to start the server with, when the run's clients and
    /// [`SPARE_CONNECTIONS`] need more than the system's `default`; `None`: keep it.
    fn connection_limit(&self, default: u64) -> Option<u64> {
        raised_connection_limit(self.clients, default)
    }
}

/// The connection limit `clients` need (with [`SPARE_CONNECTIONS`]) when it is above a
/// system's `default`.
fn raised_connection_limit(clients: Option<usize>, default: u64) -> Option<u64> {
    let needed = clients? as u64 + SPARE_CONNECTIONS;
    (needed > default).then_some(needed)
}

/// What a successful readiness probe learned from the server.
pub(crate) struct Ready {
    version: String,
    settings: BTreeMap<String, String>,
}

enum Failure {
    /// The server could not bind its port (someone else took it); retry on another.
    PortTaken,
    Fatal(Error),
}

/// Starts the server process with its output in the log file; the returned `Server`
/// kills it when dropped, so an error or a cancelled spawn leaves nothing behind.
async fn launch(kind: ServerKind, ctx: &Context, port: u16, dir: TempDir) -> Result<Server> {
    let command = kind.system().command(ctx, port);
    let (child, program) = process::start_logged(ctx, command, &ctx.dir.join(LOG_FILE)).await?;
    let pid = child.id().ok_or_else(|| Error::runtime(format!("{program} exited at once")))?;
    Ok(Server {
        kind,
        port,
        pid,
        version: String::new(),
        settings: BTreeMap::new(),
        data_dir: ctx.dir.clone(),
        child: Some(child),
        dir: Some(dir),
        members: Vec::new(),
    })
}

/// Polls the system's protocol until it answers, the process dies, or the timeout.
async fn wait_ready(server: &mut Server, ctx: &Context) -> std::result::Result<Ready, Failure> {
    let (kind, system) = (server.kind, server.kind.system());
    let log_path = ctx.dir.join(LOG_FILE);
    let started = Instant::now();
    let mut last_problem = String::from("no answer yet");
    loop {
        if started.elapsed() > system.startup_timeout() {
            return Err(Failure::Fatal(Error::runtime(format!(
                "{kind} server did not answer within {} s ({last_problem}); last lines of {}:\n{}",
                system.startup_timeout().as_secs(),
                log_path.display(),
                log_tail(&log_path)
            ))));
        }
        let probe = system.probe(ctx, server.port, server.pid);
        let child = server.child.as_mut().expect("a launched server has a child");
        // Race the probe against the process's exit, so a server that dies (e.g. its
        // port was taken) is noticed at once rather than after a probe timeout.
        tokio::select! {
            status = child.wait() => {
                let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                let tail = log_tail(&log_path);
                // The whole log: a JVM's shutdown hooks log many lines after the bind error.
                let log = std::fs::read(&log_path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
                if port_in_use(system, &tail) || port_in_use(system, &log) {
                    return Err(Failure::PortTaken);
                }
                return Err(Failure::Fatal(Error::runtime(format!(
                    "{kind} server exited during startup ({status}); last lines of {}:\n{tail}",
                    log_path.display()
                ))));
            }
            answer = tokio::time::timeout(Duration::from_secs(2), probe) => match answer {
                Ok(Ok(ready)) => return Ok(ready),
                // The server is up but refuses our login: waiting will not help.
                Ok(Err(e)) if e.kind() == io::ErrorKind::PermissionDenied => {
                    return Err(Failure::Fatal(Error::runtime(format!("{kind} server refused dbsweep's login: {e}"))));
                }
                Ok(Err(e)) => last_problem = e.to_string(),
                Err(_) => last_problem = "the readiness probe timed out".into(),
            },
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Whether a server's log says its port was taken.
fn port_in_use(system: &dyn System, log: &str) -> bool {
    let log = log.to_ascii_lowercase();
    PORT_TAKEN_WORDS.iter().chain(system.port_taken_words()).any(|words| log.contains(words))
}

/// Reads one CR-LF terminated line (for the text protocols of Redis and Memcached).
async fn read_line<S: tokio::io::AsyncBufRead + Unpin>(stream: &mut S) -> io::Result<String> {
    use tokio::io::AsyncBufReadExt;
    let mut line = String::new();
    if stream.read_line(&mut line).await? == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_is_raised_only_above_the_default() {
        assert_eq!(raised_connection_limit(None, 100), None, "no plan: the default");
        assert_eq!(raised_connection_limit(Some(90), 100), None, "90 clients and 10 spare fit in 100");
        assert_eq!(raised_connection_limit(Some(91), 100), Some(101));
        assert_eq!(raised_connection_limit(Some(500), 151), Some(510));
    }

    #[test]
    fn kinds_parse_from_their_names_and_aliases() {
        for (text, kind) in [
            ("postgres", ServerKind::Postgres),
            ("pg", ServerKind::Postgres),
            ("PostgreSQL", ServerKind::Postgres),
            ("mariadb", ServerKind::Mariadb),
            ("mysql", ServerKind::Mariadb),
            ("redis", ServerKind::Redis),
            (" memcached ", ServerKind::Memcached),
            ("hyper", ServerKind::Hyper),
        ] {
            assert_eq!(text.parse::<ServerKind>().unwrap(), kind, "{text}");
        }
        for kind in ServerKind::ALL {
            assert_eq!(kind.to_string().parse::<ServerKind>().unwrap(), kind);
        }
        let err = "mongodb".parse::<ServerKind>().unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("postgres, mariadb, redis, memcached"), "{err}");
    }

    #[test]
    fn missing_program_names_the_package_and_the_script() {
        let err = ServerKind::Mariadb.system().missing("mariadbd");
        assert_eq!(err.exit_code(), 2);
        assert_eq!(err.to_string(), "mariadbd not found: install it with scripts/setup-servers (apt-get install mariadb-server)");
    }

    #[test]
    fn port_conflicts_are_recognised_in_each_systems_log() {
        let taken = |kind: ServerKind, log: &str| port_in_use(kind.system(), log);
        assert!(taken(ServerKind::Postgres, "LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use"));
        assert!(taken(ServerKind::Mariadb, "[ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use"));
        assert!(taken(ServerKind::Memcached, "failed to listen on TCP port 11211: Address already in use"));
        assert!(taken(ServerKind::Hyper, "unable to listen to any of the given host name and port combinations for TCP"));
        assert!(taken(
            ServerKind::H2,
            "org.h2.jdbc.JdbcSQLNonTransientConnectionException: Exception opening port \"46167\" (port may be in use)"
        ));
        // Cassandra: the CQL port (netty) and the storage port.
        assert!(taken(ServerKind::Cassandra, "io.netty.channel.unix.Errors$NativeIoException: bind(..) failed: Address already in use"));
        assert!(taken(
            ServerKind::Cassandra,
            "ConfigurationException: /127.0.0.1:17000 is in use by another process.  Change listen_address:storage_port in cassandra.yaml"
        ));
        assert!(!taken(ServerKind::Postgres, "FATAL: data directory has wrong ownership"));
        // One system's wording is not another's.
        assert!(!taken(ServerKind::Redis, "(port may be in use)"));
    }

    #[test]
    fn each_kind_names_its_targets() {
        assert_eq!(ServerKind::Postgres.target_names(), ["pg-row", "pg-hstore", "pg-jsonb"]);
        assert_eq!(ServerKind::Redis.target_names(), ["redis"]);
        assert_eq!(ServerKind::Hyper.target_names(), ["hyper"]);
    }

    /// The version `dbsweep targets` reads from the installed programs is the one the
    /// started server reports; with nothing in the search path, the program is named with
    /// what to install.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn installed_versions_are_what_the_started_servers_report() {
        let empty = tempfile::tempdir().unwrap();
        let nowhere = [empty.path().to_path_buf()];
        for (kind, program, package) in [
            (ServerKind::Redis, "redis-server", "redis-server"),
            (ServerKind::Memcached, "memcached", "memcached"),
            (ServerKind::Postgres, "initdb", "postgresql"),
            (ServerKind::Mariadb, "mariadb-install-db", "mariadb-server"),
        ] {
            let err = installed_in(kind, Some(&nowhere)).await.unwrap_err();
            assert_eq!(err.exit_code(), 2, "{kind}");
            assert_eq!(err.to_string(), format!("{program} not found: install it with scripts/setup-servers (apt-get install {package})"));
        }
        let kinds = [ServerKind::Redis, ServerKind::Memcached, ServerKind::Postgres];
        let servers = spawn_all(&kinds, &SpawnOptions::default()).await.unwrap();
        for server in servers {
            let found = installed(server.kind()).await.unwrap();
            assert_eq!(found.version, server.version(), "{}", server.kind());
            assert!(found.files.iter().all(|f| process::is_executable(f)), "{found:?}");
            server.stop().await.unwrap();
        }
    }

    #[test]
    fn missing_hyperd_names_the_setup_script() {
        let err = ServerKind::Hyper.system().missing("hyperd");
        assert_eq!(err.exit_code(), 2);
        let text = err.to_string();
        assert!(text.starts_with("hyperd not found: install it with scripts/setup-servers"), "{text}");
        assert!(text.contains("DBSWEEP_HYPERD"), "{text}");
    }

    /// Every system, started on a port someone else holds, fails to bind, is recognised as
    /// a port conflict from its real log text, and is restarted on the next port.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_taken_port_is_retried_on_another_for_every_kind() {
        // The Cassandra ring's first node starts like Cassandra; two more JVMs of 0.75 GB
        // are tests/e2e/cassandra_cluster.rs's (opt-in).
        let kinds = ServerKind::ALL.into_iter().filter(|k| *k != ServerKind::CassandraCluster);
        let starts = kinds.map(|kind| async move {
            let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let taken = holder.local_addr().unwrap().port();
            let mut ports = vec![taken];
            let mut next_port = || {
                let port = if ports.len() == 1 { taken } else { process::free_port()? };
                ports.push(port);
                Ok(port)
            };
            let server = spawn_inner(kind, &SpawnOptions::default(), None, &mut next_port).await;
            let server = server.unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_ne!(server.port(), taken, "{kind}");
            assert_eq!(ports.len(), 3, "{kind}: exactly one retry");
            drop(holder);
            server.stop().await.unwrap();
        });
        futures_util::future::join_all(starts).await;
    }

    /// A setup program that fails: its own output is quoted in the error, and the
    /// servers `spawn_all` had already started are killed and their directories removed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_start_quotes_the_log_and_spawn_all_leaves_nothing_behind() {
        use std::os::unix::fs::PermissionsExt;
        let fake = tempfile::tempdir().unwrap();
        std::fs::set_permissions(fake.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        // Fails after the real Redis is up, so spawn_all must clean that one up.
        let script = "#!/bin/sh\nsleep 1.5\necho 'initdb: simulated disk full' >&2\nexit 1\n";
        for name in ["initdb", "postgres"] {
            let path = fake.path().join(name);
            std::fs::write(&path, script).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let root = tempfile::tempdir().unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let opts = SpawnOptions { data_root: Some(root.path().to_path_buf()), ..SpawnOptions::default() };
        let mut search = vec![fake.path().to_path_buf()];
        search.extend(process::default_search_path(ServerKind::Redis.system()));
        let err =
            spawn_all_inner(&[ServerKind::Redis, ServerKind::Postgres], &opts, Some(search), std::future::pending()).await.unwrap_err();
        assert_eq!(err.exit_code(), 1);
        let message = err.to_string();
        assert!(message.contains("initdb.log") && message.contains("initdb: simulated disk full"), "{message}");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0, "directories left under the data root");
    }
}
