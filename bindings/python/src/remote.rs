//! `conch.connect`: a `conch serve` elsewhere, through conch-remote's
//! client. A `RemoteShell` has the calls and results of a local `Shell`
//! (the same `BashResult`, errors, cancel tokens and asyncio twins): a host
//! moves a session to a container by changing the line that makes it.

use std::sync::Arc;

use conch_core::ShellOptions;
use conch_core::sync::Slot;
use conch_core::tool::BashToolConfig;
use conch_remote::{ConnectOptions, Remote, RemoteError, RemoteShell, Target};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::aio;
use crate::command_method::command_method;
use crate::convert::{callback, rules_read, snapshot_none};
use crate::errors::{guard, remote_to_py, to_py};
use crate::exit_hook;
use crate::offload::drive_here;
use crate::options;
use crate::remote_artifacts::PyRemoteArtifactStore;
use crate::remote_files::PyRemoteFiles;
use crate::remote_pty::PyRemotePty;
use crate::remote_tool::PyRemoteTool;
use crate::result::{Class, to_python};
use crate::shell::read_run_options;

/// A connection to ``conch serve`` (made by ``conch.connect``).
///
/// ``shell(**options)`` opens a session there with the options of
/// ``conch.Shell``; ``close()`` (or leaving a ``with`` block) ends the
/// connection, and the server closes its sessions (at once over stdio,
/// after its grace period over a WebSocket). A dropped WebSocket is
/// reconnected by itself and every session resumed where it stopped.
#[pyclass(frozen, module = "conch", name = "Remote")]
pub struct PyRemote {
    remote: Remote,
}

/// ``conch.connect(target, *, token=None, ca=None, reconnect_within=60)``:
/// a ``ws://`` or ``wss://`` URL, or the argv of a command whose stdin and
/// stdout speak the protocol (``["docker", "exec", "-i", "box", "conch",
/// "serve", "--stdio"]``). ``ca``: for ``wss://``, the CA certificates (a
/// PEM file) to trust for the server's certificate (default: the system's).
/// Raises ``AuthError`` for a refused token and ``ConnectionLost`` for a
/// server that cannot be reached (or whose certificate is not trusted).
#[pyfunction]
#[pyo3(signature = (target, *, token=None, ca=None, reconnect_within=None))]
pub fn connect(
    py: Python<'_>,
    target: &Bound<'_, PyAny>,
    token: Option<String>,
    ca: Option<std::path::PathBuf>,
    reconnect_within: Option<f64>,
) -> PyResult<PyRemote> {
    guard(|| {
        let target = if let Ok(url) = target.cast::<PyString>() {
            Target::Url(url.to_str()?.to_string())
        } else {
            Target::Command(target.extract::<Vec<String>>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(
                    "target must be a ws:// URL or a list of strings (a command)",
                )
            })?)
        };
        let mut opts = ConnectOptions {
            token,
            ca,
            ..ConnectOptions::default()
        };
        if let Some(secs) = reconnect_within {
            opts.reconnect_within = conch_core::input::interval_option(
                "reconnect_within",
                secs,
                conch_core::input::TimeUnit::Seconds,
            )
            .map_err(to_py)?;
        }
        let remote = py
            .detach(|| conch_remote::connect(target, opts))
            .map_err(remote_to_py)?;
        Ok(PyRemote { remote })
    })
}

