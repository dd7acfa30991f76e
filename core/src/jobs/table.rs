//! A session's jobs: ids handed out once, running jobs and the last few
//! finished ones.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use super::{FINISHED_KEPT, Job, JobId, JobInfo, reader};
use crate::output::sink::SinkOptions;
use crate::sync::lock;

#[derive(Default)]
pub(crate) struct JobTable {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// In the order they started.
    jobs: Vec<Arc<Job>>,
    last_id: JobId,
}

impl JobTable {
    /// Makes the output `pipe` of a run that ended with something still
    /// holding it a job, read from now on. Without a reader thread (or
    /// once every id was used) the pipe is closed instead.
    pub(crate) fn adopt(
        &self,
        pipe: OwnedFd,
        command: &str,
        started: (SystemTime, Instant),
        sink: SinkOptions,
    ) {
        let mut inner = lock(&self.inner);
        let Some(id) = inner.last_id.checked_add(1) else {
            return;
        };
        let job = Arc::new(Job::new(id, command.to_string(), started, sink));
        if reader::watch(pipe, job.clone()) {
            inner.last_id = id;
            inner.jobs.push(job);
            forget_old(&mut inner.jobs);
        }
    }

    pub(crate) fn get(&self, id: JobId) -> Option<Arc<Job>> {
        lock(&self.inner).jobs.iter().find(|j| j.id == id).cloned()
    }

    pub(crate) fn list(&self) -> Vec<JobInfo> {
        let mut inner = lock(&self.inner);
        forget_old(&mut inner.jobs);
        inner.jobs.iter().map(|j| j.info()).collect()
    }

    /// The session is killing everything it runs: every running job's end
    /// reads `killed`.
    pub(crate) fn mark_all_killed(&self) {
        for job in &lock(&self.inner).jobs {
            job.mark_killed();
        }
    }
}

/// Drops the oldest finished jobs beyond [`FINISHED_KEPT`].
fn forget_old(jobs: &mut Vec<Arc<Job>>) {
    let finished = jobs.iter().filter(|j| !j.is_running()).count();
    let mut excess = finished.saturating_sub(FINISHED_KEPT);
    jobs.retain(|j| {
        if excess > 0 && !j.is_running() {
            excess -= 1;
            return false;
        }
        true
    });
}
