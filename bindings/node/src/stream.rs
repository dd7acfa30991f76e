//! Chunks (or live updates) from the worker thread to a JS callback, in
//! order, none lost.
//!
//! Each chunk becomes one queued call of a threadsafe function, so the JS
//! callback sees them in the order the core produced them. The worker does
//! not wait for each call (that would stall reading on every chunk); it
//! waits only when more than [`WINDOW`] bytes are still queued, which bounds
//! memory when JS is slower than the command, and before the promise
//! settles it waits for every call to be delivered ([`Chunks::finish`]), so
//! no chunk ever arrives after `await`.
//!
//! A callback that throws stops delivery and cancels the run; the promise
//! then rejects with the thrown value itself.
//!
//! The worker must never wait for the JS thread while the JS thread waits
//! for the worker: `shell.close()` blocks until the run ends. Such calls
//! enter [`JsBlocked`], and back-pressure yields while one is active.
//!
//! A chunk carries the marks of the run that sent it (the core's
//! `shell::reentry`), and the JS thread holds them while the callback runs
//! with it: a run of the same shell started from the callback is refused
//! by the core at once, as when the JS thread drives the run itself
//! (`quick`), instead of being queued behind the run it was called from.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use conch_core::CancelToken;
use conch_core::shell::reentry::{self, BusyGuard, Entered};
use napi::bindgen_prelude::ToNapiValue;
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::{Status, check_status, sys};

use crate::errors::guarded;

/// A JS `(value: T) => unknown` callable from any thread.
pub type Callback<T> = ThreadsafeFunction<T, UnknownReturnValue, T, Status, false>;
/// A JS `(chunk: string) => unknown` callable from any thread.
pub type ChunkFn = Callback<Text>;

/// A chunk of output for JS, at most [`PIECE`] bytes, in a buffer that
/// goes back to [`SPARE`] once JS has its copy; with the marks of the run
/// that sent it, if any.
pub struct Text(String, Option<Marks>);

/// The marks of the thread that sent one chunk, held on the JS thread from
/// the chunk's conversion to a JS value (just before the callback is called
/// with it) until the callback returned ([`Chunks::send_value`]).
pub struct Marks {
    /// Tells this chunk's marks from others held on the JS thread.
    call: u64,
    entered: Entered,
}

/// Numbers the chunks that carry marks.
static NEXT_CALL: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The marks the JS thread holds for the callbacks running on it.
    static HELD: RefCell<Vec<(u64, Vec<BusyGuard>)>> = const { RefCell::new(Vec::new()) };
}

/// Lets go of the marks held for chunk `call` (JS thread).
fn release(call: u64) {
    let held = HELD.with_borrow_mut(|held| {
        held.iter()
            .position(|(c, _)| *c == call)
            .map(|at| held.remove(at))
    });
    drop(held);
}

/// Buffers of delivered chunks, kept for the next ones. A fresh 64 KiB
/// allocation per chunk, freed on the JS thread, makes the allocator give
/// the pages back and the reading thread fault them in again: at 1.6 GB/s
/// that cost the reading thread more than the copy itself.
static SPARE: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Buffers [`SPARE`] keeps at most (2 MiB, kept for the life of the
/// process): more than are in flight while JS keeps up with the output;
/// when it falls behind, the extra ones are allocated and freed.
const SPARES: usize = 32;

fn spares() -> MutexGuard<'static, Vec<String>> {
    SPARE.lock().unwrap_or_else(|e| e.into_inner())
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        let spare = spares().pop();
        let mut buf = spare.unwrap_or_else(|| String::with_capacity(PIECE));
        buf.push_str(text);
        Text(buf, None)
    }
}

impl Drop for Text {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        if buf.capacity() == PIECE {
            buf.clear();
            let mut spare = spares();
            if spare.len() < SPARES {
                spare.push(buf);
            }
        }
    }
}

impl ToNapiValue for Text {
    unsafe fn to_napi_value(env: sys::napi_env, mut val: Self) -> napi::Result<sys::napi_value> {
        // SAFETY: forwarded as received, on the JS thread.
        let value = unsafe { js_string(env, &val.0) }?;
        // The callback is called with the value next (a threadsafe call
        // converts its value right before it calls the function).
        if let Some(marks) = val.1.take() {
            let guards = marks.entered.enter();
            HELD.with_borrow_mut(|held| held.push((marks.call, guards)));
        }
        Ok(value)
    }
}

/// `text` as a JS string. ASCII text (most output) becomes a one-byte V8
/// string by a plain copy (`napi_create_string_latin1`), without the UTF-8
/// decoding `napi_create_string_utf8` does.
///
/// # Safety
/// On the JS thread of `env`.
pub unsafe fn js_string(env: sys::napi_env, text: &str) -> napi::Result<sys::napi_value> {
    let mut out = std::ptr::null_mut();
    let create = if text.is_ascii() {
        sys::napi_create_string_latin1
    } else {
        sys::napi_create_string_utf8
    };
    // SAFETY: `text` is valid for `len` bytes; ASCII is also Latin-1.
    check_status!(unsafe { create(env, text.as_ptr().cast(), text.len() as isize, &mut out) })?;
    Ok(out)
}

/// Bytes that may wait in the queue before the worker waits for JS.
const WINDOW: usize = 8 << 20;
/// Largest string handed to JS at once.
const PIECE: usize = 64 << 10;
/// How often a waiting worker re-checks cancellation and [`JsBlocked`].
const RECHECK: Duration = Duration::from_millis(10);

