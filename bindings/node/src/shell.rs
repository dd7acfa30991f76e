//! `Shell`: a persistent bash session.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use conch_core::input::signal_option;
use conch_core::jobs::{JobExitHook, JobId};
use conch_core::shell as core;
use conch_core::{CancelToken, defaults};
use napi::Status;
use napi::bindgen_prelude::{Buffer, Either, Env, Object, ToNapiValue};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi_derive::napi;

use crate::errors::{Code, core_error};
use crate::jobs::{self, JobInfo, JobPoll, PollOptions, StartOptions};
use crate::options::{self, EnvPolicy};
use crate::quick::{self, ChunkFunction};
use crate::result::BashResult;
use crate::sandbox::{SandboxApplied, SandboxArg};
use crate::signal::Signal;
use crate::stream::{JsBlocked, Text};
use crate::worker;

/// How a `Shell` is created.
#[napi(object, object_to_js = false)]
pub struct ShellOptions {
    /// bash to run; default: `bash` from `PATH`.
    pub shell: Option<String>,
    /// Starting directory; default: the host's cwd.
    pub cwd: Option<String>,
    /// Variables exported in the session.
    pub env: Option<HashMap<String, String>>,
    /// `'auto'` (default: the user's ~/.bashrc aliases, functions and
    /// options), `'none'`, or the path of a snapshot file.
    pub snapshot: Option<String>,
    /// Prepended to every command: `<prefix> <command>`.
    pub prefix: Option<String>,
    /// Apply the non-interactive defaults (`PAGER=cat`, `GIT_EDITOR=true`,
    /// `CI=1`…); default true.
    pub non_interactive_env: Option<bool>,
    /// Bytes of output kept in memory per run; default 51200.
    pub max_bytes: Option<f64>,
    /// Where full outputs are spilled as `artifact://<id>`; default: nowhere.
    pub artifacts_dir: Option<String>,
    /// Which host variables reach the shell.
    pub env_policy: Option<EnvPolicy>,
    /// Jobs the session runs at once, at most; default 16.
    pub max_jobs: Option<f64>,
    /// Bytes one job's artifact takes, at most; default 1 GiB.
    pub job_artifact_cap: Option<f64>,
    /// Called on the JS thread once per job end with its `JobInfo`. Held
    /// weakly: it never keeps the process alive. `conch.js` passes it for
    /// `shell.on('jobExit', …)`.
    #[napi(ts_type = "(info: JobInfo) => void")]
    pub on_job_exit: Option<ExitFn>,
    /// The sandbox around everything the session runs: a policy, `true`
    /// (or `{}`) for the strict default (write only in the cwd and a
    /// private temp directory, no network, no limits); absent, `null` or
    /// `false`: none. A policy the kernel cannot enforce throws
    /// `SandboxUnavailable`.
    #[napi(ts_type = "SandboxOptions | boolean | null")]
    pub sandbox: Option<SandboxArg>,
}

/// The `onJobExit` callback: callable from the conch thread a job ends on,
/// unref'd (weak) so that it never keeps the event loop alive.
pub type ExitFn = ThreadsafeFunction<JobInfo, UnknownReturnValue, JobInfo, Status, false, true>;

/// One command for `Shell.run`.
#[napi(object, object_to_js = false)]
pub struct RunOptions {
    pub command: String,
    /// Directory for this run only, resolved against the session's cwd.
    pub cwd: Option<String>,
    /// Variables for this run only.
    pub env: Option<HashMap<String, String>>,
    /// Deadline in milliseconds; the command's process tree is killed then.
    pub timeout_ms: Option<f64>,
    /// Aborting it kills the command's process tree; the result says `cancelled`.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
    /// Keep only the first N lines of the whole output (and stop the
    /// command once they are complete).
    pub head: Option<f64>,
    /// Then keep only the last N lines.
    pub tail: Option<f64>,
    /// When the command still runs this many milliseconds after it
    /// started, the run resolves with its output so far and the command
    /// goes on as a job (`backgrounded`); the session keeps the state it
    /// had before the command.
    pub yield_after_ms: Option<f64>,
}

/// A persistent real bash: cwd, variables, functions and aliases carry over
/// from one `run` to the next. Runs queue in order; `abort()` and `close()`
/// work at any moment.
#[napi]
pub struct Shell {
    /// The session; `None` once closed. `close()` drops it at once: the JS
    /// object may live on until the garbage collector gets to it, and what
    /// the core session still holds (its waker's descriptor) must not.
    inner: Mutex<Option<Arc<core::Shell>>>,
    /// What of the sandbox is in force (kept past `close()`).
    sandbox_applied: Option<SandboxApplied>,
}

