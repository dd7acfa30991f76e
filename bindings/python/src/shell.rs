//! `conch.Shell`: a persistent session the host holds (one-shot and cached
//! runs are in `execute.rs`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use conch_core::shell::{self, RunOptions, ShellOptions};
use conch_core::{CancelToken, Error};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::aio;
use crate::command_method::command_method;
use crate::convert::{self, artifacts, callback};
use crate::errors::{guard, to_py};
use crate::exit_hook;
use crate::offload::drive_here;
use crate::open_shells;
use crate::option_signatures::{run_options, shell_options};
use crate::result::{Class, to_python};
use crate::signature::text_signature;

#[doc = text_signature!("Shell(*, ", shell_options!(), ", on_job_exit=None)")]
/// A persistent bash session: one long-lived real bash that runs command
/// after command, keeping cwd, variables, functions, aliases and options.
///
/// ``shell``: the bash to run (default: ``bash`` on ``PATH``). ``cwd``: the
/// starting directory (default: the host's). ``env``: variables exported in
/// the session. ``snapshot``: ``"auto"`` sources the user's aliases,
/// functions and options (captured once from their rc file), ``None`` (or
/// ``"none"``) runs a clean bash, a path sources that snapshot file. ``prefix``: put before
/// every command (``"<prefix> <command>"``). ``non_interactive_env``: set
/// ``PAGER=cat``, ``GIT_EDITOR=true``, ``CI=1``... so no tool waits for a
/// human. ``max_bytes``: output kept in memory per run (the tail).
/// ``artifacts_dir``: where full outputs are spilled (a directory or a
/// ``conch.ArtifactStore``); ``None``: no artifacts. ``env_policy``: which
/// host variables the shell sees, a dict of ``inherit`` (``"all"``, the
/// default, ``"core"``: PATH, HOME, LANG..., ``"none"``) and ``exclude``
/// (glob patterns of names never passed on, e.g. ``["*_KEY", "*TOKEN*"]``). ``max_jobs``: jobs the session runs at
/// once (``start`` beyond it raises ``TooManyJobsError``; a run at the
/// limit stays in the foreground past its ``yield_after``).
/// ``job_artifact_cap``: bytes one job's artifact takes at most (past it the
/// file stops growing and the job's ``artifact_truncated`` is true).
/// ``on_job_exit(info: conch.JobInfo)``: called once per job end, on a
/// thread of conch's (with the GIL); an exception it raises goes to
/// ``sys.unraisablehook``. ``sandbox``: the sandbox around everything the
/// session runs, a dict of ``writable`` (paths the session may write besides
/// its cwd and private temp directory), ``readable`` (paths it may read;
/// ``None``: all), ``network`` (``"deny"``, the default, ``"allow"``, or a
/// domain policy: a dict of ``allow`` and ``deny`` patterns and
/// ``resolve`` overrides, the named hosts reached through the session's
/// proxy; see ``set_network``), ``allow_tcp_ports`` (ports it may connect
/// to while the network is denied or by name), ``limits`` (a dict of ``cpu_seconds``, ``memory_bytes``,
/// ``file_size_bytes``, ``open_files``, ``processes``,
/// ``session_memory_bytes``) and ``best_effort`` (apply what the kernel
/// supports instead of raising ``SandboxUnavailableError``); ``True`` or
/// ``{}``: the strict default; ``None``: no sandbox.
///
/// The options are the core's ``ShellOptions`` (``docs/api/schema.json``),
/// read as its serialized form: an option the core adds is taken here
/// unchanged.
///
/// Use it as a context manager, or call ``close()``: closing kills
/// everything the session still runs, background jobs included.
#[pyclass(frozen, module = "conch", name = "Shell")]
pub struct PyShell {
    state: Mutex<State>,
    /// The `on_job_exit` callable, for the garbage collector.
    on_job_exit: Option<Arc<exit_hook::Slot>>,
    /// What of the sandbox is in force (the core's, kept past `close()`).
    sandbox_applied: Option<conch_core::SandboxApplied>,
}

/// The core shell while open. `close()` drops this object's share of it at
/// once, so its descriptors (bash's pipes, the run waker) are released
/// then, not when Python collects the object; a run still going on another
/// thread holds its own share until it returns.
enum State {
    Open(Arc<shell::Shell>),
    /// What `cwd` still answers.
    Closed(PathBuf),
}

