//! Directories that live as long as one dbsweep process: a run's scratch directory, a
//! worker's, a spawned server's data directory. Each holds a marker file naming its owner
//! (pid and the process's start time), so that a later run can tell the leftovers of a
//! process that died without cleaning up (kill -9, an out-of-memory kill, a power cut)
//! from the directories of one still running (also one stopped with SIGSTOP), and remove
//! only the former.
//!
//! Owns the marker's name and format, the test whether its owner still runs and the sweep.
//! Must not remove anything but a directory named `dbsweep-*` holding a marker this module
//! wrote: whatever dbsweep did not create stays.

use std::io;
use std::path::{Path, PathBuf};

/// The marker file inside each directory.
pub const MARKER: &str = ".dbsweep-owner";
/// What every directory's name starts with.
pub const NAME_PREFIX: &str = "dbsweep-";
/// The marker's first line.
const HEADER: &str = "dbsweep process directory";

/// The process that owns a directory: its pid and its start time (clock ticks after boot,
/// `/proc/PID/stat`), which tells it from a later process given the same pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// `None` where the system does not say (no /proc): liveness then rests on the pid.
    pub start: Option<u64>,
}

impl Owner {
    /// This process.
    pub fn this_process() -> Owner {
        let pid = std::process::id();
        Owner { pid, start: process_state(pid).map(|(_, start)| start) }
    }

    /// Whether the owner still runs (stopped counts as running; a zombie does not): a
    /// process with its pid and, where known, its start time.
    pub fn is_alive(&self) -> bool {
        match (process_state(self.pid), self.start) {
            (Some((state, start)), Some(recorded)) => start == recorded && !matches!(state, 'Z' | 'X'),
            (Some((state, _)), None) => !matches!(state, 'Z' | 'X'),
            // No /proc entry: gone, unless there is no /proc at all.
            (None, _) if Path::new("/proc/self/stat").exists() => false,
            // SAFETY: signal 0 only checks that the process exists.
            (None, _) => unsafe { libc::kill(self.pid as libc::pid_t, 0) == 0 || *libc::__errno_location() == libc::EPERM },
        }
    }

    fn text(&self) -> String {
        let start = self.start.map_or_else(|| "unknown".to_string(), |s| s.to_string());
        format!("{HEADER}\npid {}\nstart {start}\n", self.pid)
    }

    /// The owner a marker names; `None` for anything this module did not write.
    fn parse(text: &str) -> Option<Owner> {
        let mut lines = text.lines();
        if lines.next()? != HEADER {
            return None;
        }
        let pid = lines.next()?.strip_prefix("pid ")?.parse().ok()?;
        let start = match lines.next()?.strip_prefix("start ")? {
            "unknown" => None,
            ticks => Some(ticks.parse().ok()?),
        };
        lines.next().is_none().then_some(Owner { pid, start })
    }
}

/// The state letter and start time of process `pid` from `/proc/PID/stat`; `None` when
/// there is no such process (or no /proc).
fn process_state(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold anything, ')' included.
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 22, start time; `fields` began at field 3.
    let start = fields.nth(22 - 4)?.parse().ok()?;
    Some((state, start))
}

/// A fresh private directory (mode 0700) `PREFIX{pid}-XXXXXX` under `parent`, marked as
/// this process's; removed when the returned value is dropped. `prefix` starts with
/// `dbsweep-`.
pub fn create(parent: &Path, prefix: &str) -> io::Result<tempfile::TempDir> {
    debug_assert!(prefix.starts_with(NAME_PREFIX));
    let owner = Owner::this_process();
    let dir = tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", owner.pid))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(parent)?;
    std::fs::write(dir.path().join(MARKER), owner.text())?;
    Ok(dir)
}

/// The owner named by the marker of `dir`, if `dir` is a directory (not a link) named
/// `dbsweep-*` holding a marker this module wrote.
pub fn owner_of(dir: &Path) -> Option<Owner> {
    let name = dir.file_name()?.to_str()?;
    if !name.starts_with(NAME_PREFIX) || !std::fs::symlink_metadata(dir).ok()?.is_dir() {
        return None;
    }
    let marker = dir.join(MARKER);
    if !std::fs::symlink_metadata(&marker).ok()?.is_file() {
        return None;
    }
    Owner::parse(&std::fs::read_to_string(marker).ok()?)
}

