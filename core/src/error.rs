//! The one error type of the core. Bindings map its variants to their own
//! error shapes (C status codes, Python exceptions, JS errors), so each
//! variant is a category a host may want to branch on, and its text is the
//! message a human reads.

use std::io;

/// Errors returned by conch-core.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller passed something unusable (bad cwd, bad option, NUL in a command…).
    #[error("{0}")]
    InvalidArgument(String),
    /// An operating-system call failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// A process (bash, a PTY child) could not be started.
    #[error("{0}")]
    Spawn(String),
    /// The handle was closed; nothing more can run on it.
    #[error("{0} is closed")]
    Closed(&'static str),
    /// A lookup failed; the text is the user-visible message (e.g. artifact errors).
    #[error("{0}")]
    NotFound(String),
}

impl Error {
    /// Wraps an `io::Error` with what was being attempted.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
