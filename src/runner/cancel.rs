//! Stopping a run early, and why: Ctrl-C, SIGTERM, or a failure found outside the client
//! loop (another run took over this run's lease). Whoever stops the run records the cause
//! (the first one wins); clients watch the flag between ops, the runner ends the run like
//! any interruption (partial results saved and marked, cleanup) and reports the cause.
//! Must not decide exit codes beyond naming the cause; `error` maps them.

use crate::error::Error;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Why a run stopped before its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopCause {
    /// SIGINT (Ctrl-C): exit code 130.
    CtrlC,
    /// SIGTERM (`kill`, `timeout`, systemd, CI cancellation): exit code 143.
    Sigterm,
    /// Something went wrong that ends the whole run: exit code 1.
    Failure(String),
}

impl StopCause {
    /// The reason as report.json's `incomplete_reason` gives it.
    pub fn reason(&self) -> String {
        match self {
            StopCause::CtrlC => "interrupted by Ctrl-C".into(),
            StopCause::Sigterm => "terminated by SIGTERM".into(),
            StopCause::Failure(why) => why.clone(),
        }
    }
}

impl StopCause {
    /// The error that ends the command: what stopped it and what was written where
    /// (`out_dir`: the partial results; `None`: nothing was written yet).
    pub fn into_error(self, out_dir: Option<&Path>) -> Error {
        let written = match out_dir {
            Some(dir) => format!("partial results written to {0} (`dbsweep run --resume {0}` continues the run)", dir.display()),
            None => "nothing was written".into(),
        };
        match self {
            StopCause::CtrlC => Error::Interrupted(format!("interrupted; {written}")),
            StopCause::Sigterm => Error::Terminated(format!("terminated by SIGTERM; {written}")),
            StopCause::Failure(why) => Error::runtime(format!("{why}; {written}")),
        }
    }
}

/// The shared stop request of one run.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    flag: Arc<AtomicBool>,
    cause: Arc<OnceLock<StopCause>>,
}

impl Cancel {
    /// Asks the run to stop; a later cause does not replace the first.
    pub fn stop(&self, cause: StopCause) {
        let _ = self.cause.set(cause);
        self.flag.store(true, Ordering::Relaxed);
    }

    pub fn is_stopped(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    pub fn cause(&self) -> Option<&StopCause> {
        self.cause.get()
    }

    /// The flag the client loop polls between ops.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    /// The reason to record, once stopped.
    pub fn reason(&self) -> String {
        self.cause().map_or_else(|| "interrupted".into(), StopCause::reason)
    }

    /// Resolves once the run is asked to stop (polled: the flag has no waker).
    pub async fn stopped(&self) {
        super::stopping::stopped(&self.flag).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_cause_wins_and_names_the_reason() {
        let cancel = Cancel::default();
        assert!(!cancel.is_stopped() && cancel.cause().is_none());
        cancel.stop(StopCause::Sigterm);
        cancel.stop(StopCause::CtrlC);
        assert!(cancel.flag().load(Ordering::Relaxed));
        assert_eq!(cancel.cause(), Some(&StopCause::Sigterm));
        assert_eq!(cancel.reason(), "terminated by SIGTERM");
        assert_eq!(StopCause::Failure("lease lost".into()).reason(), "lease lost");
        let err = StopCause::Sigterm.into_error(Some(Path::new("/out")));
        assert_eq!(
            (err.exit_code(), err.to_string().as_str()),
            (143, "terminated by SIGTERM; partial results written to /out (`dbsweep run --resume /out` continues the run)")
        );
        assert_eq!(StopCause::CtrlC.into_error(None).exit_code(), 130);
        assert_eq!(StopCause::Failure("x".into()).into_error(None).exit_code(), 1);
    }
}
