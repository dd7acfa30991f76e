//! The job calls `Shell` and `RemoteShell` share, written once: their
//! `#[napi]` methods are declared by [`job_methods!`] (each class gives its
//! own doc comments), read their arguments here and make their call through
//! the [`JobCalls`] and [`JobStart`] of the session (the core's `Shell`, or
//! conch-remote's client), off the JS thread when it may wait.

use std::sync::Arc;
use std::time::Duration;

use conch_core::input::signal_option;
use conch_core::{CancelToken, JobId, JobOptions, JobPoll, PollOptions};
use conch_remote::{RemoteError, RemoteShell};
use napi::bindgen_prelude::{Buffer, Either, Env, Object, ToNapiValue};

use crate::errors::{Code, JsResult, core_error, from_napi};
use crate::remote::remote_error;
use crate::result::Js;
use crate::signal::Signal;
use crate::stream::Text;
use crate::worker::Reject;
use crate::{jobs, options, quick, worker};

/// A session's job calls, their errors as JS errors.
pub trait JobCalls: Send + Sync + 'static {
    fn job_poll(&self, job: JobId, opts: &PollOptions, cancel: &CancelToken) -> JsResult<JobPoll>;
    fn job_write(&self, job: JobId, data: &[u8]) -> JsResult<()>;
    fn job_close_stdin(&self, job: JobId) -> JsResult<()>;
    fn job_key(&self, job: JobId, key: &str) -> JsResult<()>;
    fn job_signal(&self, job: JobId, signal: &str) -> JsResult<()>;
    fn job_kill(&self, job: JobId) -> JsResult<JobPoll>;
    fn job_wait_any(&self, jobs: &[JobId], timeout: Duration) -> JsResult<Option<JobId>>;
}

/// The [`JobCalls`] of a session type whose job calls have the core's
/// names, their errors mapped by `$error`.
macro_rules! job_calls {
    ($session:ty, $error:path) => {
        impl JobCalls for $session {
            fn job_poll(
                &self,
                job: JobId,
                opts: &PollOptions,
                cancel: &CancelToken,
            ) -> JsResult<JobPoll> {
                self.poll(job, opts, Some(cancel)).map_err($error)
            }
            fn job_write(&self, job: JobId, data: &[u8]) -> JsResult<()> {
                self.write(job, data).map_err($error)
            }
            fn job_close_stdin(&self, job: JobId) -> JsResult<()> {
                self.close_stdin(job).map_err($error)
            }
            fn job_key(&self, job: JobId, key: &str) -> JsResult<()> {
                self.write_key(job, key).map_err($error)
            }
            fn job_signal(&self, job: JobId, signal: &str) -> JsResult<()> {
                self.signal(job, signal).map_err($error)
            }
            fn job_kill(&self, job: JobId) -> JsResult<JobPoll> {
                self.kill(job).map_err($error)
            }
            fn job_wait_any(&self, jobs: &[JobId], timeout: Duration) -> JsResult<Option<JobId>> {
                self.wait_any(jobs, timeout, None).map_err($error)
            }
        }
    };
}

job_calls!(conch_core::Shell, core_error);
job_calls!(RemoteShell, remote_error);

/// How a session starts a job: a local one takes its place in line on the
/// JS thread, as a run's, so that the job sees what the runs called before
/// it left, and a run called after it waits for it to be given that state.
pub trait JobStart: Send + Sync + 'static {
    /// What is taken on the JS thread (the place in line, or nothing).
    type Place: Send + 'static;
    /// The start's error, rejected as the session's other errors are.
    type Error: Reject;
    fn job_place(&self) -> JsResult<Self::Place>;
    fn job_start(&self, place: Self::Place, opts: JobOptions) -> Result<JobId, Self::Error>;
}

impl JobStart for conch_core::Shell {
    type Place = conch_core::Place;
    type Error = napi::Error<Code>;
    fn job_place(&self) -> JsResult<conch_core::Place> {
        self.reserve().map_err(core_error)
    }
    fn job_start(&self, place: conch_core::Place, opts: JobOptions) -> JsResult<JobId> {
        self.start_in_place(place, opts).map_err(core_error)
    }
}

impl JobStart for RemoteShell {
    type Place = ();
    type Error = RemoteError;
    fn job_place(&self) -> JsResult<()> {
        Ok(())
    }
    fn job_start(&self, _: (), opts: JobOptions) -> Result<JobId, RemoteError> {
        self.start(opts)
    }
}

/// The closed-handle error of every closed shell.
fn closed() -> napi::Error<Code> {
    core_error(conch_core::Error::Closed("shell"))
}

