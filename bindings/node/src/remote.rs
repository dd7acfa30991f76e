//! `connect`: a `conch serve` elsewhere, through conch-remote's client. A
//! `RemoteShell` has the calls and results of a local `Shell` (`run` with
//! its options, `signal` and `onChunk`, the same `BashResult` and error
//! codes), so a host moves a session to a container by changing the line
//! that makes it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use conch_core::input::{TimeUnit, interval_option};
use conch_core::sync::Slot;
use conch_core::wire::Spelling;
use conch_core::{BashResult, CancelToken, JobExitHook, Network, RunOptions};
use conch_remote::protocol::ErrorKind;
use conch_remote::{ConnectOptions, RemoteError, RemoteRun, Target};
use napi::bindgen_prelude::{Env, JsTypeError, Object, Unknown};
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::{Status, ValueType};
use napi_derive::napi;

use crate::errors::{Code, JsResult, core_error, from_napi, invalid, rejection};
use crate::job_calls::job_methods;
use crate::options::{self, Read};
use crate::quick::{self, Steps, Streamed, StreamedSteps, streamed_call};
use crate::remote_files::RemoteFiles;
use crate::remote_pty::{RemoteArtifactStore, RemotePty};
use crate::remote_tool;
use crate::result::Js;
use crate::shell::ExitFn;
use crate::stream::Text;
use crate::teardown::{self, Close};
use crate::worker::{self, Reject};

/// The JS error of a remote call: the core's as a local call gives it,
/// or `Auth`, `ConnectionLost`, `SessionLost`, `TooManySessions`.
pub fn remote_error(err: RemoteError) -> napi::Error<Code> {
    match err {
        RemoteError::Core(err) => core_error(err),
        RemoteError::Auth(m) => napi::Error::new(Code::Auth, m),
        RemoteError::ConnectionLost(m) => napi::Error::new(Code::ConnectionLost, m),
        RemoteError::SessionLost(m) => napi::Error::new(Code::SessionLost, m),
        // A tool's error carries fields: it rejects through `Reject`.
        RemoteError::Tool(err) => napi::Error::new(Code::Internal, err.to_string()),
        RemoteError::Refused { kind, message } => match kind {
            ErrorKind::WrongType | ErrorKind::BadValue => invalid(message),
            ErrorKind::TooManySessions => napi::Error::new(Code::TooManySessions, message),
            ErrorKind::BadRequest | ErrorKind::UnknownSession => {
                napi::Error::new(Code::Internal, message)
            }
        },
    }
}

/// A value of the wrong type rejects as a `TypeError` (`code:
/// 'InvalidArg'`), as a local call throws it.
impl Reject for RemoteError {
    fn reject(self, env: &Env) -> napi::Error {
        match self {
            RemoteError::Refused {
                kind: ErrorKind::WrongType,
                message,
            } => {
                let error = napi::Error::new(Status::InvalidArg, message);
                let value = JsTypeError::from(error).into_unknown(*env);
                napi::Error::from_unknown_without_coercion(value)
            }
            RemoteError::Tool(err) => err.reject(env),
            other => rejection(env, remote_error(other)),
        }
    }
}

impl Close for conch_remote::Remote {
    fn close(&self) {
        conch_remote::Remote::close(self);
    }
}

/// A connection to `conch serve` (from `connect`).
#[napi]
pub struct Remote {
    remote: Arc<conch_remote::Remote>,
    /// Whether the connection is noted to end with its environment (done on
    /// the JS thread, at the first call).
    noted: AtomicBool,
}

