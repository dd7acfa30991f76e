//! `Shell`: a persistent bash session.

use std::sync::{Arc, Mutex};

use conch_core::jobs::JobExitHook;
use conch_core::shell as core;
use conch_core::{CancelToken, Network, SandboxApplied};
use napi::Status;
use napi::bindgen_prelude::{Env, Object};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi_derive::napi;

use crate::errors::{Code, JsResult, core_error, from_napi};
use crate::job_calls::job_methods;
use crate::options::{self, Read};
use crate::quick::{self, Streamed, StreamedSteps, streamed_call};
use crate::result::Js;
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

impl Streamed for Shell {
    type Options = core::RunOptions;
    type Value = Js<core::BashResult>;
    type Error = napi::Error<Code>;

    fn read(env: &Env, options: &Object<'_>) -> JsResult<core::RunOptions> {
        options::read(env, Some(options), &["signal"])
    }

    fn begin(&self, mut opts: core::RunOptions, cancel: &CancelToken) -> StreamedSteps<Self> {
        opts.cancel = Some(cancel.clone());
        let Some(shell) = self.open() else {
            // Refused the way the core refuses a run of a closed session.
            return Ok(quick::once_boxed(|| {
                Err(core_error(conch_core::Error::Closed("shell")))
            }));
        };
        // The place is taken here, on the JS thread: runs keep the order of
        // the calls whichever thread drives them.
        let place = shell.reserve().map_err(core_error)?;
        let mut run = core::Run::new(shell, place, opts);
        Ok(Box::new(move |until, sink| {
            run.drive(until, sink)
                .map(|result| result.map(Js).map_err(core_error))
        }))
    }
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
}

streamed_call! {
    #[doc = " Runs one command. `onChunk` receives the sanitized output as it"]
    #[doc = " arrives, in order, all of it before the promise settles; if it"]
    #[doc = " throws, the command is aborted and the promise rejects with that"]
    #[doc = " error. Timeout and abort resolve with `cancelled: true`. When no"]
    #[doc = " other run is in flight, the call waits up to 2 ms for the command"]
    #[doc = " before it returns: a command that ends by then (a builtin, a small"]
    #[doc = " program) comes back settled, its chunks delivered during the call."]
    impl Shell {
        fn run("options: RunOptions & { signal?: AbortSignal }, onChunk?: (chunk: string) => void") -> "Promise<BashResult>";
    }
}

#[napi]
impl Shell {
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

    /// The loop the session's bash runs: `'builtin'` (the loop builtin,
    /// `conch-loop.so`) or `'eval'` (the eval loop); the `engine` option
    /// chooses it. The first call waits for bash's start-up, off the JS
    /// thread, and rejects as a run would for a bash that cannot start;
    /// rejects with `Closed` once the shell is closed.
    #[napi(catch_unwind, ts_return_type = "Promise<'builtin' | 'eval'>")]
    pub fn engine<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        let shell = self.open();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            let shell = shell.ok_or_else(|| core_error(conch_core::Error::Closed("shell")))?;
            let engine = shell.engine().map_err(core_error)?;
            Ok::<_, napi::Error<Code>>(engine.as_str().to_string())
        })
    }

    /// Changes the domains a session started with a domain policy
    /// (`sandbox.network: { allow, deny, resolve }`) may reach, from the
    /// next connection on (a running command keeps its open ones):
    /// `'deny'` allows none. Throws `InvalidArgument` for a bad value
    /// (`network.allow[0] must be a domain pattern …`); rejects with
    /// `InvalidArgument` for `'allow'` (the whole network cannot be opened
    /// this way) or a session without a domain policy, and with `Closed`
    /// once the shell is closed. Resolves once the policy is in force.
    #[napi(
        catch_unwind,
        ts_args_type = "policy: NonNullable<SandboxOptions['network']>",
        ts_return_type = "Promise<void>"
    )]
    pub fn set_network<'env>(
        &self,
        env: &'env Env,
        policy: Read<Network>,
    ) -> napi::Result<Object<'env>, Code> {
        let network = Read::get(env, "network", Some(policy))?;
        let shell = self.open();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            let shell = shell.ok_or_else(|| core_error(conch_core::Error::Closed("shell")))?;
            shell.set_network(&network).map_err(core_error)
        })
    }

    /// Starts the session afresh, as a new `Shell` with the same options
    /// would: everything it runs is killed as `close` kills it (a run in
    /// progress is cancelled), its jobs are forgotten, and a fresh bash
    /// starts in its start directory. The shell stays open, its options
    /// and artifacts unchanged. From the first reset on, each of its
    /// bashes forks a spare of itself before its first command, and the
    /// next reset makes the spare the session's bash (a fork, not a bash's
    /// start: Linux, the loop builtin, no sandbox). Rejects with `Closed`
    /// once the shell is closed.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn reset<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        let shell = self.open();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            let shell = shell.ok_or_else(|| core_error(conch_core::Error::Closed("shell")))?;
            shell.reset().map_err(core_error)
        })
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
}

job_methods! {
    #[doc = " Reads a job's output from where the previous poll stopped (or from"]
    #[doc = " `cursor`), waiting up to `waitMs` for the job to end or `until` to"]
    #[doc = " match. The wait runs off the JS thread; `signal` ends it early and"]
    #[doc = " never stops the job. Throws `InvalidArgument` for a bad option;"]
    #[doc = " rejects with `NotFound` for an unknown job and `Closed` for a"]
    #[doc = " closed shell."]
    impl Shell { fn poll }
    #[doc = " Starts `command` as a job beside the session: it sees the session's"]
    #[doc = " cwd, variables and functions and changes none of them. Resolves with"]
    #[doc = " the job's number; rejects with `TooManyJobs` at `maxJobs` (nothing"]
    #[doc = " started) and `Closed`. Throws `InvalidArgument` for a bad option."]
    impl Shell { fn start }
    #[doc = " Writes to a job's input (its pipe, or its terminal as typed). Rejects"]
    #[doc = " with `NoInput` when the job takes none (ended, input closed, started"]
    #[doc = " without `stdin` or `pty`) and `NotFound` for an unknown job."]
    impl Shell { fn write }
    #[doc = " Closes a job's input pipe (the job reads end of file)."]
    impl Shell { fn close_stdin }
    #[doc = " Types a named key (`'enter'`, `'ctrl+c'`, `'backspace'`, `'up'`…)"]
    #[doc = " on a job's terminal."]
    impl Shell { fn write_key }
    #[doc = " Sends a signal to every process of a job: a name (`'TERM'`,"]
    #[doc = " `'SIGINT'`) or a number (`9`). Throws `InvalidArgument` for an"]
    #[doc = " unknown signal."]
    impl Shell { fn signal }
    #[doc = " Kills a job's whole process tree (INT, TERM, then KILL) and resolves"]
    #[doc = " with its last output."]
    impl Shell { fn kill }
    #[doc = " Waits up to `timeoutMs` for the first of `jobs` to end: resolves"]
    #[doc = " with its number (at once for one already ended), or `null` when"]
    #[doc = " none ended in time."]
    impl Shell { fn wait_any }
}

#[napi]
impl Shell {
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
