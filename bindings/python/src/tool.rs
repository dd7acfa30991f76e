//! `conch.BashTool` and `conch.ToolResult`: what a host calls when the
//! model calls `bash`.

use std::path::PathBuf;
use std::sync::Arc;

use conch_core::tool::{self, BashToolArgs, BashToolConfig, ToolContext, ToolUpdate};
use conch_core::{defaults, input};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::aio;
use crate::artifact::PyArtifactStore;
use crate::cancel::run_token;
use crate::command::rule_from_py;
use crate::convert::{self, Seconds, SnapshotArg, Whole, callback, env_pairs};
use crate::errors::{self, guard, invalid, to_py};
use crate::offload::offload;
use crate::pty::PyPtySession;
use crate::signature::{py_default, text_signature};

#[doc = text_signature!(
    "BashTool(cwd=", py_default!(tool_cwd),
    ", *, artifacts_dir=None, tool_names=(), interceptor=", py_default!(interceptor),
    ", virtual_terminal=", py_default!(virtual_terminal),
    ", has_ui=", py_default!(has_ui),
    ", session_key=None, rules=None, shell=None, prefix=None, snapshot=", py_default!(snapshot),
    ", engine=", py_default!(engine),
    ", env=None, mask=", py_default!(mask),
    ", update_interval=", py_default!(update_interval_secs),
    ", auto_background_after=None, name=None, job_tool_name=None, sandbox=None)",
)]
/// The model's ``bash`` tool: normalizes the command (``| head -n N``
/// becomes a limit of the whole output), checks the interceptor, resolves
/// the working directory, clamps the timeout, runs the command in a cached
/// persistent shell (or on a PTY with ``virtual_terminal`` and ``has_ui``)
/// and turns the outcome into the text the model reads.
///
/// ``cwd``: the project directory (relative ``cwd`` arguments resolve
/// against it). ``artifacts_dir``: where truncated outputs are spilled, so
/// the text can point to ``artifact://<id>``. ``tool_names``: the host's
/// tools; an interceptor rule applies only when its tool is among them.
/// ``interceptor``: refuse commands the host has a dedicated tool for
/// (``rules``: custom rules as for ``check_bash_interception``; an invalid
/// rule raises here). ``virtual_terminal`` + ``has_ui``: run on a PTY (see
/// ``pty``). ``session_key``: a persistent shell of this tool's own.
/// ``shell``, ``prefix``, ``snapshot``, ``env``, ``mask``: as for ``Shell``.
/// ``update_interval``: least seconds between two ``on_update`` calls.
/// ``auto_background_after``: seconds after which a command still running
/// goes on as a background job (read with ``conch.JobTool``) and the call
/// returns its output so far. ``name``, ``job_tool_name``: what the model
/// calls this tool and its job tool (default ``bash``, ``job``), as the
/// definitions and texts name them. ``sandbox``: the sandbox commands run
/// in, as ``Shell`` takes it, with the project directory writable; checked
/// here (``SandboxUnavailableError``), and stated in the tool's description.
#[pyclass(frozen, module = "conch", name = "BashTool")]
pub struct PyBashTool {
    pub(crate) inner: Arc<tool::BashTool>,
    has_ui: bool,
}

