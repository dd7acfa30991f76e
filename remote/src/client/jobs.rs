//! A remote session's jobs, with the local [`conch_core::Shell`]'s job
//! calls and results: start, poll, list, input, keys, signals, kill, and
//! the wait for the first to end. A poll or a wait that the caller's cancel
//! token ends is aborted on the server, as locally it ends the wait (never
//! the job).

use std::time::Duration;

use conch_core::{CancelToken, JobExitHook, JobId, JobInfo, JobOptions, JobPoll, PollOptions};
use serde_json::{Map, Value, json};

use super::shell::RemoteShell;
use super::waiting::read_result;
use super::{RemoteError, with_options};

/// The fields of a request about job `job`, and `more`.
fn about(job: JobId, more: Value) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("job".into(), json!(job));
    if let Value::Object(more) = more {
        fields.extend(more);
    }
    fields
}

impl RemoteShell {
    /// Tells `hook` of the end of every job of the session from now on,
    /// with its `JobInfo`, as a local session's `on_job_exit`: on a thread
    /// of the client's, one at a time, in order; the hook may call the
    /// session (poll the job, start another).
    pub fn on_job_exit(&self, hook: JobExitHook) {
        self.session().link().on_job_exit(self.id(), hook);
    }

    /// Starts a job, as [`conch_core::Shell::start`]; its id.
    pub fn start(&self, opts: JobOptions) -> Result<JobId, RemoteError> {
        self.check_turn("a job was started")?;
        let options = serde_json::to_value(&opts).expect("job options serialize");
        let reply = self
            .session()
            .ask("job_start", with_options(options), None)?
            .wait()?;
        read_result(reply["job"].clone())
    }

    /// The session's jobs, as [`conch_core::Shell::jobs`].
    pub fn jobs(&self) -> Result<Vec<JobInfo>, RemoteError> {
        read_result(self.session().ask("jobs", Map::new(), None)?.wait()?)
    }

    /// Reads a job's output, as [`conch_core::Shell::poll`].
    pub fn poll(
        &self,
        job: JobId,
        opts: &PollOptions,
        cancel: Option<&CancelToken>,
    ) -> Result<JobPoll, RemoteError> {
        let options = serde_json::to_value(opts).expect("poll options serialize");
        let fields = about(job, json!({ "options": options }));
        read_result(
            self.session()
                .ask("job_poll", fields, cancel.cloned())?
                .wait()?,
        )
    }

    /// Writes to a job's input, as [`conch_core::Shell::write`]; the data
    /// crosses the wire as text, so it must be UTF-8.
    pub fn write(&self, job: JobId, data: &[u8]) -> Result<(), RemoteError> {
        let text = std::str::from_utf8(data).map_err(|_| {
            RemoteError::Core(conch_core::Error::InvalidArgument(
                "input for a remote job must be UTF-8 text".into(),
            ))
        })?;
        self.session()
            .ask("job_write", about(job, json!({ "data": text })), None)?
            .wait()
            .map(drop)
    }

    /// Closes a job's input, as [`conch_core::Shell::close_stdin`].
    pub fn close_stdin(&self, job: JobId) -> Result<(), RemoteError> {
        self.session()
            .ask("job_close_stdin", about(job, Value::Null), None)?
            .wait()
            .map(drop)
    }

    /// Types a named key on a job's terminal, as
    /// [`conch_core::Shell::write_key`].
    pub fn write_key(&self, job: JobId, key: &str) -> Result<(), RemoteError> {
        self.session()
            .ask("job_key", about(job, json!({ "key": key })), None)?
            .wait()
            .map(drop)
    }

    /// Sends a signal to a job's processes, as [`conch_core::Shell::signal`].
    pub fn signal(&self, job: JobId, signal: &str) -> Result<(), RemoteError> {
        self.session()
            .ask("job_signal", about(job, json!({ "signal": signal })), None)?
            .wait()
            .map(drop)
    }

    /// Kills a job's whole tree, as [`conch_core::Shell::kill`].
    pub fn kill(&self, job: JobId) -> Result<JobPoll, RemoteError> {
        read_result(
            self.session()
                .ask("job_kill", about(job, Value::Null), None)?
                .wait()?,
        )
    }

    /// The first of `jobs` to end, waiting up to `timeout`, as
    /// [`conch_core::Shell::wait_any`].
    pub fn wait_any(
        &self,
        jobs: &[JobId],
        timeout: Duration,
        cancel: Option<&CancelToken>,
    ) -> Result<Option<JobId>, RemoteError> {
        let fields = json!({"jobs": jobs, "timeout": timeout.as_secs_f64()});
        let Value::Object(fields) = fields else {
            unreachable!("an object")
        };
        read_result(
            self.session()
                .ask("job_wait_any", fields, cancel.cloned())?
                .wait()?,
        )
    }
}
