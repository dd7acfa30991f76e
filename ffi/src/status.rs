//! Status codes, and the one error type every entry point fails with.
//!
//! Each core error variant maps to one code, so a C host branches on the
//! same categories a Python or Node host sees as exception classes.

use conch_core::Error;
use conch_core::tool::ToolError;
use conch_remote::RemoteError;
use conch_remote::protocol::ErrorKind;

/// What an entry point returned: `CONCH_OK` (0) or a negative error code.
///
/// Functions return it as a plain `int`. The message of the last failure on
/// the calling thread is in `conch_last_error()`. Values never change
/// meaning; new codes are only appended.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum conch_status {
    /// Success.
    CONCH_OK = 0,
    /// A required pointer was NULL, a string was not valid UTF-8, or a value
    /// was unusable (bad cwd, bad env entry, bad JSON, bad regex…).
    CONCH_ERR_INVALID_ARG = -1,
    /// An operating-system call failed (reading a file, creating a pipe…).
    CONCH_ERR_IO = -2,
    /// A process (bash, a PTY child) could not be started.
    CONCH_ERR_SPAWN = -3,
    /// The handle was closed; nothing more can run on it.
    CONCH_ERR_CLOSED = -4,
    /// An internal error in conch (a panic: a bug); the message says where.
    CONCH_ERR_PANIC = -5,
    /// A lookup failed (an artifact id, an artifacts directory).
    CONCH_ERR_NOT_FOUND = -6,
    /// The bash tool's interceptor refused the command (nothing ran); the
    /// result names the tool to use instead.
    CONCH_ERR_BLOCKED = -7,
    /// The bash tool's command failed: it could not run, exited non-zero,
    /// had no exit status, timed out or was cancelled by someone else.
    CONCH_ERR_TOOL = -8,
    /// The bash tool's call was aborted by its cancel token.
    CONCH_ERR_ABORTED = -9,
    /// A job could not be started: the shell runs `max_jobs` jobs already
    /// (nothing was started).
    CONCH_ERR_TOO_MANY_JOBS = -10,
    /// Input for a job that takes none (it ended, its input was closed, it
    /// was started without one, or a key for a job without a terminal).
    CONCH_ERR_NO_INPUT = -11,
    /// The sandbox asked for cannot be enforced on this machine (the
    /// message names the missing kernel feature); nothing was started.
    CONCH_ERR_SANDBOX_UNAVAILABLE = -12,
    /// A `conch serve` refused the token (or asked for one that was not
    /// given).
    CONCH_ERR_AUTH = -13,
    /// The server of a remote shell cannot be reached, or was lost and did
    /// not come back in time: nothing more can be asked of the connection.
    CONCH_ERR_CONNECTION_LOST = -14,
    /// The remote shell's session is gone on its server (closed, or its
    /// grace period ran out).
    CONCH_ERR_SESSION_LOST = -15,
    /// The server holds as many sessions as it may (`--max-sessions`).
    CONCH_ERR_TOO_MANY_SESSIONS = -16,
}

/// Why an entry point failed: the code it returns and the text
/// `conch_last_error()` gives.
#[derive(Debug)]
pub struct FfiError {
    pub status: conch_status,
    pub message: String,
    /// The caller misused the function (NULL, bad UTF-8…): the message is
    /// prefixed with the function's name. Core messages are passed through
    /// verbatim, since hosts show them (artifact errors, cwd errors).
    pub misuse: bool,
}

impl FfiError {
    /// The caller passed something unusable; `message` names the argument.
    pub fn arg(message: impl Into<String>) -> Self {
        FfiError {
            status: conch_status::CONCH_ERR_INVALID_ARG,
            message: message.into(),
            misuse: true,
        }
    }

    /// Something that cannot happen did (a bug in conch).
    pub fn internal(message: impl Into<String>) -> Self {
        FfiError {
            status: conch_status::CONCH_ERR_PANIC,
            message: message.into(),
            misuse: false,
        }
    }
}

impl From<Error> for FfiError {
    fn from(error: Error) -> Self {
        let status = match &error {
            Error::InvalidArgument(_) => conch_status::CONCH_ERR_INVALID_ARG,
            Error::Io { .. } => conch_status::CONCH_ERR_IO,
            Error::Spawn(_) => conch_status::CONCH_ERR_SPAWN,
            Error::Closed(_) => conch_status::CONCH_ERR_CLOSED,
            Error::NotFound(_) => conch_status::CONCH_ERR_NOT_FOUND,
            Error::TooManyJobs(_) => conch_status::CONCH_ERR_TOO_MANY_JOBS,
            Error::NoInput(_) => conch_status::CONCH_ERR_NO_INPUT,
            Error::SandboxUnavailable(_) => conch_status::CONCH_ERR_SANDBOX_UNAVAILABLE,
        };
        FfiError {
            status,
            message: error.to_string(),
            misuse: false,
        }
    }
}

impl From<RemoteError> for FfiError {
    fn from(error: RemoteError) -> Self {
        let status = match error {
            // The core's own error, as a local call would have failed.
            RemoteError::Core(core) => return core.into(),
            // A tool's outcome, as the local tool's calls return it.
            RemoteError::Tool(ref tool) => match tool {
                ToolError::Blocked { .. } => conch_status::CONCH_ERR_BLOCKED,
                ToolError::Failed { .. } => conch_status::CONCH_ERR_TOOL,
                ToolError::Aborted { .. } => conch_status::CONCH_ERR_ABORTED,
                ToolError::Closed { .. } => conch_status::CONCH_ERR_CLOSED,
            },
            RemoteError::Auth(_) => conch_status::CONCH_ERR_AUTH,
            RemoteError::ConnectionLost(_) => conch_status::CONCH_ERR_CONNECTION_LOST,
            RemoteError::SessionLost(_) => conch_status::CONCH_ERR_SESSION_LOST,
            RemoteError::Refused {
                kind: ErrorKind::TooManySessions,
                ..
            } => conch_status::CONCH_ERR_TOO_MANY_SESSIONS,
            // A value or request the server refused: the caller's.
            RemoteError::Refused { .. } => conch_status::CONCH_ERR_INVALID_ARG,
        };
        FfiError {
            status,
            message: error.to_string(),
            misuse: false,
        }
    }
}

/// Result of an entry point's body.
pub type FfiResult<T> = Result<T, FfiError>;
