//! The requests a server answered, by id, so that a request sent again
//! after a reconnect is answered once: a session keeps those of its
//! requests, the server those of its own that change something (`open`,
//! a file written or removed). A bounded number of answers is kept.

use conch_core::sync::{lock, wait_until};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use serde_json::Value;

/// Answers kept for retried requests.
const KEPT: usize = 256;

#[derive(Default)]
pub(crate) struct Answers {
    state: Mutex<State>,
    /// Told when a running request is answered.
    answered: Condvar,
}

#[derive(Default)]
struct State {
    running: HashSet<String>,
    done: HashMap<String, Value>,
    order: VecDeque<String>,
}

/// What a request's id finds.
pub(crate) enum Seen {
    /// Never seen: run it.
    New,
    /// Still running: its reply will come.
    Running,
    /// Answered: the reply, to send again.
    Answered(Value),
}

impl Answers {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// What the request `id` is; a new one is marked running.
    pub fn seen(&self, id: &Value) -> Seen {
        let key = id.to_string();
        let mut state = self.state();
        if state.running.contains(&key) {
            return Seen::Running;
        }
        if let Some(reply) = state.done.get(&key) {
            return Seen::Answered(reply.clone());
        }
        state.running.insert(key);
        Seen::New
    }

    /// Keeps `reply` as the answer of the running request `id`.
    pub fn keep(&self, id: &Value, reply: &Value) {
        let key = id.to_string();
        let mut state = self.state();
        state.running.remove(&key);
        state.done.insert(key.clone(), reply.clone());
        state.order.push_back(key);
        while state.order.len() > KEPT {
            if let Some(old) = state.order.pop_front() {
                state.done.remove(&old);
            }
        }
        self.answered.notify_all();
    }

    /// Waits for the running request `id` to be answered; its reply
    /// (`None` once it is no longer kept).
    pub fn wait(&self, id: &Value) -> Option<Value> {
        let key = id.to_string();
        let mut state = self.state();
        while state.running.contains(&key) {
            state = wait_until(&self.answered, state, None, Instant::now());
        }
        state.done.get(&key).cloned()
    }
}
