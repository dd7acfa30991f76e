//! Locking that survives a panicking holder, and waits on a condition
//! variable up to a deadline the clock may not reach.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Locks a mutex, ignoring poisoning: the data behind conch's mutexes stays
/// consistent even if a holder panicked (no multi-step invariants).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
