//! Runs one long core call on a thread of its own and settles a promise.
//! Threads are pooled: a thread start costs tens of microseconds, as much
//! as a whole builtin command, and calls come one after another.
//!
//! The call gets a [`CancelToken`] tied to the caller's `AbortSignal` and a
//! sink tied to the caller's callback. When it returns, the thread waits
//! until every value reached JS, then settles the promise from the JS
//! thread: with the value, with the value the callback threw, or with the
//! call's error.

use conch_core::CancelToken;
use napi::bindgen_prelude::{Env, Object, ToNapiValue};

use crate::errors::{Code, from_napi, rejection};
use crate::signal::{Attached, Signal};
use crate::stream::{Callback, Chunks};

/// An error a call rejects with, made into a JS value on the JS thread.
pub trait Reject: Send + 'static {
    fn reject(self, env: &Env) -> napi::Error;
}

impl Reject for napi::Error<Code> {
    fn reject(self, env: &Env) -> napi::Error {
        rejection(env, self)
    }
}

/// What a call settles with (JS thread): what the callback threw, else the
/// call's value or error; the signal's listener goes either way.
pub fn settlement<T, E: Reject>(
    env: &Env,
    attached: Option<Attached>,
    thrown: Option<napi::Error>,
    outcome: Result<T, E>,
) -> napi::Result<T> {
    if let Some(a) = attached {
        a.detach(env);
    }
    match (thrown, outcome) {
        (Some(thrown), _) => Err(thrown),
        (None, Ok(value)) => Ok(value),
        (None, Err(err)) => Err(err.reject(env)),
    }
}

/// Starts `work` on a new thread and returns the promise of its result.
/// `cancel` is the token `work` hands to the core: the signal and a
/// throwing callback cancel it. `work` gets the sink of `callback`.
pub fn spawn<'env, C, T, E, W>(
    env: &'env Env,
    signal: Option<Signal>,
    callback: Option<Callback<C>>,
    cancel: CancelToken,
    work: W,
) -> napi::Result<Object<'env>, Code>
where
    C: ToNapiValue + Send + 'static,
    T: ToNapiValue + Send + 'static,
    E: Reject,
    W: FnOnce(&Chunks<C>) -> Result<T, E> + Send + 'static,
{
    let attached = match signal {
        Some(signal) => signal.attach(env, &cancel).map_err(from_napi)?,
        None => None,
    };
    let (deferred, promise) = match env.create_deferred() {
        Ok(made) => made,
        Err(err) => {
            if let Some(a) = attached {
                a.detach(env);
            }
            return Err(from_napi(err));
        }
    };
    let thread = pool::run(move || {
        let chunks = Chunks::new(callback, cancel);
        let result = work(&chunks);
        let thrown = chunks.finish();
        deferred.resolve(move |env: Env| settlement(&env, attached, thrown, result));
    });
    match thread {
        Ok(_) => Ok(promise),
        // `deferred` and the signal went down with the closure; the promise
        // is never settled but also never returned.
        Err(err) => Err(napi::Error::new(
            Code::Internal,
            format!("cannot start a thread: {err}"),
        )),
    }
}

/// Threads for long calls. A call never waits for a thread: it takes an
/// idle one (reserved under the lock, so no two calls count on the same
/// one) or starts a new one. Idle threads stay for the next calls, so the
/// pool is as large as the most calls ever in flight at once.
pub mod pool {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc::{Receiver, RecvError, Sender, TryRecvError, channel};
    use std::sync::{Arc, LazyLock, Mutex};
    use std::time::{Duration, Instant};

    /// How long a thread that finished a call looks for the next one
    /// before it sleeps.
    const NEXT_JOB_SPIN: Duration = Duration::from_micros(200);

    type Job = Box<dyn FnOnce() + Send>;

    struct Pool {
        /// Threads waiting for a job and not yet promised one.
        idle: Mutex<usize>,
        jobs: Mutex<Sender<Job>>,
        queue: Arc<Mutex<Receiver<Job>>>,
    }

    static POOL: LazyLock<Pool> = LazyLock::new(|| {
        let (jobs, queue) = channel();
        Pool {
            idle: Mutex::new(0),
            jobs: Mutex::new(jobs),
            queue: Arc::new(Mutex::new(queue)),
        }
    });

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the next job, first without sleeping for up to
    /// [`NEXT_JOB_SPIN`] (one thread at a time): calls usually come one
    /// after another, and waking a sleeping thread on an idle CPU costs tens
    /// of microseconds on a virtual machine, a good part of a whole run.
    fn next_job(queue: &Mutex<Receiver<Job>>) -> Result<Job, RecvError> {
        static SPINNING: AtomicBool = AtomicBool::new(false);
        if !SPINNING.swap(true, Ordering::Acquire) {
            let until = Instant::now() + NEXT_JOB_SPIN;
            let mut found = None;
            while found.is_none() && Instant::now() < until {
                match queue.try_lock().map(|q| q.try_recv()) {
                    Ok(Ok(job)) => found = Some(job),
                    Ok(Err(TryRecvError::Disconnected)) => break,
                    // Empty, or another idle thread waits on the queue.
                    _ => std::thread::yield_now(),
                }
            }
            SPINNING.store(false, Ordering::Release);
            if let Some(job) = found {
                return Ok(job);
            }
        }
        lock(queue).recv()
    }

    /// Runs `job` on a pooled thread.
    pub fn run(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
        let pool = &*POOL;
        let mut idle = lock(&pool.idle);
        if *idle > 0 {
            *idle -= 1;
            drop(idle);
            return lock(&pool.jobs)
                .send(Box::new(job))
                .map_err(|_| std::io::Error::other("conch thread pool is gone"));
        }
        drop(idle);
        let queue = pool.queue.clone();
        std::thread::Builder::new()
            .name("conch-run".into())
            .spawn(move || {
                let mut job: Job = Box::new(job);
                loop {
                    job();
                    *lock(&POOL.idle) += 1;
                    match next_job(&queue) {
                        Ok(next) => job = next,
                        Err(_) => return,
                    }
                }
            })
            .map(|_| ())
    }
}
