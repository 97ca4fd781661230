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
            Error::Usage(_) | Error::Unreachable { .. } | Error::NotOwned { .. } | Error::InUse { .. } | Error::Missing(_) => 2,
            Error::Interrupted(_) => 130,
            Error::Terminated(_) => 143,
            Error::Runtime(_) => 1,
        }
    }
}

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
}