/// The session, or the closed-handle error.
fn open<S>(shell: Option<Arc<S>>) -> JsResult<Arc<S>> {
    shell.ok_or_else(closed)
}

/// A call on one job, off the JS thread (it may block: a write to a job
/// that does not read, the kill ladder, the server).
fn on_job<'env, S, T, F>(
    env: &'env Env,
    shell: Option<Arc<S>>,
    job: f64,
    call: F,
) -> napi::Result<Object<'env>, Code>
where
    S: JobCalls,
    T: ToNapiValue + Send + 'static,
    F: FnOnce(&S, JobId) -> JsResult<T> + Send + 'static,
{
    let job = jobs::job_id(job)?;
    worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
        let job = job.map_err(|n| core_error(jobs::unknown_job(n)))?;
        call(&*open(shell)?, job)
    })
}

/// `poll(job, options)`: a poll that does not wait is answered on the
/// quick path; one that waits on a thread of its own (it would keep every
/// run from the quick path while it lasts). `signal` ends the wait, never
/// the job.
pub fn poll<'env, S: JobCalls>(
    env: &'env Env,
    shell: Option<Arc<S>>,
    job: f64,
    options: Option<Object<'env>>,
) -> napi::Result<Object<'env>, Code> {
    let job = jobs::job_id(job)?;
    let opts: PollOptions = options::read(env, options.as_ref(), &["signal"])?;
    let signal: Option<Signal> = match &options {
        Some(object) => object.get("signal").map_err(from_napi)?,
        None => None,
    };
    let cancel = CancelToken::new();
    let token = cancel.clone();
    let waits = !opts.wait.is_zero();
    let work = move || {
        let job = job.map_err(|n| core_error(jobs::unknown_job(n)))?;
        open(shell)?.job_poll(job, &opts, &token).map(Js)
    };
    if waits {
        worker::spawn::<Text, _, _, _>(env, signal, None, cancel, move |_| work())
    } else {
        quick::run(env, signal, None, cancel, quick::once(work))
    }
}

/// `start(options)`: resolves with the job's number.
pub fn start<'env, S: JobStart>(
    env: &'env Env,
    shell: Option<Arc<S>>,
    options: Object<'env>,
) -> napi::Result<Object<'env>, Code> {
    let opts: JobOptions = options::read(env, Some(&options), &[])?;
    let taken = match shell {
        Some(shell) => Some((shell.job_place()?, shell)),
        None => None,
    };
    let cancel = CancelToken::new();
    match taken {
        Some((place, shell)) => {
            worker::spawn::<Text, _, _, _>(env, None, None, cancel, move |_| {
                shell.job_start(place, opts)
            })
        }
        None => {
            worker::spawn::<Text, _, _, _>(env, None, None, cancel, |_| Err::<JobId, _>(closed()))
        }
    }
}

/// `write(job, data)`: text as UTF-8, or a buffer's bytes.
pub fn write<'env, S: JobCalls>(
    env: &'env Env,
    shell: Option<Arc<S>>,
    job: f64,
    data: Either<String, Buffer>,
) -> napi::Result<Object<'env>, Code> {
    let bytes: Vec<u8> = match data {
        Either::A(text) => text.into_bytes(),
        Either::B(buffer) => buffer.to_vec(),
    };
    on_job(env, shell, job, move |shell, job| {
        shell.job_write(job, &bytes)
    })
}

pub fn close_stdin<'env, S: JobCalls>(
    env: &'env Env,
    shell: Option<Arc<S>>,
    job: f64,
) -> napi::Result<Object<'env>, Code> {
    on_job(env, shell, job, |shell, job| shell.job_close_stdin(job))
}

pub fn write_key<'env, S: JobCalls>(
    env: &'env Env,
    shell: Option<Arc<S>>,
    job: f64,
    key: String,
) -> napi::Result<Object<'env>, Code> {
    on_job(env, shell, job, move |shell, job| shell.job_key(job, &key))
}

/// `signal(job, signal)`: a name or a number, checked here (a bad one
/// throws).
pub fn signal<'env, S: JobCalls>(
    env: &'env Env,
    shell: Option<Arc<S>>,
    job: f64,
    signal: Either<String, f64>,
) -> napi::Result<Object<'env>, Code> {
    let text = match signal {
        Either::A(name) => name,
        Either::B(number) => format!("{number}"),
    };
    signal_option("signal", &text).map_err(core_error)?;
    on_job(env, shell, job, move |shell, job| {
        shell.job_signal(job, &text)
    })
}

