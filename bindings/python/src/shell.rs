//! `conch.Shell`: a persistent session the host holds (one-shot and cached
//! runs are in `execute.rs`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conch_core::input::until_option;
use conch_core::shell::{self, RunOptions, ShellOptions};
use conch_core::{CancelToken, Error, JobId, JobOptions, PollOptions, defaults};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use crate::aio;
use crate::cancel::{PyCancelToken, run_token};
use crate::convert::{self, Seconds, Whole, artifacts, callback, count};
use crate::errors::{guard, to_py};
use crate::exit_hook;
use crate::offload::{drive_here, offload};
use crate::open_shells;
use crate::option_signatures::{job_options, run_options, shell_options};
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
/// ``None``: all), ``network`` (``"deny"``, the default, or ``"allow"``),
/// ``allow_tcp_ports`` (ports it may connect to while the network is
/// denied), ``limits`` (a dict of ``cpu_seconds``, ``memory_bytes``,
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
    fn open(&self) -> PyResult<Arc<shell::Shell>> {
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
    #[pyo3(signature = (command, *, on_chunk=None, cancel=None, **options), text_signature = None)]
    fn run(
        &self,
        py: Python<'_>,
        command: Bound<'_, PyString>,
        on_chunk: Option<Bound<'_, PyAny>>,
        cancel: Option<PyRef<'_, PyCancelToken>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        guard(|| {
            let on_chunk = callback("on_chunk", on_chunk)?;
            let (token, _link) = run_token(cancel.as_deref());
            let opts = RunOptions {
                cancel: Some(token.clone()),
                ..crate::options::read("run", options, &[("command", command.into_any())])?
            };
            let shell = self.open()?;
            let place = shell.reserve().map_err(to_py)?;
            let mut run = shell::Run::new(shell, place, opts);
            let result = drive_here(py, on_chunk.as_ref(), &token, |until, sink| {
                run.drive(Some(until), sink)
            })?;
            to_python(py, Class::BashResult, &result.map_err(to_py)?)
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

    /// The session's jobs: what its commands left writing in the
    /// background (``(sleep 1; echo late) &``, ``server &``), oldest first:
    /// every running job and the last finished ones, each a
    /// ``conch.JobInfo``. ``[]`` once the shell is closed.
    fn jobs(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
        guard(|| {
            let jobs = match &*self.lock() {
                State::Open(shell) => shell.jobs(),
                State::Closed(_) => Vec::new(),
            };
            jobs.iter()
                .map(|info| to_python(py, Class::JobInfo, info))
                .collect()
        })
    }

    /// Reads the output of job ``job`` (an id from ``jobs()``) and returns a
    /// ``conch.JobPoll``: what arrived since the previous poll.
    ///
    /// ``wait``: the most seconds to wait for the job to end or ``until`` to
    /// match (``0``: read what is there and return), with the GIL released:
    /// other Python threads keep running. ``until``: a regular expression
    /// (Rust ``regex`` syntax); the poll returns as soon as the output it
    /// read matches. ``max_bytes``: the most output returned (the newest;
    /// default: the session's ``max_bytes``). ``cursor``: read from this
    /// offset of the job's output instead of where the previous poll
    /// stopped. ``cancel``: a ``conch.CancelToken`` that ends the wait early
    /// (the job goes on); the poll then returns what it read. Ctrl-C ends
    /// the wait too, and is raised.
    ///
    /// Never waits for a run, and a run never waits for it. Raises
    /// ``NotFoundError`` for an unknown job, ``InvalidArgumentError`` for a
    /// bad option, ``ClosedError`` once the shell is closed.
    #[pyo3(
        signature = (job, *, wait=Seconds(0.0), until=None, max_bytes=None, cursor=None, cancel=None),
        text_signature = "($self, job, *, wait=0, until=None, max_bytes=None, cursor=None, cancel=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn poll(
        &self,
        py: Python<'_>,
        job: Whole,
        wait: Seconds,
        until: Option<String>,
        max_bytes: Option<Whole>,
        cursor: Option<Whole>,
        cancel: Option<PyRef<'_, PyCancelToken>>,
    ) -> PyResult<Py<PyAny>> {
        guard(|| {
            let job = convert::job(job)?;
            let opts = PollOptions {
                wait: convert::interval("wait", wait)?,
                until: until
                    .map(|pattern| until_option("until", &pattern))
                    .transpose()
                    .map_err(to_py)?,
                max_bytes: max_bytes.map(convert::max_bytes).transpose()?,
                cursor: count("cursor", cursor)?.map(|n| n as u64),
            };
            let (token, _link) = run_token(cancel.as_deref());
            let shell = self.open()?;
            let poll = offload(py, None, &token, {
                let token = token.clone();
                move |_| shell.poll(job, &opts, Some(&token))
            })?;
            to_python(py, Class::JobPoll, &poll.map_err(to_py)?)
        })
    }

    #[doc = text_signature!("start($self, command, *, ", job_options!(), ")")]
    /// Starts ``command`` as a job beside the session and returns its id
    /// (an ``int``, as ``jobs()`` lists it) at once. It runs in a bash of its
    /// own, given the session's state as it is now (cwd, variables,
    /// functions, aliases, options; the call waits for a run of the session
    /// in progress to end first), and nothing it changes reaches the
    /// session. Read it with ``poll``, stop it with ``kill``.
    ///
    /// ``cwd``: its directory (relative to the session cwd). ``env``:
    /// variables for the job only. ``timeout``: seconds after which its whole
    /// tree is killed (status ``"timed_out"``). ``stdin``: give it an input
    /// pipe for ``write`` and ``close_stdin`` (otherwise its stdin is
    /// ``/dev/null``). ``pty``: ``(cols, rows)``: run it on a terminal of
    /// that size (``write`` types into it, ``write_key`` sends keys).
    ///
    /// The GIL is released while it waits; Ctrl-C raises
    /// ``KeyboardInterrupt`` (and a job it had started is killed). Raises
    /// ``TooManyJobsError`` when the session runs ``max_jobs`` jobs already
    /// (nothing is started), ``InvalidArgumentError`` (missing ``cwd``, NUL in
    /// the command, bad option), ``ClosedError``, ``SpawnError``.
    #[pyo3(signature = (command, **options), text_signature = None)]
    fn start(
        &self,
        py: Python<'_>,
        command: Bound<'_, PyString>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<JobId> {
        guard(|| {
            let options = convert::pty_pair(py, options)?;
            let opts: JobOptions = crate::options::read(
                "start",
                options.as_ref(),
                &[("command", command.into_any())],
            )?;
            let shell = self.open()?;
            // The id, once started: a start interrupted by Ctrl-C is
            // undone, since its caller never gets the id.
            let started = Arc::new(Mutex::new(None));
            let outcome = offload(py, None, &CancelToken::new(), {
                let (shell, started) = (shell.clone(), started.clone());
                move |_| {
                    let id = shell.start(opts)?;
                    *started.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
                    Ok(id)
                }
            });
            match outcome {
                Ok(result) => result.map_err(to_py),
                Err(err) => {
                    if let Some(id) = started.lock().unwrap_or_else(|e| e.into_inner()).take() {
                        py.detach(|| shell.kill(id).map(drop).unwrap_or_default());
                    }
                    Err(err)
                }
            }
        })
    }

    /// ``start`` as a coroutine (same arguments), on a thread of its own.
    /// A start cannot be stopped halfway: cancelling the awaiting task
    /// waits for it, then kills the job it started, before
    /// ``CancelledError`` propagates.
    #[pyo3(signature = (command, **options))]
    fn start_async<'py>(
        slf: &Bound<'py, Self>,
        command: Bound<'py, PyAny>,
        options: Option<Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let args = PyTuple::new(slf.py(), [command])?;
            aio::in_thread(
                slf.getattr("start")?,
                args,
                options,
                Some(slf.getattr("kill")?),
            )
        })
    }

    /// Writes ``data`` (``bytes``, or a ``str`` sent as UTF-8) to job
    /// ``job``'s input: its stdin pipe (started with ``stdin=True``) or its
    /// terminal (``pty=``; typed as on a keyboard: ``"\r"`` or ``"\n"`` ends
    /// a line). Waits, GIL released, while the job does not read, up to a
    /// bound (10 s). Raises ``NoInputError`` for a job that takes no input
    /// (ended, input closed, started without one) or that did not read it
    /// within the bound, ``NotFoundError`` for an unknown job,
    /// ``ClosedError``.
    fn write(&self, py: Python<'_>, job: Whole, data: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let job = convert::job(job)?;
            let data = convert::input_bytes(data)?;
            let shell = self.open()?;
            offload(py, None, &CancelToken::new(), move |_| {
                shell.write(job, &data)
            })?
            .map_err(to_py)
        })
    }

    /// ``write`` as a coroutine, on a thread of its own; cancelling the
    /// awaiting task waits for the write to end.
    fn write_async<'py>(
        slf: &Bound<'py, Self>,
        job: Bound<'py, PyAny>,
        data: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let args = PyTuple::new(slf.py(), [job, data])?;
            aio::in_thread(slf.getattr("write")?, args, None, None)
        })
    }

    /// Ends job ``job``'s input: its stdin pipe closes (the job reads
    /// end-of-file); on a terminal, ctrl+d. Raises ``NoInputError``,
    /// ``NotFoundError``, ``ClosedError`` as ``write`` does.
    fn close_stdin(&self, py: Python<'_>, job: Whole) -> PyResult<()> {
        guard(|| {
            let job = convert::job(job)?;
            let shell = self.open()?;
            py.detach(move || shell.close_stdin(job)).map_err(to_py)
        })
    }

    /// Sends a key, by name as ``PtySession.write_key`` takes them
    /// (``"enter"``, ``"ctrl+c"``, ``"up"``, ``"backspace"``...), to a job
    /// started with ``pty=``. Raises ``InvalidArgumentError`` for an unknown
    /// key name, ``NoInputError`` for a job without a terminal (or ended),
    /// ``NotFoundError``, ``ClosedError``.
    fn write_key(&self, py: Python<'_>, job: Whole, key: String) -> PyResult<()> {
        guard(|| {
            let job = convert::job(job)?;
            let shell = self.open()?;
            offload(py, None, &CancelToken::new(), move |_| {
                shell.write_key(job, &key)
            })?
            .map_err(to_py)
        })
    }

    /// Sends a signal to every process of job ``job`` while it runs (a job
    /// that ended is left alone): a name with or without ``SIG`` in any case
    /// (``"TERM"``, ``"sigint"``) or its number (``15``). Raises
    /// ``InvalidArgumentError`` for a signal the core does not take,
    /// ``NotFoundError``, ``ClosedError``.
    fn signal(&self, py: Python<'_>, job: Whole, signal: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let job = convert::job(job)?;
            let signal = convert::signal_text(signal)?;
            let shell = self.open()?;
            py.detach(move || shell.signal(job, &signal)).map_err(to_py)
        })
    }

    /// Kills job ``job``'s whole process tree (SIGINT, SIGTERM, SIGKILL, a
    /// grace between each) and returns its final ``conch.JobPoll``: what it
    /// wrote since the last poll, status ``"killed"`` (or how it had ended
    /// already). Blocks up to a few seconds, GIL released. Raises
    /// ``NotFoundError``, ``ClosedError``.
    fn kill(&self, py: Python<'_>, job: Whole) -> PyResult<Py<PyAny>> {
        guard(|| {
            let job = convert::job(job)?;
            let shell = self.open()?;
            let poll = offload(py, None, &CancelToken::new(), move |_| shell.kill(job))?;
            to_python(py, Class::JobPoll, &poll.map_err(to_py)?)
        })
    }

    /// ``kill`` as a coroutine, on a thread of its own; a kill is not
    /// stopped halfway: cancelling the awaiting task waits for it.
    fn kill_async<'py>(
        slf: &Bound<'py, Self>,
        job: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let args = PyTuple::new(slf.py(), [job])?;
            aio::in_thread(slf.getattr("kill")?, args, None, None)
        })
    }

    #[doc = text_signature!("wait_any($self, jobs, timeout=None, *, cancel=None)")]
    /// The first of ``jobs`` (ids) that has ended, waiting, GIL released,
    /// up to ``timeout`` seconds for one to; ``None`` when none did.
    /// ``timeout``: a number >= 0 (``0``: look without waiting); ``None``:
    /// up to the longest timeout conch takes (2147483.647 s, about 24.8
    /// days). ``cancel``: a ``conch.CancelToken`` that ends the wait early
    /// (``None``); Ctrl-C ends it too, and is raised. Closing the shell ends
    /// the wait: its jobs are killed, and the first of ``jobs`` that has
    /// ended is returned.
    /// Raises ``NotFoundError`` when one of ``jobs`` is not the session's,
    /// ``ClosedError``.
    #[pyo3(signature = (jobs, timeout=None, *, cancel=None), text_signature = None)]
    fn wait_any(
        &self,
        py: Python<'_>,
        jobs: Vec<Whole>,
        timeout: Option<Seconds>,
        cancel: Option<PyRef<'_, PyCancelToken>>,
    ) -> PyResult<Option<JobId>> {
        guard(|| {
            let jobs = jobs
                .into_iter()
                .map(convert::job)
                .collect::<PyResult<Vec<_>>>()?;
            let timeout = match timeout {
                Some(secs) => convert::interval("timeout", secs)?,
                None => Duration::from_secs_f64(defaults::MAX_TIMEOUT_SECS),
            };
            let (token, _link) = run_token(cancel.as_deref());
            let shell = self.open()?;
            offload(py, None, &token, {
                let token = token.clone();
                move |_| shell.wait_any(&jobs, timeout, Some(&token))
            })?
            .map_err(to_py)
        })
    }

    /// ``wait_any`` as a coroutine (same arguments). Cancelling the
    /// awaiting task ends the wait (never a job).
    #[pyo3(signature = (jobs, timeout=None, *, cancel=None))]
    fn wait_any_async<'py>(
        slf: &Bound<'py, Self>,
        jobs: Bound<'py, PyAny>,
        timeout: Option<Bound<'py, PyAny>>,
        cancel: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let options = PyDict::new(slf.py());
            options.set_item("timeout", timeout)?;
            aio::coroutine(slf.getattr("wait_any")?, jobs, cancel, Some(options))
        })
    }

    /// The session's current working directory.
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

    #[getter]
    fn cwd(&self) -> PyResult<PathBuf> {
        guard(|| {
            Ok(match &*self.lock() {
                State::Open(shell) => shell.cwd(),
                State::Closed(cwd) => cwd.clone(),
            })
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

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        match &self.on_job_exit {
            Some(slot) => slot.visit(&visit),
            None => Ok(()),
        }
    }

    fn __clear__(&self) {
        if let Some(slot) = &self.on_job_exit {
            slot.clear();
        }
    }
}

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

aio::context_manager! {
    PyShell,
    exit: |shell, py| shell.close(py),
    /// ``async with``: the shell itself.
    __aenter__,
    /// ``async with`` exit: ``close()`` on a thread of its own, so the
    /// event loop runs on while the session's processes are killed.
    __aexit__,
}
