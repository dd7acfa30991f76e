//! The job calls of a session, written once for the local ``Shell`` and a
//! ``RemoteShell``: each class gets the same methods, docs and errors
//! ([`job_methods!`]), over the [`JobCalls`] of its session (the core's
//! `Shell`, or conch-remote's client).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use conch_core::input::until_option;
use conch_core::{CancelToken, JobId, JobInfo, JobOptions, JobPoll, PollOptions, defaults};
use conch_remote::RemoteShell;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::aio;
use crate::cancel::{PyCancelToken, run_token};
use crate::convert::{self, Seconds, Whole, count};
use crate::errors::{guard, remote_to_py, to_py};
use crate::offload::offload;
use crate::option_signatures::job_options;
use crate::result::{Class, to_python};
use crate::signature::text_signature;

/// A session's job calls, their errors as Python's.
pub trait JobCalls: Send + Sync + 'static {
    fn job_list(&self) -> PyResult<Vec<JobInfo>>;
    fn job_poll(&self, job: JobId, opts: &PollOptions, cancel: &CancelToken) -> PyResult<JobPoll>;
    fn job_start(&self, opts: JobOptions) -> PyResult<JobId>;
    fn job_write(&self, job: JobId, data: &[u8]) -> PyResult<()>;
    fn job_close_stdin(&self, job: JobId) -> PyResult<()>;
    fn job_key(&self, job: JobId, key: &str) -> PyResult<()>;
    fn job_signal(&self, job: JobId, signal: &str) -> PyResult<()>;
    fn job_kill(&self, job: JobId) -> PyResult<JobPoll>;
    fn job_wait_any(
        &self,
        jobs: &[JobId],
        timeout: Duration,
        cancel: &CancelToken,
    ) -> PyResult<Option<JobId>>;
}

/// The [`JobCalls`] of a session type whose job calls have the core's
/// names, its list `$list` and its errors mapped by `$error`.
macro_rules! job_calls {
    ($session:ty, $error:path, |$s:ident| $list:expr) => {
        impl JobCalls for $session {
            fn job_list(&self) -> PyResult<Vec<JobInfo>> {
                let $s = self;
                $list
            }
            fn job_poll(
                &self,
                job: JobId,
                opts: &PollOptions,
                cancel: &CancelToken,
            ) -> PyResult<JobPoll> {
                self.poll(job, opts, Some(cancel)).map_err($error)
            }
            fn job_start(&self, opts: JobOptions) -> PyResult<JobId> {
                self.start(opts).map_err($error)
            }
            fn job_write(&self, job: JobId, data: &[u8]) -> PyResult<()> {
                self.write(job, data).map_err($error)
            }
            fn job_close_stdin(&self, job: JobId) -> PyResult<()> {
                self.close_stdin(job).map_err($error)
            }
            fn job_key(&self, job: JobId, key: &str) -> PyResult<()> {
                self.write_key(job, key).map_err($error)
            }
            fn job_signal(&self, job: JobId, signal: &str) -> PyResult<()> {
                self.signal(job, signal).map_err($error)
            }
            fn job_kill(&self, job: JobId) -> PyResult<JobPoll> {
                self.kill(job).map_err($error)
            }
            fn job_wait_any(
                &self,
                jobs: &[JobId],
                timeout: Duration,
                cancel: &CancelToken,
            ) -> PyResult<Option<JobId>> {
                self.wait_any(jobs, timeout, Some(cancel)).map_err($error)
            }
        }
    };
}

job_calls!(conch_core::Shell, to_py, |shell| Ok(shell.jobs()));
job_calls!(RemoteShell, remote_to_py, |shell| shell
    .jobs()
    .map_err(remote_to_py));

/// The job methods of a session class whose `open()` gives its session
/// (an `Arc` of a [`JobCalls`]) or the closed-handle error.
macro_rules! job_methods {
    ($class:ty) => {
        #[pymethods]
        impl $class {
            /// The session's jobs: what its commands left writing in the
            /// background (``(sleep 1; echo late) &``, ``server &``), oldest first:
            /// every running job and the last finished ones, each a
            /// ``conch.JobInfo``. ``[]`` once the shell is closed.
            fn jobs(&self, py: Python<'_>) -> PyResult<Vec<Py<PyAny>>> {
                guard(|| {
                    let jobs = match self.open() {
                        Ok(shell) => shell.job_list()?,
                        Err(_) => Vec::new(),
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
                        move |_| shell.job_poll(job, &opts, &token)
                    })?;
                    to_python(py, Class::JobPoll, &poll?)
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
                            let id = shell.job_start(opts)?;
                            *started.lock().unwrap_or_else(|e| e.into_inner()) = Some(id);
                            Ok(id)
                        }
                    });
                    match outcome {
                        Ok(result) => result,
                        Err(err) => {
                            if let Some(id) = started.lock().unwrap_or_else(|e| e.into_inner()).take() {
                                py.detach(|| shell.job_kill(id).map(drop).unwrap_or_default());
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
                        shell.job_write(job, &data)
                    })?
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
                    py.detach(move || shell.job_close_stdin(job))
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
                        shell.job_key(job, &key)
                    })?
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
                    py.detach(move || shell.job_signal(job, &signal))
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
                    let poll = offload(py, None, &CancelToken::new(), move |_| shell.job_kill(job))?;
                    to_python(py, Class::JobPoll, &poll?)
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
            /// up to ``timeout`` seconds for one to; ``None`` when none did, and
            /// at once for an empty ``jobs``.
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
                        move |_| shell.job_wait_any(&jobs, timeout, &token)
                    })?
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

        }
    };
}

job_methods!(crate::shell::PyShell);
job_methods!(crate::remote::PyRemoteShell);
