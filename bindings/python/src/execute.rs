//! `conch.execute_shell` (one command in a fresh process),
//! `conch.execute_bash` (a command in a cached session) and the calls that
//! close cached sessions; `conch.Shell`, the session a host holds itself,
//! is in `shell.rs`.

use std::path::PathBuf;

use conch_core::shell::registry::{self, ExecuteBashOptions};
use conch_core::shell::{self, ExecuteOptions};
use conch_core::{CancelToken, defaults, input};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::cancel::{PyCancelToken, run_token};
use crate::convert::{Seconds, SnapshotArg, Whole, artifacts, callback, count, env_pairs, seconds};
use crate::errors::{guard, to_py};
use crate::exit_hook;
use crate::offload::offload;
use crate::open_shells;
use crate::option_signatures::execute_options;
use crate::result::{Class, to_python};
use crate::signature::{py_default, text_signature};

#[doc = text_signature!("execute_shell(command, *, ", execute_options!(), ", on_chunk=None, cancel=None)")]
/// Runs ``command`` once in a fresh ``<shell> -c`` process (default
/// ``bash``; ``sh``, ``zsh``... work too) and returns a
/// ``conch.BashResult``. Nothing carries over between calls; nothing the
/// command started outlives it. Options as for ``Shell`` and ``Shell.run``
/// (a ``sandbox`` is made for this run and removed after it): the core's
/// ``ExecuteOptions``, read as ``Shell`` reads its options.
#[pyfunction]
#[pyo3(signature = (command, *, on_chunk=None, cancel=None, artifacts_dir=None, sandbox=None, **options),
       text_signature = None)]
pub fn execute_shell(
    py: Python<'_>,
    command: Bound<'_, PyString>,
    on_chunk: Option<Bound<'_, PyAny>>,
    cancel: Option<PyRef<'_, PyCancelToken>>,
    artifacts_dir: Option<&Bound<'_, PyAny>>,
    sandbox: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    run_once(py, on_chunk, cancel, |token| {
        let opts = ExecuteOptions {
            cancel: Some(token),
            artifacts: artifacts(artifacts_dir)?,
            sandbox: crate::options::sandbox(sandbox)?,
            ..crate::options::read("execute_shell", options, &[("command", command.into_any())])?
        };
        Ok(move |sink: &mut dyn FnMut(&str)| shell::execute_shell(opts, sink))
    })
}

#[doc = text_signature!(
    "execute_bash(command, *, session_key=None, shell=None, prefix=None, snapshot=",
    py_default!(snapshot),
    ", engine=", py_default!(engine),
    ", session_env=None, mask=", py_default!(mask),
    ", cwd=None, env=None, timeout=None, on_chunk=None, ",
    "cancel=None, head=None, tail=None, artifacts_dir=None, sandbox=None)",
)]
/// Runs ``command`` in a cached persistent session: calls with the same
/// ``session_key``, ``shell``,
/// ``prefix``, ``snapshot``, ``engine`` and ``session_env`` share one bash, so state
/// carries over. Timeout and cancellation come back in the result
/// (``[Command timed out after N seconds]`` / ``[Command cancelled]`` first
/// in ``output``). Idle sessions are closed after a while and past a
/// maximum; ``conch.close_session(key)`` and ``conch.close_all_sessions()``
/// close them now. ``sandbox``: as for ``Shell`` (sessions with different
/// sandboxes are different sessions). ``mask``: as for ``Shell`` (sessions
/// with different masks are different sessions). Other options as for
/// ``Shell.run``.
#[pyfunction]
#[pyo3(signature = (command, *, session_key=None, shell=None, prefix=None, snapshot=SnapshotArg::default(),
                    engine=String::from(defaults::ENGINE), session_env=None, mask=None, cwd=None, env=None, timeout=None, on_chunk=None, cancel=None,
                    head=None, tail=None, artifacts_dir=None, sandbox=None),
           text_signature = None)]
#[allow(clippy::too_many_arguments)]
pub fn execute_bash(
    py: Python<'_>,
    command: String,
    session_key: Option<String>,
    shell: Option<PathBuf>,
    prefix: Option<String>,
    snapshot: SnapshotArg,
    engine: String,
    session_env: Option<&Bound<'_, PyAny>>,
    mask: Option<&Bound<'_, PyAny>>,
    cwd: Option<PathBuf>,
    env: Option<&Bound<'_, PyAny>>,
    timeout: Option<Seconds>,
    on_chunk: Option<Bound<'_, PyAny>>,
    cancel: Option<PyRef<'_, PyCancelToken>>,
    head: Option<Whole>,
    tail: Option<Whole>,
    artifacts_dir: Option<&Bound<'_, PyAny>>,
    sandbox: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    run_once(py, on_chunk, cancel, |token| {
        let opts = ExecuteBashOptions {
            session_key,
            shell,
            prefix,
            snapshot: snapshot.0,
            engine: input::parse_option("engine", &engine).map_err(to_py)?,
            session_env: env_pairs(session_env)?,
            mask: crate::options::mask(mask)?,
            cwd,
            env: env_pairs(env)?,
            timeout: seconds("timeout", timeout)?,
            cancel: Some(token),
            artifacts: artifacts(artifacts_dir)?,
            artifact: None,
            head_lines: count("head", head)?,
            tail_lines: count("tail", tail)?,
            yield_after: None,
        };
        let sandbox = crate::options::sandbox(sandbox)?;
        Ok(move |sink: &mut dyn FnMut(&str)| {
            registry::execute_bash_in(&command, opts, sandbox.as_ref(), sink)
        })
    })
}

/// What the one-shot calls share: `on_chunk` checked, a cancel token for
/// the run (linked to the caller's `cancel`), `prepare(token)` making the
/// run from the options, the run on a worker thread with its chunks fed
/// to `on_chunk` on this one, and its result as a `conch.BashResult`.
fn run_once<F>(
    py: Python<'_>,
    on_chunk: Option<Bound<'_, PyAny>>,
    cancel: Option<PyRef<'_, PyCancelToken>>,
    prepare: impl FnOnce(CancelToken) -> PyResult<F>,
) -> PyResult<Py<PyAny>>
where
    F: FnOnce(&mut dyn FnMut(&str)) -> conch_core::Result<conch_core::BashResult> + Send + 'static,
{
    guard(|| {
        let on_chunk = callback("on_chunk", on_chunk)?;
        let (token, _link) = run_token(cancel.as_deref());
        let run = prepare(token.clone())?;
        let result = offload(py, on_chunk.as_ref(), &token, run)?;
        to_python(py, Class::BashResult, &result.map_err(to_py)?)
    })
}

/// Closes the cached ``execute_bash`` sessions of ``session_key`` (killing
/// what they still run).
#[pyfunction]
pub fn close_session(py: Python<'_>, session_key: String) -> PyResult<()> {
    guard(|| {
        py.detach(move || registry::close(&session_key));
        Ok(())
    })
}

/// Closes every cached ``execute_bash`` session.
#[pyfunction]
pub fn close_all_sessions(py: Python<'_>) -> PyResult<()> {
    guard(|| {
        py.detach(registry::close_all);
        Ok(())
    })
}

/// Closes every open ``Shell`` and cached session; registered with
/// ``atexit`` so nothing a session started outlives the host.
#[pyfunction]
pub fn _shutdown(py: Python<'_>) -> PyResult<()> {
    guard(|| {
        py.detach(|| {
            exit_hook::shut_down();
            open_shells::close_all();
        });
        Ok(())
    })
}
