//! Locking that survives a panicking holder, waits on a condition
//! variable up to a deadline the clock may not reach, and the slot a
//! face's handle holds its value in until it is closed.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Locks a mutex, ignoring poisoning: the data behind conch's mutexes stays
/// consistent even if a holder panicked (no multi-step invariants).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a face's handle holds until it is closed: its calls take a
/// reference to the value (none once closed), its close takes the value
/// itself, once; a call in flight keeps its reference to the end.
pub struct Slot<T>(Mutex<Option<Arc<T>>>);

impl<T> Slot<T> {
    pub fn new(value: T) -> Self {
        Slot(Mutex::new(Some(Arc::new(value))))
    }

    /// The value, unless closed.
    pub fn get(&self) -> Option<Arc<T>> {
        lock(&self.0).clone()
    }

    /// The value, once: the slot is closed from now on.
    pub fn take(&self) -> Option<Arc<T>> {
        lock(&self.0).take()
    }
}

/// The moment `wait` from now; `None` for a wait too long for the clock
/// (a Rust caller may pass `Duration::MAX`; the faces refuse such waits):
/// no deadline.
pub fn deadline_after(wait: Duration) -> Option<Instant> {
    Instant::now().checked_add(wait)
}

/// Whether `deadline` (as [`deadline_after`] gives it) has passed at `now`.
pub fn passed(deadline: Option<Instant>, now: Instant) -> bool {
    deadline.is_some_and(|d| now >= d)
}

/// Waits on `changed` with `guard` until notified, or until `deadline`
/// (none: until notified), ignoring poisoning as [`lock`] does.
pub fn wait_until<'a, T>(
    changed: &Condvar,
    guard: MutexGuard<'a, T>,
    deadline: Option<Instant>,
    now: Instant,
) -> MutexGuard<'a, T> {
    match deadline {
        Some(d) => changed
            .wait_timeout(guard, d.saturating_duration_since(now))
            .map_or_else(|e| e.into_inner().0, |(g, _)| g),
        None => changed.wait(guard).unwrap_or_else(|e| e.into_inner()),
    }
}
