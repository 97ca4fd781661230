//! Ctrl-C and SIGTERM: for a run, a stop request with its cause (a second signal abandons
//! the cleanup); for a synchronous command (`gen tpch`), a flag it checks to stop cleanly.
//! Must not decide what a stopped command leaves behind: the command does.

use crate::error::Error;
use crate::runner::stopping::Activity;
use crate::runner::{Cancel, StopCause};
use std::sync::Arc;

/// The signal that asked a synchronous command (`gen tpch`) to stop; 0 until one does.
pub(super) static STOP_SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
static STOP_REQUESTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn request_stop(signal: libc::c_int) {
    // Only atomic stores: async-signal-safe.
    STOP_SIGNAL.store(signal, std::sync::atomic::Ordering::Relaxed);
    STOP_REQUESTED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Makes Ctrl-C and SIGTERM set the returned flag, which a synchronous command checks to
/// stop cleanly (removing what it half-wrote) instead of dying mid-write.
pub(super) fn stop_on_signals() -> &'static std::sync::atomic::AtomicBool {
    // SAFETY: the handler only stores to atomics.
    unsafe {
        libc::signal(libc::SIGINT, request_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, request_stop as *const () as libc::sighandler_t);
    }
    &STOP_REQUESTED
}

/// Turns Ctrl-C (SIGINT) and SIGTERM into a stop request with its cause and says what the
/// run was doing and what stopping still does; the run then ends like any interruption
/// (partial results saved, servers and directories removed). A second signal of either
/// kind abandons that cleanup. The handlers are in place when this returns (not when the
/// watching task first runs), so a signal that comes at once, while servers start, is
/// already a stop request rather than the default kill.
pub(super) fn watch_signals(cancel: Cancel, activity: Activity, abandon: Arc<tokio::sync::Notify>) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        tracing::warn!("cannot watch for Ctrl-C and SIGTERM; they will end dbsweep without cleanup");
        return tokio::spawn(async {});
    };
    tokio::spawn(async move {
        let again = tokio::select! {
            _ = int.recv() => {
                cancel.stop(StopCause::CtrlC);
                "press Ctrl-C again"
            }
            _ = term.recv() => {
                cancel.stop(StopCause::Sigterm);
                "send SIGTERM again"
            }
        };
        eprintln!("\ndbsweep: {}", activity.stopping_message(again));
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        abandon.notify_one();
    })
}

/// The error of a run whose cleanup a second signal abandoned: the first stop's cause and
/// what was left behind.
pub(super) fn abandoned(cancel: &Cancel, activity: &Activity) -> Error {
    let left = activity.abandoned_message();
    match cancel.cause() {
        Some(StopCause::Sigterm) => Error::Terminated(format!("terminated by SIGTERM; {left}")),
        Some(StopCause::Failure(why)) => Error::runtime(format!("{why}; {left}")),
        Some(StopCause::CtrlC) | None => Error::Interrupted(format!("interrupted; {left}")),
    }
}