/// Connects to `conch serve`: a `ws://` or `wss://` URL, or the argv of a
/// command whose stdin and stdout speak the protocol (`['docker', 'exec',
/// '-i', 'box', 'conch', 'serve', '--stdio']`). `ca`: for `wss://`, the
/// CA certificates (a PEM file) to trust (default: the system's). Rejects
/// with code `Auth` for a refused token, `ConnectionLost` for a server out
/// of reach or not trusted.
#[napi(
    catch_unwind,
    ts_args_type = "target: string | string[], options?: { token?: string, ca?: string, reconnectWithinMs?: number }",
    ts_return_type = "Promise<Remote>"
)]
pub fn connect<'env>(
    env: &'env Env,
    target: Unknown<'env>,
    options: Option<Object<'env>>,
) -> napi::Result<Object<'env>, Code> {
    let target = match target.get_type().map_err(from_napi)? {
        ValueType::String => Target::Url(
            // SAFETY: checked to be a string just above.
            unsafe { target.cast::<String>() }.map_err(from_napi)?,
        ),
        _ => Target::Command(
            // SAFETY: an array of strings, or napi's error for anything else.
            unsafe { target.cast::<Vec<String>>() }.map_err(|_| {
                invalid("target must be a ws:// URL or an array of strings (a command)")
            })?,
        ),
    };
    let mut opts = ConnectOptions::default();
    if let Some(options) = &options {
        opts.token = options.get("token").map_err(from_napi)?;
        opts.ca = options
            .get::<String>("ca")
            .map_err(from_napi)?
            .map(Into::into);
        if let Some(ms) = options.get::<f64>("reconnectWithinMs").map_err(from_napi)? {
            opts.reconnect_within =
                interval_option("reconnectWithinMs", ms, TimeUnit::Milliseconds)
                    .map_err(core_error)?;
        }
    }
    worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
        conch_remote::connect(target, opts).map(|remote| Remote {
            remote: Arc::new(remote),
            noted: AtomicBool::new(false),
        })
    })
}

impl Remote {
    /// Notes, at the first call, that the connection ends with the
    /// environment.
    fn note(&self, env: &Env) -> napi::Result<(), Code> {
        if !self.noted.swap(true, Ordering::SeqCst) {
            teardown::close_with_env(env, &self.remote).map_err(from_napi)?;
        }
        Ok(())
    }
}

#[napi]
impl Remote {
    /// Opens a session on the server with `Shell`'s options (read there:
    /// its paths, its defaults); `onJobExit` is called on the JS thread once
    /// per job end, as for `Shell`.
    #[napi(
        catch_unwind,
        ts_args_type = "options?: ShellOptions & { onJobExit?: (info: JobInfo) => void }",
        ts_return_type = "Promise<RemoteShell>"
    )]
    pub fn shell<'env>(
        &self,
        env: &'env Env,
        options: Option<Object<'env>>,
    ) -> napi::Result<Object<'env>, Code> {
        self.note(env)?;
        let sent = options::to_send(options.as_ref(), &["onJobExit"])?;
        let on_job_exit: Option<ExitFn> = match &options {
            Some(object) => object.get("onJobExit").map_err(from_napi)?,
            None => None,
        };
        let remote = self.remote.clone();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            let shell = remote.shell_spelled(sent, Spelling::CamelCase)?;
            if let Some(hook) = on_job_exit {
                shell.on_job_exit(JobExitHook::new(move |info| {
                    hook.call(Js(info), ThreadsafeFunctionCallMode::NonBlocking);
                }));
            }
            Ok::<_, RemoteError>(RemoteShell {
                sandbox_applied: shell.sandbox_applied().clone(),
                shell: Slot::new(shell),
            })
        })
    }

    /// The server's files: inside its sandbox (its sandbox flags) when it
    /// has one; relative paths from its cwd.
    #[napi(getter, catch_unwind)]
    pub fn files(&self) -> RemoteFiles {
        RemoteFiles::new(self.remote.files())
    }

    /// Opens a terminal on the server, with `PtySession`'s calls (each
    /// start's options read there, in Node's spelling).
    #[napi(catch_unwind, ts_return_type = "Promise<RemotePty>")]
    pub fn pty<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        self.note(env)?;
        let remote = self.remote.clone();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            remote.pty_spelled(Spelling::CamelCase).map(RemotePty::new)
        })
    }

    /// Opens a session on the server hosting the model's `bash` tool and
    /// its `job` tool, with `BashTool`'s options (read there; `hasUI` is
    /// not taken: no PTY runs remotely).
    #[napi(
        catch_unwind,
        ts_args_type = "options: Omit<BashToolOptions, 'hasUI'>",
        ts_return_type = "Promise<RemoteTool>"
    )]
    pub fn tool<'env>(
        &self,
        env: &'env Env,
        options: Object<'env>,
    ) -> napi::Result<Object<'env>, Code> {
        self.note(env)?;
        remote_tool::open(env, self.remote.clone(), &options)
    }

    /// Ends the connection: the server closes its sessions (at once over
    /// stdio, after its grace period over a WebSocket).
    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.remote.close();
    }
}

