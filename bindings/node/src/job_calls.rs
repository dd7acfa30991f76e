//! The job calls `Shell` and `RemoteShell` share, written once: each class
//! method reads its arguments here and makes its call through the
//! [`JobCalls`] of its session (the core's `Shell`, or conch-remote's
//! client), off the JS thread when it may wait.

use std::sync::Arc;
use std::time::Duration;

use conch_core::input::signal_option;
use conch_core::{CancelToken, JobId, JobPoll, PollOptions};
use conch_remote::RemoteShell;
use napi::bindgen_prelude::{Buffer, Either, Env, Object, ToNapiValue};

use crate::errors::{Code, JsResult, core_error, from_napi};
use crate::remote::remote_error;
use crate::result::Js;
use crate::signal::Signal;
use crate::stream::Text;
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

/// The session, or the closed-handle error of every closed shell.
fn open<S>(shell: Option<Arc<S>>) -> JsResult<Arc<S>> {
    shell.ok_or_else(|| core_error(conch_core::Error::Closed("shell")))
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
