//! A request the caller waits on, of a session or of the server's own:
//! its events and reply arrive as the caller drives it, on its thread.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::task::Poll;
use std::time::{Duration, Instant};

use conch_core::CancelToken;
use conch_core::shell::reentry::BusyKey;
use serde_json::{Map, Value, json};

use super::RemoteError;
use super::link::{Frame, Link};

/// How often a waiting request looks at its cancel token.
const CANCEL_LOOK: Duration = Duration::from_millis(20);

/// A reply's value as the result type `T`.
pub(crate) fn read_result<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, RemoteError> {
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
        mut fields: Map<String, Value>,
        cancel: Option<CancelToken>,
    ) -> Result<Waiting, RemoteError> {
        // Cancelled already: sent so, the request runs nothing on the
        // server, as a local call cancelled before it starts (an abort sent
        // after it could come too late: the server may start the request's
        // thread before it reads the next frame).
        let cancelled = cancel.as_ref().is_some_and(CancelToken::is_cancelled);
        if cancelled {
            fields.insert("cancelled".into(), Value::Bool(true));
        }
        let (id, frames) = link.request(session, op, fields)?;
        Ok(Waiting {
            link: link.clone(),
            session: session.map(str::to_string),
            id,
            frames,
            cancel,
            aborted: cancelled,
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

/// A command running on the server (a shell's run, a terminal's): its
/// output and result `T` arrive as the caller drives it, on its thread, as
/// a local run's do. Dropped before its end, it is aborted on the server.
pub struct RemoteRun<T = conch_core::BashResult> {
    waiting: Waiting,
    /// Marks the driving thread as inside a run of its session (see
    /// `RemoteShell`); `None`: no such turn to hold.
    busy: Option<BusyKey>,
    result: PhantomData<fn() -> T>,
}

impl<T: serde::de::DeserializeOwned> RemoteRun<T> {
    pub(super) fn new(waiting: Waiting, busy: Option<BusyKey>) -> Self {
        RemoteRun {
            waiting,
            busy,
            result: PhantomData,
        }
    }

    /// Receives the run's output (to `on_chunk`, on this thread) until it
    /// ends (`Poll::Ready`) or `until` passes (`Poll::Pending`; `None`: no
    /// limit). A cancelled token aborts the command on the server; the
    /// result then comes as a local run's would, `cancelled`.
    pub fn drive(
        &mut self,
        until: Option<Instant>,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Poll<Result<T, RemoteError>> {
        let _waiting_here = self.busy.as_ref().map(BusyKey::enter);
        self.waiting
            .drive(until, on_chunk)
            .map(|outcome| outcome.and_then(read_result))
    }

    /// Drives the run to its end.
    pub fn finish(mut self, on_chunk: &mut dyn FnMut(&str)) -> Result<T, RemoteError> {
        loop {
            if let Poll::Ready(outcome) = self.drive(None, on_chunk) {
                return outcome;
            }
        }
    }
}
