//! What a JS environment opened ends with that environment.
//!
//! A `worker_threads` Worker that is terminated tears its environment down
//! while its objects are still reachable: no garbage collection, so no
//! finalizer, ever closes its shells. And a call still running (a
//! `Shell.run` not awaited) holds its session alive on a pooled thread
//! whatever JS does. So each shell, terminal and tool made on a JS thread
//! is noted here, weakly, and the environment's cleanup hook, which Node
//! runs on that thread as the environment ends (a Worker's termination, the
//! main thread's exit), closes every one still open: their processes end
//! with the environment that started them, not with the whole process.

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Weak};

use napi::bindgen_prelude::Env;

/// Something a JS object owns that must not outlive its environment.
pub trait Close: Send + Sync {
    /// Ends it and every process it runs.
    fn close(&self);
}

impl Close for conch_core::Shell {
    fn close(&self) {
        conch_core::Shell::close(self);
    }
}

impl Close for conch_core::PtySession {
    fn close(&self) {
        // Only fails when nothing runs.
        let _ = self.kill();
    }
}

impl Close for conch_core::BashTool {
    fn close(&self) {
        let _ = self.pty().kill();
        conch_core::BashTool::close(self);
    }
}

/// A call running on a pooled thread, cancelled (its command's whole tree
/// killed) if its environment ends first. The call holds the only strong
/// reference and drops it when it returns.
pub struct InFlight(pub conch_core::CancelToken);

impl Close for InFlight {
    fn close(&self) {
        self.0.cancel();
    }
}

thread_local! {
    /// What this JS thread's environment opened and may still hold.
    static OPEN: RefCell<Vec<Weak<dyn Close>>> = const { RefCell::new(Vec::new()) };
    /// Whether this thread's environment has its cleanup hook.
    static HOOKED: Cell<bool> = const { Cell::new(false) };
}

/// Notes `item`, made on the JS thread of `env`, to be closed when that
/// environment ends (if it is still alive then).
pub fn close_with_env<T: Close + 'static>(env: &Env, item: &Arc<T>) -> napi::Result<()> {
    if !HOOKED.get() {
        env.add_env_cleanup_hook((), |()| close_all())?;
        HOOKED.set(true);
    }
    let item: Weak<dyn Close> = Arc::downgrade(item) as Weak<dyn Close>;
    OPEN.with_borrow_mut(|open| {
        // What was closed or collected since is forgotten: the list holds
        // only what may still be open.
        open.retain(|noted| noted.strong_count() > 0);
        open.push(item);
    });
    Ok(())
}

/// The cleanup hook: closes what this thread's environment left open.
fn close_all() {
    let open = OPEN.with_borrow_mut(std::mem::take);
    for item in open.iter().filter_map(Weak::upgrade) {
        item.close();
    }
}