impl Shell {
    /// The session, unless closed.
    fn open(&self) -> Option<Arc<core::Shell>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A call on one job, off the JS thread (it may block: a write to a job
    /// that does not read, the kill ladder).
    fn on_job<'env, T, F>(
        &self,
        env: &'env Env,
        job: f64,
        call: F,
    ) -> napi::Result<Object<'env>, Code>
    where
        T: ToNapiValue + Send + 'static,
        F: FnOnce(&core::Shell, JobId) -> conch_core::Result<T> + Send + 'static,
    {
        let job = jobs::job_id(job)?;
        let shell = self.open();
        offload(env, move || {
            let shell = shell.ok_or(conch_core::Error::Closed("shell"))?;
            call(&shell, job.map_err(jobs::unknown_job)?)
        })
    }
}

/// Runs a blocking core call on a pooled thread; the promise settles with
/// its value or its error.
fn offload<'env, T, F>(env: &'env Env, call: F) -> napi::Result<Object<'env>, Code>
where
    T: ToNapiValue + Send + 'static,
    F: FnOnce() -> conch_core::Result<T> + Send + 'static,
{
    worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
        call().map_err(core_error)
    })
}

#[napi]
impl Shell {
    /// Starts bash (throws for a bad shell path, cwd or option).
    #[napi(constructor, catch_unwind)]
    pub fn new(options: Option<ShellOptions>) -> napi::Result<Self, Code> {
        let o = options.unwrap_or(ShellOptions {
            shell: None,
            cwd: None,
            env: None,
            snapshot: None,
            prefix: None,
            non_interactive_env: None,
            max_bytes: None,
            artifacts_dir: None,
            env_policy: None,
            max_jobs: None,
            job_artifact_cap: None,
            on_job_exit: None,
            sandbox: None,
        });
        let on_job_exit = o.on_job_exit.map(|hook| {
            JobExitHook::new(move |info| {
                hook.call(JobInfo::from(info), ThreadsafeFunctionCallMode::NonBlocking);
            })
        });
        let opts = core::ShellOptions {
            shell: o.shell.map(PathBuf::from),
            cwd: o.cwd.map(PathBuf::from),
            session_env: options::env(o.env),
            snapshot: options::snapshot(o.snapshot)?,
            prefix: o.prefix,
            non_interactive_env: options::non_interactive_env(o.non_interactive_env),
            env_policy: options::env_policy(o.env_policy)?,
            max_bytes: options::max_bytes(o.max_bytes)?,
            artifacts: options::artifacts(o.artifacts_dir)?,
            max_jobs: options::lines("maxJobs", o.max_jobs)?.unwrap_or(defaults::MAX_JOBS),
            job_artifact_cap: options::lines("jobArtifactCap", o.job_artifact_cap)?
                .map_or(defaults::JOB_ARTIFACT_CAP, |n| n as u64),
            on_job_exit,
            sandbox: SandboxArg::policy(o.sandbox)?,
            ..core::ShellOptions::default()
        };
        let inner = core::Shell::new(opts).map_err(core_error)?;
        Ok(Shell {
            sandbox_applied: inner.sandbox_applied().map(SandboxApplied::from),
            inner: Mutex::new(Some(Arc::new(inner))),
        })
    }

    /// What of the session's sandbox is in force: everything asked, unless
    /// `bestEffort` left out what the kernel lacks (`notApplied` names
    /// each, with why). `null` for a shell without a sandbox. Still answers
    /// once closed.
    #[napi(getter, catch_unwind)]
    pub fn sandbox_applied(&self) -> Option<SandboxApplied> {
        self.sandbox_applied.clone()
    }

