//! Runs one long core call on a thread of its own and settles a promise.
//!
//! The call gets a [`CancelToken`] tied to the caller's `AbortSignal` and a
//! chunk sink tied to the caller's callback. When it returns, the thread
//! waits until every chunk reached JS, then settles the promise from the JS
//! thread: with the value, with the value the chunk callback threw, or with
//! the core's error.

use conch_core::CancelToken;
use napi::bindgen_prelude::{Env, Object, ToNapiValue};

use crate::errors::{Code, JsResult, from_napi, rejection};
use crate::signal::Signal;
use crate::stream::{ChunkFn, Chunks};

/// What the core call on the worker gets: the chunk sink to hand to the
/// core as its `on_chunk`.
pub struct Run<'a> {
    chunks: &'a Chunks,
}

impl Run<'_> {
    /// The core's chunk callback.
    pub fn on_chunk(&self) -> impl FnMut(&str) + '_ {
        |chunk| self.chunks.send(chunk)
    }
}

/// Starts `work` on a new thread and returns the promise of its result.
/// `cancel` is the token `work` hands to the core: the signal and a
/// throwing chunk callback cancel it.
pub fn spawn<'env, T, W>(
    env: &'env Env,
    signal: Option<Signal>,
    on_chunk: Option<ChunkFn>,
    cancel: CancelToken,
    work: W,
) -> JsResult<Object<'env>>
where
    T: ToNapiValue + Send + 'static,
    W: FnOnce(&Run<'_>) -> JsResult<T> + Send + 'static,
{
    let attached = signal
        .map(|s| s.attach(env, &cancel))
        .transpose()
        .map_err(from_napi)?;
    let (deferred, promise) = match env.create_deferred() {
        Ok(made) => made,
        Err(err) => {
            if let Some(a) = attached {
                a.detach(env);
            }
            return Err(from_napi(err));
        }
    };
    let thread = std::thread::Builder::new()
        .name("conch-run".into())
        .spawn(move || {
            let chunks = Chunks::new(on_chunk, cancel);
            let result = work(&Run { chunks: &chunks });
            let thrown = chunks.finish();
            deferred.resolve(move |env: Env| {
                if let Some(a) = attached {
                    a.detach(&env);
                }
                match (thrown, result) {
                    (Some(thrown), _) => Err(thrown),
                    (None, Ok(value)) => Ok(value),
                    (None, Err(err)) => Err(rejection(&env, err)),
                }
            });
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
