//! `conch.JobTool`: what a host calls when the model calls `job`, on the
//! session of a `conch.BashTool`.

use std::sync::Arc;

use conch_core::tool::{self, JobToolArgs};
use pyo3::prelude::*;

use crate::aio;
use crate::cancel::run_token;
use crate::convert::Seconds;
use crate::errors::{guard, invalid};
use crate::offload::offload;
use crate::tool::{PyBashTool, execute_method, tool_result};

/// The model's ``job`` tool: reads, feeds and stops the background jobs
/// of ``bash_tool``'s session (started by ``bash`` with ``async``, or moved
/// there by ``auto_background_after``).
#[pyclass(frozen, module = "conch", name = "JobTool")]
pub struct PyJobTool {
    inner: Arc<tool::JobTool>,
}

#[pymethods]
impl PyJobTool {
    #[new]
    fn new(bash_tool: PyRef<'_, PyBashTool>) -> Self {
        PyJobTool {
            inner: Arc::new(tool::JobTool::new(&bash_tool.inner)),
        }
    }

    /// ``execute`` as a coroutine (same arguments); cancelling the awaiting
    /// task ends the wait.
    #[pyo3(signature = (args, cancel=None))]
    fn execute_async<'py>(
        slf: &Bound<'py, Self>,
        args: Bound<'py, PyAny>,
        cancel: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| aio::coroutine(slf.getattr("execute")?, args, cancel, None))
    }

    /// The tool's definition for the model, ``{"name", "description",
    /// "input_schema"}``, to register with an LLM API as it is.
    fn definition<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(|| crate::result::plain(py, &self.inner.definition()))
    }

    fn __repr__(&self) -> &'static str {
        "conch.JobTool()"
    }
}

execute_method! {
    PyJobTool;
    /// Runs one call with the model's arguments ``{"op": "poll" | "write" |
    /// "kill" | "list", "job"?: int, "input"?: str, "wait"?: seconds,
    /// "until"?: str}`` (other keys are ignored) and returns a
    /// ``conch.ToolResult``; a mistake raises ``conch.ToolError`` whose text
    /// is what the model reads, a closed bash tool ``conch.ClosedError``.
    /// ``cancel`` ends a wait early (never the
    /// job). Blocks with the GIL released.
    fn execute |this, py, args, cancel| {
        let args = job_args(args)?;
        let (token, _link) = run_token(cancel.as_deref());
        let tool = this.inner.clone();
        let wait_cancel = token.clone();
        let outcome = offload(py, None, &token, move |_| {
            tool.execute(args, Some(wait_cancel))
        })?;
        tool_result(py, outcome)
    }
}

/// The model's arguments from a mapping.
pub(crate) fn job_args(args: &Bound<'_, PyAny>) -> PyResult<JobToolArgs> {
    let get = |key: &str| -> Option<Bound<'_, PyAny>> {
        args.get_item(key).ok().filter(|v| !v.is_none())
    };
    let text = |key: &str| -> PyResult<Option<String>> {
        get(key)
            .map(|v| v.extract())
            .transpose()
            .map_err(|_| invalid(format!("args[{key:?}] must be a str")))
    };
    let op = text("op")?.ok_or_else(|| invalid("args needs an \"op\""))?;
    let job: Option<u32> = get("job")
        .map(|v| v.extract())
        .transpose()
        .map_err(|_| invalid("args[\"job\"] must be a job id (an int >= 0)"))?;
    let wait: Option<Seconds> = get("wait")
        .map(|v| v.extract())
        .transpose()
        .map_err(|_| invalid("args[\"wait\"] must be a number of seconds"))?;
    Ok(JobToolArgs {
        op,
        job,
        input: text("input")?,
        wait: wait.map(|w| w.0),
        until: text("until")?,
    })
}
