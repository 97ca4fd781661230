//! Throwaway local servers (PostgreSQL, MariaDB, Redis, Memcached, HyPer, H2, Cassandra) for `--spawn` and for
//! every end-to-end test.
//!
//! Owns: finding the server programs, a fresh data directory per server (a `TempDir` under
//! `SpawnOptions::data_root`), a free loopback port, starting the process with its output in
//! a log file inside its data directory, a protocol-level readiness check, and stopping it
//! again (gracefully in `stop`, by SIGKILL of its process group in `Drop`) with the data
//! directory removed. Children get `PR_SET_PDEATHSIG` so they die if dbsweep dies.
//!
//! Must not: touch any server it did not start (the distribution's own services keep
//! running), read configuration files (`--no-defaults`, command-line settings only), or
//! change durability settings away from each system's defaults; the settings that change
//! results are recorded in `Server::settings`.

mod cassandra;
mod h2;
pub mod hyper;
mod mariadb;
mod memcached;
mod postgres;
mod redis;

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::str::FromStr;
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tempfile::TempDir;
use tokio::process::{Child, Command};

/// How long a server may take from process start until it answers its protocol.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// The same for Cassandra, a JVM that needs ~10 s alone and much longer on a loaded
/// 2-core machine.
const CASSANDRA_STARTUP_TIMEOUT: Duration = Duration::from_secs(180);

fn startup_timeout(kind: ServerKind) -> Duration {
    match kind {
        ServerKind::Cassandra => CASSANDRA_STARTUP_TIMEOUT,
        _ => STARTUP_TIMEOUT,
    }
}
/// How long `stop` waits for a graceful shutdown before it kills the process group.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a port is re-picked when another process took it between our probe and the
/// server's bind.
const PORT_ATTEMPTS: usize = 4;
/// Lines of the server's log quoted in a startup error.
const LOG_TAIL_LINES: usize = 25;
/// The server's stdout and stderr, inside its data directory.
const LOG_FILE: &str = "server.log";

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
}

impl ServerKind {
    pub const ALL: [ServerKind; 7] = [
        ServerKind::Postgres,
        ServerKind::Mariadb,
        ServerKind::Redis,
        ServerKind::Memcached,
        ServerKind::Hyper,
        ServerKind::H2,
        ServerKind::Cassandra,
    ];

    /// The canonical name used on the command line (`--spawn postgres,redis`).
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::Postgres => "postgres",
            ServerKind::Mariadb => "mariadb",
            ServerKind::Redis => "redis",
            ServerKind::Memcached => "memcached",
            ServerKind::Hyper => "hyper",
            ServerKind::H2 => "h2",
            ServerKind::Cassandra => "cassandra",
        }
    }

    /// The Debian package that carries the server programs (for HyPer: the PyPI wheel).
    fn package(self) -> &'static str {
        match self {
            ServerKind::Postgres => "postgresql",
            ServerKind::Mariadb => "mariadb-server",
            ServerKind::Redis => "redis-server",
            ServerKind::Memcached => "memcached",
            ServerKind::Hyper => "tableauhyperapi",
            ServerKind::H2 => h2::PACKAGE,
            ServerKind::Cassandra => cassandra::PACKAGE,
        }
    }

    /// The programs a spawn needs, in the order they run.
    fn programs(self) -> &'static [&'static str] {
        match self {
            ServerKind::Postgres => postgres::PROGRAMS,
            ServerKind::Mariadb => mariadb::PROGRAMS,
            ServerKind::Redis => redis::PROGRAMS,
            ServerKind::Memcached => memcached::PROGRAMS,
            ServerKind::Hyper => hyper::PROGRAMS,
            ServerKind::H2 => h2::PROGRAMS,
            ServerKind::Cassandra => cassandra::PROGRAMS,
        }
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
        match text.trim().to_ascii_lowercase().as_str() {
            "postgres" | "pg" | "postgresql" => Ok(ServerKind::Postgres),
            "mariadb" | "mysql" => Ok(ServerKind::Mariadb),
            "redis" => Ok(ServerKind::Redis),
            "memcached" => Ok(ServerKind::Memcached),
            "hyper" | "hyperd" => Ok(ServerKind::Hyper),
            "h2" => Ok(ServerKind::H2),
            "cassandra" => Ok(ServerKind::Cassandra),
            other => Err(Error::usage(format!(
                "unknown server '{other}' for --spawn; choose from postgres, mariadb, redis, memcached, hyper, h2, cassandra (or all)"
            ))),
        }
    }
}

