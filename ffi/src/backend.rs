//! Where a `conch_shell`'s session runs: in this process (a core `Shell`)
//! or on a `conch serve` (a session of a `conch_remote`). Every
//! `conch_shell_*` call goes through here, so a C host drives both with
//! the same calls; the two have the same methods and results, and their
//! errors become the same status codes.

use std::time::Duration;

use conch_core::{
    BashResult, CancelToken, Engine, JobId, JobInfo, JobOptions, JobPoll, Network, PollOptions,
    RunOptions, SandboxApplied, Shell,
};
use conch_remote::RemoteShell;

use crate::status::FfiResult;

// Made once per handle and held behind its `Arc`: the size of the larger
// variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Backend {
    Local(Shell),
    Remote(RemoteShell),
}

/// Makes `$call` on whichever session `$backend` holds (named `$s`), its
/// error (the core's or the client's) as the status it maps to.
macro_rules! either {
    ($backend:expr, $s:ident => $call:expr) => {
        match $backend {
            Backend::Local($s) => Ok($call?),
            Backend::Remote($s) => Ok($call?),
        }
    };
}

impl Backend {
    pub fn run(&self, opts: RunOptions, on_chunk: impl FnMut(&str)) -> FfiResult<BashResult> {
        either!(self, s => s.run(opts, on_chunk))
    }

    pub fn abort(&self) {
        match self {
            Backend::Local(s) => s.abort(),
            Backend::Remote(s) => s.abort(),
        }
    }

    pub fn background_jobs(&self) -> FfiResult<Vec<u32>> {
        match self {
            Backend::Local(s) => Ok(s.background_jobs()),
            Backend::Remote(s) => Ok(s.background_jobs()?),
        }
    }

    /// The loop the session's bash runs.
    pub fn engine(&self) -> FfiResult<Engine> {
        either!(self, s => s.engine())
    }

    /// Changes the domains a session with a domain policy may reach.
    pub fn set_network(&self, network: &Network) -> FfiResult<()> {
        either!(self, s => s.set_network(network))
    }

    /// Starts the session afresh (`Shell::reset`).
    pub fn reset(&self) -> FfiResult<()> {
        either!(self, s => s.reset())
    }

    pub fn start(&self, opts: JobOptions) -> FfiResult<JobId> {
        either!(self, s => s.start(opts))
    }

    pub fn jobs(&self) -> FfiResult<Vec<JobInfo>> {
        match self {
            Backend::Local(s) => Ok(s.jobs()),
            Backend::Remote(s) => Ok(s.jobs()?),
        }
    }

    pub fn poll(
        &self,
        job: JobId,
        opts: &PollOptions,
        cancel: Option<&CancelToken>,
    ) -> FfiResult<JobPoll> {
        either!(self, s => s.poll(job, opts, cancel))
    }

    pub fn write(&self, job: JobId, data: &[u8]) -> FfiResult<()> {
        either!(self, s => s.write(job, data))
    }

    pub fn close_stdin(&self, job: JobId) -> FfiResult<()> {
        either!(self, s => s.close_stdin(job))
    }

    pub fn write_key(&self, job: JobId, key: &str) -> FfiResult<()> {
        either!(self, s => s.write_key(job, key))
    }

    pub fn signal(&self, job: JobId, signal: &str) -> FfiResult<()> {
        either!(self, s => s.signal(job, signal))
    }

    pub fn kill(&self, job: JobId) -> FfiResult<JobPoll> {
        either!(self, s => s.kill(job))
    }

    pub fn wait_any(
        &self,
        jobs: &[JobId],
        timeout: Duration,
        cancel: Option<&CancelToken>,
    ) -> FfiResult<Option<JobId>> {
        either!(self, s => s.wait_any(jobs, timeout, cancel))
    }

    /// What of the sandbox is in force; `None`: no sandbox.
    pub fn sandbox_applied(&self) -> Option<SandboxApplied> {
        match self {
            Backend::Local(s) => s.sandbox_applied().cloned(),
            Backend::Remote(s) => serde_json::from_value(s.sandbox_applied().clone()).ok(),
        }
    }

    /// Closes the session (its processes killed). Returns the jobs whose
    /// end is still to be told to an `on_job_exit` callback, or `None`
    /// when this thread cannot wait for those reports (it is inside a run
    /// of the shell, whose end closes the session later).
    pub fn close(&self) -> Option<Vec<JobId>> {
        let ids = |jobs: Vec<JobInfo>| jobs.iter().map(|j| j.job).collect();
        match self {
            Backend::Local(s) => {
                s.close();
                (!s.busy_key().is_entered()).then(|| ids(s.jobs()))
            }
            Backend::Remote(s) => {
                // Listed before the close: the session is gone after it.
                // Its jobs' ends come as events before the close's reply.
                let running = s.jobs().map(ids).unwrap_or_default();
                // A server or connection already gone has closed it.
                let _ = s.close();
                Some(running)
            }
        }
    }
}
