//! The files of a server ([`Remote::files`]) or of a shell session
//! ([`RemoteShell::files`]: inside its sandbox, relative paths from its
//! cwd): read by range, write atomically, stat, list, remove. Data crosses
//! as base64; one read or write carries at most [`MAX_BYTES`].

use std::sync::Arc;

use conch_core::Error;
use serde_json::{Map, Value, json};

use super::link::Link;
use super::waiting::{Waiting, read_result};
use super::{Remote, RemoteError, RemoteShell};
use crate::files::{FileInfo, MAX_BYTES, base64};

/// The file requests of a server, or of one of its shell sessions.
pub struct RemoteFiles {
    link: Arc<Link>,
    /// The session whose sandbox and cwd the requests act in; none: the
    /// server's.
    session: Option<String>,
}

impl Remote {
    /// The server's files: its sandbox (its sandbox flags) confines them
    /// when it has one; relative paths start at its cwd.
    pub fn files(&self) -> RemoteFiles {
        RemoteFiles {
            link: self.link.clone(),
            session: None,
        }
    }
}

impl RemoteShell {
    /// The files as this session's commands see them: inside its sandbox,
    /// relative paths from its cwd.
    pub fn files(&self) -> RemoteFiles {
        RemoteFiles {
            link: self.session().link_arc(),
            session: Some(self.id().to_string()),
        }
    }
}

impl RemoteFiles {
    /// Bytes `offset..offset + limit` of the file at `path` (fewer at its
    /// end). `limit` none: the rest of the file, refused
    /// (`InvalidArgument`) when more than [`MAX_BYTES`] remain; a `limit`
    /// over [`MAX_BYTES`] is refused too.
    pub fn read(
        &self,
        path: &str,
        offset: u64,
        limit: Option<u64>,
    ) -> Result<Vec<u8>, RemoteError> {
        let reply = self.call("file_read", path, json!({"offset": offset, "limit": limit}))?;
        let data = reply["data"].as_str().unwrap_or_default();
        base64::decode(data)
            .map_err(|e| RemoteError::ConnectionLost(format!("the server sent bad data: {e}")))
    }

    /// Replaces the file at `path` with `data`, atomically (a reader sees
    /// the old file or the new one), its parents created; its mode is
    /// `mode`, else the replaced file's, else `0o666` less the server's
    /// umask. At most [`MAX_BYTES`].
    pub fn write(&self, path: &str, data: &[u8], mode: Option<u32>) -> Result<(), RemoteError> {
        if data.len() as u64 > MAX_BYTES {
            return Err(RemoteError::Core(Error::InvalidArgument(format!(
                "data must be at most {MAX_BYTES} bytes (one write), got {}",
                data.len()
            ))));
        }
        let fields = json!({"data": base64::encode(data), "mode": mode});
        self.call("file_write", path, fields).map(drop)
    }

    /// What the path is (a symlink is told, not followed).
    pub fn stat(&self, path: &str) -> Result<FileInfo, RemoteError> {
        read_result(self.call("file_stat", path, Value::Null)?)
    }

    /// The entries of the directory at `path`, sorted by name.
    pub fn list(&self, path: &str) -> Result<Vec<FileInfo>, RemoteError> {
        read_result(self.call("file_list", path, Value::Null)?)
    }

    /// Removes a file, a symlink (not its target), or an empty directory;
    /// with `recursive`, a directory's whole tree (its symlinks removed,
    /// never followed).
    pub fn remove(&self, path: &str, recursive: bool) -> Result<(), RemoteError> {
        self.call("file_remove", path, json!({ "recursive": recursive }))
            .map(drop)
    }

    /// Asks request `op` about `path`, with the fields of `more`.
    fn call(&self, op: &str, path: &str, more: Value) -> Result<Value, RemoteError> {
        let mut fields = Map::new();
        fields.insert("path".into(), json!(path));
        if let Value::Object(more) = more {
            fields.extend(more);
        }
        Waiting::ask(&self.link, self.session.as_deref(), op, fields, None)?.wait()
    }
}
