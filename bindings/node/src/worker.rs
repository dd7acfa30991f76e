//! Runs one long core call on a pooled thread and settles a promise.
//! Threads come from `conch_threads`.
//!
//! The call gets a [`CancelToken`] tied to the caller's `AbortSignal` and a
//! sink tied to the caller's callback. When it returns, the thread waits
//! until every value reached JS, then settles the promise from the JS
//! thread: with the value, with the value the callback threw, or with the
//! call's error. A panic of the call (or of settling it) becomes an
//! `Internal` rejection, never an abort of the host or a promise left
//! pending.

use std::sync::Arc;

use conch_core::CancelToken;
use napi::bindgen_prelude::{Env, Object, ToNapiValue};

use crate::errors::{Code, from_napi, guarded, rejection};
use crate::signal::{Attached, Signal};
use crate::stream::{Callback, Chunks};
use crate::teardown::{self, InFlight};

/// An error a call rejects with, made into a JS value on the JS thread.
pub trait Reject: Send + 'static {
    fn reject(self, env: &Env) -> napi::Error;
}

impl Reject for napi::Error<Code> {
    fn reject(self, env: &Env) -> napi::Error {
        rejection(env, self)
    }
}

/// A call's own error, or the panic that ended it.
pub enum Failure<E> {
    Call(E),
    Panic(napi::Error<Code>),
}

impl<E: Reject> Reject for Failure<E> {
    fn reject(self, env: &Env) -> napi::Error {
        match self {
            Failure::Call(err) => err.reject(env),
            Failure::Panic(err) => rejection(env, err),
        }
    }
}

/// Runs a call's `work` on its pooled thread, a panic caught as a [`Failure`].
pub fn contained<T, E>(work: impl FnOnce() -> Result<T, E>) -> Result<T, Failure<E>> {
    match guarded(work) {
        Ok(outcome) => outcome.map_err(Failure::Call),
        Err(panic) => Err(Failure::Panic(panic)),
    }
}

/// [`settlement`] with a panic while settling caught (it runs inside a call
/// from napi's C code on the JS thread, where unwinding would abort).
pub fn guarded_settlement<T, E: Reject>(
    env: &Env,
    attached: Option<Attached>,
    thrown: Option<napi::Error>,
    outcome: Result<T, E>,
) -> napi::Result<T> {
    guarded(|| settlement(env, attached, thrown, outcome))
        .unwrap_or_else(|p| Err(rejection(env, p)))
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

/// Starts `work` on a pooled thread and returns the promise of its result.
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
    // Cancelled if the environment ends first (a terminated Worker).
    let in_flight = Arc::new(InFlight(cancel.clone()));
    teardown::close_with_env(env, &in_flight).map_err(from_napi)?;
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
    let thread = conch_threads::run(move || {
        let chunks = Chunks::new(callback, cancel);
        let result = contained(|| work(&chunks));
        drop(in_flight);
        let thrown = chunks.finish();
        deferred.resolve(move |env: Env| guarded_settlement(&env, attached, thrown, result));
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
