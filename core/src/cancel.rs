//! A cancellation token that can be triggered from any thread.
//!
//! Runs block in `poll(2)` on their pipes, so a flag alone would only be seen
//! at the next wake-up. Besides the flag, a token therefore keeps wakers:
//! callbacks (in practice, writes to an eventfd) that interrupt a blocked
//! run the moment `cancel()` is called.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::lock;

type Waker = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    next_waker: AtomicU64,
    wakers: Mutex<Vec<(u64, Waker)>>,
}

/// Cloneable handle; every clone cancels the same thing.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: sets the flag and wakes every registered waiter. Idempotent.
    pub fn cancel(&self) {
        if self.inner.cancelled.swap(true, Ordering::SeqCst) {
            return;
        }
        let wakers: Vec<Waker> = lock(&self.inner.wakers)
            .iter()
            .map(|(_, w)| w.clone())
            .collect();
        for w in wakers {
            w();
        }
    }

    /// Whether `cancel()` was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Calls `waker` on cancellation (at once if already cancelled) until the
    /// returned guard is dropped.
    pub fn on_cancel(&self, waker: impl Fn() + Send + Sync + 'static) -> CancelGuard {
        let id = self.inner.next_waker.fetch_add(1, Ordering::Relaxed);
        let waker: Waker = Arc::new(waker);
        lock(&self.inner.wakers).push((id, waker.clone()));
        if self.is_cancelled() {
            waker();
        }
        CancelGuard {
            token: self.clone(),
            id,
        }
    }
}

/// Unregisters a waker when dropped.
pub struct CancelGuard {
    token: CancelToken,
    id: u64,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        lock(&self.token.inner.wakers).retain(|(id, _)| *id != self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn wakers_fire_once_and_unregister() {
        let t = CancelToken::new();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let guard = t.on_cancel(move || {
            h.fetch_add(1, Ordering::SeqCst);
        });
        let h2 = hits.clone();
        drop(t.on_cancel(move || {
            h2.fetch_add(100, Ordering::SeqCst);
        }));
        t.clone().cancel();
        t.cancel();
        assert!(t.is_cancelled());
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        drop(guard);
        // registering after cancellation fires immediately
        let h3 = hits.clone();
        let _g = t.on_cancel(move || {
            h3.fetch_add(10, Ordering::SeqCst);
        });
        assert_eq!(hits.load(Ordering::SeqCst), 11);
    }
}