    /// Runs one command. `onChunk` receives the sanitized output as it
    /// arrives, in order, all of it before the promise settles; if it
    /// throws, the command is aborted and the promise rejects with that
    /// error. Timeout and abort resolve with `cancelled: true`. When no
    /// other run is in flight, the call waits up to 2 ms for the command
    /// before it returns: a command that ends by then (a builtin, a small
    /// program) comes back settled, its chunks delivered during the call.
    #[napi(
        catch_unwind,
        ts_args_type = "options: RunOptions, onChunk?: (chunk: string) => void",
        ts_return_type = "Promise<BashResult>"
    )]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        options: RunOptions,
        on_chunk: Option<ChunkFunction<'env>>,
    ) -> napi::Result<Object<'env>, Code> {
        quick::ensure_function("onChunk", on_chunk.as_ref())?;
        let cancel = CancelToken::new();
        let opts = core::RunOptions {
            command: options.command,
            cwd: options.cwd.map(PathBuf::from),
            env: options::env(options.env),
            timeout: options::timeout(options.timeout_ms)?,
            cancel: Some(cancel.clone()),
            head_lines: options::lines("head", options.head)?,
            tail_lines: options::lines("tail", options.tail)?,
            artifact: None,
            yield_after: options::deadline("yieldAfterMs", options.yield_after_ms)?,
        };
        let Some(shell) = self.open() else {
            // Refused the way the core refuses a run of a closed session.
            return quick::run(
                env,
                options.signal,
                on_chunk,
                cancel,
                quick::once(|| {
                    Err::<BashResult, _>(core_error(conch_core::Error::Closed("shell")))
                }),
            );
        };
        // The place is taken here, on the JS thread: runs keep the order of
        // the calls whichever thread drives them.
        let place = shell.reserve().map_err(core_error)?;
        let mut run = core::Run::new(shell, place, opts);
        quick::run(env, options.signal, on_chunk, cancel, move |until, sink| {
            run.drive(until, sink)
                .map(|result| result.map(BashResult::from).map_err(core_error))
        })
    }

    /// Cancels the running command (its result says `cancelled: true`).
    #[napi(catch_unwind)]
    pub fn abort(&self) {
        if let Some(shell) = self.open() {
            shell.abort();
        }
    }

    /// Pids of the processes the session still runs in the background.
    #[napi(catch_unwind)]
    pub fn background_jobs(&self) -> Vec<u32> {
        self.open()
            .map(|shell| shell.background_jobs())
            .unwrap_or_default()
    }

    /// The session's jobs: what commands left writing in the background
    /// (every running one and the last finished ones), oldest first. Empty
    /// once closed.
    #[napi(catch_unwind)]
    pub fn jobs(&self) -> Vec<JobInfo> {
        self.open()
            .map(|shell| shell.jobs().into_iter().map(JobInfo::from).collect())
            .unwrap_or_default()
    }

    /// Reads a job's output from where the previous poll stopped (or from
    /// `cursor`), waiting up to `waitMs` for the job to end or `until` to
    /// match. The wait runs off the JS thread; `signal` ends it early and
    /// never stops the job. Throws `InvalidArgument` for a bad option;
    /// rejects with `NotFound` for an unknown job and `Closed` for a
    /// closed shell.
    #[napi(
        catch_unwind,
        ts_args_type = "job: number, options?: PollOptions",
        ts_return_type = "Promise<JobPoll>"
    )]
    pub fn poll<'env>(
        &self,
        env: &'env Env,
        job: f64,
        options: Option<PollOptions>,
    ) -> napi::Result<Object<'env>, Code> {
        let job = jobs::job_id(job)?;
        let (opts, signal) = jobs::poll_options(options)?;
        let shell = self.open();
        let cancel = CancelToken::new();
        let token = cancel.clone();
        let waits = !opts.wait.is_zero();
        let work = move || {
            let shell = shell.ok_or(conch_core::Error::Closed("shell"))?;
            let job = job
                .map_err(|n| conch_core::Error::NotFound(format!("no job {n} in this session")))?;
            shell.poll(job, &opts, Some(&token)).map(JobPoll::from)
        };
        if waits {
            // A wait would keep every run from the quick path while it lasts.
            worker::spawn::<Text, _, _, _>(env, signal, None, cancel, move |_| {
                work().map_err(core_error)
            })
        } else {
            quick::run(
                env,
                signal,
                None,
                cancel,
                quick::once(move || work().map_err(core_error)),
            )
        }
    }

    /// Starts `command` as a job beside the session: it sees the session's
    /// cwd, variables and functions and changes none of them. Resolves with
    /// the job's number; rejects with `TooManyJobs` at `maxJobs` (nothing
    /// started) and `Closed`. Throws `InvalidArgument` for a bad option.
    #[napi(
        catch_unwind,
        ts_args_type = "options: StartOptions",
        ts_return_type = "Promise<number>"
    )]
    pub fn start<'env>(
        &self,
        env: &'env Env,
        options: StartOptions,
    ) -> napi::Result<Object<'env>, Code> {
        let opts = jobs::start_options(options)?;
        // The place is taken here, on the JS thread, as a run's: the job
        // sees what the runs called before it left, and a run called after
        // it waits for it to be given that state.
        let taken = match self.open() {
            Some(shell) => Some((shell.reserve().map_err(core_error)?, shell)),
            None => None,
        };
        offload(env, move || {
            let (place, shell) = taken.ok_or(conch_core::Error::Closed("shell"))?;
            shell.start_in_place(place, opts)
        })
    }

    /// Writes to a job's input (its pipe, or its terminal as typed). Rejects
    /// with `NoInput` when the job takes none (ended, input closed, started
    /// without `stdin` or `pty`) and `NotFound` for an unknown job.
    #[napi(
        catch_unwind,
        ts_args_type = "job: number, data: string | Buffer",
        ts_return_type = "Promise<void>"
    )]
    pub fn write<'env>(
        &self,
        env: &'env Env,
        job: f64,
        data: Either<String, Buffer>,
    ) -> napi::Result<Object<'env>, Code> {
        let bytes: Vec<u8> = match data {
            Either::A(text) => text.into_bytes(),
            Either::B(buffer) => buffer.to_vec(),
        };
        self.on_job(env, job, move |shell, job| shell.write(job, &bytes))
    }

    /// Closes a job's input pipe (the job reads end of file).
    #[napi(
        catch_unwind,
        ts_args_type = "job: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn close_stdin<'env>(&self, env: &'env Env, job: f64) -> napi::Result<Object<'env>, Code> {
        self.on_job(env, job, |shell, job| shell.close_stdin(job))
    }

    /// Types a named key (`'enter'`, `'ctrl+c'`, `'backspace'`, `'up'`…)
    /// on a job's terminal.
    #[napi(
        catch_unwind,
        ts_args_type = "job: number, key: string",
        ts_return_type = "Promise<void>"
    )]
    pub fn write_key<'env>(
        &self,
        env: &'env Env,
        job: f64,
        key: String,
    ) -> napi::Result<Object<'env>, Code> {
        self.on_job(env, job, move |shell, job| shell.write_key(job, &key))
    }

    /// Sends a signal to every process of a job: a name (`'TERM'`,
    /// `'SIGINT'`) or a number (`9`). Throws `InvalidArgument` for an
    /// unknown signal.
    #[napi(
        catch_unwind,
        ts_args_type = "job: number, signal: string | number",
        ts_return_type = "Promise<void>"
    )]
    pub fn signal<'env>(
        &self,
        env: &'env Env,
        job: f64,
        signal: Either<String, f64>,
    ) -> napi::Result<Object<'env>, Code> {
        let text = match signal {
            Either::A(name) => name,
            Either::B(number) => format!("{number}"),
        };
        signal_option("signal", &text).map_err(core_error)?;
        self.on_job(env, job, move |shell, job| shell.signal(job, &text))
    }

    /// Kills a job's whole process tree (INT, TERM, then KILL) and resolves
    /// with its last output.
    #[napi(
        catch_unwind,
        ts_args_type = "job: number",
        ts_return_type = "Promise<JobPoll>"
    )]
    pub fn kill<'env>(&self, env: &'env Env, job: f64) -> napi::Result<Object<'env>, Code> {
        self.on_job(env, job, |shell, job| shell.kill(job).map(JobPoll::from))
    }

    /// Waits up to `timeoutMs` for the first of `jobs` to end: resolves
    /// with its number (at once for one already ended), or `null` when
    /// none ended in time.
    #[napi(
        catch_unwind,
        ts_args_type = "jobs: number[], timeoutMs: number",
        ts_return_type = "Promise<number | null>"
    )]
    pub fn wait_any<'env>(
        &self,
        env: &'env Env,
        jobs: Vec<f64>,
        timeout_ms: f64,
    ) -> napi::Result<Object<'env>, Code> {
        let ids = jobs
            .into_iter()
            .map(jobs::job_id)
            .collect::<Result<Vec<_>, _>>()?;
        let timeout = options::duration_ms("timeoutMs", timeout_ms)?;
        let shell = self.open();
        offload(env, move || {
            let shell = shell.ok_or(conch_core::Error::Closed("shell"))?;
            let ids = ids
                .into_iter()
                .map(|id| id.map_err(jobs::unknown_job))
                .collect::<Result<Vec<_>, _>>()?;
            shell.wait_any(&ids, timeout, None)
        })
    }

    /// Kills everything the session runs (the current command, background
    /// jobs, bash) and refuses further runs. Idempotent.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        let shell = self.inner.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(shell) = shell {
            let _blocked = JsBlocked::enter();
            shell.close();
        }
    }
}