#[pymethods]
impl PyRemote {
    /// Opens a session on the server with ``conch.Shell``'s options (read
    /// there: paths and defaults are the server's); returns a
    /// ``RemoteShell``. ``on_job_exit(info: conch.JobInfo)``: called once per
    /// job end, as for ``conch.Shell``, on the connection's thread.
    #[pyo3(signature = (*, on_job_exit=None, **options))]
    fn shell(
        &self,
        py: Python<'_>,
        on_job_exit: Option<Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyRemoteShell> {
        guard(|| {
            let hook = callback("on_job_exit", on_job_exit)?.map(exit_hook::hook);
            let options = snapshot_none(py, options)?;
            let sent = options::to_send::<ShellOptions>("shell", options.as_ref())?;
            let shell = py
                .detach(|| self.remote.shell(sent))
                .map_err(remote_to_py)?;
            let sandbox_applied = match shell.sandbox_applied() {
                serde_json::Value::Null => py.None(),
                applied => to_python(py, Class::SandboxApplied, applied)?,
            };
            let on_job_exit = hook.map(|(hook, slot)| {
                shell.on_job_exit(hook);
                slot
            });
            Ok(PyRemoteShell {
                shell: Slot::new(shell),
                sandbox_applied,
                on_job_exit,
            })
        })
    }

    /// The server's files (``conch.RemoteFiles``): inside its sandbox (its
    /// sandbox flags) when it has one; relative paths from its cwd.
    #[getter]
    fn files(&self) -> PyRemoteFiles {
        PyRemoteFiles::new(self.remote.files())
    }

    /// Opens a terminal on the server; returns a ``RemotePty``, with the
    /// calls of ``conch.PtySession``.
    fn pty(&self, py: Python<'_>) -> PyResult<PyRemotePty> {
        guard(|| {
            let pty = py.detach(|| self.remote.pty()).map_err(remote_to_py)?;
            Ok(PyRemotePty::new(pty))
        })
    }

    /// Opens a session on the server hosting the model's ``bash`` tool,
    /// with ``conch.BashTool``'s options (read there; ``has_ui`` is not
    /// taken: no PTY runs remotely yet); returns a ``RemoteTool``.
    #[pyo3(signature = (**options))]
    fn tool(&self, py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<PyRemoteTool> {
        guard(|| {
            let options = snapshot_none(py, options)?;
            let options = rules_read(py, options.as_ref())?;
            let sent = options::to_send::<BashToolConfig>("tool", options.as_ref())?;
            let tool = py.detach(|| self.remote.tool(sent)).map_err(remote_to_py)?;
            Ok(PyRemoteTool::new(tool))
        })
    }

    /// Ends the connection.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            py.detach(|| self.remote.close());
            Ok(())
        })
    }
}

/// A session on a ``conch serve``, with ``conch.Shell``'s calls: ``run``
/// (and ``run_async``), ``abort``, ``background_jobs``, the job calls,
/// ``set_network``, ``reset``, ``close``; its ``files`` and ``artifacts`` are read on the server.
#[pyclass(frozen, module = "conch", name = "RemoteShell")]
pub struct PyRemoteShell {
    /// `None` once closed.
    shell: Slot<RemoteShell>,
    sandbox_applied: Py<PyAny>,
    /// The `on_job_exit` callable, for the garbage collector.
    on_job_exit: Option<Arc<exit_hook::Slot>>,
}

impl PyRemoteShell {
    pub(crate) fn open(&self) -> PyResult<Arc<RemoteShell>> {
        open_slot(&self.shell, "shell")
    }
}

/// The remote handle in `slot`, or the closed-handle error of a `what`.
pub(crate) fn open_slot<T>(slot: &Slot<T>, what: &'static str) -> PyResult<Arc<T>> {
    slot.get()
        .ok_or_else(|| to_py(conch_core::Error::Closed(what)))
}

/// Closes the remote handle in `slot` with `close`, GIL released; a closed
/// one is left alone (so `close()` is idempotent).
pub(crate) fn close_slot<T: Send + Sync>(
    py: Python<'_>,
    slot: &Slot<T>,
    close: impl FnOnce(&T) -> Result<(), RemoteError> + Send,
) -> PyResult<()> {
    match slot.take() {
        Some(handle) => py.detach(|| close(&handle)).map_err(remote_to_py),
        None => Ok(()),
    }
}

#[pymethods]
impl PyRemoteShell {
    /// Cancels what the session runs now (if anything), from any thread.
    /// The blocked ``run`` returns with ``cancelled=True``.
    fn abort(&self) -> PyResult<()> {
        guard(|| {
            self.open()?.abort();
            Ok(())
        })
    }

    /// The pids (on the server) of what the session runs in the
    /// background, as ``Shell.background_jobs``.
    fn background_jobs(&self, py: Python<'_>) -> PyResult<Vec<u32>> {
        guard(|| {
            let shell = self.open()?;
            py.detach(|| shell.background_jobs()).map_err(remote_to_py)
        })
    }

