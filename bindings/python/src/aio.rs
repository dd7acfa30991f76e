//! The `*_async` twins: each returns the coroutine of `conch._aio.call_async`,
//! which runs the blocking method on its own thread and cancels it when the
//! awaiting task is cancelled (a few lines of Python that asyncio users can
//! read, instead of a Rust async runtime).
//!
//! The methods several classes share the same way are written once, as
//! macros that each make a `#[pymethods]` block of their own (PyO3's
//! `multiple-pymethods`): the context-manager protocol
//! ([`context_manager!`]), the twins that take their method's first
//! argument, `cancel` and the other options ([`coroutine_twins!`]), and
//! those of calls that take no cancel token ([`thread_twins!`]).

use pyo3::call::PyCallArgs;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// `conch._aio.<function>(*args)`: each coroutine below is what one of
/// its functions returns.
fn glue<'py>(
    py: Python<'py>,
    function: &str,
    args: impl PyCallArgs<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    PyModule::import(py, "conch._aio")?.call_method1(function, args)
}

/// The coroutine `call_async(call, first, cancel, options)`.
pub fn coroutine<'py>(
    call: Bound<'py, PyAny>,
    first: Bound<'py, PyAny>,
    cancel: Option<Bound<'py, PyAny>>,
    options: Option<Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    glue(call.py(), "call_async", (call, first, cancel, options))
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
    glue(call.py(), "call_in_thread", (call, args, options, undo))
}

/// The coroutine `aenter(obj)`, which returns `obj` (`__aenter__`).
pub fn enter<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    glue(obj.py(), "aenter", (obj,))
}

/// The coroutine `aexit(obj.__exit__, *exc)`, which runs the blocking
/// `__exit__(*exc)` of `obj` on a thread of its own (`__aexit__`).
pub fn exit<'py>(
    obj: &Bound<'py, PyAny>,
    exc: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let exit = obj.getattr("__exit__")?;
    let args: Vec<Bound<'py, PyAny>> = std::iter::once(exit).chain(exc.iter()).collect();
    glue(py, "aexit", PyTuple::new(py, args)?)
}

/// The bound method `name` of `slf`, which a twin calls on a thread.
pub fn method<'py, T>(slf: &Bound<'py, T>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    slf.as_any().getattr(name)
}

/// `with` and `async with` on `$class`: `__enter__` and `__aenter__` give
/// the object itself; `__exit__` runs `$leave` (given the object and the
/// GIL token) and lets the exception propagate; `__aexit__` runs
/// `__exit__` on a thread of its own ([`exit`]), so the event loop runs on
/// meanwhile. The async methods take their docstrings from the caller.
macro_rules! context_manager {
    (
        $class:ty,
        exit: |$this:ident, $py:pat_param| $leave:expr,
        $(#[doc = $aenter:literal])+
        __aenter__,
        $(#[doc = $aexit:literal])+
        __aexit__,
    ) => {
        #[::pyo3::pymethods]
        impl $class {
            fn __enter__(slf: ::pyo3::Py<Self>) -> ::pyo3::Py<Self> {
                slf
            }

            #[pyo3(signature = (*_exc))]
            fn __exit__(
                &self,
                py: ::pyo3::Python<'_>,
                _exc: &::pyo3::Bound<'_, ::pyo3::types::PyTuple>,
            ) -> ::pyo3::PyResult<bool> {
                let ($this, $py) = (self, py);
                $leave?;
                Ok(false)
            }

            $(#[doc = $aenter])+
            fn __aenter__<'py>(
                slf: &::pyo3::Bound<'py, Self>,
            ) -> ::pyo3::PyResult<::pyo3::Bound<'py, ::pyo3::PyAny>> {
                $crate::errors::guard(|| $crate::aio::enter(slf.as_any()))
            }

            $(#[doc = $aexit])+
            #[pyo3(signature = (*exc))]
            fn __aexit__<'py>(
                slf: &::pyo3::Bound<'py, Self>,
                exc: &::pyo3::Bound<'py, ::pyo3::types::PyTuple>,
            ) -> ::pyo3::PyResult<::pyo3::Bound<'py, ::pyo3::PyAny>> {
                $crate::errors::guard(|| $crate::aio::exit(slf.as_any(), exc))
            }
        }
    };
}
pub(crate) use context_manager;

/// `*_async` twins of `$class`'s blocking methods, each `$twin(first, *,
/// cancel=None, **options)` returning [`coroutine`] of `$method` with the
/// same arguments. The docstrings come from the caller.
macro_rules! coroutine_twins {
    (
        $class:ty;
        $(
            $(#[doc = $doc:literal])+
            fn $twin:ident($first:ident) awaits $method:ident;
        )+
    ) => {
        #[::pyo3::pymethods]
        impl $class {
            $(
                $(#[doc = $doc])+
                #[pyo3(signature = ($first, *, cancel=None, **options))]
                fn $twin<'py>(
                    slf: &::pyo3::Bound<'py, Self>,
                    $first: ::pyo3::Bound<'py, ::pyo3::PyAny>,
                    cancel: Option<::pyo3::Bound<'py, ::pyo3::PyAny>>,
                    options: Option<::pyo3::Bound<'py, ::pyo3::types::PyDict>>,
                ) -> ::pyo3::PyResult<::pyo3::Bound<'py, ::pyo3::PyAny>> {
                    $crate::errors::guard(|| {
                        let call = $crate::aio::method(slf, stringify!($method))?;
                        $crate::aio::coroutine(call, $first, cancel, options)
                    })
                }
            )+
        }
    };
}
pub(crate) use coroutine_twins;

/// `*_async` twins of `$class`'s blocking methods that take no cancel
/// token, each `$twin(*args, **options)` returning [`in_thread`] of
/// `$method` with the same arguments (a cancelled task waits for the call
/// to return). The docstrings come from the caller.
macro_rules! thread_twins {
    (
        $class:ty;
        $(
            $(#[doc = $doc:literal])+
            fn $twin:ident awaits $method:ident;
        )+
    ) => {
        #[::pyo3::pymethods]
        impl $class {
            $(
                $(#[doc = $doc])+
                #[pyo3(signature = (*args, **options))]
                fn $twin<'py>(
                    slf: &::pyo3::Bound<'py, Self>,
                    args: ::pyo3::Bound<'py, ::pyo3::types::PyTuple>,
                    options: Option<::pyo3::Bound<'py, ::pyo3::types::PyDict>>,
                ) -> ::pyo3::PyResult<::pyo3::Bound<'py, ::pyo3::PyAny>> {
                    $crate::errors::guard(|| {
                        let call = $crate::aio::method(slf, stringify!($method))?;
                        $crate::aio::in_thread(call, args, options, None)
                    })
                }
            )+
        }
    };
}
pub(crate) use thread_twins;
