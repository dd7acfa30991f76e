//! The `*_async` twins: each returns the coroutine of `conch._aio.call_async`,
//! which runs the blocking method on its own thread and cancels it when the
//! awaiting task is cancelled (a few lines of Python that asyncio users can
//! read, instead of a Rust async runtime).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

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

/// The coroutine `call_in_thread(call, args, options, undo)`: the blocking
/// `call(*args, **options)`, which takes no cancel token, on its own
/// thread; a cancelled task waits for it, then calls `undo(result)` when
/// given (a job that was started is killed).
pub fn in_thread<'py>(
    call: Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
    options: Option<Bound<'py, PyDict>>,
    undo: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = call.py();
    PyModule::import(py, "conch._aio")?.call_method1("call_in_thread", (call, args, options, undo))
}

/// The coroutine `aenter(obj)`, which returns `obj` (`__aenter__`).
pub fn enter<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    PyModule::import(obj.py(), "conch._aio")?.call_method1("aenter", (obj,))
}

/// The coroutine `aexit(exit, *exc)`, which runs the blocking `exit(*exc)`
/// (a `__exit__`) on a thread of its own (`__aexit__`).
pub fn exit<'py>(
    exit: Bound<'py, PyAny>,
    exc: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = exit.py();
    let args: Vec<Bound<'py, PyAny>> = std::iter::once(exit).chain(exc.iter()).collect();
    let args = PyTuple::new(py, args)?;
    PyModule::import(py, "conch._aio")?
        .getattr("aexit")?
        .call1(args)
}