pub fn kill<'env, S: JobCalls>(
    env: &'env Env,
    shell: Option<Arc<S>>,
    job: f64,
) -> napi::Result<Object<'env>, Code> {
    on_job(env, shell, job, |shell, job| shell.job_kill(job).map(Js))
}

/// `waitAny(jobs, timeoutMs)`.
pub fn wait_any<'env, S: JobCalls>(
    env: &'env Env,
    shell: Option<Arc<S>>,
    jobs: Vec<f64>,
    timeout_ms: f64,
) -> napi::Result<Object<'env>, Code> {
    let ids = jobs
        .into_iter()
        .map(jobs::job_id)
        .collect::<Result<Vec<_>, _>>()?;
    let timeout = options::duration_ms("timeoutMs", timeout_ms)?;
    worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
        let ids = ids
            .into_iter()
            .map(|id| id.map_err(|n| core_error(jobs::unknown_job(n))))
            .collect::<Result<Vec<_>, _>>()?;
        open(shell)?.job_wait_any(&ids, timeout)
    })
}

/// Declares job methods of `Shell` and `RemoteShell`, each in a `#[napi]
/// impl` block of its own (in the order given, which is the order of the
/// class's TypeScript declaration), with the doc comments the class gives
/// it (a remote method's point to the local one): `poll`, `start`,
/// `write`, `close_stdin`, `write_key`, `signal`, `kill`, `wait_any`. The
/// class has `fn open(&self) -> Option<Arc<S>>`, `S` its session, a
/// [`JobCalls`] and [`JobStart`].
///
/// Doc comments as `#[doc = "…"]` attributes (see [`crate::quick::streamed_call!`]).
macro_rules! job_methods {
    ($($(#[doc = $doc:literal])* impl $class:ident { fn $name:ident })*) => {
        $(crate::job_calls::job_methods!(@method [$(#[doc = $doc])*] $class $name);)*
    };
    (@method $doc:tt $class:ident poll) => {
        crate::job_calls::job_methods!(@emit $doc $class poll
            "job: number, options?: PollOptions & { signal?: AbortSignal }" -> "Promise<JobPoll>"
            (job: f64) (options: Option<napi::bindgen_prelude::Object<'env>>));
    };
    (@method $doc:tt $class:ident start) => {
        crate::job_calls::job_methods!(@emit $doc $class start
            "options: StartOptions" -> "Promise<number>"
            (options: napi::bindgen_prelude::Object<'env>));
    };
    (@method $doc:tt $class:ident write) => {
        crate::job_calls::job_methods!(@emit $doc $class write
            "job: number, data: string | Buffer" -> "Promise<void>"
            (job: f64)
            (data: napi::bindgen_prelude::Either<String, napi::bindgen_prelude::Buffer>));
    };
    (@method $doc:tt $class:ident close_stdin) => {
        crate::job_calls::job_methods!(@emit $doc $class close_stdin
            "job: number" -> "Promise<void>"
            (job: f64));
    };
    (@method $doc:tt $class:ident write_key) => {
        crate::job_calls::job_methods!(@emit $doc $class write_key
            "job: number, key: string" -> "Promise<void>"
            (job: f64) (key: String));
    };
    (@method $doc:tt $class:ident signal) => {
        crate::job_calls::job_methods!(@emit $doc $class signal
            "job: number, signal: string | number" -> "Promise<void>"
            (job: f64) (signal: napi::bindgen_prelude::Either<String, f64>));
    };
    (@method $doc:tt $class:ident kill) => {
        crate::job_calls::job_methods!(@emit $doc $class kill
            "job: number" -> "Promise<JobPoll>"
            (job: f64));
    };
    (@method $doc:tt $class:ident wait_any) => {
        crate::job_calls::job_methods!(@emit $doc $class wait_any
            "jobs: number[], timeoutMs: number" -> "Promise<number | null>"
            (jobs: Vec<f64>) (timeout_ms: f64));
    };
    // The method `$name`, with its TypeScript types and its arguments after
    // `env`, calls the function of that name here.
    (
        @emit [$($doc:tt)*] $class:ident $name:ident $args:literal -> $returns:literal
        $(($arg:ident: $($ty:tt)+))*
    ) => {
        #[napi_derive::napi]
        impl $class {
            $($doc)*
            #[napi(catch_unwind, ts_args_type = $args, ts_return_type = $returns)]
            pub fn $name<'env>(
                &self,
                env: &'env napi::bindgen_prelude::Env,
                $($arg: $($ty)+),*
            ) -> napi::Result<napi::bindgen_prelude::Object<'env>, crate::errors::Code> {
                crate::job_calls::$name(env, self.open(), $($arg),*)
            }
        }
    };
}

pub(crate) use job_methods;
