//! The file requests (`file_read`, `file_write`, `file_stat`, `file_list`,
//! `file_remove`; docs/remote.md, "Files"): what they ask ([`FileRequest`]),
//! the operations themselves ([`ops`], written once), and where they run
//! ([`confined`]): in the server's process when no sandbox applies, else
//! in a helper started inside the sandbox, so a file request reaches what
//! the sandbox's commands reach and nothing more.

pub mod confined;
pub(crate) mod ops;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use ops::{FileInfo, FileKind, MAX_BYTES};

/// The argument that makes the server's binary its files helper
/// (`conch files-helper`): one request as JSON on stdin, its answer on
/// stdout.
pub const HELPER_ARG: &str = "files-helper";

/// One file request, as the server read it from the protocol and as its
/// helper reads it from stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum FileRequest {
    /// Bytes `offset..offset + limit` of a file (`limit` none: the whole
    /// rest, refused past [`MAX_BYTES`]).
    Read {
        path: PathBuf,
        offset: u64,
        limit: Option<u64>,
    },
    /// Replaces a file atomically, its parents created.
    Write {
        path: PathBuf,
        #[serde(with = "base64")]
        data: Vec<u8>,
        mode: Option<u32>,
    },
    Stat {
        path: PathBuf,
    },
    List {
        path: PathBuf,
    },
    Remove {
        path: PathBuf,
        recursive: bool,
    },
}

impl FileRequest {
    /// The same request with a relative path made absolute against `cwd`.
    pub(crate) fn resolved(mut self, cwd: &std::path::Path) -> FileRequest {
        let path = match &mut self {
            FileRequest::Read { path, .. }
            | FileRequest::Write { path, .. }
            | FileRequest::Stat { path }
            | FileRequest::List { path }
            | FileRequest::Remove { path, .. } => path,
        };
        if path.is_relative() {
            *path = cwd.join(&*path);
        }
        self
    }
}

/// Bytes as base64 text: how file data crosses JSON (frames, the helper's
/// pipes).
pub(crate) mod base64 {
    use data_encoding::BASE64;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn encode(bytes: &[u8]) -> String {
        BASE64.encode(bytes)
    }

    pub fn decode(text: &str) -> Result<Vec<u8>, String> {
        BASE64
            .decode(text.as_bytes())
            .map_err(|e| format!("not base64: {e}"))
    }

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map_err(serde::de::Error::custom)
    }
}
