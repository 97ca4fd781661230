//! The child processes behind throwaway servers: where their programs are found; every
//! server and setup program is forked from one long-lived thread (so `PR_SET_PDEATHSIG` holds), in its own process group,
//! with its output in a log file; signals to the server and its group; log tails for
//! error messages; a program's version output, in a time limit, for `dbsweep targets`.
//!
//! Must not: know any server system (that is each `System`'s business), or signal a
//! process it did not start.

use super::{Context, STARTUP_TIMEOUT, System};
use crate::error::{Error, Result};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// Lines of the server's log quoted in a startup error.
const LOG_TAIL_LINES: usize = 25;
/// How long a program may take to print its version (a JVM on a busy machine is the slowest).
const VERSION_TIMEOUT: Duration = Duration::from_secs(3);

/// The last lines of a log file, for error messages.
pub(super) fn log_tail(path: &Path) -> String {
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

/// The system's programs: named by the user, or found in `search_path` (when given) or
/// the default search path.
pub(super) fn locate_programs(system: &dyn System, search_path: Option<&[PathBuf]>) -> Result<Vec<PathBuf>> {
    if search_path.is_none()
        && let Some(named) = system.programs_from_env()
    {
        return named;
    }
    let dirs = match search_path {
        Some(dirs) => dirs.to_vec(),
        None => default_search_path(system),
    };
    system.programs().iter().map(|name| find_program(name, &dirs).ok_or_else(|| system.missing(name))).collect()
}

/// Where a system's programs are looked for: its own directories first (Debian keeps
/// PostgreSQL's `postgres`/`initdb` off PATH), then PATH, then the sbin directories
/// (MariaDB's `mariadbd` lives in /usr/sbin, often not on a user's PATH).
pub(super) fn default_search_path(system: &dyn System) -> Vec<PathBuf> {
    let mut dirs = system.search_dirs();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    for extra in ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin"] {
        dirs.push(PathBuf::from(extra));
    }
    dirs
}

/// What `program ARGS` prints (stdout, then stderr: `java -version` writes there), for a
/// version: no server is started. Fails when it cannot run, exits non-zero, or takes longer
/// than `VERSION_TIMEOUT` (it is killed then).
pub(super) async fn version_output(program: &Path, args: &[&str]) -> Result<String> {
    let shown = format!("{} {}", program.display(), args.join(" "));
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null()).kill_on_drop(true);
    let output = match tokio::time::timeout(VERSION_TIMEOUT, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(Error::Missing(format!("{shown} cannot run ({e}): reinstall it or run scripts/setup-servers"))),
        Err(_) => return Err(Error::runtime(format!("{shown} did not answer within {} s", VERSION_TIMEOUT.as_secs()))),
    };
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    if !output.status.success() {
        let first = text.lines().next().unwrap_or("no output");
        return Err(Error::Missing(format!("{shown} failed ({}: {first}): reinstall it or run scripts/setup-servers", output.status)));
    }
    Ok(text)
}

/// The version `parse` reads from `program ARGS`'s output; when it cannot, the first line
/// of that output as printed (the program runs, whatever its words).
pub(super) async fn program_version(program: &Path, args: &[&str], parse: fn(&str) -> Option<String>) -> Result<String> {
    let text = version_output(program, args).await?;
    Ok(parse(&text).unwrap_or_else(|| text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("unknown").to_string()))
}

fn find_program(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().map(|dir| dir.join(name)).find(|path| is_executable(path))
}

pub(super) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs a one-shot setup program (initdb, mariadb-install-db) to completion with its
/// output in `log_name` inside the data directory; a failure quotes the log's tail.
pub(super) async fn run_setup(name: &str, ctx: &Context, command: Command, log_name: &str) -> Result<()> {
    let log_path = ctx.dir.join(log_name);
    let (child, program) = start_logged(ctx, command, &log_path).await?;
    // If this future is dropped halfway, the helpers the program forked (initdb's
    // `postgres --boot`, install-db's `mariadbd --bootstrap`) must die with it.
    let mut child = SetupChild(child);
    let status = match tokio::time::timeout(STARTUP_TIMEOUT, child.0.wait()).await {
        Ok(status) => status.map_err(|e| Error::runtime(format!("{program}: {e}")))?,
        Err(_) => {
            if let Some(pid) = child.0.id() {
                kill_group(pid);
            }
            let _ = child.0.wait().await;
            return Err(Error::runtime(format!(
                "{name}: {program} did not finish within {} s; last lines of {}:\n{}",
                STARTUP_TIMEOUT.as_secs(),
                log_path.display(),
                log_tail(&log_path)
            )));
        }
    };
    if !status.success() {
        return Err(Error::runtime(format!(
            "{name}: {program} failed ({status}); last lines of {}:\n{}",
            log_path.display(),
            log_tail(&log_path)
        )));
    }
    Ok(())
}

