//! A call that usually ends quickly (a shell command) answered without a
//! round trip through the event loop.
//!
//! The call runs on a pooled thread as with [`worker::spawn`], but when no
//! other call is in flight the JS thread does not return at once: it sleeps
//! until the call ends or [`BUDGET`] passes, whichever comes first. A call
//! that ends within it settles on the JS thread: its chunks go straight to
//! the callback, in order, and the promise comes back already settled. That
//! saves a trip through the event loop (a threadsafe function call and the
//! wake-up of the loop) and two threadsafe functions per call. A call still
//! running at the budget (or holding more than [`HELD_LIMIT`] bytes of
//! output) goes on as with [`worker::spawn`]: from then on its chunks go
//! through a threadsafe function and the promise settles from the pool.
//!
//! The JS thread waits asleep on a condition variable, never spinning: on
//! a busy machine a spinning thread takes the CPU that bash needs to end
//! the very command it waits for.
//!
//! The two threads share a [`Handover`]: the phase moves from `WAITING` to
//! `DONE` (the call ended while the JS thread waited) or to `DETACHED` (the
//! JS thread stopped waiting, or the output grew too large), whichever side
//! gets there first.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use conch_core::CancelToken;
use napi::JsValue;
use napi::bindgen_prelude::{
    Env, FromNapiValue, Function, JsError, Object, ToNapiValue, Unknown, sys,
};

use crate::errors::{Code, from_napi};
use crate::signal::{Attached, Signal};
use crate::stream::{ChunkFn, Chunks, Text, js_string, pieces};
use crate::worker::{self, Failure, Reject};

/// How long the JS thread waits for a call before it lets it go on alone:
/// a builtin or a small external command (`/bin/true` costs bash itself
/// most of a millisecond) ends within it, and the event loop is held no
/// longer than a frame's worth of other work.
pub const BUDGET: Duration = Duration::from_millis(2);
/// Output held for the JS thread before the call goes on alone.
const HELD_LIMIT: usize = 1 << 20;

/// Calls started and not yet ended, in the whole process.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

const WAITING: u8 = 0;
const DONE: u8 = 1;
const DETACHED: u8 = 2;

/// The chunk callback as the JS thread receives it.
pub type ChunkFunction<'env> = Function<'env, Text, Unknown<'env>>;

struct Held<T: ToNapiValue, E> {
    /// Output made while the JS thread waited.
    output: String,
    /// The call's outcome, once it ended while the JS thread waited.
    outcome: Option<Result<T, E>>,
    /// Installed by the JS thread once detached: where chunks go, and the
    /// promise to settle.
    detached: Option<Detached<T>>,
}

/// Makes the value a detached call settles with, on the JS thread.
type Settler<T> = Box<dyn FnOnce(Env) -> napi::Result<T> + Send>;

struct Detached<T: ToNapiValue> {
    chunks: Chunks<Text>,
    deferred: napi::JsDeferred<T, Settler<T>>,
    attached: Option<Attached>,
}

struct Handover<T: ToNapiValue, E> {
    phase: AtomicU8,
    held: Mutex<Held<T, E>>,
    /// Signalled when the phase moves (the JS thread sleeps on it) and when
    /// the detached route is installed (the pooled thread waits for that).
    changed: Condvar,
}