    /// The files as the session's commands reach them
    /// (``conch.RemoteFiles``): inside its sandbox, relative paths from its
    /// cwd. Raises ``ClosedError`` once the session is closed.
    #[getter]
    fn files(&self) -> PyResult<PyRemoteFiles> {
        guard(|| Ok(PyRemoteFiles::new(self.open()?.files())))
    }

    /// The session's artifact store on the server (its
    /// ``artifacts_dir``): ``read`` and ``resolve`` as
    /// ``conch.ArtifactStore``'s.
    #[getter]
    fn artifacts(&self) -> PyResult<PyRemoteArtifactStore> {
        guard(|| Ok(self.open()?.artifacts().into()))
    }

    /// The loop the session's bash runs on the server, as
    /// ``Shell.engine``: ``"builtin"`` or ``"eval"`` (asked of the server,
    /// the GIL released). Raises ``ClosedError`` once the session is
    /// closed.
    #[getter]
    fn engine(&self, py: Python<'_>) -> PyResult<&'static str> {
        guard(|| {
            let shell = self.open()?;
            py.detach(|| shell.engine())
                .map(|engine| engine.as_str())
                .map_err(remote_to_py)
        })
    }

    /// Changes the domains the session may reach, as
    /// ``Shell.set_network`` (the policy read here, then on the server;
    /// the same errors). Raises ``ClosedError`` once the session is closed.
    fn set_network(&self, py: Python<'_>, policy: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let network = options::network(policy)?;
            let shell = self.open()?;
            py.detach(|| shell.set_network(&network))
                .map_err(remote_to_py)
        })
    }

    /// Starts the session afresh on the server, as ``Shell.reset``
    /// (everything it runs killed, its jobs forgotten, a fresh bash in its
    /// start directory). Raises ``ClosedError`` once the session is
    /// closed.
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            let shell = self.open()?;
            py.detach(|| shell.reset()).map_err(remote_to_py)
        })
    }

    /// What of the sandbox the server applied (``None``: no sandbox).
    #[getter]
    fn sandbox_applied(&self, py: Python<'_>) -> Py<PyAny> {
        self.sandbox_applied.clone_ref(py)
    }

    /// Closes the session on the server: everything it runs is killed.
    /// Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| close_slot(py, &self.shell, RemoteShell::close))
    }
}

command_method! {
    PyRemoteShell => BashResult;
    /// Runs ``command`` in the remote session, as ``Shell.run`` does (the
    /// same options, callback, cancel token and ``conch.BashResult``).
    fn run |this, py, command, options, on_chunk, token| {
        let opts = read_run_options(command, options, token)?;
        let shell = this.open()?;
        let mut run = py.detach(|| shell.start_run(opts)).map_err(remote_to_py)?;
        let result = drive_here(py, on_chunk, token, |until, sink| {
            run.drive(Some(until), sink)
        })?;
        result.map_err(remote_to_py)
    }
}

exit_hook::collected!(PyRemoteShell);

aio::coroutine_twins! {
    PyRemoteShell;
    /// ``run`` as a coroutine (same arguments). Cancelling the awaiting
    /// task aborts the command on the server; the task ends once it has
    /// stopped.
    fn run_async(command) awaits run;
    /// ``poll`` as a coroutine (same arguments). Cancelling the awaiting
    /// task ends the wait (never the job).
    fn poll_async(job) awaits poll;
}

aio::thread_twins! {
    PyRemoteShell;
    /// ``set_network`` as a coroutine (same arguments), on a thread of its
    /// own.
    fn set_network_async awaits set_network;
    /// ``reset`` as a coroutine, on a thread of its own.
    fn reset_async awaits reset;
}

aio::context_manager! {
    PyRemoteShell,
    exit: |shell, py| shell.close(py),
    /// ``async with``: the session itself.
    __aenter__,
    /// ``async with`` exit: ``close()`` on a thread of its own.
    __aexit__,
}

aio::context_manager! {
    PyRemote,
    exit: |remote, py| remote.close(py),
    /// ``async with``: the connection itself.
    __aenter__,
    /// ``async with`` exit: ``close()`` on a thread of its own.
    __aexit__,
}
