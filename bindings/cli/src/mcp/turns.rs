//! The order `tools/call`s run in: the order they came in, each once the
//! one before it ended.
//!
//! rmcp handles each request in a task of its own, and tasks start in no
//! set order, so two calls sent back to back could reach the session in
//! either order. The transport reads the messages one at a time: it gives
//! each call a [`Turn`] as it comes ([`Turns::next`]), and the handler
//! waits for it before running. A turn passes on when the call is done
//! with it (the last clone dropped), also when the call never ran (it was
//! cancelled while it waited, or rmcp dropped the request): the calls
//! after it would otherwise wait for ever. Other requests take no turn:
//! they are answered while a call runs.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::watch;

/// The turns of one server's calls, handed out in order.
#[derive(Default)]
pub struct Turns {
    /// The number of the next turn handed out.
    issued: u64,
    ended: Arc<watch::Sender<Ended>>,
}

/// Which turns ended.
#[derive(Default)]
struct Ended {
    /// Every turn before this one ended: it is this one's turn.
    current: u64,
    /// Turns after `current` that ended already (calls that never ran).
    early: BTreeSet<u64>,
}

impl Turns {
    /// The turn after the last one handed out.
    pub fn next(&mut self) -> Turn {
        let number = self.issued;
        self.issued += 1;
        Turn(Arc::new(Held {
            number,
            ended: self.ended.clone(),
        }))
    }
}

/// One call's place in the order. `Clone` because rmcp's request
/// extensions carry it (they take only `Clone` values); the turn ends with
/// its last clone.
#[derive(Clone)]
pub struct Turn(Arc<Held>);

struct Held {
    number: u64,
    ended: Arc<watch::Sender<Ended>>,
}

impl Turn {
    /// Returns once every call before this one ended.
    pub async fn come(&self) {
        let mut ended = self.0.ended.subscribe();
        // Never an error: this turn holds the sender.
        let _ = ended.wait_for(|e| e.current == self.0.number).await;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.ended.send_modify(|e| {
            e.early.insert(self.number);
            while e.early.remove(&e.current) {
                e.current += 1;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Waker};

    use super::*;

    /// Whether `turn` came, without waiting for it.
    fn came(turn: &Turn) -> bool {
        let mut come = pin!(turn.come());
        come.as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready()
    }

    #[test]
    fn a_turn_comes_when_every_turn_before_it_ended() {
        let mut turns = Turns::default();
        let (first, second, third) = (turns.next(), turns.next(), turns.next());
        assert!(came(&first));
        assert!(!came(&second));
        // A call that never ran (cancelled while it waited) ends its turn
        // early; the turn still comes after the one before it.
        drop(third);
        let fourth = turns.next();
        assert!(!came(&fourth));
        let copy = first.clone();
        drop(first);
        assert!(!came(&second), "a clone still holds the first turn");
        drop(copy);
        assert!(came(&second));
        assert!(!came(&fourth));
        drop(second);
        assert!(came(&fourth));
    }
}
