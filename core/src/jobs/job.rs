//! One job: its output as it arrives, its status, and the waits of polls.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::{JobId, JobInfo, JobPoll, JobStatus, PollOptions};
use crate::CancelToken;
use crate::output::sink::{OutputSink, SinkOptions};
use crate::sync::lock;

/// A job, shared by its session's table, the reader thread and polls.
pub(crate) struct Job {
    pub(crate) id: JobId,
    command: String,
    started: SystemTime,
    start: Instant,
    state: Mutex<State>,
    /// Signalled on new output, on the end, and on a poll's cancel.
    changed: Condvar,
}

struct State {
    /// Tail-only: the last `max_bytes` of the output, the rest in the artifact.
    sink: OutputSink,
    status: JobStatus,
    /// When the job ended: its elapsed time stops there.
    ended: Option<Instant>,
    /// The session killed it: its end is `killed`, not `exited`.
    killed: bool,
    /// Where the next poll without a cursor reads from.
    cursor: u64,
}

impl Job {
    /// A running job started by `command` at `started`, keeping `sink`'s
    /// bound of its output (the sink must be tail-only).
    pub(crate) fn new(
        id: JobId,
        command: String,
        started: (SystemTime, Instant),
        sink: SinkOptions,
    ) -> Job {
        debug_assert!(sink.head_bytes == 0 && sink.head_lines.is_none());
        Job {
            id,
            command,
            started: started.0,
            start: started.1,
            state: Mutex::new(State {
                sink: OutputSink::new(sink),
                status: JobStatus::Running,
                ended: None,
                killed: false,
                cursor: 0,
            }),
            changed: Condvar::new(),
        }
    }

    /// Takes raw output (the reader thread).
    pub(crate) fn push(&self, bytes: &[u8]) {
        let mut state = lock(&self.state);
        state.sink.push(bytes);
        state.sink.flush();
        drop(state);
        self.changed.notify_all();
    }

    /// The output reached its end: every holder closed it (the reader
    /// thread).
    pub(crate) fn end(&self) {
        let mut state = lock(&self.state);
        state.sink.finish();
        state.sink.flush();
        state.status = if state.killed {
            JobStatus::Killed
        } else {
            JobStatus::Exited
        };
        state.ended = Some(Instant::now());
        drop(state);
        self.changed.notify_all();
    }

    /// The session is killing what the job runs: its end will read `killed`.
    pub(crate) fn mark_killed(&self) {
        lock(&self.state).killed = true;
    }

    pub(crate) fn is_running(&self) -> bool {
        lock(&self.state).status == JobStatus::Running
    }

    /// Waits as `opts` says, then reads (see [`PollOptions`]).
    pub(crate) fn poll(
        self: &Arc<Self>,
        opts: &PollOptions,
        default_max: usize,
        cancel: &CancelToken,
    ) -> JobPoll {
        let _wake = cancel.on_cancel({
            // Notified under the lock, where the waiter rechecks the token:
            // a cancel between its check and its wait is not lost.
            let job = self.clone();
            move || {
                let _state = lock(&job.state);
                job.changed.notify_all();
            }
        });
        let deadline = Instant::now() + opts.wait;
        let max = opts.max_bytes.unwrap_or(default_max);
        let mut state = lock(&self.state);
        let from = opts.cursor.unwrap_or(state.cursor);
        loop {
            let now = Instant::now();
            let matched = opts.until.as_ref().is_some_and(|re| {
                let (_, text) = state.sink.read_from(from, usize::MAX);
                re.is_match(&text)
            });
            if state.status != JobStatus::Running
                || matched
                || now >= deadline
                || cancel.is_cancelled()
            {
                break;
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .map_or_else(|e| e.into_inner().0, |(s, _)| s);
        }
        let (cursor, output) = state.sink.read_from(from, max);
        let next_cursor = cursor + output.len() as u64;
        state.cursor = next_cursor;
        JobPoll {
            job: self.id,
            status: state.status,
            exit_code: None,
            omitted_bytes: cursor.saturating_sub(from),
            cursor,
            next_cursor,
            total_bytes: state.sink.total_bytes(),
            artifact_id: state.sink.artifact_id().map(str::to_string),
            elapsed: self.elapsed(&state),
            output,
        }
    }

    /// The job as a listing shows it.
    pub(crate) fn info(&self) -> JobInfo {
        let state = lock(&self.state);
        JobInfo {
            job: self.id,
            command: self.command.clone(),
            status: state.status,
            exit_code: None,
            started: self.started,
            elapsed: self.elapsed(&state),
            total_bytes: state.sink.total_bytes(),
            artifact_id: state.sink.artifact_id().map(str::to_string),
        }
    }

    fn elapsed(&self, state: &State) -> Duration {
        state.ended.unwrap_or_else(Instant::now) - self.start
    }
}