#[pymethods]
impl PyBashTool {
    #[new]
    #[pyo3(
        signature = (cwd=PathBuf::from(defaults::TOOL_CWD), *, artifacts_dir=None, tool_names=Vec::new(),
                     interceptor=defaults::INTERCEPTOR, virtual_terminal=defaults::VIRTUAL_TERMINAL,
                     has_ui=defaults::HAS_UI, session_key=None, rules=None, shell=None, prefix=None,
                     snapshot=SnapshotArg::default(), engine=String::from(defaults::ENGINE), env=None, mask=None,
                     update_interval=Seconds(defaults::UPDATE_INTERVAL.as_secs_f64()),
                     auto_background_after=None, name=None, job_tool_name=None, sandbox=None),
        text_signature = None
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        cwd: PathBuf,
        artifacts_dir: Option<PathBuf>,
        tool_names: Vec<String>,
        interceptor: bool,
        virtual_terminal: bool,
        has_ui: bool,
        session_key: Option<String>,
        rules: Option<Vec<Bound<'_, PyAny>>>,
        shell: Option<PathBuf>,
        prefix: Option<String>,
        snapshot: SnapshotArg,
        engine: String,
        env: Option<&Bound<'_, PyAny>>,
        mask: Option<&Bound<'_, PyAny>>,
        update_interval: Seconds,
        auto_background_after: Option<Seconds>,
        name: Option<String>,
        job_tool_name: Option<String>,
        sandbox: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        guard(|| {
            let rules = rules
                .map(|rules| rules.iter().map(rule_from_py).collect::<PyResult<Vec<_>>>())
                .transpose()?;
            let update_interval = convert::interval("update_interval", update_interval)?;
            let auto_background_after =
                convert::seconds("auto_background_after", auto_background_after)?;
            let base = BashToolConfig::new(cwd);
            let config = BashToolConfig {
                name: name.unwrap_or(base.name.clone()),
                job_tool_name: job_tool_name.unwrap_or(base.job_tool_name.clone()),
                artifacts_dir,
                tool_names,
                interceptor,
                rules,
                virtual_terminal,
                session_key,
                update_interval,
                shell,
                prefix,
                snapshot: snapshot.0,
                engine: input::parse_option("engine", &engine).map_err(to_py)?,
                session_env: env_pairs(env)?,
                mask: crate::options::mask(mask)?,
                auto_background_after,
                sandbox: crate::options::sandbox(sandbox)?,
                ..base
            };
            let inner = tool::BashTool::new(config).map_err(to_py)?;
            Ok(PyBashTool {
                inner: Arc::new(inner),
                has_ui,
            })
        })
    }

    /// ``execute`` as a coroutine (same arguments). Cancelling the awaiting
    /// task stops the command; ``on_update`` is called on a worker thread.
    #[pyo3(signature = (args, on_update=None, cancel=None))]
    fn execute_async<'py>(
        slf: &Bound<'py, Self>,
        args: Bound<'py, PyAny>,
        on_update: Option<Bound<'py, PyAny>>,
        cancel: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let options = PyDict::new(slf.py());
            options.set_item("on_update", on_update)?;
            aio::coroutine(slf.getattr("execute")?, args, cancel, Some(options))
        })
    }

    /// The tool's definition for the model, ``{"name", "description",
    /// "input_schema"}`` (a JSON Schema of exactly what ``execute``
    /// accepts), to register with an LLM API as it is.
    fn definition<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(|| crate::result::plain(py, &self.inner.definition()))
    }

    /// The store outputs are spilled to (``None`` without
    /// ``artifacts_dir``), to read ``artifact://<id>`` back.
    #[getter]
    fn artifacts(&self) -> PyResult<Option<PyArtifactStore>> {
        guard(|| Ok(self.inner.artifacts().cloned().map(PyArtifactStore::shared)))
    }

    /// The terminal of PTY runs, for a UI: ``screen_text()``, ``write_key``,
    /// ``resize``, ``kill`` while a command runs (a kill there fails the
    /// call with ``[Command cancelled]``, it is not the caller's abort).
    #[getter]
    fn pty(&self) -> PyResult<PyPtySession> {
        guard(|| Ok(PyPtySession::shared(self.inner.pty().clone())))
    }

    /// Closes the tool for good: later calls of it and of its job tools
    /// raise ``conch.ClosedError``. With a ``session_key``, its shell is
    /// closed too (what it runs is killed); a shared shell lives on for
    /// other tools (``conch.close_all_sessions()``). Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            let tool = self.inner.clone();
            py.detach(move || tool.close());
            Ok(())
        })
    }

    fn __repr__(&self) -> PyResult<String> {
        guard(|| {
            Ok(format!(
                "<conch.BashTool cwd={:?}>",
                self.inner.config().cwd
            ))
        })
    }
}

