//! `conch.RemoteArtifactStore`: a remote session's artifact store (its
//! ``artifacts_dir`` on the server), with the reads of a local
//! `conch.ArtifactStore` and their results and errors.

use conch_remote::RemoteArtifacts;
use pyo3::prelude::*;

use crate::artifact::line_range;
use crate::convert::Whole;
use crate::errors::{guard, remote_to_py};

/// The artifact store of a session on a ``conch serve`` (``RemoteShell.
/// artifacts``): ``read`` and ``resolve`` as ``conch.ArtifactStore``'s,
/// answered by the server, which holds the files. An unknown id raises
/// ``conch.NotFoundError``, as locally.
#[pyclass(frozen, module = "conch", name = "RemoteArtifactStore")]
pub struct PyRemoteArtifactStore {
    inner: RemoteArtifacts,
}

impl From<RemoteArtifacts> for PyRemoteArtifactStore {
    fn from(inner: RemoteArtifacts) -> Self {
        PyRemoteArtifactStore { inner }
    }
}

#[pymethods]
impl PyRemoteArtifactStore {
    /// The whole text of ``"artifact://<id>"``.
    fn resolve(&self, py: Python<'_>, url: &str) -> PyResult<String> {
        guard(|| py.detach(|| self.inner.resolve(url)).map_err(remote_to_py))
    }

    /// Lines ``[offset, offset + limit)`` of an artifact (0-based, line ends
    /// kept; ``limit=None``: to the end). ``id`` is the bare id or its
    /// ``artifact://`` URL.
    #[pyo3(signature = (id, offset=Whole::Int(0), limit=None), text_signature = "($self, id, offset=0, limit=None)")]
    fn read(
        &self,
        py: Python<'_>,
        id: &str,
        offset: Whole,
        limit: Option<Whole>,
    ) -> PyResult<String> {
        guard(|| {
            let (offset, limit) = line_range(offset, limit)?;
            py.detach(|| self.inner.read(id, offset, limit))
                .map_err(remote_to_py)
        })
    }
}
