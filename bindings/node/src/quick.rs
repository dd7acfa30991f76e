//! A call that usually ends quickly (a shell command) answered on the JS
//! thread, without a hand-over to another thread.
//!
//! The core drives such a call a step at a time (`conch_core::Run`). When
//! no other call is in flight, the JS thread drives it itself for up to
//! [`BUDGET`], asleep in the core's `poll` while the command runs (never
//! spinning: on a busy machine a spinning thread takes the CPU that bash
//! needs to end the very command it waits for). Its chunks go straight to
//! the callback, in order, and a call that ends within the budget comes
//! back as a promise already settled: no thread is woken for it (on a
//! virtual machine each wake-up of a sleeping CPU costs more than a
//! builtin command itself), and no trip through the event loop. A call
//! still running at the budget goes on on a pooled thread, as with
//! [`worker::spawn`]: from then on its chunks go through a threadsafe
//! function and the promise settles from the pool. So the event loop is
//! held no longer than the budget (and what the callback itself takes).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use conch_core::CancelToken;
use napi::JsValue;
use napi::bindgen_prelude::{
    Env, FromNapiValue, Function, JsError, Object, ToNapiValue, Unknown, sys,
};

use crate::errors::{Code, JsResult, from_napi, guarded};
use crate::signal::{Attached, Signal};
use crate::stream::{ChunkFn, Chunks, Text, js_string, pieces};
use crate::worker::{self, Failure, Reject};

/// How long the JS thread drives a call before it lets it go on alone:
/// a builtin or a small external command (`/bin/true` costs bash itself
/// most of a millisecond) ends within it, and the event loop is held no
/// longer than a frame's worth of other work.
pub const BUDGET: Duration = Duration::from_millis(2);

/// Calls started and not yet ended, in the whole process.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// The chunk callback as the JS thread receives it.
pub type ChunkFunction<'env> = Function<'env, Text, Unknown<'env>>;

/// Drives a call until the deadline (`None`: its end), its chunks to the
/// sink given, on the thread calling it.
pub trait Step<T, E>:
    FnMut(Option<Instant>, &mut dyn FnMut(&str)) -> Poll<Result<T, E>> + Send + 'static
{
}

impl<T, E, F> Step<T, E> for F where
    F: FnMut(Option<Instant>, &mut dyn FnMut(&str)) -> Poll<Result<T, E>> + Send + 'static
{
}

/// A call made in one piece (no output), as a [`Step`].
pub fn once<T, E>(work: impl FnOnce() -> Result<T, E> + Send + 'static) -> impl Step<T, E> {
    let mut work = Some(work);
    move |_, _| Poll::Ready(work.take().expect("a call made once")())
}

/// The steps of a call that starts one of two ways (its run, or the
/// refusal of a closed session), as a [`Step`].
pub type Steps<T, E> =
    Box<dyn FnMut(Option<Instant>, &mut dyn FnMut(&str)) -> Poll<Result<T, E>> + Send>;

/// The steps of a call made in one piece, boxed.
pub fn once_boxed<T: 'static, E: 'static>(
    work: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Steps<T, E> {
    Box::new(once(work))
}

/// A class whose call of `(options, onChunk)` (`Shell.run`,
/// `RemoteShell.run`, `RemotePty.start`) streams its output to `onChunk`
/// and resolves with its result: declared by [`streamed_call!`], answered
/// by [`streamed`].
pub trait Streamed {
    /// The options as read on the JS thread (all but `signal`).
    type Options;
    type Value: ToNapiValue + Send + 'static;
    type Error: Reject;
    fn read(env: &Env, options: &Object<'_>) -> JsResult<Self::Options>;
    /// Starts the call on the JS thread (a local run takes its place in
    /// line here: runs keep the order of the calls whichever thread drives
    /// them); `cancel` is the token the call's signal cancels.
    fn begin(&self, options: Self::Options, cancel: &CancelToken) -> StreamedSteps<Self>;
}

/// The steps [`Streamed::begin`] gives, or what it throws.
pub type StreamedSteps<S> = JsResult<Steps<<S as Streamed>::Value, <S as Streamed>::Error>>;

/// A [`Streamed`] call: `onChunk` checked, the options and `signal` read,
/// the call begun and driven by [`run`].
pub fn streamed<'env, S: Streamed>(
    handle: &S,
    env: &'env Env,
    options: Object<'env>,
    on_chunk: Option<ChunkFunction<'env>>,
) -> napi::Result<Object<'env>, Code> {
    ensure_function("onChunk", on_chunk.as_ref())?;
    let opts = S::read(env, &options)?;
    let signal: Option<Signal> = options.get("signal").map_err(from_napi)?;
    let cancel = CancelToken::new();
    let steps = handle.begin(opts, &cancel)?;
    run(env, signal, on_chunk, cancel, steps)
}

/// Declares a [`Streamed`] call of `$class` named `$name` in a `#[napi]
/// impl` block of its own, with its doc comments and TypeScript types.
/// The doc comments are written as `#[doc = "…"]` attributes: a `///`
/// comment that passes through `macro_rules!` becomes a raw string, which
/// napi-derive copies into `index.d.ts` with its `r"` left on.
macro_rules! streamed_call {
    (
        $(#[doc = $doc:literal])*
        impl $class:ident {
            fn $name:ident($args:literal) -> $returns:literal;
        }
    ) => {
        #[napi_derive::napi]
        impl $class {
            $(#[doc = $doc])*
            #[napi(catch_unwind, ts_args_type = $args, ts_return_type = $returns)]
            pub fn $name<'env>(
                &self,
                env: &'env napi::bindgen_prelude::Env,
                options: napi::bindgen_prelude::Object<'env>,
                on_chunk: Option<crate::quick::ChunkFunction<'env>>,
            ) -> napi::Result<napi::bindgen_prelude::Object<'env>, crate::errors::Code> {
                crate::quick::streamed(self, env, options, on_chunk)
            }
        }
    };
}

