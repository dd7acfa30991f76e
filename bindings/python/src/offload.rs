//! Runs a blocking core call for Python: the GIL is released while it
//! runs, chunk callbacks run on the calling thread, and Ctrl-C works.
//!
//! A call the core can drive in steps (a shell's run, `conch_core::Run`)
//! runs on the calling thread itself ([`drive_here`]): each step up to
//! [`SIGNAL_POLL`] with the GIL released, the GIL taken back for each
//! chunk's callback and between steps to look for signals. No thread is
//! woken to run it, which on a virtual machine costs more than a builtin
//! command itself. Other calls go to a helper thread ([`offload`]):
//!
//! The core call runs on a pooled helper thread (`conch_threads`) and
//! hands its chunks over a small bounded queue; the calling thread sleeps
//! until the next one comes, with the GIL released,
//! calls the Python callback for each (with the GIL), and checks for
//! signals between waits. So a callback runs where the caller expects it
//! (its exceptions and thread-locals are the caller's), another Python
//! thread keeps running meanwhile, and `KeyboardInterrupt` reaches a
//! blocked `run()`. A callback that raises, or a signal handler that
//! raises, cancels the run; the exception is raised once the core call has
//! returned (so nothing is left running). The queue bounds the memory in
//! flight, and the helper waits while it is full: a slow callback slows
//! the command down instead of buffering its output.
//!
//! Neither thread ever spins: on a busy machine (a host running agents) a
//! spinning waiter takes the CPU that bash needs to end the command.
//!
//! A call made from inside a callback must see that it is inside one (the
//! core refuses a run that would wait for the run whose callback it is in;
//! see `conch_core::shell::reentry`). The core marks the helper thread; so
//! each chunk carries the helper's marks to the calling thread, which
//! holds them while the callback runs, and a call started there carries
//! the calling thread's marks to its own helper.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::mpsc::{RecvTimeoutError, sync_channel};
use std::task::Poll;
use std::time::{Duration, Instant};

use conch_core::CancelToken;
use conch_core::shell::reentry::{self, Entered};
use pyo3::prelude::*;

use crate::errors::{InternalError, internal, io_error};

/// How often the waiting thread looks for signals (Ctrl-C).
const SIGNAL_POLL: Duration = Duration::from_millis(50);
/// Chunks in flight between the helper and the caller (each at most one
/// read of the core, 256 KiB).
const QUEUE_LEN: usize = 8;

enum Event<T> {
    /// A chunk, and the marks of the run it came from.
    Chunk(String, Entered),
    Done(T),
    /// The core call panicked (this error says so).
    Panicked(PyErr),
}

/// Runs `job` on a helper thread and waits for it as described above.
/// `job` gets the chunk sink to pass to the core; `cancel` is the run's own
/// token (the one `job` passes to the core), cancelled on a Python error.
pub fn offload<T: Send + 'static>(
    py: Python<'_>,
    on_chunk: Option<&Bound<'_, PyAny>>,
    cancel: &CancelToken,
    job: impl FnOnce(&mut dyn FnMut(&str)) -> T + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = sync_channel::<Event<T>>(QUEUE_LEN);
    let forward = on_chunk.is_some();
    let callers_marks = reentry::entered();
    conch_threads::run(move || {
        let chunks = tx.clone();
        let _marks = callers_marks.enter();
        let out = catch_unwind(AssertUnwindSafe(|| {
            job(&mut |chunk: &str| {
                if forward {
                    // Fails only once the caller is gone, which it never is
                    // before the end.
                    let _ = chunks.send(Event::Chunk(chunk.to_owned(), reentry::entered()));
                }
            })
        }));
        let _ = tx.send(match out {
            Ok(out) => Event::Done(out),
            Err(panic) => Event::Panicked(internal(&*panic)),
        });
    })
    .map_err(|e| io_error("cannot start a thread", &e))?;

    // `Receiver` is not `Sync`; the closure given to `detach` only borrows it.
    let rx = Mutex::new(rx);
    let mut failure: Option<PyErr> = None;
    let fail = |err: PyErr, failure: &mut Option<PyErr>| {
        if failure.is_none() {
            *failure = Some(err);
            cancel.cancel();
        }
    };
    let outcome = loop {
        let event = py.detach(|| {
            rx.lock()
                .unwrap_or_else(|e| e.into_inner())
                .recv_timeout(SIGNAL_POLL)
        });
        if let Err(err) = py.check_signals() {
            fail(err, &mut failure);
        }
        match event {
            Ok(Event::Chunk(text, marks)) => {
                if let (Some(callback), None) = (on_chunk, &failure) {
                    let _marks = marks.enter();
                    if let Err(err) = callback.call1((text,)) {
                        fail(err, &mut failure);
                    }
                }
            }
            Ok(Event::Done(out)) => break Ok(out),
            Ok(Event::Panicked(err)) => break Err(err),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                break Err(InternalError::new_err(
                    "conch: the run ended without a result",
                ));
            }
        }
    };
    if let Some(err) = failure {
        return Err(err);
    }
    outcome
}

/// Drives a call on the calling thread, a step at a time: `step(until,
/// sink)` drives it until `until` and says whether it ended. Between steps
/// and after each chunk the thread looks for signals; the GIL is released
/// while a step runs and taken back for each chunk's callback. A callback
/// that raises, or a signal handler that raises, cancels the call through
/// `cancel`; the exception is raised once the call has ended.
pub fn drive_here<T: Send>(
    py: Python<'_>,
    on_chunk: Option<&Bound<'_, PyAny>>,
    cancel: &CancelToken,
    mut step: impl FnMut(Instant, &mut dyn FnMut(&str)) -> Poll<T> + Send,
) -> PyResult<T> {
    let callback = on_chunk.map(|c| c.clone().unbind());
    let mut failure: Option<PyErr> = None;
    let outcome = loop {
        let polled = py.detach(|| {
            step(Instant::now() + SIGNAL_POLL, &mut |chunk: &str| {
                let Some(callback) = &callback else {
                    return;
                };
                if failure.is_some() {
                    return;
                }
                Python::attach(|py| {
                    let err = match callback.bind(py).call1((chunk,)) {
                        Ok(_) => py.check_signals().err(),
                        Err(err) => Some(err),
                    };
                    if let Some(err) = err {
                        failure = Some(err);
                        cancel.cancel();
                    }
                });
            })
        });
        if let Err(err) = py.check_signals()
            && failure.is_none()
        {
            failure = Some(err);
            cancel.cancel();
        }
        if let Poll::Ready(outcome) = polled {
            break outcome;
        }
    };
    match failure {
        Some(err) => Err(err),
        None => Ok(outcome),
    }
}
