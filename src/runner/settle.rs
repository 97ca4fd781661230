//! Waiting for a spawned server to go quiet after its data is loaded, before the first
//! measured run: a server finishing the load's background work (InnoDB flushing and
//! purging, PostgreSQL's autovacuum and checkpoints, Cassandra's memtable flushes and
//! compactions) would otherwise slow the first runs, which then measure the load's
//! aftermath rather than the operation.
//!
//! Owns the rule (the server's whole process group and its descendants, from /proc, use at
//! most [`QUIET_SHARE`] of a core over the last [`WINDOW`], waiting at most [`LIMIT`]) and
//! its outcome as the report shows it. Must not touch the server (no statements, no signals)
//! and must not read processes dbsweep did not start.

use super::cancel::Cancel;
use std::time::{Duration, Instant};

/// A server is quiet when its process group uses at most this share of one core.
pub const QUIET_SHARE: f64 = 0.10;
/// ... over this much time.
pub const WINDOW: Duration = Duration::from_secs(1);
/// The longest wait; a server still busy then is measured anyway, with a warning.
pub const LIMIT: Duration = Duration::from_secs(60);
/// How often the group's CPU time is read.
const SAMPLE: Duration = Duration::from_millis(250);

/// How a wait for quiet ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Settling {
    /// Time from the end of the load until quiet (or until the limit).
    pub waited: Duration,
    /// The group's CPU use over the last window, in cores.
    pub cpu_share: f64,
    pub quiet: bool,
}

impl Settling {
    /// The target setting's text, e.g. "quiet after 2.3 s (server CPU 3 % of a core over
    /// the last 1 s)".
    pub fn describe(&self) -> String {
        let state = if self.quiet { "quiet after" } else { "still busy after" };
        format!(
            "{state} {:.1} s (server CPU {:.0} % of a core over the last {} s; quiet is <= {:.0} %)",
            self.waited.as_secs_f64(),
            self.cpu_share * 100.0,
            WINDOW.as_secs(),
            QUIET_SHARE * 100.0
        )
    }
}

