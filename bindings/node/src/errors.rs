//! Core errors as JS errors.
//!
//! Every error conch throws or rejects with is a plain `Error` whose `code`
//! names the core's category (`InvalidArgument`, `Io`, `Spawn`, `Closed`,
//! `NotFound`, `TooManyJobs`, `NoInput`, `SandboxUnavailable`), the way Node's own errors carry
//! `ENOENT`: hosts branch on `err.code`, humans read `err.message`.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use napi::bindgen_prelude::{Env, JsError};
use napi::{Error, Status};

/// The `code` of an error thrown by conch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidArgument,
    Io,
    Spawn,
    Closed,
    NotFound,
    /// `Shell.start` refused: the session already runs its `maxJobs` jobs.
    TooManyJobs,
    /// Input (`write`, `closeStdin`, `writeKey`) for a job that takes none:
    /// it ended, its input was closed, or it has no stdin pipe / terminal.
    NoInput,
    /// The sandbox asked for cannot be enforced on this machine; the
    /// message names the missing kernel feature.
    SandboxUnavailable,
    /// `connect`: the server refused the token, or asked for one.
    Auth,
    /// `connect`: the server is out of reach, or was lost and did not come
    /// back in time.
    ConnectionLost,
    /// A remote session is gone on the server (closed, or its client was
    /// away past the grace period).
    SessionLost,
    /// The server holds as many sessions as it may.
    TooManySessions,
    /// A failure of napi itself (e.g. the environment is shutting down).
    Internal,
    /// The error is already thrown as a JS exception (a `TypeError`, which
    /// an `Error<Code>` cannot be): napi keeps the pending one.
    Thrown,
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Code::InvalidArgument => "InvalidArgument",
            Code::Io => "Io",
            Code::Spawn => "Spawn",
            Code::Closed => "Closed",
            Code::NotFound => "NotFound",
            Code::TooManyJobs => "TooManyJobs",
            Code::NoInput => "NoInput",
            Code::SandboxUnavailable => "SandboxUnavailable",
            Code::Auth => "Auth",
            Code::ConnectionLost => "ConnectionLost",
            Code::SessionLost => "SessionLost",
            Code::TooManySessions => "TooManySessions",
            Code::Internal => "Internal",
            // The status napi leaves a pending exception alone for.
            Code::Thrown => "PendingException",
        }
    }
}

impl From<Status> for Code {
    fn from(status: Status) -> Self {
        match status {
            Status::InvalidArg | Status::ObjectExpected | Status::StringExpected => {
                Code::InvalidArgument
            }
            _ => Code::Internal,
        }
    }
}

/// The result type of every exported function that can throw.
pub type JsResult<T> = napi::Result<T, Code>;

/// Maps a core error to a JS error with the matching `code`.
pub fn core_error(err: conch_core::Error) -> Error<Code> {
    use conch_core::Error as E;
    let code = match &err {
        E::InvalidArgument(_) => Code::InvalidArgument,
        E::Io { .. } => Code::Io,
        E::Spawn(_) => Code::Spawn,
        E::Closed(_) => Code::Closed,
        E::NotFound(_) => Code::NotFound,
        E::TooManyJobs(_) => Code::TooManyJobs,
        E::NoInput(_) => Code::NoInput,
        E::SandboxUnavailable(_) => Code::SandboxUnavailable,
    };
    Error::new(code, err.to_string())
}

/// A JS error with a conch `code` for bad input found by the binding itself.
pub fn invalid(message: impl Into<String>) -> Error<Code> {
    Error::new(Code::InvalidArgument, message.into())
}

/// The error for options the core refused: a value of the wrong type is
/// thrown as a `TypeError` with napi's `code: 'InvalidArg'`, as for any
/// argument of the wrong type; a value the core's check refused is an
/// `InvalidArgument` error.
pub fn refused(env: &Env, err: conch_core::wire::Refused) -> Error<Code> {
    if !err.wrong_type {
        return invalid(err.message);
    }
    match env.throw_type_error(&err.message, Some("InvalidArg")) {
        Ok(()) => Error::new(Code::Thrown, err.message),
        Err(failed) => from_napi(failed),
    }
}

/// Re-labels a napi error (wrong argument type, failed napi call) with a conch code.
pub fn from_napi(err: Error) -> Error<Code> {
    Error::new(Code::from(err.status), err.reason)
}

/// Builds the JS error object for `err` on the JS thread, as an error that a
/// promise rejects with verbatim (napi's own rejection path only knows its
/// `Status` codes).
pub fn rejection(env: &Env, err: Error<Code>) -> Error {
    let value = JsError::from(err).into_unknown(*env);
    Error::from_unknown_without_coercion(value)
}

/// Runs `f`, turning a panic into an `Internal` error. A panic must never
/// unwind into napi's C frames or end a pooled thread silently: the first
/// aborts the host process, the second leaves a promise pending forever.
/// Used for the work of pooled threads and for the closures napi calls on
/// the JS thread (threadsafe functions, deferred settlements), which
/// `#[napi(catch_unwind)]` does not cover.
pub fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, Error<Code>> {
    catch_unwind(AssertUnwindSafe(f)).map_err(panicked)
}

/// The error a caught panic becomes: its message, when it has one.
pub fn panicked(payload: Box<dyn Any + Send>) -> Error<Code> {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned());
    // The payload may itself panic when dropped: leak it rather than risk
    // a second panic here.
    std::mem::forget(payload);
    Error::new(Code::Internal, format!("conch panicked: {what}"))
}
