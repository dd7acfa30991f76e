//! A session on a server, with the local [`conch_core::Shell`]'s calls:
//! `run` streams the output to `on_chunk` and returns the same
//! [`BashResult`]; the run's cancel token aborts it on the server.

use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use conch_core::{BashResult, RunOptions};
use serde_json::{Map, Value, json};

use super::link::{Frame, Link};
use super::{RemoteError, call, with_options};

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
        let cancel = opts.cancel.clone();
        let options = serde_json::to_value(&opts).expect("run options serialize");
        let (id, frames) = self
            .link
            .request(Some(&self.session), "run", with_options(options))?;
        let mut aborted = false;
        loop {
            let frame = match &cancel {
                Some(_) => frames.recv_timeout(CANCEL_LOOK),
                None => frames.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match frame {
                Ok(Frame::Event(event)) => {
                    if let Some(text) = event.get("text").and_then(Value::as_str) {
                        on_chunk(text);
                    }
                }
                Ok(Frame::Reply(outcome)) => {
                    let value = outcome?;
                    return serde_json::from_value(value).map_err(|e| {
                        RemoteError::ConnectionLost(format!("the server sent a bad result: {e}"))
                    });
                }
                Err(RecvTimeoutError::Timeout) => {
                    if !aborted && cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                        aborted = true;
                        let abort = json!({"id": format!("{}-abort", id.as_str().unwrap_or("")),
                                           "op": "abort", "session": self.session, "run": id});
                        self.link.send(abort.to_string().into());
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return Err(self.link.lost()),
            }
        }
    }

    /// Aborts what the session runs, as [`conch_core::Shell::abort`].
    pub fn abort(&self) -> Result<(), RemoteError> {
        call(&self.link, Some(&self.session), "abort", Map::new()).map(drop)
    }

    /// Closes the session: its processes are killed.
    pub fn close(&self) -> Result<(), RemoteError> {
        let outcome = call(&self.link, Some(&self.session), "close", Map::new()).map(drop);
        self.link.untrack(&self.session);
        match outcome {
            Err(RemoteError::SessionLost(_)) => Ok(()),
            other => other,
        }
    }
}
