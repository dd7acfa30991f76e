//! Every shell this process opened, so that none outlives the host.
//!
//! bash dies with the host (`PR_SET_PDEATHSIG`), but the background jobs it
//! started would be re-parented and survive. `conch` registers an `atexit`
//! hook that calls [`close_all`]: open shells and cached `execute_bash`
//! sessions are closed, which kills their whole process trees.

use std::sync::{Arc, Mutex, Weak};

use conch_core::shell::{Shell, registry};

static SHELLS: Mutex<Vec<Weak<Shell>>> = Mutex::new(Vec::new());

/// Remembers `shell` until it is dropped.
pub fn track(shell: &Arc<Shell>) {
    let mut shells = SHELLS.lock().unwrap_or_else(|e| e.into_inner());
    shells.retain(|w| w.strong_count() > 0);
    shells.push(Arc::downgrade(shell));
}

/// Closes every open shell and every cached session.
pub fn close_all() {
    let open: Vec<Arc<Shell>> = SHELLS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .drain(..)
        .filter_map(|w| w.upgrade())
        .collect();
    for shell in open {
        shell.close();
    }
    registry::close_all();
}
