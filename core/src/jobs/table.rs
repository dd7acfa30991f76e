//! A session's jobs: ids handed out once, running jobs and the finished
//! ones not yet forgotten, the limit on running ones, and the wait for
//! any of them to end.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::job::JobSpec;
use super::{Job, JobExitHook, JobId, JobInfo, reader};
use crate::sync::{deadline_after, lock, passed, wait_until};
use crate::{CancelToken, Error, Result};

pub(crate) struct JobTable {
    inner: Mutex<Inner>,
    job_ends: Arc<JobEnds>,
    max_jobs: usize,
    on_exit: Option<JobExitHook>,
}

#[derive(Default)]
struct Inner {
    /// In the order they started.
    jobs: Vec<Arc<Job>>,
    last_id: JobId,
}

/// Where ends are announced, for [`JobTable::wait_any`]: a count of ends
/// and its condition variable.
#[derive(Default)]
pub(crate) struct JobEnds {
    ends: Mutex<u64>,
    changed: Condvar,
}

impl JobEnds {
    pub(crate) fn job_ended(&self) {
        *lock(&self.ends) += 1;
        self.changed.notify_all();
    }
}

/// A new job and its descriptors.
pub(crate) struct NewJob {
    pub spec: JobSpec,
    /// The job's output (a pipe, or a terminal's master).
    pub output: OwnedFd,
    /// The root's status pipe, for a job conch runs.
    pub status: Option<OwnedFd>,
    /// What was read from it already.
    pub initial_status: Vec<u8>,
}

impl JobTable {
    pub(crate) fn new(max_jobs: usize, on_exit: Option<JobExitHook>) -> JobTable {
        JobTable {
            inner: Mutex::default(),
            job_ends: Arc::default(),
            max_jobs,
            on_exit,
        }
    }

    /// Fails when the session runs as many jobs as it may.
    pub(crate) fn check_room(&self) -> Result<()> {
        let running = self.running();
        if running >= self.max_jobs {
            return Err(Error::TooManyJobs(running));
        }
        Ok(())
    }

    fn running(&self) -> usize {
        let inner = lock(&self.inner);
        inner.jobs.iter().filter(|j| j.is_running()).count()
    }

    /// Makes a job of `new`, its output read from now on. Without a reader
    /// thread (or once every id was used) nothing is added and the
    /// descriptors are closed (what writes them gets `EPIPE`); the job's
    /// processes, if conch runs them, are killed.
    pub(crate) fn add(&self, new: NewJob) -> Option<JobId> {
        let mut inner = lock(&self.inner);
        let id = inner.last_id.checked_add(1)?;
        let job = Arc::new(Job::new(
            id,
            new.spec,
            self.job_ends.clone(),
            self.on_exit.clone(),
        ));
        job.push_status(&new.initial_status);
        if !reader::watch(new.output, new.status, job.clone()) {
            return None;
        }
        inner.last_id = id;
        inner.jobs.push(job);
        forget_old(&mut inner.jobs);
        Some(id)
    }

    pub(crate) fn get(&self, id: JobId) -> Result<Arc<Job>> {
        lock(&self.inner)
            .jobs
            .iter()
            .find(|j| j.id == id)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("no job {id} in this session")))
    }

    pub(crate) fn list(&self) -> Vec<JobInfo> {
        let mut inner = lock(&self.inner);
        forget_old(&mut inner.jobs);
        inner.jobs.iter().map(|j| j.info()).collect()
    }

    /// The session's bash is going with everything below it: the end of
    /// each job it held (what commands left) reads `killed`.
    pub(crate) fn mark_all_killed(&self) {
        for job in &lock(&self.inner).jobs {
            if job.control().is_none() {
                job.mark_killed();
            }
        }
    }

    /// The session closes: kills every running job conch runs in a bash
    /// (all at once: each is killed on a thread of its own), then
    /// collects every such bash, finished jobs' too.
    pub(crate) fn close(&self) {
        let rooted: Vec<Arc<Job>> = lock(&self.inner)
            .jobs
            .iter()
            .filter(|j| j.control().is_some())
            .cloned()
            .collect();
        std::thread::scope(|scope| {
            for job in rooted.iter().filter(|j| j.is_running()) {
                scope.spawn(|| job.kill(super::JobStatus::Killed));
            }
        });
        for control in rooted.iter().filter_map(|j| j.control()) {
            control.reap();
        }
    }

    /// The session starts afresh (`Shell::reset`): every job it had,
    /// ended by now, is forgotten; ids go on from the last one.
    pub(crate) fn forget_all(&self) {
        lock(&self.inner).jobs.clear();
    }

    /// The first of `ids` that has ended, waiting up to `timeout` for one
    /// to; `None` when none did in time. Every id must be the session's.
    /// `cancel` ends the wait early (`None`).
    pub(crate) fn wait_any(
        &self,
        ids: &[JobId],
        timeout: Duration,
        cancel: &CancelToken,
    ) -> Result<Option<JobId>> {
        let jobs = ids
            .iter()
            .map(|&id| self.get(id))
            .collect::<Result<Vec<_>>>()?;
        let _wake = cancel.on_cancel({
            // Notified under the lock, where the waiter rechecks the token.
            let job_ends = self.job_ends.clone();
            move || {
                let _ends = lock(&job_ends.ends);
                job_ends.changed.notify_all();
            }
        });
        let deadline = deadline_after(timeout);
        let mut ends = lock(&self.job_ends.ends);
        loop {
            if let Some(job) = jobs.iter().find(|j| !j.is_running()) {
                return Ok(Some(job.id));
            }
            let now = Instant::now();
            if passed(deadline, now) || cancel.is_cancelled() {
                return Ok(None);
            }
            ends = wait_until(&self.job_ends.changed, ends, deadline, now);
        }
    }
}

/// Forgets the finished jobs read to their end long enough ago.
fn forget_old(jobs: &mut Vec<Arc<Job>>) {
    let now = Instant::now();
    jobs.retain(|j| !j.forgettable(now));
}