impl PyShell {
    /// The core shell, or the core's error for a closed one.
    pub(crate) fn open(&self) -> PyResult<Arc<shell::Shell>> {
        match &*self.lock() {
            State::Open(shell) => Ok(shell.clone()),
            State::Closed(_) => Err(to_py(Error::Closed("shell"))),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl PyShell {
    #[new]
    #[pyo3(signature = (*, artifacts_dir=None, on_job_exit=None, sandbox=None, **options), text_signature = None)]
    fn new(
        py: Python<'_>,
        artifacts_dir: Option<&Bound<'_, PyAny>>,
        on_job_exit: Option<Bound<'_, PyAny>>,
        sandbox: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        guard(|| {
            let (hook, slot) = match callback("on_job_exit", on_job_exit)? {
                Some(callable) => {
                    let (hook, slot) = exit_hook::hook(callable);
                    (Some(hook), Some(slot))
                }
                None => (None, None),
            };
            let options = convert::snapshot_none(py, options)?;
            let opts = ShellOptions {
                artifacts: artifacts(artifacts_dir)?,
                on_job_exit: hook,
                sandbox: crate::options::sandbox(sandbox)?,
                ..crate::options::read("Shell", options.as_ref(), &[])?
            };
            let inner = py
                .detach(|| shell::Shell::new(opts))
                .map(Arc::new)
                .map_err(to_py)?;
            open_shells::track(&inner);
            let sandbox_applied = inner.sandbox_applied().cloned();
            Ok(PyShell {
                state: Mutex::new(State::Open(inner)),
                on_job_exit: slot,
                sandbox_applied,
            })
        })
    }

    /// Cancels the command running now (if any), from any thread. The
    /// blocked ``run`` returns with ``cancelled=True``.
    fn abort(&self) -> PyResult<()> {
        guard(|| {
            if let State::Open(shell) = &*self.lock() {
                shell.abort();
            }
            Ok(())
        })
    }

    /// Pids of the processes the session still runs in the background.
    fn background_jobs(&self) -> PyResult<Vec<u32>> {
        guard(|| {
            Ok(match &*self.lock() {
                State::Open(shell) => shell.background_jobs(),
                State::Closed(_) => Vec::new(),
            })
        })
    }

    /// What of the session's sandbox is in force, a
    /// ``conch.SandboxApplied``: everything asked, unless ``best_effort``
    /// left out what the kernel lacks (its ``not_applied`` names each, with
    /// why). ``None`` for a shell without a sandbox. Still answers once the
    /// shell is closed.
    #[getter]
    fn sandbox_applied(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.sandbox_applied
            .as_ref()
            .map(|applied| to_python(py, Class::SandboxApplied, applied))
            .transpose()
    }

    /// The session's current working directory.
    #[getter]
    fn cwd(&self) -> PyResult<PathBuf> {
        guard(|| {
            Ok(match &*self.lock() {
                State::Open(shell) => shell.cwd(),
                State::Closed(cwd) => cwd.clone(),
            })
        })
    }

    /// The loop the session's bash runs: ``"builtin"`` (the loop builtin,
    /// ``conch-loop.so``) or ``"eval"`` (the eval loop); the ``engine``
    /// option chooses it. Waits for bash's start-up the first time (the
    /// GIL released), raising what a run would for a bash that cannot
    /// start. Raises ``ClosedError`` once the shell is closed.
    #[getter]
    fn engine(&self, py: Python<'_>) -> PyResult<&'static str> {
        guard(|| {
            let shell = self.open()?;
            py.detach(|| shell.engine())
                .map(|engine| engine.as_str())
                .map_err(to_py)
        })
    }

    /// Changes the domains the session may reach, between runs: ``policy``
    /// is ``"deny"`` (no domain) or a domain policy, a dict of ``allow``
    /// and ``deny`` (patterns: ``example.com``, ``*.example.com``,
    /// ``example.com:443``, ``10.0.0.0/8``) and ``resolve`` (``{name:
    /// ip}``), as the ``network`` of ``sandbox=``. Connections made from
    /// now on are checked against it (a running command keeps those it
    /// opened). Raises ``InvalidArgumentError`` for a bad pattern (named
    /// ``network.allow[i]``), for ``"allow"`` (the whole network is not
    /// opened this way) and for a session not started with a domain
    /// policy; ``ClosedError`` once the shell is closed.
    fn set_network(&self, py: Python<'_>, policy: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let network = crate::options::network(policy)?;
            let shell = self.open()?;
            py.detach(|| shell.set_network(&network)).map_err(to_py)
        })
    }

    /// Starts the session afresh, as a new ``conch.Shell`` with the same
    /// options would: everything it runs is killed as ``close`` kills it
    /// (a run in progress is cancelled), its jobs are forgotten, and a
    /// fresh bash starts in its start directory. The shell stays open, its
    /// options and artifacts unchanged. From the first reset on, each of
    /// its bashes forks a spare of itself before its first command, and
    /// the next reset makes the spare the session's bash (a fork, not a
    /// bash's start: Linux, the loop builtin, no sandbox). The GIL is
    /// released. Raises ``ClosedError`` once the shell is closed.
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            let shell = self.open()?;
            py.detach(|| shell.reset()).map_err(to_py)
        })
    }

    /// Kills everything the session still runs (the current command,
    /// background jobs, bash) and refuses further runs. Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            let shell = {
                let mut state = self.lock();
                let State::Open(shell) = &*state else {
                    return Ok(());
                };
                let cwd = shell.cwd();
                match std::mem::replace(&mut *state, State::Closed(cwd)) {
                    State::Open(shell) => shell,
                    State::Closed(_) => unreachable!("the state was open"),
                }
            };
            // The last share (unless a run holds one) is dropped here too.
            py.detach(move || shell.close());
            Ok(())
        })
    }

    fn __repr__(&self) -> PyResult<String> {
        guard(|| Ok(format!("<conch.Shell cwd={:?}>", self.cwd()?)))
    }
}

