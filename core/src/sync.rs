//! Locking that survives a panicking holder.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning: the data behind conch's mutexes stays
/// consistent even if a holder panicked (no multi-step invariants).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