execute_method! {
    PyBashTool;
    /// Runs one call with the model's arguments ``{"command": str, "cwd"?:
    /// str, "timeout"?: seconds, "head"?: int, "tail"?: int, "async"?:
    /// bool}`` (other keys are ignored) and returns a ``conch.ToolResult``.
    /// With ``async`` the command starts as a background job and the call
    /// returns at once (``Started job N: …``).
    ///
    /// Raises ``conch.BlockedError`` (the interceptor refused; nothing
    /// ran), ``conch.ToolError`` (bad cwd, non-zero exit, timeout...: its
    /// text is still what the model reads) or ``conch.ToolAbortError``
    /// (``cancel`` was cancelled); ``conch.ClosedError`` once the tool is
    /// closed (``bash tool is closed``). ``on_update(text)`` receives the tail of
    /// the output while the command runs, at most once per
    /// ``update_interval``, on this thread. Blocks with the GIL released.
    fn execute |this, py, args, cancel, on_update| {
        let args = tool_args(args)?;
        let on_update = callback("on_update", on_update)?;
        let (token, _link) = run_token(cancel.as_deref());
        let tool = this.inner.clone();
        let has_ui = this.has_ui;
        let want_updates = on_update.is_some();
        let run_cancel = token.clone();
        let outcome = offload(py, on_update.as_ref(), &token, move |sink| {
            let mut forward = |update: ToolUpdate| sink(&update.text);
            let on_update: Option<&mut dyn FnMut(ToolUpdate)> = if want_updates {
                Some(&mut forward)
            } else {
                None
            };
            tool.execute(
                args,
                ToolContext {
                    on_update,
                    cancel: Some(run_cancel),
                    has_ui,
                },
            )
        })?;
        tool_result(py, outcome)
    }
}

aio::context_manager! {
    PyBashTool,
    exit: |tool, py| tool.close(py),
    /// ``async with``: the tool itself.
    __aenter__,
    /// ``async with`` exit: ``close()`` on a thread of its own.
    __aexit__,
}

/// What a successful call hands back: ``text`` for the model, ``details``
/// the structured metadata (``{"meta": {"truncation": {...}}}`` when the
/// output was truncated, else ``None``).
#[pyclass(frozen, get_all, module = "conch", name = "ToolResult")]
pub struct PyToolResult {
    pub text: String,
    pub details: Option<Py<PyAny>>,
}

impl PyToolResult {
    pub(crate) fn new(py: Python<'_>, result: tool::ToolResult) -> PyResult<Self> {
        Ok(PyToolResult {
            text: result.text,
            details: details_to_py(py, result.details.as_ref())?,
        })
    }
}

#[pymethods]
impl PyToolResult {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            let details = match &self.details {
                Some(d) => d.bind(py).repr()?.to_string(),
                None => "None".into(),
            };
            Ok(format!(
                "ToolResult(text={}, details={details})",
                PyString::new(py, &self.text).repr()?
            ))
        })
    }
}