/// A session on a `conch serve`, with `Shell`'s calls.
#[napi]
pub struct RemoteShell {
    /// `None` once closed.
    shell: Slot<conch_remote::RemoteShell>,
    sandbox_applied: serde_json::Value,
}

impl RemoteShell {
    fn open(&self) -> Option<Arc<conch_remote::RemoteShell>> {
        self.shell.get()
    }
}

impl Streamed for RemoteShell {
    type Options = RunOptions;
    type Value = Js<BashResult>;
    type Error = RemoteError;

    fn read(env: &Env, options: &Object<'_>) -> JsResult<RunOptions> {
        options::read(env, Some(options), &["signal"])
    }

    fn begin(&self, mut opts: RunOptions, cancel: &CancelToken) -> StreamedSteps<Self> {
        opts.cancel = Some(cancel.clone());
        let started = self
            .open()
            .ok_or(RemoteError::Core(conch_core::Error::Closed("shell")))
            .and_then(|shell| shell.start_run(opts));
        Ok(steps(started))
    }
}

streamed_call! {
    #[doc = " Runs a command in the remote session, as `Shell.run` does (the same"]
    #[doc = " options, `signal`, `onChunk` and `BashResult`)."]
    impl RemoteShell {
        fn run("options: RunOptions & { signal?: AbortSignal }, onChunk?: (chunk: string) => void") -> "Promise<BashResult>";
    }
}

#[napi]
impl RemoteShell {
    /// The session's artifact store on the server (its `artifactsDir`),
    /// with `ArtifactStore`'s reads. Throws `Closed` once the session is.
    #[napi(getter, catch_unwind)]
    pub fn artifacts(&self) -> napi::Result<RemoteArtifactStore, Code> {
        let shell = self
            .open()
            .ok_or_else(|| core_error(conch_core::Error::Closed("shell")))?;
        Ok(shell.artifacts().into())
    }

    /// The session's jobs, as `Shell.jobs()` lists them (a promise here:
    /// the list comes from the server). Empty once closed.
    #[napi(catch_unwind, ts_return_type = "Promise<Array<JobInfo>>")]
    pub fn jobs<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        let shell = self.open();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| match shell {
            Some(shell) => shell.jobs().map(|jobs| jobs.into_iter().map(Js).collect()),
            None => Ok(Vec::new()),
        })
    }

    /// The loop the session's bash runs on the server, as
    /// `Shell.engine()`: `'builtin'` or `'eval'`. Rejects with `Closed`
    /// once the session is closed.
    #[napi(catch_unwind, ts_return_type = "Promise<'builtin' | 'eval'>")]
    pub fn engine<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        let shell = self.open();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            let shell = shell.ok_or(RemoteError::Core(conch_core::Error::Closed("shell")))?;
            Ok::<_, RemoteError>(shell.engine()?.as_str().to_string())
        })
    }

    /// Changes the domains the session may reach, as `Shell.setNetwork`:
    /// the policy is read here (a bad value throws as it does there) and
    /// in force on the server once the promise resolves.
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
            let shell = shell.ok_or(RemoteError::Core(conch_core::Error::Closed("shell")))?;
            shell.set_network(&network)
        })
    }

    /// Starts the session afresh on the server, as `Shell.reset()`
    /// (everything it runs killed, its jobs forgotten, a fresh bash in its
    /// start directory). Rejects with `Closed` once the session is closed.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn reset<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        let shell = self.open();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            let shell = shell.ok_or(RemoteError::Core(conch_core::Error::Closed("shell")))?;
            shell.reset()
        })
    }

    /// The pids (on the server) of what the session runs in the
    /// background, as `Shell.backgroundJobs()` (a promise here). Empty
    /// once closed.
    #[napi(catch_unwind, ts_return_type = "Promise<Array<number>>")]
    pub fn background_jobs<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        let shell = self.open();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| match shell {
            Some(shell) => shell.background_jobs(),
            None => Ok(Vec::new()),
        })
    }
}

