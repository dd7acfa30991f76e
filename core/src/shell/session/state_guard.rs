//! Where the session's [`State`] lives between runs, and the guard a run
//! (or a job's start, or the close) holds it by: owned and `Send`, unlike a
//! mutex guard, because a run driven in steps may go on on another thread.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Condvar, Mutex};

use crate::sync::lock;

use super::{State, reap};

/// Where the session's [`State`] lives between runs. A run takes it out
/// ([`StateGuard`]) for as long as it lasts, on whichever threads drive it.
pub(super) struct StateSlot {
    state: Mutex<Option<State>>,
    /// Signalled when a guard gives the state back.
    back: Condvar,
}

impl StateSlot {
    /// A slot holding `state`, free to take.
    pub(super) fn new(state: State) -> Self {
        StateSlot {
            state: Mutex::new(Some(state)),
            back: Condvar::new(),
        }
    }

    /// Takes the state, waiting while someone else holds it.
    pub(super) fn take(self: &Arc<Self>) -> StateGuard {
        let mut slot = lock(&self.state);
        loop {
            if let Some(state) = slot.take() {
                return StateGuard {
                    slot: self.clone(),
                    state: Some(state),
                    mid_command: false,
                };
            }
            slot = self.back.wait(slot).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The session's state held by one run (or a job's start, or the close),
/// given back when dropped. Owned and `Send`, unlike a mutex guard: a run
/// driven in steps may go on on another thread.
pub(super) struct StateGuard {
    slot: Arc<StateSlot>,
    state: Option<State>,
    /// A command was sent to the bash and has not ended. A guard dropped
    /// so (a failed read, a panic) kills that bash, which is in the middle
    /// of something: the next run starts afresh.
    pub(super) mid_command: bool,
}

impl Deref for StateGuard {
    type Target = State;
    fn deref(&self) -> &State {
        self.state.as_ref().expect("state held until dropped")
    }
}

impl DerefMut for StateGuard {
    fn deref_mut(&mut self) -> &mut State {
        self.state.as_mut().expect("state held until dropped")
    }
}

impl Drop for StateGuard {
    fn drop(&mut self) {
        let Some(mut state) = self.state.take() else {
            return;
        };
        if self.mid_command
            && let Some(bash) = state.bash.take()
        {
            reap(bash);
        }
        *lock(&self.slot.state) = Some(state);
        self.slot.back.notify_all();
    }
}
