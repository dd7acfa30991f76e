//! The method that runs one command and returns its result, written once
//! for `Shell.run`, `RemoteShell.run`, `PtySession.start` and
//! `RemotePty.start` ([`command_method!`]): each takes the command, then
//! `on_chunk`, `cancel` and the options by keyword; they differ only in how
//! their session starts the run and drives it.

use conch_core::CancelToken;
use pyo3::prelude::*;
use serde::Serialize;

use crate::cancel::{PyCancelToken, run_token};
use crate::convert::callback;
use crate::errors::guard;
use crate::result::{Class, to_python};

/// What every command method does around its run: `on_chunk` checked, a
/// cancel token for the run (a child of the caller's `cancel`, linked
/// while the run lasts), `run(on_chunk, token)`, and its result as
/// `conch.<class>`.
pub fn run_command<T: Serialize>(
    py: Python<'_>,
    class: Class,
    on_chunk: Option<Bound<'_, PyAny>>,
    cancel: Option<PyRef<'_, PyCancelToken>>,
    run: impl FnOnce(Option<&Bound<'_, PyAny>>, &CancelToken) -> PyResult<T>,
) -> PyResult<Py<PyAny>> {
    guard(|| {
        let on_chunk = callback("on_chunk", on_chunk)?;
        let (token, _link) = run_token(cancel.as_deref());
        let result = run(on_chunk.as_ref(), &token)?;
        to_python(py, class, &result)
    })
}

/// A `#[pymethods]` block of `$class` with the command method
/// `$name(command, *, on_chunk=None, cancel=None, **options)`, which
/// returns a `conch.$result`. Its docs and any other `#[pyo3(...)]`
/// options come from the caller, and so does its body: given the object,
/// the GIL token, the command, the options, the checked `on_chunk` and the
/// run's cancel token, it starts the run and drives it to its result
/// ([`run_command`] does the rest).
macro_rules! command_method {
    (
        $class:ty => $result:ident;
        $(#[$($attr:tt)*])*
        fn $name:ident
        |$this:ident, $py:ident, $command:ident, $options:ident, $on_chunk:ident, $token:ident|
        $body:block
    ) => {
        #[::pyo3::pymethods]
        impl $class {
            $(#[$($attr)*])*
            #[pyo3(signature = (command, *, on_chunk=None, cancel=None, **options))]
            fn $name(
                &self,
                py: ::pyo3::Python<'_>,
                command: ::pyo3::Bound<'_, ::pyo3::types::PyString>,
                on_chunk: Option<::pyo3::Bound<'_, ::pyo3::PyAny>>,
                cancel: Option<::pyo3::PyRef<'_, $crate::cancel::PyCancelToken>>,
                options: Option<&::pyo3::Bound<'_, ::pyo3::types::PyDict>>,
            ) -> ::pyo3::PyResult<::pyo3::Py<::pyo3::PyAny>> {
                $crate::command_method::run_command(
                    py,
                    $crate::result::Class::$result,
                    on_chunk,
                    cancel,
                    |$on_chunk, $token| {
                        let ($this, $py, $command, $options) = (self, py, command, options);
                        $body
                    },
                )
            }
        }
    };
}
pub(crate) use command_method;
