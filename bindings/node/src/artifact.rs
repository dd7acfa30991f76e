//! `ArtifactStore`: full outputs spilled to files, read back as `artifact://<id>`.

use conch_core::artifact::ArtifactStore as CoreStore;
use napi_derive::napi;

use crate::errors::{Code, core_error};
use crate::options;

/// A reserved artifact.
#[napi(object, object_from_js = false)]
pub struct Artifact {
    /// The id (a decimal integer as text).
    pub id: String,
    /// The file the full output goes to (created only when output spills).
    pub path: String,
    /// `artifact://<id>`.
    pub url: String,
}

/// A directory of artifacts `<id>.<kind>.log` with sequential ids.
#[napi]
pub struct ArtifactStore {
    inner: CoreStore,
}

#[napi]
impl ArtifactStore {
    /// A store over `dir` (nothing touches the disk before `allocate`).
    #[napi(constructor, catch_unwind)]
    pub fn new(dir: String) -> Self {
        ArtifactStore {
            inner: CoreStore::new(dir),
        }
    }

    /// The process's own store: where a shell, a tool or a call spills
    /// when given no `artifactsDir` (a private directory of this process,
    /// removed when it exits; behaviour §11).
    #[napi(factory, catch_unwind)]
    pub fn process_default() -> Self {
        ArtifactStore {
            inner: CoreStore::process_default(),
        }
    }

    /// The store's directory.
    #[napi(getter, catch_unwind)]
    pub fn dir(&self) -> String {
        self.inner.dir().to_string_lossy().into_owned()
    }

    /// Reserves the next id for an artifact of `kind` (e.g. `'bash'`).
    #[napi(catch_unwind)]
    pub fn allocate(&self, kind: String) -> napi::Result<Artifact, Code> {
        let a = self.inner.allocate(&kind).map_err(core_error)?;
        Ok(Artifact {
            url: a.url(),
            path: a.path.to_string_lossy().into_owned(),
            id: a.id,
        })
    }

    /// The whole text of `artifact://<id>`.
    #[napi(catch_unwind)]
    pub fn resolve(&self, url: String) -> napi::Result<String, Code> {
        self.inner.resolve(&url).map_err(core_error)
    }

    /// Lines `[offset, offset + limit)` of an artifact (0-based, line ends
    /// kept; no limit: to the end). `id` is the id or its `artifact://` URL.
    #[napi(catch_unwind)]
    pub fn read(
        &self,
        id: String,
        offset: Option<f64>,
        limit: Option<f64>,
    ) -> napi::Result<String, Code> {
        let offset = options::lines("offset", offset)?.unwrap_or(0);
        let limit = options::lines("limit", limit)?;
        self.inner.read(&id, offset, limit).map_err(core_error)
    }
}