job_methods! {
    #[doc = " Reads a job's output, as `Shell.poll` (the same options and"]
    #[doc = " `signal`, which ends the wait and never stops the job)."]
    impl RemoteShell { fn poll }
    #[doc = " Starts a job beside the session, as `Shell.start`; resolves with"]
    #[doc = " its number."]
    impl RemoteShell { fn start }
    #[doc = " Writes to a job's input, as `Shell.write` (text: the data crosses"]
    #[doc = " the wire as UTF-8)."]
    impl RemoteShell { fn write }
    #[doc = " Closes a job's input pipe, as `Shell.closeStdin`."]
    impl RemoteShell { fn close_stdin }
    #[doc = " Types a named key on a job's terminal, as `Shell.writeKey`."]
    impl RemoteShell { fn write_key }
    #[doc = " Sends a signal to a job's processes, as `Shell.signal`."]
    impl RemoteShell { fn signal }
    #[doc = " Kills a job's whole tree, as `Shell.kill`; resolves with its last"]
    #[doc = " output."]
    impl RemoteShell { fn kill }
    #[doc = " Waits up to `timeoutMs` for the first of `jobs` to end, as"]
    #[doc = " `Shell.waitAny`."]
    impl RemoteShell { fn wait_any }
}

#[napi]
impl RemoteShell {
    /// Cancels what the session runs now (if anything); its `run` resolves
    /// with `cancelled: true`.
    #[napi(catch_unwind)]
    pub fn abort(&self) {
        if let Some(shell) = self.open() {
            shell.abort();
        }
    }

    /// The files as the session's commands reach them: inside its sandbox,
    /// relative paths from its cwd. Throws `Closed` once the session is
    /// closed.
    #[napi(getter, catch_unwind)]
    pub fn files(&self) -> napi::Result<RemoteFiles, Code> {
        let shell = self
            .open()
            .ok_or_else(|| core_error(conch_core::Error::Closed("shell")))?;
        Ok(RemoteFiles::new(shell.files()))
    }

    /// What of the sandbox the server applied (`null`: none), as
    /// `Shell.sandboxApplied`.
    #[napi(getter, catch_unwind, ts_return_type = "SandboxApplied | null")]
    pub fn sandbox_applied(&self) -> Option<Js<serde_json::Value>> {
        (!self.sandbox_applied.is_null()).then(|| Js(self.sandbox_applied.clone()))
    }

    /// Closes the session on the server: everything it runs is killed.
    /// Idempotent.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        let shell = self.shell.take();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            shell.map_or(Ok(()), |shell| shell.close())
        })
    }
}

/// The steps of a run `started` on the server (a shell's, a terminal's),
/// driven as a local one is: its chunks to `onChunk`, `signal` aborting it;
/// its result `T`. The server's refusal of a value's type rejects as a
/// `TypeError` (see `Reject`), as a local start throws it.
pub fn steps<T>(started: Result<RemoteRun<T>, RemoteError>) -> Steps<Js<T>, RemoteError>
where
    T: serde::de::DeserializeOwned + serde::Serialize + Send + 'static,
{
    match started {
        Ok(mut run) => {
            Box::new(move |until, sink| run.drive(until, sink).map(|result| result.map(Js)))
        }
        Err(err) => quick::once_boxed(move || Err(err)),
    }
}
