//! The error type every fallible dbsweep step returns, and the exit code of each kind.
//!
//! Owns the exit-code scheme: 0 success, 1 runtime failure, 2 bad input (the message names
//! the fix), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM). Must not print anything;
//! `main` does.

use std::fmt::Display;

/// A failure that ends a dbsweep command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input the user can fix: unknown study, malformed URL, bad TOML, wrong flag value.
    #[error("{0}")]
    Usage(String),
    /// A target could not be reached or refused our login.
    #[error("target '{target}': {detail}")]
    Unreachable { target: String, detail: String },
    /// dbsweep would have to touch data it did not create; it refuses.
    #[error("target '{target}': {detail}")]
    NotOwned { target: String, detail: String },
    /// Another dbsweep run holds the lease on the namespace this run needs.
    #[error("target '{target}': {detail}")]
    InUse { target: String, detail: String },
    /// A required program or library is missing on this machine.
    #[error("{0}")]
    Missing(String),
    /// The run was interrupted (Ctrl-C); the message says what was written where.
    #[error("{0}")]
    Interrupted(String),
    /// The run was terminated (SIGTERM); the message says what was written where.
    #[error("{0}")]
    Terminated(String),
    /// Anything else that went wrong while running.
    #[error(transparent)]
    Runtime(#[from] anyhow::Error),
}

impl Error {
    pub fn usage(message: impl Display) -> Self {
        Error::Usage(message.to_string())
    }

    pub fn runtime(message: impl Display) -> Self {
        Error::Runtime(anyhow::anyhow!("{message}"))
    }

    pub fn unreachable(target: &str, detail: impl Display) -> Self {
        Error::Unreachable { target: target.to_string(), detail: detail.to_string() }
    }

    pub fn not_owned(target: &str, detail: impl Display) -> Self {
        Error::NotOwned { target: target.to_string(), detail: detail.to_string() }
    }

    pub fn in_use(target: &str, detail: impl Display) -> Self {
        Error::InUse { target: target.to_string(), detail: detail.to_string() }
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Unreachable { .. } | Error::NotOwned { .. } | Error::InUse { .. } | Error::Missing(_) => EXIT_USAGE,
            Error::Interrupted(_) => EXIT_INTERRUPTED,
            Error::Terminated(_) => EXIT_TERMINATED,
            Error::Runtime(_) => EXIT_FAILURE,
        }
    }
}

/// The command did what it was asked.
pub const EXIT_SUCCESS: i32 = 0;
/// Something went wrong while running.
pub const EXIT_FAILURE: i32 = 1;
/// Bad input the user can fix (the message names the fix).
pub const EXIT_USAGE: i32 = 2;
/// Interrupted: 128 + SIGINT.
pub const EXIT_INTERRUPTED: i32 = 130;
/// Terminated: 128 + SIGTERM.
pub const EXIT_TERMINATED: i32 = 143;

/// Every exit code dbsweep ends with and what it means, for the man pages' EXIT STATUS.
pub const EXIT_CODES: [(i32, &str); 5] = [
    (EXIT_SUCCESS, "Success; for run and merge: every point measured, none void and none answered wrongly."),
    (
        EXIT_FAILURE,
        "A failure while running: a run incomplete, void points (failed requests or missing rows) or wrong answers (results saved and flagged), a spawned server that died, a file that could not be written.",
    ),
    (
        EXIT_USAGE,
        "Bad input the user can fix, named in a one-line message: a bad flag, study, URL or TOML; a target unreachable or refusing the login; data dbsweep did not create; a namespace in use by another run; a missing program or library.",
    ),
    (EXIT_INTERRUPTED, "Interrupted by Ctrl-C (SIGINT): partial results saved and marked incomplete, spawned servers removed."),
    (EXIT_TERMINATED, "Terminated by SIGTERM: partial results saved and marked incomplete, spawned servers removed."),
];

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_exits_2_and_failures_1() {
        assert_eq!(Error::usage("x").exit_code(), 2);
        assert_eq!(Error::unreachable("pg", "refused").exit_code(), 2);
        assert_eq!(Error::runtime("boom").exit_code(), 1);
        assert_eq!(Error::Interrupted("d".into()).exit_code(), 130);
        assert_eq!(Error::Terminated("d".into()).exit_code(), 143);
        assert_eq!(Error::in_use("pg", "held").exit_code(), 2);
    }

    #[test]
    fn every_exit_code_is_listed_once_with_its_meaning() {
        let errors = [
            Error::usage("x"),
            Error::unreachable("pg", "refused"),
            Error::not_owned("pg", "theirs"),
            Error::in_use("pg", "held"),
            Error::Missing("lib".into()),
            Error::Interrupted("d".into()),
            Error::Terminated("d".into()),
            Error::runtime("boom"),
        ];
        let listed: Vec<i32> = EXIT_CODES.iter().map(|(code, _)| *code).collect();
        for e in &errors {
            assert!(listed.contains(&e.exit_code()), "{e:?} exits {} and is not listed", e.exit_code());
        }
        assert_eq!(listed, [0, 1, 2, 130, 143]);
        assert!(EXIT_CODES.iter().all(|(_, meaning)| meaning.len() > 20));
    }
}