impl<T: ToNapiValue, E> Handover<T, E> {
    fn lock(&self) -> MutexGuard<'_, Held<T, E>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Moves the phase on from `WAITING` (call with `held` locked, so the
    /// JS thread cannot miss it); false if the other side moved it first.
    fn leave_waiting(&self, to: u8) -> bool {
        let moved = self
            .phase
            .compare_exchange(WAITING, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        self.changed.notify_all();
        moved
    }

    /// Waits (pooled thread) until the JS thread installed the detached route.
    fn detached_route(&self) -> Detached<T> {
        let mut held = self.lock();
        loop {
            if let Some(route) = held.detached.take() {
                return route;
            }
            held = self.changed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The chunk sink a quick call writes to (pooled thread).
pub struct QuickChunks<T: ToNapiValue, E> {
    handover: Arc<Handover<T, E>>,
    route: RefCell<Option<Detached<T>>>,
}

impl<T: ToNapiValue, E> QuickChunks<T, E> {
    /// Passes a chunk on: held for the waiting JS thread, or sent on
    /// the detached route.
    pub fn send(&self, chunk: &str) {
        if self.route.borrow().is_none() {
            let mut held = self.handover.lock();
            if self.handover.phase.load(Ordering::Acquire) == WAITING {
                if held.output.len() + chunk.len() <= HELD_LIMIT {
                    held.output.push_str(chunk);
                    return;
                }
                // Too much to hold: go on without the JS thread.
                self.handover.leave_waiting(DETACHED);
            }
            drop(held);
            self.take_route();
        }
        if let Some(route) = self.route.borrow().as_ref() {
            route.chunks.send(chunk);
        }
    }

    /// Takes the detached route (the JS thread sent what was held).
    fn take_route(&self) {
        *self.route.borrow_mut() = Some(self.handover.detached_route());
    }
}

/// Refuses a chunk callback that is not a function, before anything starts:
/// found later, when the call detaches, the pooled thread would wait for a
/// route that never comes, and hold its shell's place for good.
pub fn ensure_function(name: &str, callback: Option<&ChunkFunction<'_>>) -> napi::Result<(), Code> {
    let Some(callback) = callback else {
        return Ok(());
    };
    match callback.to_unknown().get_type().map_err(from_napi)? {
        napi::ValueType::Function => Ok(()),
        other => Err(crate::errors::invalid(format!(
            "{name} must be a function, got {}",
            format!("{other:?}").to_lowercase()
        ))),
    }
}

/// Starts `work` on a pooled thread and waits for it up to [`BUDGET`];
/// returns the promise of its result (already settled if it ended).
pub fn run<'env, T, E, W>(
    env: &'env Env,
    signal: Option<Signal>,
    callback: Option<ChunkFunction<'env>>,
    cancel: CancelToken,
    work: W,
) -> napi::Result<Object<'env>, Code>
where
    T: ToNapiValue + Send + 'static,
    E: Reject,
    W: FnOnce(&QuickChunks<T, Failure<E>>) -> Result<T, E> + Send + 'static,
{
    let attached = match signal {
        Some(signal) => signal.attach(env, &cancel).map_err(from_napi)?,
        None => None,
    };
    let handover = Arc::new(Handover {
        phase: AtomicU8::new(WAITING),
        held: Mutex::new(Held {
            output: String::new(),
            outcome: None,
            detached: None,
        }),
        changed: Condvar::new(),
    });
    let theirs = handover.clone();
    // Only a call with no other in flight waits: waiting for each of many
    // calls started at once would run them one after another.
    let alone = IN_FLIGHT.fetch_add(1, Ordering::AcqRel) == 0;
    let started = conch_threads::run(move || {
        let chunks_out = QuickChunks {
            handover: theirs,
            route: RefCell::new(None),
        };
        let outcome = worker::contained(|| work(&chunks_out));
        IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
        let handover = &chunks_out.handover;
        let outcome = if chunks_out.route.borrow().is_none() {
            let mut held = handover.lock();
            held.outcome = Some(outcome);
            if handover.leave_waiting(DONE) {
                return;
            }
            let outcome = held.outcome.take();
            drop(held);
            chunks_out.take_route();
            outcome.expect("outcome just stored")
        } else {
            outcome
        };
        let route = chunks_out.route.take().expect("detached route installed");
        settle_from_pool(route, outcome);
    });
    if let Err(err) = started {
        IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
        if let Some(a) = attached {
            a.detach(env);
        }
        return Err(napi::Error::new(
            Code::Internal,
            format!("cannot start a thread: {err}"),
        ));
    }

    let start = Instant::now();
    let until = if alone { start + BUDGET } else { start };
    loop {
        let now = Instant::now();
        match handover.phase.load(Ordering::Acquire) {
            DONE => return settle_here(env, &handover, callback, attached),
            DETACHED => break,
            _ if now >= until => {
                let _held = handover.lock();
                handover.leave_waiting(DETACHED);
            }
            _ => {
                let held = handover.lock();
                if handover.phase.load(Ordering::Acquire) == WAITING {
                    let _ = handover.changed.wait_timeout(held, until - now);
                }
            }
        }
    }
    detach(env, &handover, callback, cancel, attached)
}

/// The call ended while the JS thread waited: deliver and settle here.
fn settle_here<'env, T: ToNapiValue, E: Reject>(
    env: &'env Env,
    handover: &Handover<T, E>,
    callback: Option<ChunkFunction<'env>>,
    attached: Option<Attached>,
) -> napi::Result<Object<'env>, Code> {
    let (output, outcome) = {
        let mut held = handover.lock();
        (
            std::mem::take(&mut held.output),
            held.outcome.take().expect("outcome of a finished call"),
        )
    };
    let raw = env.raw();
    let thrown = match &callback {
        Some(callback) => deliver(raw, callback.raw(), &output).map_err(from_napi)?,
        None => None,
    };
    if let Some(a) = attached {
        a.detach(env);
    }
    let mut deferred = std::ptr::null_mut();
    let mut promise = std::ptr::null_mut();
    // SAFETY: on the JS thread of `env`, with out-pointers to locals.
    napi::check_status!(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) })
        .map_err(from_napi)?;
    // SAFETY: `deferred` was just made on this thread and is settled once;
    // every value is a live value of `env`.
    let status = unsafe {
        match (thrown, outcome) {
            (Some(thrown), _) => sys::napi_reject_deferred(raw, deferred, thrown),
            (None, outcome) => {
                let value = outcome
                    .map_err(|err| err.reject(env))
                    .and_then(|value| T::to_napi_value(raw, value));
                match value {
                    Ok(value) => sys::napi_resolve_deferred(raw, deferred, value),
                    Err(err) => {
                        let value = JsError::from(err).into_unknown(*env).raw();
                        sys::napi_reject_deferred(raw, deferred, value)
                    }
                }
            }
        }
    };
    napi::check_status!(status).map_err(from_napi)?;
    Ok(Object::from_raw(raw, promise))
}