/// Removes the directories under `parent` that a dbsweep process made (`create`) and left
/// behind when it died; returns them. Directories of processes still running, and anything
/// without a marker, stay. Errors (a directory another sweep removes at the same time, one
/// without permission) leave the directory and are not reported: the next sweep tries again.
pub fn sweep(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let dir = entry.path();
        let Some(owner) = owner_of(&dir) else { continue };
        if !owner.is_alive() && std::fs::remove_dir_all(&dir).is_ok() {
            removed.push(dir);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_names_this_process_which_is_alive() {
        let parent = tempfile::tempdir().unwrap();
        let dir = create(parent.path(), "dbsweep-test-").unwrap();
        let name = dir.path().file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(&format!("dbsweep-test-{}-", std::process::id())), "{name}");
        let owner = owner_of(dir.path()).unwrap();
        assert_eq!(owner, Owner::this_process());
        assert!(owner.start.is_some(), "Linux says when a process started");
        assert!(owner.is_alive());
        assert!(sweep(parent.path()).is_empty(), "a running owner's directory stays");
        assert!(dir.path().exists());
    }

    #[test]
    fn dead_owners_directories_go_and_nothing_else_does() {
        let parent = tempfile::tempdir().unwrap();
        // A process that has exited (and was reaped): its pid is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = child.id();
        child.wait().unwrap();
        let me = Owner::this_process();
        let write = |name: &str, marker: Option<String>| {
            let dir = parent.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::write(dir.join("data"), "x").unwrap();
            if let Some(text) = marker {
                std::fs::write(dir.join(MARKER), text).unwrap();
            }
            dir
        };
        let dead = write("dbsweep-scratch-dead", Some(Owner { pid: dead_pid, start: Some(1) }.text()));
        // This pid, but a start time other than this process's: the pid was reused.
        let reused = write("dbsweep-redis-reused", Some(Owner { pid: me.pid, start: Some(me.start.unwrap() + 1) }.text()));
        let alive = write("dbsweep-worker-alive", Some(me.text()));
        let unmarked = write("dbsweep-postgres-unmarked", None);
        let foreign = write("dbsweep-foreign", Some(format!("not ours\npid {dead_pid}\nstart 1\n")));
        let misnamed = write("someone-else", Some(Owner { pid: dead_pid, start: Some(1) }.text()));
        let mut removed = sweep(parent.path());
        removed.sort();
        let mut expected = vec![dead.clone(), reused.clone()];
        expected.sort();
        assert_eq!(removed, expected);
        assert!(!dead.exists() && !reused.exists());
        assert!(alive.exists() && unmarked.exists() && foreign.exists() && misnamed.exists());
    }

    #[test]
    fn a_stopped_process_is_alive_and_a_zombie_is_not() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let owner = Owner { pid, start: process_state(pid).map(|(_, s)| s) };
        // SAFETY: signals the child this test started.
        unsafe { libc::kill(pid as i32, libc::SIGSTOP) };
        assert!(owner.is_alive(), "a stopped owner still runs");
        // SAFETY: as above.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        // Killed, not yet reaped: a zombie until `wait`.
        while process_state(pid).is_some_and(|(state, _)| state != 'Z') {
            std::thread::yield_now();
        }
        assert!(!owner.is_alive(), "a zombie is gone");
        child.wait().unwrap();
        assert!(!owner.is_alive());
    }

    #[test]
    fn markers_this_module_did_not_write_name_no_owner() {
        assert_eq!(Owner::parse("dbsweep process directory\npid 12\nstart 34\n"), Some(Owner { pid: 12, start: Some(34) }));
        assert_eq!(Owner::parse("dbsweep process directory\npid 12\nstart unknown\n"), Some(Owner { pid: 12, start: None }));
        for bad in
            ["", "dbsweep process directory\npid x\nstart 1\n", "dbsweep process directory\npid 1\nstart 1\nmore\n", "pid 1\nstart 1\n"]
        {
            assert_eq!(Owner::parse(bad), None, "{bad:?}");
        }
    }
}
