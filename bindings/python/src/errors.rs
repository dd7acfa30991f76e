//! Core errors as Python exceptions.
//!
//! The exception classes are plain Python classes (`conch/_errors.py`), so
//! they can inherit from both `conch.ConchError` and the builtin a Python
//! user expects (`ValueError` for bad input, `OSError` for system failures)
//! and carry attributes (`details`, `suggested_tool`) with normal
//! constructors. This file is the one place where a core error picks its class.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use conch_core::Error;
use pyo3::{PyErr, PyResult};

pyo3::import_exception!(conch._errors, InvalidArgumentError);
pyo3::import_exception!(conch._errors, IoError);
pyo3::import_exception!(conch._errors, SpawnError);
pyo3::import_exception!(conch._errors, ClosedError);
pyo3::import_exception!(conch._errors, NotFoundError);
pyo3::import_exception!(conch._errors, TooManyJobsError);
pyo3::import_exception!(conch._errors, NoInputError);
pyo3::import_exception!(conch._errors, SandboxUnavailableError);
pyo3::import_exception!(conch._errors, ToolError);
pyo3::import_exception!(conch._errors, BlockedError);
pyo3::import_exception!(conch._errors, ToolAbortError);
pyo3::import_exception!(conch._errors, InternalError);
pyo3::import_exception!(conch._errors, ConchError);
pyo3::import_exception!(conch._errors, AuthError);
pyo3::import_exception!(conch._errors, ConnectionLost);
pyo3::import_exception!(conch._errors, SessionLost);

/// The Python exception for a remote call's error: the core's as a local
/// call raises it, a refused value as `options::read` refuses it locally.
pub fn remote_to_py(err: conch_remote::RemoteError) -> PyErr {
    use conch_remote::RemoteError;
    use conch_remote::protocol::ErrorKind;
    match err {
        RemoteError::Core(err) => to_py(err),
        RemoteError::Tool(err) => pyo3::Python::attach(|py| crate::tool::tool_error(py, err)),
        RemoteError::Auth(m) => AuthError::new_err(m),
        RemoteError::ConnectionLost(m) => ConnectionLost::new_err(m),
        RemoteError::SessionLost(m) => SessionLost::new_err(m),
        RemoteError::Refused { kind, message } => match kind {
            ErrorKind::WrongType => pyo3::exceptions::PyTypeError::new_err(message),
            ErrorKind::BadValue => InvalidArgumentError::new_err(message),
            ErrorKind::TooManySessions => ConchError::new_err(message),
            ErrorKind::BadRequest | ErrorKind::UnknownSession => InternalError::new_err(message),
        },
    }
}

/// The Python exception for a core error.
pub fn to_py(err: Error) -> PyErr {
    match err {
        Error::InvalidArgument(message) => InvalidArgumentError::new_err(message),
        Error::Io { context, source } => io_error(&context, &source),
        Error::Spawn(message) => SpawnError::new_err(message),
        closed @ Error::Closed(_) => ClosedError::new_err(closed.to_string()),
        Error::NotFound(message) => NotFoundError::new_err(message),
        too_many @ Error::TooManyJobs(running) => {
            TooManyJobsError::new_err((too_many.to_string(), running))
        }
        Error::NoInput(message) => NoInputError::new_err(message),
        unavailable @ Error::SandboxUnavailable(_) => {
            SandboxUnavailableError::new_err(unavailable.to_string())
        }
    }
}

/// `conch.IoError(errno, "context: reason")`, so `.errno` is set as on any
/// `OSError` when the system gave one.
pub fn io_error(context: &str, source: &std::io::Error) -> PyErr {
    let message = format!("{context}: {source}");
    match source.raw_os_error() {
        Some(errno) => IoError::new_err((errno, message)),
        None => IoError::new_err(message),
    }
}

/// `conch.InvalidArgumentError(message)`.
pub fn invalid(message: impl Into<String>) -> PyErr {
    InvalidArgumentError::new_err(message.into())
}

/// Runs the body of an entry point (a function, constructor, method or
/// conversion Python calls) so that a panic in it, or in the core below,
/// is a `conch.InternalError` (an `Exception`). Left alone, PyO3 would
/// raise `pyo3_runtime.PanicException`, a `BaseException` that
/// `except Exception` does not catch and that takes many hosts down with it.
pub fn guard<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| Err(internal(&*panic)))
}

/// `conch.InternalError("conch panicked: <message>")` for a caught panic.
pub fn internal(panic: &(dyn Any + Send)) -> PyErr {
    InternalError::new_err(panic_message(panic))
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("conch panicked: {text}")
}

/// Panics on purpose, in the entry itself (`"call"`) or in the core call of
/// a blocking entry, on its pooled thread (`"pool"`): the only way a test
/// can see a panic reach Python, as nothing else in conch is meant to
/// panic. Not part of the API (`conch._conch._panic`).
#[pyo3::pyfunction]
pub fn _panic(py: pyo3::Python<'_>, place: &str) -> PyResult<()> {
    guard(|| match place {
        "call" => panic!("on purpose, in the call"),
        "pool" => crate::offload::offload(py, None, &conch_core::CancelToken::new(), |_| {
            panic!("on purpose, on a pooled thread")
        }),
        other => Err(invalid(format!(
            "place must be \"call\" or \"pool\", got {other:?}"
        ))),
    })
}
