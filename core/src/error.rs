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
    /// A lookup failed; the text is the user-visible message (e.g. artifact
    /// errors, a job id the session does not have).
    #[error("{0}")]
    NotFound(String),
    /// A job could not be started: the session already runs as many as it
    /// allows (`ShellOptions::max_jobs`). Nothing was started.
    #[error(
        "{0} jobs are running in this session, the most it runs at once: wait for one to end or kill one"
    )]
    TooManyJobs(usize),
    /// Input for a job that takes none: it has ended, its input was
    /// closed, or it was started without one.
    #[error("{0}")]
    NoInput(String),
    /// The sandbox asked for cannot be enforced here: the kernel lacks a
    /// feature the policy needs (Landlock, a Landlock ABI, seccomp, a
    /// cgroup controller), or the host may not use it. Nothing was
    /// started. The text names the missing feature.
    #[error("the sandbox cannot be enforced: {0}")]
    SandboxUnavailable(String),
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

/// A value an option does not take: what the option must be, and what it
/// got. The parsers of option values (`FromStr` of [`crate::Snapshot`],
/// [`crate::process::env::Inherit`], the number checks of
/// [`crate::input`]) return it without the option's name, which
/// only the face knows; [`BadValue::named`] makes the error a face reports:
/// `<name> must be <expected>, got <got>`, the same text on every face.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be {expected}, got {got}")]
pub struct BadValue {
    pub expected: String,
    /// The value as the user wrote it (quoted when it is text).
    pub got: String,
}

impl BadValue {
    pub fn new(expected: impl Into<String>, got: impl std::fmt::Display) -> Self {
        BadValue {
            expected: expected.into(),
            got: got.to_string(),
        }
    }

    /// The error for the option a face calls `name`.
    pub fn named(self, name: &str) -> Error {
        Error::InvalidArgument(format!("{name} {self}"))
    }
}

/// Result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
