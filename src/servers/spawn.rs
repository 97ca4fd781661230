//! Starting servers: one process or a cluster's nodes, each in a fresh data directory on
//! a free port (retried when another process takes it first), waited for until its
//! protocol answers; several at once with nothing left behind on a failure or a stop.
//! Must not touch a server it did not start.

use super::process::{self, log_tail};
use super::system::{Context, Ready, port_in_use};
use super::{LOG_FILE, PORT_ATTEMPTS, Server, ServerKind, SpawnOptions};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tempfile::TempDir;

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

pub(super) async fn spawn_all_inner(
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
pub(super) async fn spawn_inner(
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
