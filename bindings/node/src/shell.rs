//! `Shell`: a persistent bash session.

use std::sync::{Arc, Mutex};

use conch_core::jobs::JobExitHook;
use conch_core::shell as core;
use conch_core::{CancelToken, SandboxApplied};
use napi::Status;
use napi::bindgen_prelude::{Buffer, Either, Env, Object, ToNapiValue};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi_derive::napi;

use crate::errors::{Code, core_error, from_napi};
use crate::job_calls;
use crate::options;
use crate::quick::{self, ChunkFunction};
use crate::result::Js;
use crate::signal::Signal;
use crate::stream::{JsBlocked, Text};
use crate::teardown;
use crate::worker;

/// The `onJobExit` callback: callable from the conch thread a job ends on,
/// unref'd (weak) so that it never keeps the event loop alive.
pub type ExitFn = ThreadsafeFunction<
    Js<conch_core::JobInfo>,
    UnknownReturnValue,
    Js<conch_core::JobInfo>,
    Status,
    false,
    true,
>;

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
    /// Starts bash (throws for a bad shell path, cwd or option). The
    /// options are the core's `ShellOptions`; `onJobExit` is called on the
    /// JS thread once per job end with its `JobInfo`, held weakly (it never
    /// keeps the process alive): `conch.js` passes it for
    /// `shell.on('jobExit', …)`.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: ShellOptions & { onJobExit?: (info: JobInfo) => void }"
    )]
    pub fn new(env: Env, options: Option<Object>) -> napi::Result<Self, Code> {
        let mut opts: core::ShellOptions = options::read(&env, options.as_ref(), &["onJobExit"])?;
        let on_job_exit: Option<ExitFn> = match &options {
            Some(object) => object.get("onJobExit").map_err(from_napi)?,
            None => None,
        };
        opts.on_job_exit = on_job_exit.map(|hook| {
            JobExitHook::new(move |info| {
                hook.call(Js(info), ThreadsafeFunctionCallMode::NonBlocking);
            })
        });
        let inner = Arc::new(core::Shell::new(opts).map_err(core_error)?);
        teardown::close_with_env(&env, &inner).map_err(from_napi)?;
        Ok(Shell {
            sandbox_applied: inner.sandbox_applied().cloned(),
            inner: Mutex::new(Some(inner)),
        })
    }

    /// What of the session's sandbox is in force: everything asked, unless
    /// `bestEffort` left out what the kernel lacks (`notApplied` names
    /// each, with why). `null` for a shell without a sandbox. Still answers
    /// once closed.
    #[napi(getter, catch_unwind, ts_return_type = "SandboxApplied | null")]
    pub fn sandbox_applied(&self) -> Option<Js<SandboxApplied>> {
        self.sandbox_applied.clone().map(Js)
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
        ts_args_type = "options: RunOptions & { signal?: AbortSignal }, onChunk?: (chunk: string) => void",
        ts_return_type = "Promise<BashResult>"
    )]
    pub fn run<'env>(
        &self,
        env: &'env Env,
        options: Object<'env>,
        on_chunk: Option<ChunkFunction<'env>>,
    ) -> napi::Result<Object<'env>, Code> {
        quick::ensure_function("onChunk", on_chunk.as_ref())?;
        let mut opts: core::RunOptions = options::read(env, Some(&options), &["signal"])?;
        let signal: Option<Signal> = options.get("signal").map_err(from_napi)?;
        let cancel = CancelToken::new();
        opts.cancel = Some(cancel.clone());
        let Some(shell) = self.open() else {
            // Refused the way the core refuses a run of a closed session.
            return quick::run(
                env,
                signal,
                on_chunk,
                cancel,
                quick::once(|| {
                    Err::<Js<core::BashResult>, _>(core_error(conch_core::Error::Closed("shell")))
                }),
            );
        };
        // The place is taken here, on the JS thread: runs keep the order of
        // the calls whichever thread drives them.
        let place = shell.reserve().map_err(core_error)?;
        let mut run = core::Run::new(shell, place, opts);
        quick::run(env, signal, on_chunk, cancel, move |until, sink| {
            run.drive(until, sink)
                .map(|result| result.map(Js).map_err(core_error))
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
    #[napi(catch_unwind, ts_return_type = "Array<JobInfo>")]
    pub fn jobs(&self) -> Vec<Js<conch_core::JobInfo>> {
        self.open()
            .map(|shell| shell.jobs().into_iter().map(Js).collect())
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
        ts_args_type = "job: number, options?: PollOptions & { signal?: AbortSignal }",
        ts_return_type = "Promise<JobPoll>"
    )]
    pub fn poll<'env>(
        &self,
        env: &'env Env,
        job: f64,
        options: Option<Object<'env>>,
    ) -> napi::Result<Object<'env>, Code> {
        job_calls::poll(env, self.open(), job, options)
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
        options: Object<'env>,
    ) -> napi::Result<Object<'env>, Code> {
        let opts: conch_core::JobOptions = options::read(env, Some(&options), &[])?;
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
        job_calls::write(env, self.open(), job, data)
    }

    /// Closes a job's input pipe (the job reads end of file).
    #[napi(
        catch_unwind,
        ts_args_type = "job: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn close_stdin<'env>(&self, env: &'env Env, job: f64) -> napi::Result<Object<'env>, Code> {
        job_calls::close_stdin(env, self.open(), job)
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
        job_calls::write_key(env, self.open(), job, key)
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
        job_calls::signal(env, self.open(), job, signal)
    }

    /// Kills a job's whole process tree (INT, TERM, then KILL) and resolves
    /// with its last output.
    #[napi(
        catch_unwind,
        ts_args_type = "job: number",
        ts_return_type = "Promise<JobPoll>"
    )]
    pub fn kill<'env>(&self, env: &'env Env, job: f64) -> napi::Result<Object<'env>, Code> {
        job_calls::kill(env, self.open(), job)
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
        job_calls::wait_any(env, self.open(), jobs, timeout_ms)
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
