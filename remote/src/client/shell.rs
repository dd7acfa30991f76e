//! A session on a server, with the local [`conch_core::Shell`]'s calls:
//! `run` streams the output to `on_chunk` and returns the same
//! [`BashResult`]; the run's cancel token aborts it on the server.

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::task::Poll;
use std::time::{Duration, Instant};

use conch_core::{BashResult, CancelToken, RunOptions};
use serde_json::{Map, Value, json};

use super::link::{Frame, Link};
use super::{RemoteError, with_options};

/// How often a waiting run looks at its cancel token.
const CANCEL_LOOK: Duration = Duration::from_millis(20);

pub struct RemoteShell {
    link: Arc<Link>,
    session: String,
    sandbox_applied: Value,
}

impl RemoteShell {
    pub(super) fn new(link: Arc<Link>, session: String, sandbox_applied: Value) -> Self {
        link.track(&session);
        RemoteShell {
            link,
            session,
            sandbox_applied,
        }
    }

    pub(super) fn link(&self) -> &Link {
        &self.link
    }

    /// The session's id on the server.
    pub fn id(&self) -> &str {
        &self.session
    }

    /// What of the sandbox the server applied, serialized (`null`: none).
    pub fn sandbox_applied(&self) -> &Value {
        &self.sandbox_applied
    }

    /// Runs a command on the server, as [`conch_core::Shell::run`] does
    /// locally.
    pub fn run(
        &self,
        opts: RunOptions,
        mut on_chunk: impl FnMut(&str),
    ) -> Result<BashResult, RemoteError> {
        let mut run = self.start_run(opts)?;
        loop {
            if let Poll::Ready(outcome) = run.drive(None, &mut on_chunk) {
                return outcome;
            }
        }
    }

    /// Asks the server to run a command; the returned run is driven by the
    /// caller, on its thread, as a local [`conch_core::Run`] is.
    pub fn start_run(&self, opts: RunOptions) -> Result<RemoteRun, RemoteError> {
        let cancel = opts.cancel.clone();
        let options = serde_json::to_value(&opts).expect("run options serialize");
        let waiting = self.ask("run", with_options(options), cancel)?;
        Ok(RemoteRun(waiting))
    }

    /// Sends a request of this session that the caller waits on, which
    /// `cancel` aborts on the server.
    pub(super) fn ask(
        &self,
        op: &str,
        fields: Map<String, Value>,
        cancel: Option<CancelToken>,
    ) -> Result<Waiting, RemoteError> {
        Waiting::ask(&self.link, Some(&self.session), op, fields, cancel)
    }

    /// Aborts what the session runs, as [`conch_core::Shell::abort`]:
    /// asked of the server without waiting (the run ends `cancelled`).
    pub fn abort(&self) {
        let abort = json!({"id": self.link.fresh_id(), "op": "abort", "session": self.session});
        self.link.send(abort.to_string().into());
    }

    /// Closes the session: its processes are killed.
    pub fn close(&self) -> Result<(), RemoteError> {
        let outcome = self
            .ask("close", Map::new(), None)
            .and_then(Waiting::wait)
            .map(drop);
        self.link.untrack(&self.session);
        match outcome {
            Err(RemoteError::SessionLost(_)) => Ok(()),
            other => other,
        }
    }
}

/// A command running on the server: its output and result arrive as the
/// caller drives it. Dropped before its end, it is aborted on the server.
pub struct RemoteRun(Waiting);

impl RemoteRun {
    /// Receives the run's output (to `on_chunk`, on this thread) until it
    /// ends (`Poll::Ready`) or `until` passes (`Poll::Pending`; `None`: no
    /// limit). A cancelled token aborts the command on the server; the
    /// result then comes as a local run's would, `cancelled`.
    pub fn drive(
        &mut self,
        until: Option<Instant>,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Poll<Result<BashResult, RemoteError>> {
        self.0
            .drive(until, on_chunk)
            .map(|outcome| outcome.and_then(read_result))
    }
}

/// A reply's value as the result type `T`.
pub(super) fn read_result<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, RemoteError> {
    serde_json::from_value(value)
        .map_err(|e| RemoteError::ConnectionLost(format!("the server sent a bad result: {e}")))
}

/// A request the caller waits on: its events and its reply arrive as the
/// caller drives it, and its cancel token (when it has one) aborts it on
/// the server. Dropped before its reply, it is aborted.
pub(super) struct Waiting {
    link: Arc<Link>,
    /// The session it is for; a request of the server's own (`hello`,
    /// `open`) has none, and is not aborted.
    session: Option<String>,
    id: Value,
    frames: mpsc::Receiver<Frame>,
    cancel: Option<CancelToken>,
    aborted: bool,
    ended: bool,
}

impl Waiting {
    /// Sends request `op` (of `session`, when given).
    pub(super) fn ask(
        link: &Arc<Link>,
        session: Option<&str>,
        op: &str,
        fields: Map<String, Value>,
        cancel: Option<CancelToken>,
    ) -> Result<Waiting, RemoteError> {
        let (id, frames) = link.request(session, op, fields)?;
        Ok(Waiting {
            link: link.clone(),
            session: session.map(str::to_string),
            id,
            frames,
            cancel,
            aborted: false,
            ended: false,
        })
    }

    /// Waits for the reply, events to `on_chunk`, until `until`.
    pub(super) fn drive(
        &mut self,
        until: Option<Instant>,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Poll<Result<Value, RemoteError>> {
        if self.ended {
            return Poll::Ready(Err(RemoteError::Core(conch_core::Error::InvalidArgument(
                "this call has ended".into(),
            ))));
        }
        loop {
            if !self.aborted && self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
                self.abort();
            }
            let now = Instant::now();
            let mut wait = until.map_or(Duration::MAX, |u| u.saturating_duration_since(now));
            if self.cancel.is_some() && !self.aborted {
                wait = wait.min(CANCEL_LOOK);
            }
            let frame = match wait {
                Duration::MAX => self
                    .frames
                    .recv()
                    .map_err(|_| RecvTimeoutError::Disconnected),
                wait => self.frames.recv_timeout(wait),
            };
            match frame {
                Ok(Frame::Event(event)) => {
                    if let Some(text) = event.get("text").and_then(Value::as_str) {
                        on_chunk(text);
                    }
                }
                Ok(Frame::Reply(outcome)) => {
                    self.ended = true;
                    return Poll::Ready(outcome.map_err(RemoteError::from));
                }
                Err(RecvTimeoutError::Timeout) => {
                    if until.is_some_and(|u| Instant::now() >= u) {
                        return Poll::Pending;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    return Poll::Ready(Err(self.link.lost()));
                }
            }
        }
    }

    /// Waits for the reply.
    pub(super) fn wait(mut self) -> Result<Value, RemoteError> {
        loop {
            if let Poll::Ready(outcome) = self.drive(None, &mut |_| {}) {
                return outcome;
            }
        }
    }

    /// Asks the server to abort this request (once); one of the server's
    /// own is not aborted.
    fn abort(&mut self) {
        self.aborted = true;
        if let Some(session) = &self.session {
            let abort = json!({"id": self.link.fresh_id(), "op": "abort",
                               "session": session, "run": self.id});
            self.link.send(abort.to_string().into());
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.ended && !self.aborted {
            self.abort();
        }
    }
}