/// The tool call `execute(args, on_update=None, cancel=None)` of `$class`
/// (a bash tool's; without `on_update`, a job tool's
/// `execute(args, cancel=None)`), which returns a `conch.ToolResult`. Its
/// docs come from the caller, and so does its body, given the object, the
/// GIL token and the arguments, named as the caller names them: `args`,
/// `cancel`, then the bash tool's `on_update` (last: `macro_rules!` cannot
/// tell an optional name before `cancel` from `cancel`).
macro_rules! execute_method {
    (
        $class:ty;
        $(#[doc = $doc:literal])+
        fn execute
        |$this:ident, $py:ident, $args:ident, $cancel:ident $(, $on_update:ident)?|
        $body:block
    ) => {
        #[::pyo3::pymethods]
        impl $class {
            $(#[doc = $doc])+
            #[pyo3(signature = ($args, $($on_update=None,)? $cancel=None))]
            fn execute(
                &self,
                py: ::pyo3::Python<'_>,
                $args: &::pyo3::Bound<'_, ::pyo3::PyAny>,
                $($on_update: Option<::pyo3::Bound<'_, ::pyo3::PyAny>>,)?
                $cancel: Option<::pyo3::PyRef<'_, $crate::cancel::PyCancelToken>>,
            ) -> ::pyo3::PyResult<$crate::tool::PyToolResult> {
                let ($this, $py) = (self, py);
                $crate::errors::guard(|| $body)
            }
        }
    };
}
pub(crate) use execute_method;

/// A local tool call's outcome: its `conch.ToolResult`, or its error
/// ([`tool_error`]).
pub(crate) fn tool_result(
    py: Python<'_>,
    outcome: Result<tool::ToolResult, tool::ToolError>,
) -> PyResult<PyToolResult> {
    match outcome {
        Ok(result) => PyToolResult::new(py, result),
        Err(error) => Err(tool_error(py, error)),
    }
}

pub(crate) fn details_to_py(
    py: Python<'_>,
    details: Option<&tool::Details>,
) -> PyResult<Option<Py<PyAny>>> {
    details
        .map(|d| crate::result::plain(py, d).map(Bound::unbind))
        .transpose()
}

/// The core's tool error as `conch.BlockedError`, `conch.ToolError` or
/// `conch.ToolAbortError` (with `suggested_tool` / `details`); a closed
/// tool is `conch.ClosedError`, as any closed handle.
pub(crate) fn tool_error(py: Python<'_>, error: tool::ToolError) -> PyErr {
    let details = match details_to_py(py, error.details()) {
        Ok(d) => d,
        Err(e) => return e,
    };
    match error {
        tool::ToolError::Blocked {
            message,
            suggested_tool,
        } => errors::BlockedError::new_err((message, suggested_tool)),
        tool::ToolError::Failed { message, .. } => errors::ToolError::new_err((message, details)),
        tool::ToolError::Aborted { message, .. } => {
            errors::ToolAbortError::new_err((message, details))
        }
        tool::ToolError::Closed { message } => errors::ClosedError::new_err(message),
    }
}

/// The model's arguments from a mapping.
pub(crate) fn tool_args(args: &Bound<'_, PyAny>) -> PyResult<BashToolArgs> {
    let get = |key: &str| -> Option<Bound<'_, PyAny>> {
        args.get_item(key).ok().filter(|v| !v.is_none())
    };
    let command: String = get("command")
        .ok_or_else(|| invalid("args needs a \"command\""))?
        .extract()
        .map_err(|_| invalid("args[\"command\"] must be a str"))?;
    let cwd: Option<String> = get("cwd")
        .map(|v| v.extract())
        .transpose()
        .map_err(|_| invalid("args[\"cwd\"] must be a str"))?;
    let timeout: Option<Seconds> = get("timeout")
        .map(|v| v.extract())
        .transpose()
        .map_err(|_| invalid("args[\"timeout\"] must be a number of seconds"))?;
    let count = |key: &str| -> PyResult<Option<usize>> {
        let name = format!("args[{key:?}]");
        let n: Option<Whole> = get(key)
            .map(|v| v.extract())
            .transpose()
            .map_err(|_| invalid(format!("{name} must be an int >= 0")))?;
        convert::count(&name, n)
    };
    let run_async: Option<bool> = get("async")
        .map(|v| v.extract())
        .transpose()
        .map_err(|_| invalid("args[\"async\"] must be a bool"))?;
    Ok(BashToolArgs {
        command,
        cwd,
        timeout: timeout.map(|t| t.0),
        head: count("head")?,
        tail: count("tail")?,
        run_async: run_async.unwrap_or(false),
    })
}
