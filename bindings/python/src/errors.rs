//! Core errors as Python exceptions.
//!
//! The exception classes are plain Python classes (`conch/_errors.py`), so
//! they can inherit from both `conch.ConchError` and the builtin a Python
//! user expects (`ValueError` for bad input, `OSError` for system failures)
//! and carry attributes (`details`, `suggested_tool`) with normal
//! constructors. This file is the one place where a core error picks its class.

use conch_core::Error;
use pyo3::PyErr;

pyo3::import_exception!(conch._errors, InvalidArgumentError);
pyo3::import_exception!(conch._errors, IoError);
pyo3::import_exception!(conch._errors, SpawnError);
pyo3::import_exception!(conch._errors, ClosedError);
pyo3::import_exception!(conch._errors, NotFoundError);
pyo3::import_exception!(conch._errors, ToolError);
pyo3::import_exception!(conch._errors, BlockedError);
pyo3::import_exception!(conch._errors, ToolAbortError);

/// The Python exception for a core error.
pub fn to_py(err: Error) -> PyErr {
    match err {
        Error::InvalidArgument(message) => InvalidArgumentError::new_err(message),
        Error::Io { context, source } => io_error(&context, &source),
        Error::Spawn(message) => SpawnError::new_err(message),
        closed @ Error::Closed(_) => ClosedError::new_err(closed.to_string()),
        Error::NotFound(message) => NotFoundError::new_err(message),
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
