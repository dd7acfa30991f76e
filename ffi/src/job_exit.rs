//! `on_job_exit`: how the end of a job reaches C.
//!
//! The core calls its exit hook on a thread of its own, once per job, at
//! any moment (also while the shell is being freed). C cannot stop such a
//! call, so the hook goes through a gate the shell handle owns: calls are
//! made one at a time, and `conch_shell_free` first lets the calls for
//! the jobs it ended come through (a bounded wait), then closes the gate,
//! waiting for a call in progress on another thread. No call starts after
//! `conch_shell_free` returned: the host may free its `user_data` then.

use std::collections::HashSet;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use conch_core::sync::lock;
use conch_core::{JobExitHook, JobId, JobInfo};

use crate::jobs::{OwnedInfo, conch_job_info};

/// Called once for each job of a shell that ends (by itself, killed, timed
/// out, or killed as the shell is freed), with the job as
/// `conch_shell_jobs` would list it then. `job` and its strings are
/// borrowed: valid only during the call (copy what you keep; never free
/// them). `user` is the shell options' `user_data`, passed through
/// untouched.
///
/// It runs on a thread of conch's, not the host's: never concurrently with
/// itself for one shell, but concurrently with the host's threads, so what
/// it touches needs the host's own locking. It must return normally (no
/// C++ exception, no `longjmp`). From inside it any function of the shell
/// may be called (`conch_shell_poll` of the job to read the rest of its
/// output, `conch_shell_start` of another), `conch_shell_free` included.
/// `conch_shell_free` waits for the calls of the jobs it ends, and none
/// comes after it returned.
pub type conch_job_exit_cb =
    Option<unsafe extern "C" fn(user: *mut c_void, job: *const conch_job_info)>;

/// How long `conch_shell_free` lets the calls for the jobs it ended come
/// through: far more than a job's kill ladder and its collection take.
const REPORTS_WAIT: Duration = Duration::from_secs(10);

/// The host's callback and pointer. The host promised (by setting them)
/// that the callback may be called with the pointer from any thread.
struct Callback {
    cb: unsafe extern "C" fn(user: *mut c_void, job: *const conch_job_info),
    user: *mut c_void,
}

// SAFETY: see `Callback`: the pointer is only handed back to the host's
// callback, which the host made safe to call from conch's threads.
unsafe impl Send for Callback {}
// SAFETY: as above; the gate never calls it from two threads at once.
unsafe impl Sync for Callback {}

/// Between the core's exit hook and the host's callback.
pub(crate) struct ExitGate {
    callback: Callback,
    /// Held during each call: one at a time, and the close waits for the
    /// call in progress.
    calling: Mutex<()>,
    state: Mutex<GateState>,
    reported: Condvar,
}

struct GateState {
    open: bool,
    /// The jobs whose end was reported.
    reported: HashSet<JobId>,
    /// The thread inside the callback, if any.
    caller: Option<ThreadId>,
}

impl ExitGate {
    /// The gate of `cb` (NULL: none) and the hook for the core.
    pub(crate) fn new(
        cb: conch_job_exit_cb,
        user: *mut c_void,
    ) -> Option<(Arc<Self>, JobExitHook)> {
        let gate = Arc::new(ExitGate {
            callback: Callback { cb: cb?, user },
            calling: Mutex::new(()),
            state: Mutex::new(GateState {
                open: true,
                reported: HashSet::new(),
                caller: None,
            }),
            reported: Condvar::new(),
        });
        let hook = JobExitHook::new({
            let gate = gate.clone();
            move |info| gate.report(info)
        });
        Some((gate, hook))
    }

    /// Hands one job's end to the host, unless the gate closed.
    fn report(&self, info: JobInfo) {
        let _turn = lock(&self.calling);
        let id = info.job;
        {
            let mut state = lock(&self.state);
            if !state.open {
                return;
            }
            state.caller = Some(std::thread::current().id());
        }
        // A job's strings cannot hold NUL (a command with one never
        // starts); if one did, the host is told nothing rather than a
        // cut text.
        if let Ok(owned) = OwnedInfo::new(info) {
            let view = owned.view();
            let Callback { cb, user } = self.callback;
            // The core thread must survive whatever happens here.
            // SAFETY: the host's callback with its own pointer; `view` and
            // the strings it points to live until the call returns.
            let _ = catch_unwind(AssertUnwindSafe(|| unsafe { cb(user, &view) }));
        }
        let mut state = lock(&self.state);
        state.caller = None;
        state.reported.insert(id);
        self.reported.notify_all();
    }

    /// After the shell was closed: lets the reports of its jobs `ended`
    /// come through (unless this thread cannot wait for them: it is inside
    /// the callback, or `ended` is `None`: inside a run of the shell, whose
    /// end closes the session later), then closes the gate and waits for a
    /// call in progress on another thread.
    pub(crate) fn close(&self, ended: Option<Vec<JobId>>) {
        let me = std::thread::current().id();
        let inside = lock(&self.state).caller == Some(me);
        if let (false, Some(jobs)) = (inside, ended) {
            let deadline = Instant::now() + REPORTS_WAIT;
            let mut state = lock(&self.state);
            while !jobs.iter().all(|j| state.reported.contains(j)) {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                state = self
                    .reported
                    .wait_timeout(state, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
        lock(&self.state).open = false;
        if !inside {
            // The call in progress, if any, ends before this returns.
            drop(lock(&self.calling));
        }
    }
}
