//! The processes of a server dbsweep spawned, as /proc shows them: its process group and
//! every descendant of a member, wherever its group is (PostgreSQL's checkpointer, writers
//! and backends each start a session of their own). Settling (`settle`) sums their CPU
//! time and the memory probe (`memory`) their PSS. Must only read /proc, and only for a
//! group dbsweep started.

use std::collections::HashSet;

/// What a /proc/PID/stat line tells of a process.
#[derive(Debug, PartialEq)]
pub struct ServerProcess {
    pub pid: u32,
    parent: u32,
    group: u32,
    /// CPU time so far in clock ticks: utime + stime + cutime + cstime (its own, and that
    /// of the children it has reaped).
    pub ticks: u64,
}

impl ServerProcess {
    /// The fields after the parenthesized command name (which may hold spaces and
    /// parentheses) are state, ppid, pgrp, ... utime is field 14, cstime field 17.
    fn parse(pid: u32, stat: &str) -> Option<ServerProcess> {
        let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
        let parent = fields.get(1)?.parse().ok()?;
        let group = fields.get(2)?.parse().ok()?;
        let ticks = fields.get(11..15)?.iter().map(|f| f.parse::<i64>().ok().map(|t| t.max(0) as u64)).sum::<Option<u64>>()?;
        Some(ServerProcess { pid, parent, group, ticks })
    }
}

/// The members of process group `pgid` and their descendants; empty when the group is
/// gone.
pub fn of_group(pgid: u32) -> Vec<ServerProcess> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut all = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        // A process may exit between the listing and the read: skip it.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        all.extend(ServerProcess::parse(pid, &stat));
    }
    let mut kept: HashSet<u32> = all.iter().filter(|p| p.group == pgid).map(|p| p.pid).collect();
    if kept.is_empty() {
        return Vec::new();
    }
    // Children of kept processes, until no new one is found.
    loop {
        let before = kept.len();
        for p in &all {
            if kept.contains(&p.parent) {
                kept.insert(p.pid);
            }
        }
        if kept.len() == before {
            break;
        }
    }
    all.retain(|p| kept.contains(&p.pid));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_the_parent_the_group_and_all_four_cpu_times() {
        let stat = "4242 (postgres: autovacuum (x)) S 1 4200 4200 0 -1 4194624 100 0 0 0 7 3 11 2 20 0 1 0 5 0 0";
        assert_eq!(ServerProcess::parse(4242, stat), Some(ServerProcess { pid: 4242, parent: 1, group: 4200, ticks: 7 + 3 + 11 + 2 }));
        assert_eq!(ServerProcess::parse(1, "garbage"), None);
    }

    #[test]
    fn a_child_in_a_session_of_its_own_belongs_to_the_group_it_was_forked_in() {
        use std::os::unix::process::CommandExt;
        let mut leader = std::process::Command::new("sh")
            .args(["-c", "setsid sleep 30 & echo $!; wait"])
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(leader.stdout.as_mut().unwrap()), &mut line).unwrap();
        let child: u32 = line.trim().parse().unwrap();
        let pids: Vec<u32> = of_group(leader.id()).iter().map(|p| p.pid).collect();
        // SAFETY: kills the processes this test started.
        unsafe {
            libc::kill(child as i32, libc::SIGKILL);
            libc::kill(-(leader.id() as i32), libc::SIGKILL);
        }
        let _ = leader.wait();
        assert!(pids.contains(&leader.id()) && pids.contains(&child), "{pids:?} holds the shell {} and its child {child}", leader.id());
        assert!(of_group(u32::MAX).is_empty(), "no such group");
    }
}