/// Starts `command` in the data directory (as `ctx.run_as` when set) with stdout and
/// stderr in `log_path`; returns the child and the program's name for messages.
pub(super) async fn start_logged(ctx: &Context, mut command: Command, log_path: &Path) -> Result<(Child, String)> {
    let log = std::fs::File::create(log_path).map_err(|e| Error::runtime(format!("cannot create {}: {e}", log_path.display())))?;
    let log_err = log.try_clone().map_err(|e| Error::runtime(format!("cannot reopen {}: {e}", log_path.display())))?;
    command.stdin(Stdio::null()).stdout(log).stderr(log_err).current_dir(&ctx.dir);
    if let Some((uid, gid)) = ctx.run_as {
        command.uid(uid).gid(gid);
    }
    let program = command.as_std().get_program().to_string_lossy().into_owned();
    let child = start(command).await.map_err(|e| Error::runtime(format!("cannot start {program}: {e}")))?;
    Ok((child, program))
}

/// A loopback port that was free a moment ago.
pub(super) fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| Error::runtime(format!("cannot bind a loopback port: {e}")))?;
    let port = listener.local_addr().map_err(|e| Error::runtime(format!("cannot read the bound port: {e}")))?.port();
    Ok(port)
}

/// A setup program (initdb, install-db) in its own process group. Dropped before it
/// finished (a stopped spawn), it kills the group and waits until every process of it is
/// gone, so nothing of the setup outlives dbsweep's exit.
struct SetupChild(Child);

impl Drop for SetupChild {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.id() {
            kill_and_wait(&mut self.0, pgid);
        }
    }
}

/// SIGKILL to `child` and its process group, then waits (blocking, at most 5 s) until the
/// child is reaped and no process of the group is left: for drops, which cannot await.
pub(super) fn kill_and_wait(child: &mut Child, pgid: u32) {
    kill_group(pgid);
    let _ = child.start_kill();
    let deadline = Instant::now() + Duration::from_secs(5);
    while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    while group_alive(pgid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
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

pub(super) fn signal(pid: u32, signal: i32) {
    // SAFETY: plain syscall; the pid is our own unreaped child.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

pub(super) fn signal_group(pgid: u32, signal: i32) {
    // SAFETY: plain syscall on a process group we created.
    unsafe {
        libc::kill(-(pgid as libc::pid_t), signal);
    }
}

/// SIGKILL to the server's process group (the server and any helpers it forked).
pub(super) fn kill_group(pgid: u32) {
    signal_group(pgid, libc::SIGKILL);
}

/// Whether a process of the group still runs. Zombies do not count: a killed helper whose
/// parent died first is reaped by init, which may take seconds (some container inits reap
/// every ~1.6 s), and a zombie holds no files, ports or memory.
pub(super) fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    let rc = unsafe { libc::kill(-(pgid as libc::pid_t), 0) };
    let exists = rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !group_only_zombies(pgid)
}

/// True when /proc lists members of the group and every one is a zombie; false when it
/// cannot tell (no /proc), so that callers keep waiting as they would without the check.
fn group_only_zombies(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    let mut members = 0;
    for entry in entries.flatten() {
        if !entry.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        match state_in_group(&stat, pgid) {
            Some('Z' | 'X') => members += 1,
            Some(_) => return false,
            None => {}
        }
    }
    members > 0
}

/// The state letter of a `/proc/PID/stat` line if its process is in group `pgid` (the
/// command name may hold spaces and parentheses, so fields are read after the last ')').
fn state_in_group(stat: &str, pgid: u32) -> Option<char> {
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_ascii_whitespace();
    let state = fields.next()?.chars().next()?;
    let _parent = fields.next()?;
    let group: u32 = fields.next()?.parse().ok()?;
    (group == pgid).then_some(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_the_state_of_a_group_member() {
        let line = "4242 (postgres: a (b) c) Z 1 4200 4200 0 -1 4194560 0";
        assert_eq!(state_in_group(line, 4200), Some('Z'));
        assert_eq!(state_in_group(line, 4242), None);
        assert_eq!(state_in_group("garbage", 1), None);
    }

    #[test]
    fn a_group_of_zombies_is_not_alive_and_a_running_group_is() {
        use std::os::unix::process::CommandExt;
        let mut running = std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let mut exited = std::process::Command::new("true").process_group(0).spawn().unwrap();
        // `true` exits at once and stays a zombie until waited for.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !group_only_zombies(exited.id()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!group_alive(exited.id()), "a zombie is not a live member");
        assert!(group_alive(running.id()));
        running.kill().unwrap();
        running.wait().unwrap();
        exited.wait().unwrap();
        assert!(!group_alive(running.id()) && !group_alive(exited.id()));
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