/// The names of the targets a spawned server of `kind` adds, with its command-line client
/// targets when `clients` (see `Server::targets` and `Server::client_targets`).
pub fn target_names(kind: ServerKind, clients: bool) -> Vec<String> {
    let mut names: Vec<String> = match kind {
        ServerKind::Postgres => vec!["pg-row".into(), "pg-hstore".into(), "pg-jsonb".into()],
        other => vec![other.name().into()],
    };
    if clients && matches!(kind, ServerKind::Mariadb | ServerKind::Redis) {
        names.push(format!("{}-cli", kind.name()));
    }
    names
}

/// Where and how throwaway servers are started.
#[derive(Debug, Default, Clone)]
pub struct SpawnOptions {
    /// The directory that receives each server's temporary data directory (e.g. a tmpfs
    /// versus a disk, which changes results); `None` = the system temp directory.
    pub data_root: Option<PathBuf>,
}

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
        let port = self.port;
        match self.kind {
            ServerKind::Postgres => format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            ServerKind::Mariadb => format!("mysql://{}@127.0.0.1:{port}/", mariadb::USER),
            ServerKind::Redis => format!("redis://127.0.0.1:{port}/0"),
            ServerKind::Memcached => format!("memcached://127.0.0.1:{port}"),
            ServerKind::Hyper => {
                format!("hyper://{}@127.0.0.1:{port}{}", hyper::USER, self.data_dir.join(hyper::DATABASE_FILE).display())
            }
            ServerKind::H2 => h2::url(port),
            ServerKind::Cassandra => cassandra::url(port),
        }
    }

    /// The targets dbsweep benchmarks on this server, as (name, URL): PostgreSQL in its
    /// three layouts, every other system once.
    pub fn targets(&self) -> Vec<(String, String)> {
        let url = self.url();
        let names = target_names(self.kind, false);
        match self.kind {
            ServerKind::Postgres => {
                names.into_iter().zip(["row", "hstore", "jsonb"]).map(|(name, layout)| (name, format!("{url}?layout={layout}"))).collect()
            }
            _ => names.into_iter().map(|name| (name, url.clone())).collect(),
        }
    }

    /// The same server through its command-line client, as (name, URL): `mariadb-cli`
    /// (`mysql-cli://`) and `redis-cli`; none for the other systems.
    pub fn client_targets(&self) -> Vec<(String, String)> {
        let url = self.url();
        let names = target_names(self.kind, true).into_iter().skip(target_names(self.kind, false).len());
        let scheme = match self.kind {
            ServerKind::Mariadb => "mysql-cli",
            ServerKind::Redis => "redis-cli",
            _ => return Vec::new(),
        };
        let (_, rest) = url.split_once("://").expect("server URLs have a scheme");
        names.map(|name| (name, format!("{scheme}://{rest}"))).collect()
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

    /// Shuts the server down gracefully (killing its process group if that takes longer
    /// than 30 s), then removes its data directory.
    pub async fn stop(mut self) -> Result<()> {
        // The child stays in `self` until it is gone: if this future is dropped halfway,
        // `Drop` still kills the process group before it removes the directory.
        if let Some(child) = self.child.as_mut() {
            signal(self.pid, stop_signal(self.kind));
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
            kill_group(self.pid);
            let _ = child.start_kill();
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let deadline = Instant::now() + Duration::from_secs(1);
            while group_alive(self.pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
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
    spawn_all_inner(kinds, opts, None).await
}

async fn spawn_all_inner(kinds: &[ServerKind], opts: &SpawnOptions, search_path: Option<Vec<PathBuf>>) -> Result<Vec<Server>> {
    let mut set = tokio::task::JoinSet::new();
    for (index, &kind) in kinds.iter().enumerate() {
        let opts = opts.clone();
        let search_path = search_path.clone();
        set.spawn(async move { (index, spawn_with_search_path(kind, &opts, search_path.as_deref()).await) });
    }
    let mut started: Vec<Option<Server>> = kinds.iter().map(|_| None).collect();
    let mut failure = None;
    while let Some(joined) = set.join_next().await {
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
    Ok(started.into_iter().map(|s| s.expect("every task reported")).collect())
}

/// `spawn`, but the programs are looked up only in `search_path` when it is given
/// (instead of PATH, /usr/sbin and /usr/lib/postgresql/*/bin). Lets tests check the
/// missing-program error without uninstalling anything.
#[doc(hidden)]
pub async fn spawn_with_search_path(kind: ServerKind, opts: &SpawnOptions, search_path: Option<&[PathBuf]>) -> Result<Server> {
    spawn_inner(kind, opts, search_path, &mut free_port).await
}

/// The whole spawn; `next_port` supplies the port of each attempt (tests hand it a taken
/// port first to exercise the retry).
async fn spawn_inner(
    kind: ServerKind,
    opts: &SpawnOptions,
    search_path: Option<&[PathBuf]>,
    next_port: &mut (dyn FnMut() -> Result<u16> + Send),
) -> Result<Server> {
    let dirs = match search_path {
        Some(dirs) => dirs.to_vec(),
        None => default_search_path(kind),
    };
    let programs = match (kind, search_path, hyper::override_program()) {
        // `$DBSWEEP_HYPERD` names the program itself.
        (ServerKind::Hyper, None, Some(path)) => {
            if !is_executable(&path) {
                return Err(Error::Missing(format!(
                    "DBSWEEP_HYPERD={} is not an executable file: fix the variable or unset it and run scripts/setup-servers",
                    path.display()
                )));
            }
            vec![path]
        }
        _ => kind.programs().iter().map(|name| find_program(name, &dirs).ok_or_else(|| missing(kind, name))).collect::<Result<Vec<_>>>()?,
    };

    let root = match &opts.data_root {
        // Absolute, because the servers run with their data directory as working directory.
        Some(root) => std::path::absolute(root).map_err(|e| Error::usage(format!("bad data root {}: {e}", root.display())))?,
        None => std::env::temp_dir(),
    };
    let dir = tempfile::Builder::new()
        .prefix(&format!("dbsweep-{kind}-"))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(&root)
        .map_err(|e| Error::usage(format!("cannot create a data directory under {}: {e}; pick a writable data root", root.display())))?;
    let ctx = Context { dir: dir.path().to_path_buf(), programs, run_as: None };
    let ctx = match kind {
        ServerKind::Postgres => postgres::init(ctx).await?,
        ServerKind::Mariadb => mariadb::init(ctx).await?,
        ServerKind::Hyper => hyper::init(ctx)?,
        ServerKind::H2 => h2::init(ctx)?,
        ServerKind::Cassandra => cassandra::init(ctx)?,
        ServerKind::Redis | ServerKind::Memcached => ctx,
    };

    let mut dir = Some(dir);
    let mut last_error = None;
    for _ in 0..PORT_ATTEMPTS {
        let port = next_port()?;
        let command = match kind {
            ServerKind::Postgres => postgres::command(&ctx, port),
            ServerKind::Mariadb => mariadb::command(&ctx, port),
            ServerKind::Redis => redis::command(&ctx, port),
            ServerKind::Memcached => memcached::command(&ctx, port),
            ServerKind::Hyper => hyper::command(&ctx, port),
            ServerKind::H2 => h2::command(&ctx, port),
            ServerKind::Cassandra => cassandra::command(&ctx, port),
        };
        let mut server = launch(kind, &ctx, port, command, dir.take().expect("dir kept between attempts")).await?;
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

/// What the per-system steps share.
pub(crate) struct Context {
    /// The temporary directory (data, socket, log).
    dir: PathBuf,
    /// The located programs, in the order of `ServerKind::programs`.
    programs: Vec<PathBuf>,
    /// uid/gid to run the server as (PostgreSQL refuses root); `None` = as ourselves.
    run_as: Option<(u32, u32)>,
}

impl Context {
    fn program(&self, index: usize) -> &Path {
        &self.programs[index]
    }
}

/// What a successful readiness probe learned from the server. A probe reports "not
/// ready yet" as any I/O error, and a refused login as `PermissionDenied` (which ends the
/// wait at once).
pub(crate) struct Ready {
    version: String,
    settings: BTreeMap<String, String>,
}

enum Failure {
    /// The server could not bind its port (someone else took it); retry on another.
    PortTaken,
    Fatal(Error),
}

fn stop_signal(kind: ServerKind) -> i32 {
    match kind {
        // Fast shutdown: roll back open transactions, end backends, checkpoint.
        ServerKind::Postgres => libc::SIGINT,
        ServerKind::Mariadb | ServerKind::Redis | ServerKind::Memcached | ServerKind::Hyper | ServerKind::H2 | ServerKind::Cassandra => {
            libc::SIGTERM
        }
    }
}

/// Starts the server process with its output in the log file; the returned `Server`
/// kills it when dropped, so an error or a cancelled spawn leaves nothing behind.
async fn launch(kind: ServerKind, ctx: &Context, port: u16, mut command: Command, dir: TempDir) -> Result<Server> {
    let log_path = ctx.dir.join(LOG_FILE);
    let log = std::fs::File::create(&log_path).map_err(|e| Error::runtime(format!("cannot create {}: {e}", log_path.display())))?;
    let log_err = log.try_clone().map_err(|e| Error::runtime(format!("cannot reopen {}: {e}", log_path.display())))?;
    command.stdin(Stdio::null()).stdout(log).stderr(log_err).current_dir(&ctx.dir);
    if let Some((uid, gid)) = ctx.run_as {
        command.uid(uid).gid(gid);
    }
    let program = command.as_std().get_program().to_string_lossy().into_owned();
    let child = start(command).await.map_err(|e| Error::runtime(format!("cannot start {program}: {e}")))?;
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
    })
}

/// Polls the system's protocol until it answers, the process dies, or the timeout.
async fn wait_ready(server: &mut Server, ctx: &Context) -> std::result::Result<Ready, Failure> {
    let kind = server.kind;
    let started = Instant::now();
    let mut last_problem = String::from("no answer yet");
    loop {
        if started.elapsed() > startup_timeout(kind) {
            let tail = log_tail(&ctx.dir.join(LOG_FILE));
            return Err(Failure::Fatal(Error::runtime(format!(
                "{kind} server did not answer within {} s ({last_problem}); last lines of {}:\n{tail}",
                startup_timeout(kind).as_secs(),
                ctx.dir.join(LOG_FILE).display()
            ))));
        }
        let (port, pid) = (server.port, server.pid);
        let probe = async {
            match kind {
                ServerKind::Postgres => postgres::probe(ctx, port).await,
                ServerKind::Mariadb => mariadb::probe(ctx, port).await,
                ServerKind::Redis => redis::probe(port, pid).await,
                ServerKind::Memcached => memcached::probe(port, pid).await,
                ServerKind::Hyper => hyper::probe(ctx, port, pid).await,
                ServerKind::H2 => h2::probe(ctx, port, pid).await,
                ServerKind::Cassandra => cassandra::probe(ctx, port, pid).await,
            }
        };
        let child = server.child.as_mut().expect("a launched server has a child");
        // Race the probe against the process's exit, so a server that dies (e.g. its
        // port was taken) is noticed at once rather than after a probe timeout.
        tokio::select! {
            status = child.wait() => {
                let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                let tail = log_tail(&ctx.dir.join(LOG_FILE));
                // The whole log: a JVM's shutdown hooks log many lines after the bind error.
                let log = std::fs::read(ctx.dir.join(LOG_FILE)).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
                if port_in_use(&tail) || port_in_use(&log) {
                    return Err(Failure::PortTaken);
                }
                return Err(Failure::Fatal(Error::runtime(format!(
                    "{kind} server exited during startup ({status}); last lines of {}:\n{tail}",
                    ctx.dir.join(LOG_FILE).display()
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

fn port_in_use(log: &str) -> bool {
    let log = log.to_ascii_lowercase();
    log.contains("address already in use")
        || log.contains("address in use")
        // hyperd's wording
        || log.contains("unable to listen to any of the given host name and port combinations")
        // H2's wording (`Exception opening port "P" (port may be in use)`)
        || log.contains("(port may be in use)")
        // Cassandra's wording for its internode (storage) port
        || log.contains("is in use by another process")
}

/// The last lines of a log file, for error messages.
fn log_tail(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(LOG_TAIL_LINES);
            lines[start..].join("\n")
        }
        Err(e) => format!("(no log: {e})"),
    }
}

/// Runs a one-shot setup program (initdb, mariadb-install-db) to completion with its
/// output in `log_name` inside the data directory; a failure quotes the log's tail.
async fn run_setup(kind: ServerKind, ctx: &Context, mut command: Command, log_name: &str) -> Result<()> {
    let log_path = ctx.dir.join(log_name);
    let log = std::fs::File::create(&log_path).map_err(|e| Error::runtime(format!("cannot create {}: {e}", log_path.display())))?;
    let log_err = log.try_clone().map_err(|e| Error::runtime(format!("cannot reopen {}: {e}", log_path.display())))?;
    command.stdin(Stdio::null()).stdout(log).stderr(log_err).current_dir(&ctx.dir);
    if let Some((uid, gid)) = ctx.run_as {
        command.uid(uid).gid(gid);
    }
    let program = command.as_std().get_program().to_string_lossy().into_owned();
    let mut child = start(command).await.map_err(|e| Error::runtime(format!("cannot start {program}: {e}")))?;
    // If this future is dropped halfway, the helpers the program forked (initdb's
    // `postgres --boot`, install-db's `mariadbd --bootstrap`) must die with it.
    let _group = child.id().map(GroupGuard);
    let status = match tokio::time::timeout(STARTUP_TIMEOUT, child.wait()).await {
        Ok(status) => status.map_err(|e| Error::runtime(format!("{program}: {e}")))?,
        Err(_) => {
            if let Some(pid) = child.id() {
                kill_group(pid);
            }
            let _ = child.wait().await;
            return Err(Error::runtime(format!(
                "{kind}: {program} did not finish within {} s; last lines of {}:\n{}",
                STARTUP_TIMEOUT.as_secs(),
                log_path.display(),
                log_tail(&log_path)
            )));
        }
    };
    if !status.success() {
        return Err(Error::runtime(format!(
            "{kind}: {program} failed ({status}); last lines of {}:\n{}",
            log_path.display(),
            log_tail(&log_path)
        )));
    }
    Ok(())
}

/// Kills a process group when dropped (a no-op once the group is gone).
struct GroupGuard(u32);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// A loopback port that was free a moment ago.
fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| Error::runtime(format!("cannot bind a loopback port: {e}")))?;
    let port = listener.local_addr().map_err(|e| Error::runtime(format!("cannot read the bound port: {e}")))?.port();
    Ok(port)
}

fn missing(kind: ServerKind, program: &str) -> Error {
    if kind == ServerKind::Hyper {
        return Error::Missing(format!(
            "{program} not found: install it with scripts/setup-servers (pip wheel tableauhyperapi into \
             ${{DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}}/hyper), or set DBSWEEP_HYPERD to its path"
        ));
    }
    Error::Missing(format!("{program} not found: install it with scripts/setup-servers (apt-get install {})", kind.package()))
}

/// Where each system's programs are looked for: the newest PostgreSQL version's bin
/// directory first (Debian keeps `postgres`/`initdb` off PATH), then PATH, then the sbin
/// directories (MariaDB's `mariadbd` lives in /usr/sbin, often not on a user's PATH).
fn default_search_path(kind: ServerKind) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if kind == ServerKind::Postgres {
        dirs.extend(postgres::version_dirs(Path::new("/usr/lib/postgresql")));
    }
    if kind == ServerKind::Hyper {
        dirs.extend(hyper::native_dir());
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    for extra in ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin"] {
        dirs.push(PathBuf::from(extra));
    }
    dirs
}

fn find_program(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().map(|dir| dir.join(name)).find(|path| is_executable(path))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A job for the spawner thread.
struct SpawnJob {
    command: Command,
    runtime: tokio::runtime::Handle,
    reply: tokio::sync::oneshot::Sender<io::Result<Child>>,
}

/// Every server is forked from one thread that lives as long as dbsweep: the kernel sends
/// `PR_SET_PDEATHSIG` when the *thread* that forked a child exits, and tokio's blocking
/// threads (and workers after `block_in_place`) do exit while servers still run.
fn spawner() -> &'static mpsc::Sender<SpawnJob> {
    static SPAWNER: OnceLock<mpsc::Sender<SpawnJob>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnJob>();
        std::thread::Builder::new()
            .name("dbsweep-spawner".into())
            .spawn(move || {
                while let Ok(mut job) = rx.recv() {
                    let _runtime = job.runtime.enter();
                    // If nobody waits any more (a cancelled spawn), dropping the child
                    // kills it (kill_on_drop).
                    let _ = job.reply.send(job.command.spawn());
                }
            })
            .expect("cannot start the server spawner thread");
        tx
    })
}

/// Starts a child in its own process group that gets SIGKILL when dbsweep dies and is
/// killed when its handle is dropped.
async fn start(mut command: Command) -> io::Result<Child> {
    command.kill_on_drop(true).process_group(0);
    let parent = std::process::id();
    // SAFETY: the hook only makes async-signal-safe calls (prctl, getppid) and does not
    // allocate.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // dbsweep died between fork and prctl: do not outlive it.
            if libc::getppid() as u32 != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job = SpawnJob { command, runtime: tokio::runtime::Handle::current(), reply };
    spawner().send(job).map_err(|_| io::Error::other("the server spawner thread is gone"))?;
    answer.await.map_err(|_| io::Error::other("the server spawner thread dropped the request"))?
}

fn signal(pid: u32, signal: i32) {
    // SAFETY: plain syscall; the pid is our own unreaped child.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

fn signal_group(pgid: u32, signal: i32) {
    // SAFETY: plain syscall on a process group we created.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), signal);
    }
}

/// SIGKILL to the server's process group (the server and any helpers it forked).
fn kill_group(pgid: u32) {
    signal_group(pgid, libc::SIGKILL);
}

fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(-(pgid as libc::pid_t), 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
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
        let err = missing(ServerKind::Mariadb, "mariadbd");
        assert_eq!(err.exit_code(), 2);
        assert_eq!(err.to_string(), "mariadbd not found: install it with scripts/setup-servers (apt-get install mariadb-server)");
    }

    #[test]
    fn port_conflicts_are_recognised_in_each_systems_log() {
        assert!(port_in_use("LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use"));
        assert!(port_in_use("[ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use"));
        assert!(port_in_use("failed to listen on TCP port 11211: Address already in use"));
        assert!(port_in_use("unable to listen to any of the given host name and port combinations for TCP"));
        assert!(port_in_use("org.h2.jdbc.JdbcSQLNonTransientConnectionException: Exception opening port \"46167\" (port may be in use)"));
        // Cassandra: the CQL port (netty) and the storage port.
        assert!(port_in_use("io.netty.channel.unix.Errors$NativeIoException: bind(..) failed: Address already in use"));
        assert!(port_in_use(
            "ConfigurationException: /127.0.0.1:17000 is in use by another process.  Change listen_address:storage_port in cassandra.yaml"
        ));
        assert!(!port_in_use("FATAL: data directory has wrong ownership"));
    }

    #[test]
    fn missing_hyperd_names_the_setup_script() {
        let err = missing(ServerKind::Hyper, "hyperd");
        assert_eq!(err.exit_code(), 2);
        let text = err.to_string();
        assert!(text.starts_with("hyperd not found: install it with scripts/setup-servers"), "{text}");
        assert!(text.contains("DBSWEEP_HYPERD"), "{text}");
    }

    #[test]
    fn programs_are_found_only_if_executable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        let exec = dir.path().join("exec");
        std::fs::write(&plain, "").unwrap();
        std::fs::write(&exec, "").unwrap();
        std::fs::set_permissions(&exec, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dirs = vec![dir.path().to_path_buf()];
        assert_eq!(find_program("exec", &dirs), Some(exec));
        assert_eq!(find_program("plain", &dirs), None);
        assert_eq!(find_program("absent", &dirs), None);
    }

    /// Every system, started on a port someone else holds, fails to bind, is recognised as
    /// a port conflict from its real log text, and is restarted on the next port.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_taken_port_is_retried_on_another_for_every_kind() {
        let starts = ServerKind::ALL.map(|kind| async move {
            let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let taken = holder.local_addr().unwrap().port();
            let mut ports = vec![taken];
            let mut next_port = || {
                let port = if ports.len() == 1 { taken } else { free_port()? };
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
        let [a, b, c, d, e, f, g] = starts;
        tokio::join!(a, b, c, d, e, f, g);
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
        let opts = SpawnOptions { data_root: Some(root.path().to_path_buf()) };
        let mut search = vec![fake.path().to_path_buf()];
        search.extend(default_search_path(ServerKind::Redis));
        let err = spawn_all_inner(&[ServerKind::Redis, ServerKind::Postgres], &opts, Some(search)).await.unwrap_err();
        assert_eq!(err.exit_code(), 1);
        let message = err.to_string();
        assert!(message.contains("initdb.log") && message.contains("initdb: simulated disk full"), "{message}");
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0, "directories left under the data root");
    }

    #[test]
    fn log_tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let text: String = (0..100).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let tail = log_tail(&path);
        assert_eq!(tail.lines().count(), LOG_TAIL_LINES);
        assert!(tail.ends_with("line 99"));
        assert!(log_tail(&dir.path().join("absent")).starts_with("(no log"));
    }
}