/// Calls of conch on the JS thread that block until a run ends.
static JS_BLOCKED: AtomicUsize = AtomicUsize::new(0);

/// Marks the JS thread as waiting on the core while alive.
pub struct JsBlocked(());

impl JsBlocked {
    pub fn enter() -> Self {
        JS_BLOCKED.fetch_add(1, Ordering::SeqCst);
        JsBlocked(())
    }
}

impl Drop for JsBlocked {
    fn drop(&mut self) {
        JS_BLOCKED.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Queue {
    bytes: usize,
    calls: usize,
    /// What the callback threw first.
    thrown: Option<napi::Error>,
}

#[derive(Default)]
struct Flow {
    queue: Mutex<Queue>,
    changed: Condvar,
}

impl Flow {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One queued call. Dropping it, whether after delivery or because the
/// environment is shutting down and the call never ran, takes it off the
/// count, so [`Chunks::finish`] cannot wait for a call that will never come.
struct InFlight {
    flow: Arc<Flow>,
    bytes: usize,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut queue = self.flow.lock();
        queue.bytes -= self.bytes;
        queue.calls -= 1;
        drop(queue);
        self.flow.changed.notify_all();
    }
}

/// The chunk callback of one call, or none.
pub struct Chunks<T: ToNapiValue + Send + 'static = String> {
    callback: Option<Callback<T>>,
    flow: Arc<Flow>,
    cancel: CancelToken,
}

/// `text` in pieces of at most [`PIECE`] bytes, cut between characters:
/// V8 puts a string of 128 KiB or more in its large-object space (an mmap
/// per string), which caps conversion at about 1 GB/s, against about 7 GB/s
/// below that.
pub fn pieces(mut text: &str) -> impl Iterator<Item = &str> {
    std::iter::from_fn(move || {
        if text.is_empty() {
            return None;
        }
        let mut cut = text.len().min(PIECE);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, rest) = text.split_at(cut);
        text = rest;
        Some(piece)
    })
}

impl Chunks<Text> {
    /// Queues a text chunk for the callback (worker thread), in [`pieces`],
    /// with the marks of this thread (see the module doc).
    pub fn send(&self, chunk: &str) {
        if self.callback.is_none() {
            return;
        }
        let entered = reentry::entered();
        for piece in pieces(chunk) {
            let mut text = Text::from(piece);
            let mut call = None;
            if !entered.is_empty() {
                let n = NEXT_CALL.fetch_add(1, Ordering::Relaxed);
                call = Some(n);
                text.1 = Some(Marks {
                    call: n,
                    entered: entered.clone(),
                });
            }
            self.queue(text, piece.len(), call);
        }
    }
}

impl<T: ToNapiValue + Send + 'static> Chunks<T> {
    /// Delivers to `callback` (if any); a throw cancels `cancel`.
    pub fn new(callback: Option<Callback<T>>, cancel: CancelToken) -> Self {
        Chunks {
            callback,
            flow: Arc::default(),
            cancel,
        }
    }

    /// Records what the callback threw before these chunks took over
    /// (delivered on the JS thread): nothing more is delivered, and
    /// [`Chunks::finish`] returns it.
    pub fn throw(&self, thrown: napi::Error) {
        let mut queue = self.flow.lock();
        if queue.thrown.is_none() {
            queue.thrown = Some(thrown);
        }
    }

    /// Queues `value`, of about `bytes` bytes, for the callback (worker thread).
    pub fn send_value(&self, value: T, bytes: usize) {
        self.queue(value, bytes, None);
    }

    /// [`Chunks::send_value`]; the marks of chunk `call`, held while the
    /// callback ran, are let go of once it returned.
    fn queue(&self, value: T, bytes: usize, call: Option<u64>) {
        let Some(callback) = &self.callback else {
            return;
        };
        {
            let mut queue = self.flow.lock();
            if queue.thrown.is_some() {
                return;
            }
            queue.bytes += bytes;
            queue.calls += 1;
        }
        let in_flight = InFlight {
            flow: self.flow.clone(),
            bytes,
        };
        let cancel = self.cancel.clone();
        callback.call_with_return_value(
            value,
            ThreadsafeFunctionCallMode::NonBlocking,
            // Runs inside napi's C callback on the JS thread: a panic there
            // would abort the host, so it is caught (and the chunk counted
            // as delivered all the same when `in_flight` drops).
            move |returned, _env| {
                let _ = guarded(move || {
                    if let Some(call) = call {
                        release(call);
                    }
                    if let Err(err) = returned {
                        let first = {
                            let mut queue = in_flight.flow.lock();
                            let first = queue.thrown.is_none();
                            if first {
                                queue.thrown = Some(err);
                            }
                            first
                        };
                        if first {
                            cancel.cancel();
                        }
                    }
                    drop(in_flight);
                });
                Ok(())
            },
        );
        let mut queue = self.flow.lock();
        while queue.bytes > WINDOW
            && !self.cancel.is_cancelled()
            && JS_BLOCKED.load(Ordering::SeqCst) == 0
        {
            queue = self.wait(queue);
        }
    }

    /// Waits until every queued chunk was delivered; returns what the
    /// callback threw, if it did.
    pub fn finish(self) -> Option<napi::Error> {
        let mut queue = self.flow.lock();
        while queue.calls > 0 {
            queue = self.wait(queue);
        }
        queue.thrown.take()
    }

    fn wait<'a>(&self, queue: MutexGuard<'a, Queue>) -> MutexGuard<'a, Queue> {
        self.flow
            .changed
            .wait_timeout(queue, RECHECK)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }
}