/// Calls `callback` with `text` in [`pieces`], stopping at the first throw;
/// returns the thrown value itself (any value: JS may throw a string).
fn deliver(
    env: sys::napi_env,
    callback: sys::napi_value,
    text: &str,
) -> napi::Result<Option<sys::napi_value>> {
    let mut this = std::ptr::null_mut();
    // SAFETY: on the JS thread of `env`, inside a call from JS; every value
    // passed is a live value of `env`.
    unsafe {
        napi::check_status!(sys::napi_get_undefined(env, &mut this))?;
        for piece in pieces(text) {
            let arg = js_string(env, piece)?;
            let mut returned = std::ptr::null_mut();
            match sys::napi_call_function(env, this, callback, 1, &arg, &mut returned) {
                sys::Status::napi_ok => {}
                sys::Status::napi_pending_exception => {
                    let mut thrown = std::ptr::null_mut();
                    napi::check_status!(sys::napi_get_and_clear_last_exception(env, &mut thrown))?;
                    return Ok(Some(thrown));
                }
                status => napi::check_status!(status)?,
            }
        }
    }
    Ok(None)
}

/// The JS thread stops waiting: the call goes on as with [`worker::spawn`].
fn detach<'env, T: ToNapiValue, E>(
    env: &'env Env,
    handover: &Handover<T, E>,
    callback: Option<ChunkFunction<'env>>,
    cancel: CancelToken,
    attached: Option<Attached>,
) -> napi::Result<Object<'env>, Code> {
    let tsfn = match callback {
        // SAFETY: a live function of `env`, on its JS thread.
        Some(f) => {
            Some(unsafe { ChunkFn::from_napi_value(env.raw(), f.raw()) }.map_err(from_napi)?)
        }
        None => None,
    };
    let (deferred, promise) = env.create_deferred::<T, Settler<T>>().map_err(from_napi)?;
    let chunks = Chunks::new(tsfn, cancel);
    let mut held = handover.lock();
    // What was held goes first, as one chunk (a callback that throws on it
    // is called once), and now: the pooled thread may not send again soon.
    chunks.send(&std::mem::take(&mut held.output));
    held.detached = Some(Detached {
        chunks,
        deferred,
        attached,
    });
    drop(held);
    handover.changed.notify_all();
    Ok(promise)
}

/// Settles a detached call from the pooled thread, after its last chunk.
fn settle_from_pool<T: ToNapiValue + Send + 'static, E: Reject>(
    route: Detached<T>,
    outcome: Result<T, E>,
) {
    let thrown = route.chunks.finish();
    let attached = route.attached;
    route.deferred.resolve(Box::new(move |env: Env| {
        worker::guarded_settlement(&env, attached, thrown, outcome)
    }));
}