pub(crate) use streamed_call;

/// What the callback did instead of returning, on the JS thread.
enum Thrown {
    /// The value it threw.
    Value(sys::napi_value),
    /// A failure of napi while calling it.
    Failed(napi::Error),
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

/// Drives `step` on the JS thread for up to [`BUDGET`] (when no other call
/// is in flight), then on a pooled thread; returns the promise of its
/// result (already settled if it ended here).
pub fn run<'env, T, E, S>(
    env: &'env Env,
    signal: Option<Signal>,
    callback: Option<ChunkFunction<'env>>,
    cancel: CancelToken,
    mut step: S,
) -> napi::Result<Object<'env>, Code>
where
    T: ToNapiValue + Send + 'static,
    E: Reject,
    S: Step<T, E>,
{
    let attached = match signal {
        Some(signal) => signal.attach(env, &cancel).map_err(from_napi)?,
        None => None,
    };
    // Only a call with no other in flight is driven here: driving each of
    // many calls started at once would run them one after another.
    let alone = IN_FLIGHT.fetch_add(1, Ordering::AcqRel) == 0;
    let mut thrown = None;
    if alone {
        let raw = env.raw();
        let until = Instant::now() + BUDGET;
        let polled = guarded(|| {
            step(Some(until), &mut |chunk: &str| {
                let Some(callback) = &callback else {
                    return;
                };
                if thrown.is_some() {
                    return;
                }
                let failed = match deliver(raw, callback.raw(), chunk) {
                    Ok(None) => return,
                    Ok(Some(value)) => Thrown::Value(value),
                    Err(err) => Thrown::Failed(err),
                };
                thrown = Some(failed);
                cancel.cancel();
            })
        });
        let outcome = match polled {
            Ok(Poll::Pending) => None,
            Ok(Poll::Ready(outcome)) => Some(outcome.map_err(Failure::Call)),
            Err(panic) => Some(Err(Failure::Panic(panic))),
        };
        if let Some(outcome) = outcome {
            IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
            return settle_here(env, thrown, outcome, attached);
        }
    }
    detach(env, callback, cancel, attached, thrown, step)
}

/// The call ended on the JS thread: settle here.
fn settle_here<'env, T: ToNapiValue, E: Reject>(
    env: &'env Env,
    thrown: Option<Thrown>,
    outcome: Result<T, E>,
    attached: Option<Attached>,
) -> napi::Result<Object<'env>, Code> {
    let raw = env.raw();
    if let Some(a) = attached {
        a.detach(env);
    }
    let thrown = match thrown {
        Some(Thrown::Failed(err)) => return Err(from_napi(err)),
        Some(Thrown::Value(value)) => Some(value),
        None => None,
    };
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

/// Makes the value a detached call settles with, on the JS thread.
type Settler<T> = Box<dyn FnOnce(Env) -> napi::Result<T> + Send>;

/// The call goes on on a pooled thread, as with [`worker::spawn`]; what
/// the callback threw on the JS thread (if anything) is what it rejects
/// with.
fn detach<'env, T: ToNapiValue + Send + 'static, E: Reject, S: Step<T, E>>(
    env: &'env Env,
    callback: Option<ChunkFunction<'env>>,
    cancel: CancelToken,
    attached: Option<Attached>,
    thrown: Option<Thrown>,
    mut step: S,
) -> napi::Result<Object<'env>, Code> {
    let started = (|| {
        let tsfn = match callback {
            // SAFETY: a live function of `env`, on its JS thread.
            Some(f) => Some(unsafe { ChunkFn::from_napi_value(env.raw(), f.raw()) }?),
            None => None,
        };
        let (deferred, promise) = env.create_deferred::<T, Settler<T>>()?;
        let chunks = Chunks::new(tsfn, cancel);
        match thrown {
            Some(Thrown::Value(value)) => {
                // SAFETY: a live value of `env`, on its JS thread.
                let value = unsafe { Unknown::from_napi_value(env.raw(), value) }?;
                // Kept as it is: `Error::from` would take a reference to it,
                // which Node-API 9 refuses for a thrown string or number.
                chunks.throw(napi::Error::from_unknown_without_coercion(value));
            }
            Some(Thrown::Failed(err)) => chunks.throw(err),
            None => {}
        }
        Ok((chunks, deferred, promise))
    })();
    let (chunks, deferred, promise) = match started {
        Ok(started) => started,
        Err(err) => {
            IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
            if let Some(a) = attached {
                a.detach(env);
            }
            return Err(from_napi(err));
        }
    };
    let thread = conch_threads::run(move || {
        let outcome = loop {
            match guarded(|| step(None, &mut |chunk: &str| chunks.send(chunk))) {
                Ok(Poll::Pending) => {}
                Ok(Poll::Ready(outcome)) => break outcome.map_err(Failure::Call),
                Err(panic) => break Err(Failure::Panic(panic)),
            }
        };
        IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
        let thrown = chunks.finish();
        deferred.resolve(Box::new(move |env: Env| {
            worker::guarded_settlement(&env, attached, thrown, outcome)
        }));
    });
    match thread {
        Ok(_) => Ok(promise),
        // `deferred` and the signal went down with the closure; the promise
        // is never settled but also never returned.
        Err(err) => {
            IN_FLIGHT.fetch_sub(1, Ordering::AcqRel);
            Err(napi::Error::new(
                Code::Internal,
                format!("cannot start a thread: {err}"),
            ))
        }
    }
}
