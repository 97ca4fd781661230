//! Waiting on what a test started: a condition polled until it holds (with a generous
//! deadline, so a loaded machine fails no test), and whether a process is still there.

use std::time::{Duration, Instant};

/// Polls `ready` every 20 ms until it holds; panics naming `what` after two minutes.
pub fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a process with id `pid` exists (a zombie still does).
pub fn process_exists(pid: u32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}
