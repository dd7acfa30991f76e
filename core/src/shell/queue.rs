//! First-come, first-served turns: one run at a time per shell, concurrent
//! callers served in the order they arrived (a plain mutex is not fair), and
//! a caller whose cancel fires while waiting leaves the queue at once.

use std::collections::BTreeSet;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::CancelToken;
use crate::sync::lock;

#[derive(Default)]
struct Tickets {
    next: u64,
    serving: u64,
    abandoned: BTreeSet<u64>,
}

impl Tickets {
    /// Ticket `mine` will never be served: skip it now if it is up, or
    /// when its turn comes.
    fn abandon(&mut self, mine: u64) {
        if self.serving == mine {
            self.advance();
        } else {
            self.abandoned.insert(mine);
        }
    }

    /// Serves the next ticket that still has a holder.
    fn advance(&mut self) {
        self.serving += 1;
        while self.abandoned.remove(&self.serving) {
            self.serving += 1;
        }
    }
}

#[derive(Default)]
pub struct Queue {
    tickets: Mutex<Tickets>,
    turn_changed: Condvar,
}

/// A place in the queue, taken when the caller asked for its run. It is
/// owned and `Send`: a host that takes the place on the thread where the
/// call was made and waits for the turn on a worker thread keeps the order
/// of its calls, whichever worker the scheduler wakes first. Dropped
/// unused, it gives up the place.
pub struct Place {
    queue: Arc<Queue>,
    ticket: u64,
    used: bool,
}

/// Holding a turn; the next place is served when it drops (the place,
/// marked used, advances the queue as it drops).
pub struct Turn {
    _place: Place,
}

impl Queue {
    /// Takes the next place in line.
    pub(super) fn place(self: &Arc<Self>) -> Place {
        let mut t = lock(&self.tickets);
        let ticket = t.next;
        t.next += 1;
        Place {
            queue: self.clone(),
            ticket,
            used: false,
        }
    }
}

impl Place {
    /// Whether this place is in `queue`.
    pub(super) fn belongs_to(&self, queue: &Arc<Queue>) -> bool {
        Arc::ptr_eq(&self.queue, queue)
    }

    /// Waits for this place's turn; `None` if `cancel` fired first (the
    /// place is given up).
    pub(super) fn wait(self, cancel: &CancelToken) -> Option<Turn> {
        match self.wait_until(cancel, None) {
            Waited::Turn(turn) => Some(turn),
            Waited::Cancelled => None,
            Waited::Later(_) => unreachable!("no deadline"),
        }
    }

    /// [`Place::wait`] up to `until` (`None`: no limit); the place comes
    /// back, still in line, when `until` passes first.
    pub(super) fn wait_until(self, cancel: &CancelToken, until: Option<Instant>) -> Waited {
        let queue = self.queue.clone();
        let mut t = lock(&queue.tickets);
        while t.serving != self.ticket {
            if cancel.is_cancelled() {
                // Dropping `self`, unused, gives the place up.
                drop(t);
                return Waited::Cancelled;
            }
            // Cancellation has no waker here; a short wait bounds its latency.
            let mut wait = Duration::from_millis(20);
            if let Some(until) = until {
                let now = Instant::now();
                if now >= until {
                    drop(t);
                    return Waited::Later(self);
                }
                wait = wait.min(until - now);
            }
            t = queue
                .turn_changed
                .wait_timeout(t, wait)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(t);
        let mut place = self;
        place.used = true;
        Waited::Turn(Turn { _place: place })
    }
}

/// How [`Place::wait_until`] ended.
pub(super) enum Waited {
    Turn(Turn),
    Cancelled,
    /// The deadline passed first: the place, still in line.
    Later(Place),
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut t = lock(&self.queue.tickets);
        if self.used {
            t.advance();
        } else {
            t.abandon(self.ticket);
        }
        self.queue.turn_changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// The turn of `place`, or a failure after 10 s (a hang guard).
    fn turn_within_guard(place: Place) -> Turn {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(place.wait(&CancelToken::new())));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the turn never came")
            .expect("not cancelled")
    }

    #[test]
    fn serves_places_in_order_and_skips_given_up_ones() {
        let q = Arc::new(Queue::default());
        let first = turn_within_guard(q.place());
        let cancelled = CancelToken::new();
        let (gives_up, unused, third) = (q.place(), q.place(), q.place());
        let order = Arc::new(Mutex::new(Vec::new()));
        // The third place waits before the others do: the place, not the
        // moment of waiting, decides the order.
        let o3 = order.clone();
        let third = std::thread::spawn(move || {
            let _t = third.wait(&CancelToken::new()).expect("served");
            o3.lock().unwrap().push(3);
        });
        let c1 = cancelled.clone();
        let waiter = std::thread::spawn(move || gives_up.wait(&c1).is_none());
        drop(unused);
        cancelled.cancel();
        assert!(waiter.join().unwrap(), "a cancelled waiter leaves");
        order.lock().unwrap().push(1);
        drop(first);
        third.join().unwrap();
        assert_eq!(*order.lock().unwrap(), vec![1, 3]);
        drop(turn_within_guard(q.place()));
    }

    #[test]
    fn a_place_given_up_when_its_turn_is_up_passes_the_turn_on() {
        let q = Arc::new(Queue::default());
        let first = turn_within_guard(q.place());
        let next = q.place();
        drop(first);
        drop(next);
        drop(turn_within_guard(q.place()));
    }
}
