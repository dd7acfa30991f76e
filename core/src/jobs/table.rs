//! A session's jobs: ids handed out once, running jobs and the finished
//! ones not yet forgotten, the limit on running ones (with the room taken
//! for jobs being started), and the wait for any of them to end.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::job::JobSpec;
use super::{Job, JobExitHook, JobId, JobInfo, reader};
use crate::sync::{deadline_after, lock, passed, wait_until};
use crate::{CancelToken, Error, Result};

pub(crate) struct JobTable {
    /// Shared with the [`Slot`]s it hands out.
    inner: Arc<Mutex<Inner>>,
    job_ends: Arc<JobEnds>,
    max_jobs: usize,
    on_exit: Option<JobExitHook>,
}

#[derive(Default)]
struct Inner {
    /// In the order they started.
    jobs: Vec<Arc<Job>>,
    last_id: JobId,
    /// [`Slot`]s held: jobs being started, which count as running.
    reserved: usize,
}

impl Inner {
    fn running(&self) -> usize {
        self.jobs.iter().filter(|j| j.is_running()).count()
    }
}

/// Room for one more running job, taken by [`JobTable::reserve`] under
/// the same lock as the count it checks, and held until the job is added
/// ([`NewJob::slot`]); dropped unused (its launch failed, or a run kept
/// it and ended in the foreground) it is given back. So no two starts
/// can both take the last room, each having seen it free.
pub(crate) struct Slot(Option<Arc<Mutex<Inner>>>);

impl Slot {
    /// The room becomes the job's: `inner` is the table's, locked.
    fn settle(mut self, inner: &mut Inner) {
        self.0 = None;
        inner.reserved -= 1;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(inner) = self.0.take() {
            lock(&inner).reserved -= 1;
        }
    }
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
    /// The room reserved for it: a job conch starts. None for what a
    /// command left running, which is there already and is counted from
    /// now on.
    pub slot: Option<Slot>,
    /// A pidfd of a root that runs the command itself (a session's bash
    /// moved to the background): its end is the command's when no record
    /// tells it (see `reader::watch`).
    pub root_exit: Option<OwnedFd>,
}

impl JobTable {
    pub(crate) fn new(max_jobs: usize, on_exit: Option<JobExitHook>) -> JobTable {
        JobTable {
            inner: Arc::default(),
            job_ends: Arc::default(),
            max_jobs,
            on_exit,
        }
    }

    /// Fails when the session runs as many jobs as it may already: a
    /// quick refusal, before a `start` waits for its turn; only
    /// [`JobTable::reserve`] holds the room it finds.
    pub(crate) fn check_room(&self) -> Result<()> {
        let running = lock(&self.inner).running();
        if running >= self.max_jobs {
            return Err(Error::TooManyJobs(running));
        }
        Ok(())
    }

    /// Takes room for one more running job (see [`Slot`]); fails when the
    /// jobs running and being started fill the session's limit.
    pub(crate) fn reserve(&self) -> Result<Slot> {
        let mut inner = lock(&self.inner);
        let taken = inner.running() + inner.reserved;
        if taken >= self.max_jobs {
            return Err(Error::TooManyJobs(taken));
        }
        inner.reserved += 1;
        Ok(Slot(Some(self.inner.clone())))
    }

    /// Makes a job of `new`, its output read from now on, in the room its
    /// slot kept. Without a reader thread (or once every id was used)
    /// nothing is added, the room is given back and the descriptors are
    /// closed (what writes them gets `EPIPE`); the job's processes, if
    /// conch runs them, are killed.
    pub(crate) fn add(&self, new: NewJob) -> Option<JobId> {
        let mut inner = lock(&self.inner);
        if let Some(slot) = new.slot {
            slot.settle(&mut inner);
        }
        let id = inner.last_id.checked_add(1)?;
        let job = Arc::new(Job::new(
            id,
            new.spec,
            self.job_ends.clone(),
            self.on_exit.clone(),
        ));
        job.push_status(&new.initial_status);
        if !reader::watch(new.output, new.status, new.root_exit, job.clone()) {
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
    /// to; `None` when none did in time, and at once for no ids (none can
    /// end: whatever the timeout, up to days, the wait would be for
    /// nothing). Every id must be the session's. `cancel` ends the wait
    /// early (`None`).
    pub(crate) fn wait_any(
        &self,
        ids: &[JobId],
        timeout: Duration,
        cancel: &CancelToken,
    ) -> Result<Option<JobId>> {
        if ids.is_empty() {
            return Ok(None);
        }
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
