//! The `*_async` twins: each returns the coroutine of `conch._aio.call_async`,
//! which runs the blocking method on its own thread and cancels it when the
//! awaiting task is cancelled (a few lines of Python that asyncio users can
//! read, instead of a Rust async runtime).

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The coroutine `call_async(call, first, cancel, options)`.
pub fn coroutine<'py>(
    call: Bound<'py, PyAny>,
    first: Bound<'py, PyAny>,
    cancel: Option<Bound<'py, PyAny>>,
    options: Option<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = call.py();
    PyModule::import(py, "conch._aio")?.call_method1("call_async", (call, first, cancel, options))
}
