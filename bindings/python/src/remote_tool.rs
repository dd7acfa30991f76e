//! `Remote.tool`: the model's `bash` and `job` tools hosted by a `conch
//! serve`, with `conch.BashTool`'s and `conch.JobTool`'s calls, results and
//! errors (`BlockedError`, `ToolError`, `ToolAbortError`, `ClosedError`),
//! so a host moves its tools to a container by changing one line.

use std::sync::Arc;

use conch_remote::{RemoteJobTool, RemoteTool, RemoteToolCall};
use pyo3::prelude::*;
use serde_json::Value;

use crate::aio;
use crate::cancel::{PyCancelToken, run_token};
use crate::convert::callback;
use crate::errors::{guard, invalid, remote_to_py};
use crate::offload::drive_here;
use crate::options::to_given;
use crate::remote_artifacts::PyRemoteArtifactStore;
use crate::tool::{PyToolResult, execute_method};

/// The model's arguments as the JSON the server reads, checked first as
/// the local tool checks them (`check`), so a mistake raises here what it
/// raises locally.
fn sent_args<T>(
    args: &Bound<'_, PyAny>,
    check: impl FnOnce(&Bound<'_, PyAny>) -> PyResult<T>,
) -> PyResult<Value> {
    check(args)?;
    to_given(args)?
        .to_json()
        .ok_or_else(|| invalid(format!("args must be a value JSON can carry, got {args}")))
}

/// Drives a call on this thread (its updates to `on_update`, the cancel
/// token and Ctrl-C abort it on the server); its `conch.ToolResult`.
fn drive(
    py: Python<'_>,
    start: impl FnOnce(conch_core::CancelToken) -> Result<RemoteToolCall, conch_remote::RemoteError>
    + Send,
    on_update: Option<Bound<'_, PyAny>>,
    cancel: Option<PyRef<'_, PyCancelToken>>,
) -> PyResult<PyToolResult> {
    let on_update = callback("on_update", on_update)?;
    let (token, _link) = run_token(cancel.as_deref());
    let run_cancel = token.clone();
    let mut call = py.detach(|| start(run_cancel)).map_err(remote_to_py)?;
    let outcome = drive_here(py, on_update.as_ref(), &token, |until, sink| {
        call.drive(Some(until), sink)
    })?;
    PyToolResult::new(py, outcome.map_err(remote_to_py)?)
}

/// The model's ``bash`` tool on a ``conch serve`` (from ``Remote.tool``),
/// with ``conch.BashTool``'s calls: ``execute`` (and ``execute_async``),
/// ``definition``, ``close``; ``job_tool()`` gives its ``job`` tool.
#[pyclass(frozen, module = "conch", name = "RemoteTool")]
pub struct PyRemoteTool {
    tool: Arc<RemoteTool>,
}

impl PyRemoteTool {
    pub(crate) fn new(tool: RemoteTool) -> Self {
        PyRemoteTool {
            tool: Arc::new(tool),
        }
    }
}

#[pymethods]
impl PyRemoteTool {
    /// The tool's definition for the model, as ``BashTool.definition``.
    fn definition<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let definition = py.detach(|| self.tool.definition()).map_err(remote_to_py)?;
            crate::result::plain(py, &definition)
        })
    }

    /// The tool's artifact store on the server (its ``artifacts_dir``):
    /// ``read`` and ``resolve`` as ``BashTool.artifacts``'.
    #[getter]
    fn artifacts(&self) -> PyRemoteArtifactStore {
        self.tool.artifacts().into()
    }

    /// The ``job`` tool of this tool's session (``conch.JobTool(tool)``
    /// locally).
    fn job_tool(&self) -> PyRemoteJobTool {
        PyRemoteJobTool {
            tool: Arc::new(self.tool.job_tool()),
        }
    }

    /// Closes the tool for good: its shell and jobs are killed on the
    /// server; later calls of it and of its job tools raise
    /// ``conch.ClosedError``. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| py.detach(|| self.tool.close()).map_err(remote_to_py))
    }
}

execute_method! {
    PyRemoteTool;
    /// Runs one call on the server, as ``BashTool.execute`` (the same
    /// arguments, ``on_update``, ``cancel``, result and errors).
    fn execute |this, py, args, cancel, on_update| {
        let args = sent_args(args, crate::tool::tool_args)?;
        let tool = this.tool.clone();
        let start = move |token| tool.start_execute(&args, Some(token));
        drive(py, start, on_update, cancel)
    }
}

aio::coroutine_twins! {
    PyRemoteTool;
    /// ``execute`` as a coroutine (same arguments). Cancelling the
    /// awaiting task aborts the call on the server.
    fn execute_async(args) awaits execute;
}

aio::context_manager! {
    PyRemoteTool,
    exit: |tool, py| tool.close(py),
    /// ``async with``: the tool itself.
    __aenter__,
    /// ``async with`` exit: ``close()`` on a thread of its own.
    __aexit__,
}

/// The model's ``job`` tool of a ``RemoteTool``'s session, with
/// ``conch.JobTool``'s calls.
#[pyclass(frozen, module = "conch", name = "RemoteJobTool")]
pub struct PyRemoteJobTool {
    tool: Arc<RemoteJobTool>,
}

#[pymethods]
impl PyRemoteJobTool {
    /// The tool's definition for the model, as ``JobTool.definition``.
    fn definition<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let definition = py.detach(|| self.tool.definition()).map_err(remote_to_py)?;
            crate::result::plain(py, &definition)
        })
    }
}

execute_method! {
    PyRemoteJobTool;
    /// Runs one call on the server, as ``JobTool.execute``; ``cancel``
    /// ends a wait early (never the job).
    fn execute |this, py, args, cancel| {
        let args = sent_args(args, crate::job_tool::job_args)?;
        let tool = this.tool.clone();
        let start = move |token| tool.start_execute(&args, Some(token));
        drive(py, start, None, cancel)
    }
}

aio::coroutine_twins! {
    PyRemoteJobTool;
    /// ``execute`` as a coroutine (same arguments); cancelling the
    /// awaiting task ends the wait.
    fn execute_async(args) awaits execute;
}
