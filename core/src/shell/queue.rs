//! First-come, first-served turns: one run at a time per shell, concurrent
//! callers served in the order they arrived (a plain mutex is not fair), and
//! a caller whose cancel fires while waiting leaves the queue at once.

use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::CancelToken;
use crate::cancel::lock;

#[derive(Default)]
struct Tickets {
    next: u64,
    serving: u64,
    abandoned: BTreeSet<u64>,
}

#[derive(Default)]
pub struct Queue {
    tickets: Mutex<Tickets>,
    turn_changed: Condvar,
}

/// Holding a turn; the next caller is served when it drops.
pub struct Turn<'a>(&'a Queue);

impl Queue {
    /// Waits for this caller's turn; `None` if `cancel` fired first.
    pub fn enter(&self, cancel: &CancelToken) -> Option<Turn<'_>> {
        let mut t = lock(&self.tickets);
        let mine = t.next;
        t.next += 1;
        while t.serving != mine {
            if cancel.is_cancelled() {
                t.abandoned.insert(mine);
                return None;
            }
            // Cancellation has no waker here; a short wait bounds its latency.
            t = self
                .turn_changed
                .wait_timeout(t, Duration::from_millis(20))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        Some(Turn(self))
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut t = lock(&self.0.tickets);
        t.serving += 1;
        loop {
            let s = t.serving;
            if !t.abandoned.remove(&s) {
                break;
            }
            t.serving += 1;
        }
        self.0.turn_changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    /// Waits (10 s at most: a hang guard) until `n` tickets were taken.
    fn wait_for_tickets(q: &Queue, n: u64) {
        let end = Instant::now() + Duration::from_secs(10);
        while lock(&q.tickets).next < n {
            assert!(Instant::now() < end, "ticket {n} never taken");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn serves_in_order_and_skips_abandoned() {
        let q = Arc::new(Queue::default());
        let never = CancelToken::new();
        let first = q.enter(&never).unwrap();
        let cancelled = CancelToken::new();
        let order = Arc::new(Mutex::new(Vec::new()));
        let q2 = q.clone();
        let c2 = cancelled.clone();
        let waiter = std::thread::spawn(move || q2.enter(&c2).is_none());
        // The waiter holds ticket 1 before the third caller takes ticket 2.
        wait_for_tickets(&q, 2);
        let (q3, o3) = (q.clone(), order.clone());
        let third = std::thread::spawn(move || {
            let _t = q3.enter(&CancelToken::new()).unwrap();
            o3.lock().unwrap().push(3);
        });
        wait_for_tickets(&q, 3);
        cancelled.cancel();
        assert!(waiter.join().unwrap(), "cancelled waiter leaves");
        order.lock().unwrap().push(1);
        // The third caller is served only if the abandoned ticket is skipped.
        drop(first);
        third.join().unwrap();
        assert_eq!(*order.lock().unwrap(), vec![1, 3]);
        assert!(q.enter(&never).is_some(), "queue still moves");
    }
}
