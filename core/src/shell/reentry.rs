//! Calls made from inside a run's own callback.
//!
//! A chunk or update callback runs on the thread that waits for the run
//! (the caller's thread, in every face), while that run holds its shell's
//! turn. A callback that starts another run on the same shell would wait
//! for a turn that only comes once the callback returns: a deadlock that
//! ignores every timeout. So each run marks the thread it waits on as busy
//! with its shell ([`BusyKey::enter`]) for as long as it lasts, and an
//! entry point that would wait for that shell's turn checks the mark first
//! ([`BusyKey::check`]) and fails at once with a typed error instead.
//!
//! The mark is per thread: a run on the same shell from another thread
//! simply queues, and a run on another shell from a callback is fine. A
//! face that delivers callbacks on a thread of its own (Python's calling
//! thread, Node's JS thread) takes the marks of the thread the core called
//! it on ([`entered`]) and holds them where it calls the host
//! ([`Entered::enter`]).

use std::cell::RefCell;
use std::sync::Arc;

use crate::{Error, Result};

thread_local! {
    /// The keys of the runs this thread is waiting for, innermost last.
    static BUSY: RefCell<Vec<BusyKey>> = const { RefCell::new(Vec::new()) };
}

/// Identifies what a run holds the turn of (a shell's queue, a tool).
#[derive(Clone)]
pub struct BusyKey {
    /// Keeps the address unique while the key exists.
    owner: Arc<dyn Send + Sync>,
}

impl std::fmt::Debug for BusyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BusyKey").field(&self.id()).finish()
    }
}

impl BusyKey {
    /// A key of its own, for what holds a turn outside the core (a remote
    /// session: its runs hold the server's shell).
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        BusyKey::of(Arc::new(()))
    }

    /// The key of `owner` (keys of the same `Arc` are equal).
    pub(crate) fn of(owner: Arc<dyn Send + Sync>) -> Self {
        BusyKey { owner }
    }

    fn id(&self) -> usize {
        Arc::as_ptr(&self.owner) as *const () as usize
    }

    /// Marks this thread as waiting for a run of this key until the guard
    /// drops.
    pub fn enter(&self) -> BusyGuard {
        BUSY.with(|busy| busy.borrow_mut().push(self.clone()));
        BusyGuard { id: self.id() }
    }

    /// Whether this thread is waiting for a run of this key.
    pub fn is_entered(&self) -> bool {
        let id = self.id();
        BUSY.with(|busy| busy.borrow().iter().any(|key| key.id() == id))
    }

    /// An error when this thread is inside a run of this key: `call` (what
    /// the call asks for, in words every face shares: "a run was
    /// started") on `object` ("shell", "tool") would wait for itself.
    pub fn check(&self, call: &str, object: &str) -> Result<()> {
        if self.is_entered() {
            return Err(Error::InvalidArgument(format!(
                "{call} from inside a callback of a run on the same {object}: that run \
                 holds the {object} until the callback returns, so this call would wait \
                 forever; make it after the run returns"
            )));
        }
        Ok(())
    }
}

/// This thread is waiting for a run of a [`BusyKey`]; dropping the guard
/// ends the mark.
#[must_use = "the mark lasts as long as the guard"]
pub struct BusyGuard {
    id: usize,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        BUSY.with(|busy| {
            let mut busy = busy.borrow_mut();
            if let Some(at) = busy.iter().rposition(|key| key.id() == self.id) {
                busy.remove(at);
            }
        });
    }
}

/// The marks of one thread, to hold on another (`Send`).
#[derive(Debug, Clone, Default)]
pub struct Entered(Vec<BusyKey>);

/// The marks this thread holds now.
pub fn entered() -> Entered {
    Entered(BUSY.with(|busy| busy.borrow().clone()))
}

impl Entered {
    /// Whether there is no mark (the thread waits for no run).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Holds the same marks on this thread until the guards drop.
    pub fn enter(&self) -> Vec<BusyGuard> {
        self.0.iter().map(BusyKey::enter).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "a run was started";

    #[test]
    fn a_key_is_busy_on_its_thread_while_entered() {
        let key = BusyKey::of(Arc::new(()));
        let other = BusyKey::of(Arc::new(()));
        assert!(key.check(RUN, "shell").is_ok());
        let guard = key.enter();
        let nested = key.enter();
        let err = key.check(RUN, "shell").unwrap_err().to_string();
        assert!(
            err.starts_with("a run was started from inside a callback of a run on the same shell:"),
            "{err}"
        );
        assert!(other.check(RUN, "shell").is_ok(), "another key is free");
        let copy = key.clone();
        std::thread::spawn(move || assert!(!copy.is_entered(), "per thread"))
            .join()
            .unwrap();
        let marks = entered();
        std::thread::spawn(move || {
            let held = marks.enter();
            assert!(copy_of(&marks).check(RUN, "shell").is_err(), "carried over");
            drop(held);
            assert!(copy_of(&marks).check(RUN, "shell").is_ok());
        })
        .join()
        .unwrap();
        drop(nested);
        assert!(key.is_entered(), "the outer mark stays");
        drop(guard);
        assert!(!key.is_entered());
    }

    fn copy_of(marks: &Entered) -> BusyKey {
        marks.0[0].clone()
    }
}