command_method! {
    PyShell => BashResult;
    #[doc = text_signature!("run($self, command, *, ", run_options!(), ", on_chunk=None, cancel=None)")]
    /// Runs ``command`` in the session and returns a ``conch.BashResult``.
    ///
    /// Blocks until the command's status arrives (a job left in the
    /// background never holds the call), with the GIL released: other
    /// Python threads keep running. ``cwd``: directory for this run only
    /// (relative to the session cwd). ``env``: variables for this run only.
    /// ``timeout``: seconds; the command's whole process tree is stopped
    /// then (SIGINT, SIGTERM, SIGKILL) and the result has ``timed_out``.
    /// ``on_chunk(text: str)``: called with the sanitized output as it
    /// arrives, on this thread, in order. ``cancel``: a
    /// ``conch.CancelToken`` that stops the command when cancelled from any
    /// thread. ``head``/``tail``: keep only the first/last N lines of the
    /// whole output (head first, then tail); a satisfied ``head`` ends the
    /// command early, as ``| head -n N`` would. ``yield_after``: seconds;
    /// a command still running then goes on as a job and the call returns
    /// with its output so far, after a notice, and ``backgrounded`` set to
    /// the job's id (poll it, kill it); the session stays as it was before
    /// the command (its cd and variables do not apply). At the session's
    /// ``max_jobs`` the command stays in the foreground.
    ///
    /// Timeout and cancellation are results, not exceptions. An exception
    /// raised by ``on_chunk`` (or Ctrl-C) cancels the command and is raised
    /// here once it has stopped. Runs on one Shell queue in order; a
    /// ``run`` of the same Shell from inside ``on_chunk`` raises
    /// ``InvalidArgumentError`` at once (it would wait for itself).
    #[pyo3(text_signature = None)]
    fn run |this, py, command, options, on_chunk, token| {
        let opts = read_run_options(command, options, token)?;
        let shell = this.open()?;
        let place = shell.reserve().map_err(to_py)?;
        let mut run = shell::Run::new(shell, place, opts);
        let result = drive_here(py, on_chunk, token, |until, sink| {
            run.drive(Some(until), sink)
        })?;
        result.map_err(to_py)
    }
}

/// The options of `run(command, **options)`, of a local shell or a remote
/// one, cancelled by `token`.
pub(crate) fn read_run_options(
    command: Bound<'_, PyString>,
    options: Option<&Bound<'_, PyDict>>,
    token: &CancelToken,
) -> PyResult<RunOptions> {
    Ok(RunOptions {
        cancel: Some(token.clone()),
        ..crate::options::read("run", options, &[("command", command.into_any())])?
    })
}

exit_hook::collected!(PyShell);

aio::coroutine_twins! {
    PyShell;
    /// ``run`` as a coroutine (same arguments). Cancelling the awaiting
    /// task stops the command and its process tree; the task ends once it
    /// has stopped. ``on_chunk`` is called on a worker thread.
    fn run_async(command) awaits run;
    /// ``poll`` as a coroutine (same arguments). Cancelling the awaiting
    /// task ends the wait (never the job); the task ends once it has.
    fn poll_async(job) awaits poll;
}

aio::thread_twins! {
    PyShell;
    /// ``set_network`` as a coroutine (same arguments), on a thread of its
    /// own.
    fn set_network_async awaits set_network;
    /// ``reset`` as a coroutine, on a thread of its own.
    fn reset_async awaits reset;
}

aio::context_manager! {
    PyShell,
    exit: |shell, py| shell.close(py),
    /// ``async with``: the shell itself.
    __aenter__,
    /// ``async with`` exit: ``close()`` on a thread of its own, so the
    /// event loop runs on while the session's processes are killed.
    __aexit__,
}
