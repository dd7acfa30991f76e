//! A remote session's artifact store: the local
//! [`conch_core::artifact::ArtifactStore`]'s reads (`read` by line range,
//! `resolve` of a URL), asked of the server, which holds the files. Its
//! results and errors are the local ones (an unknown id: the core's
//! `NotFound`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::RemoteError;
use super::link::Link;
use super::waiting::{Waiting, read_result};

/// The artifact store of a session on a server. It holds no session of its
/// own: it reads while the session is open, and a closed one's reads fail
/// with `SessionLost`.
pub struct RemoteArtifacts {
    link: Arc<Link>,
    session: String,
}

impl RemoteArtifacts {
    pub(super) fn new(link: Arc<Link>, session: String) -> Self {
        RemoteArtifacts { link, session }
    }

    /// Lines `[offset, offset + limit)` of an artifact (0-based, line ends
    /// kept; no limit: to the end), as
    /// [`conch_core::artifact::ArtifactStore::read`]. `id` is the bare id
    /// or its `artifact://` URL.
    pub fn read(
        &self,
        id: &str,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<String, RemoteError> {
        self.ask(
            "artifact_read",
            json!({"artifact": id, "offset": offset, "limit": limit}),
        )
    }

    /// The whole text of `artifact://<id>`, as
    /// [`conch_core::artifact::ArtifactStore::resolve`].
    pub fn resolve(&self, url: &str) -> Result<String, RemoteError> {
        self.ask("artifact_resolve", json!({ "url": url }))
    }

    fn ask(&self, op: &str, fields: Value) -> Result<String, RemoteError> {
        let Value::Object(fields) = fields else {
            unreachable!("an object")
        };
        let reply = Waiting::ask(&self.link, Some(&self.session), op, fields, None)?.wait()?;
        read_result(reply)
    }
}
