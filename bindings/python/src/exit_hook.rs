//! `Shell(on_job_exit=...)`: the core's job exit hook calling a Python
//! callable.
//!
//! The core calls the hook on a thread of its own once per job end, never
//! holding a lock of the session. Here that thread attaches to the
//! interpreter (takes the GIL) and calls the callable with the job's
//! `conch.JobInfo`. Nobody waits for the call, so an exception it raises
//! goes to `sys.unraisablehook` (as an exception in a `__del__` does) and
//! harms nothing else.
//!
//! The callable is held in a [`Slot`] shared by the hook and the `Shell`,
//! so that the garbage collector sees it (a callback that refers to its
//! own `Shell` is a cycle the collector can break: `__traverse__` and
//! `__clear__` of `Shell` and `RemoteShell`, [`collected!`]).
//!
//! At interpreter exit the `atexit` hook ([`shut_down`]) stops calling into
//! Python before the open shells are closed (their jobs' ends would call
//! the hook while the interpreter finalizes), and waits a bounded time for
//! calls already under way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use conch_core::{JobExitHook, JobInfo};
use pyo3::prelude::*;

/// How long interpreter exit waits for `on_job_exit` calls under way.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Set at interpreter exit: no more calls into Python.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);
/// Calls under way, and the condition [`shut_down`] waits on.
static IN_FLIGHT: Mutex<usize> = Mutex::new(0);
static SETTLED: Condvar = Condvar::new();

/// The `on_job_exit` callable; `None` once the collector cleared it.
#[derive(Default)]
pub struct Slot(Mutex<Option<Py<PyAny>>>);

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Py<PyAny>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `__traverse__`: the callable, unless the slot is busy (then it is
    /// being called or cleared, and not garbage).
    pub fn visit(&self, visit: &pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        match self.0.try_lock() {
            Ok(held) => visit.call(held.as_ref()),
            Err(_) => Ok(()),
        }
    }

    /// `__clear__`: drops the callable.
    pub fn clear(&self) {
        let callable = self.lock().take();
        drop(callable);
    }
}

/// `__traverse__` and `__clear__` of `$class` (`Shell`, `RemoteShell`),
/// whose field `on_job_exit` (an `Option<Arc<Slot>>`) holds the callable.
macro_rules! collected {
    ($class:ty) => {
        #[::pyo3::pymethods]
        impl $class {
            fn __traverse__(
                &self,
                visit: ::pyo3::PyVisit<'_>,
            ) -> Result<(), ::pyo3::PyTraverseError> {
                match &self.on_job_exit {
                    Some(slot) => slot.visit(&visit),
                    None => Ok(()),
                }
            }

            fn __clear__(&self) {
                if let Some(slot) = &self.on_job_exit {
                    slot.clear();
                }
            }
        }
    };
}
pub(crate) use collected;

/// The core's hook for `on_job_exit` (a callable checked by the caller),
/// and the slot the `Shell` keeps for the collector.
pub fn hook(callable: Bound<'_, PyAny>) -> (JobExitHook, Arc<Slot>) {
    let slot = Arc::new(Slot(Mutex::new(Some(callable.unbind()))));
    let held = slot.clone();
    let hook = JobExitHook::new(move |info: JobInfo| call(&held, info));
    (hook, slot)
}

fn call(slot: &Slot, info: JobInfo) {
    // Counted before the flag is read: `shut_down` sets the flag, then
    // waits for the count, so it sees this call or this call sees the flag.
    let _call = InFlight::enter();
    if SHUTTING_DOWN.load(Ordering::SeqCst) {
        return;
    }
    // No interpreter (finalizing, or gone): nobody to tell.
    let _ = Python::try_attach(|py| {
        let Some(callable) = slot.lock().as_ref().map(|c| c.clone_ref(py)) else {
            return;
        };
        let callable = callable.into_bound(py);
        let result = crate::errors::guard(|| {
            let info = crate::result::to_python(py, crate::result::Class::JobInfo, &info)?;
            callable.call1((info,))
        });
        if let Err(err) = result {
            err.write_unraisable(py, Some(&callable));
        }
    });
}

/// One call under way, counted while it lives.
struct InFlight;

impl InFlight {
    fn enter() -> InFlight {
        *IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        *IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        SETTLED.notify_all();
    }
}

/// Interpreter exit: no `on_job_exit` call starts from now on; waits (up
/// to [`EXIT_WAIT`]; call it with the GIL released) for those under way.
pub fn shut_down() {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + EXIT_WAIT;
    let mut count = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
    while *count > 0 {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        count = SETTLED
            .wait_timeout(count, deadline - now)
            .map_or_else(|e| e.into_inner().0, |(c, _)| c);
    }
}
