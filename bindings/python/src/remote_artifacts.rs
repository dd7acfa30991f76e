//! `conch.RemoteArtifactStore`: a remote session's artifact store (its
//! ``artifacts_dir`` on the server), with the reads of a local
//! `conch.ArtifactStore` and their results and errors.

use conch_remote::RemoteArtifacts;
use pyo3::prelude::*;

use crate::artifact::artifact_reads;
use crate::errors::remote_to_py;

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

artifact_reads!(PyRemoteArtifactStore, remote_to_py);