/// CPU time used so far by the server's processes (`server_processes::of_group`), in
/// clock ticks: each one's own time plus the time of the children it has reaped
/// (PostgreSQL's autovacuum workers and backends come and go; their time stays with the
/// postmaster that waited for them); `None` when the group is gone.
pub fn group_cpu_ticks(pgid: u32) -> Option<u64> {
    let processes = super::server_processes::of_group(pgid);
    (!processes.is_empty()).then(|| processes.iter().map(|p| p.ticks).sum())
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

/// The CPU share (in cores) over the samples that span the last `window`: `samples` are
/// (seconds since the start, cumulative ticks), oldest first. `None` until they span it.
fn share_over(samples: &[(f64, u64)], window: f64, hz: f64) -> Option<f64> {
    let &(now, ticks_now) = samples.last()?;
    let &(then, ticks_then) = samples.iter().rev().find(|(t, _)| now - t >= window - 1e-9)?;
    // Ticks of a member that exited unreaped are gone from the sum: never below zero.
    Some(ticks_now.saturating_sub(ticks_then) as f64 / hz / (now - then))
}

/// Waits until the process group `pgid` is quiet, at most `limit`; `None` when the group
/// cannot be read (it is gone) or a stop was requested.
pub async fn until_quiet(pgid: u32, limit: Duration, cancel: &Cancel) -> Option<Settling> {
    let hz = ticks_per_second();
    let start = Instant::now();
    let mut samples: Vec<(f64, u64)> = Vec::new();
    loop {
        samples.push((start.elapsed().as_secs_f64(), group_cpu_ticks(pgid)?));
        if let Some(share) = share_over(&samples, WINDOW.as_secs_f64(), hz) {
            let waited = start.elapsed();
            if share <= QUIET_SHARE || waited >= limit {
                return Some(Settling { waited, cpu_share: share, quiet: share <= QUIET_SHARE });
            }
        }
        tokio::select! {
            () = tokio::time::sleep(SAMPLE) => {}
            () = cancel.stopped() => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_taken_over_the_last_window_only() {
        let hz = 100.0;
        // Busy (one core) for the first second, then idle.
        let samples = [(0.0, 0), (0.5, 50), (1.0, 100), (1.5, 102), (2.0, 104)];
        assert_eq!(share_over(&samples[..2], 1.0, hz), None, "half a window is not enough");
        assert!((share_over(&samples[..3], 1.0, hz).unwrap() - 1.0).abs() < 1e-9);
        assert!((share_over(&samples, 1.0, hz).unwrap() - 0.04).abs() < 1e-9);
        // A member that exited takes its ticks with it: never negative.
        assert_eq!(share_over(&[(0.0, 500), (1.0, 200)], 1.0, hz), Some(0.0));
    }

    /// A process group of its own running `script`, killed (the whole group) on drop.
    struct Group(std::process::Child);

    impl Group {
        fn start(script: &str) -> Group {
            use std::os::unix::process::CommandExt;
            Group(std::process::Command::new("sh").args(["-c", script]).process_group(0).spawn().unwrap())
        }
    }

    impl Drop for Group {
        fn drop(&mut self) {
            // SAFETY: kills the process group this test started.
            unsafe {
                libc::kill(-(self.0.id() as i32), libc::SIGKILL);
            }
            let _ = self.0.wait();
        }
    }

    #[tokio::test]
    async fn a_busy_group_is_waited_for_until_the_limit_and_an_idle_one_is_quiet_at_once() {
        let cancel = Cancel::default();
        let busy = Group::start("while :; do :; done");
        let limit = Duration::from_millis(1500);
        let outcome = until_quiet(busy.0.id(), limit, &cancel).await.expect("the group exists");
        // A busy loop gets a core on a quiet box and a fair share of two on a loaded one
        // (load 15: about 0.2): above the quiet line either way.
        assert!(!outcome.quiet && outcome.cpu_share > QUIET_SHARE, "{outcome:?}");
        assert!(outcome.waited >= limit, "{outcome:?}");

        // A child that burns CPU and exits: its time stays with the shell that reaped it.
        let reaped = Group::start("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done & wait; sleep 30");
        std::thread::sleep(Duration::from_millis(300));
        let before = group_cpu_ticks(reaped.0.id()).unwrap();
        let outcome = until_quiet(reaped.0.id(), LIMIT, &cancel).await.expect("the group exists");
        assert!(outcome.quiet && outcome.cpu_share <= QUIET_SHARE, "{outcome:?}");
        assert!(group_cpu_ticks(reaped.0.id()).unwrap() >= before, "ticks never go back");

        // A busy child in a session of its own (as PostgreSQL's backends are) still counts.
        let own_session = Group::start("setsid timeout 4 sh -c 'while :; do :; done' & wait");
        let outcome = until_quiet(own_session.0.id(), limit, &cancel).await.expect("the group exists");
        assert!(!outcome.quiet && outcome.cpu_share > QUIET_SHARE, "{outcome:?}");

        let idle = Group::start("sleep 30");
        let outcome = until_quiet(idle.0.id(), LIMIT, &cancel).await.expect("the group exists");
        assert!(outcome.quiet && outcome.waited < Duration::from_secs(3), "{outcome:?}");
        drop(idle);
        assert_eq!(group_cpu_ticks(u32::MAX), None, "no such group");
    }

    #[test]
    fn the_setting_says_how_it_ended() {
        let quiet = Settling { waited: Duration::from_millis(2300), cpu_share: 0.03, quiet: true };
        assert_eq!(quiet.describe(), "quiet after 2.3 s (server CPU 3 % of a core over the last 1 s; quiet is <= 10 %)");
        let busy = Settling { waited: LIMIT, cpu_share: 0.85, quiet: false };
        assert!(busy.describe().starts_with("still busy after 60.0 s (server CPU 85 %"));
    }
}
