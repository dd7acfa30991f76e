//! A session opened on a server, whatever it hosts: the requests asked of
//! it, its abort and its close. The kinds' clients ([`super::RemoteShell`]
//! …) are made of one.

use std::sync::Arc;

use conch_core::CancelToken;
use serde_json::{Map, Value, json};

use super::RemoteError;
use super::artifacts::RemoteArtifacts;
use super::link::Link;
use super::waiting::Waiting;

pub(crate) struct Session {
    link: Arc<Link>,
    id: String,
}

impl Session {
    /// The session `id`, opened through `link`, which from now on resumes
    /// it after a reconnect.
    pub(super) fn new(link: Arc<Link>, id: String) -> Self {
        link.track(&id);
        Session { link, id }
    }

    pub(super) fn link(&self) -> &Link {
        &self.link
    }

    pub(super) fn link_arc(&self) -> Arc<Link> {
        self.link.clone()
    }

    /// The session's id on the server.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Sends request `op` of this session, which the caller waits on and
    /// `cancel` aborts on the server.
    pub(super) fn ask(
        &self,
        op: &str,
        fields: Map<String, Value>,
        cancel: Option<CancelToken>,
    ) -> Result<Waiting, RemoteError> {
        Waiting::ask(&self.link, Some(&self.id), op, fields, cancel)
    }

    /// Sends request `op` and waits for its reply's value.
    pub(super) fn call(&self, op: &str, fields: Map<String, Value>) -> Result<Value, RemoteError> {
        self.ask(op, fields, None)?.wait()
    }

    /// The session's artifact store, read on the server.
    pub fn artifacts(&self) -> RemoteArtifacts {
        RemoteArtifacts::new(self.link.clone(), self.id.clone())
    }

    /// Aborts what the session runs, without waiting.
    pub fn abort(&self) {
        let abort = json!({"id": self.link.fresh_id(), "op": "abort", "session": self.id});
        self.link.send(abort.to_string().into());
    }

    /// Closes the session: its processes are killed. A session the server
    /// no longer has is closed already.
    pub fn close(&self) -> Result<(), RemoteError> {
        let outcome = self.call("close", Map::new()).map(drop);
        self.link.untrack(&self.id);
        match outcome {
            Err(RemoteError::SessionLost(_)) => Ok(()),
            other => other,
        }
    }
}
