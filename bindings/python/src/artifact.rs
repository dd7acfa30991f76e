//! `conch.ArtifactStore` and `conch.Artifact`: full outputs spilled to
//! files, read back as `artifact://<id>`.

use std::path::PathBuf;

use conch_core::artifact::{Artifact, ArtifactStore};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::convert::{Whole, count, count_of};
use crate::errors::{guard, to_py};

/// A directory of artifacts ``<dir>/<id>.<kind>.log`` with sequential ids.
/// Pass one store as ``artifacts_dir=`` to every shell that spills into the
/// same directory, so ids are never handed out twice.
#[pyclass(frozen, module = "conch", name = "ArtifactStore")]
pub struct PyArtifactStore {
    pub inner: ArtifactStore,
}

impl PyArtifactStore {
    /// Wraps a store owned elsewhere (clones share the id counter).
    pub fn shared(inner: ArtifactStore) -> Self {
        PyArtifactStore { inner }
    }
}

#[pymethods]
impl PyArtifactStore {
    #[new]
    fn new(dir: PathBuf) -> PyResult<Self> {
        guard(|| {
            Ok(PyArtifactStore {
                inner: ArtifactStore::new(dir),
            })
        })
    }

    /// The process's own store: where a shell, a tool or a call spills
    /// when given no ``artifacts_dir`` (a private directory of this
    /// process, removed when it exits; behaviour §11).
    #[staticmethod]
    fn process_default() -> PyResult<Self> {
        guard(|| {
            Ok(PyArtifactStore {
                inner: ArtifactStore::process_default(),
            })
        })
    }

    /// The store's directory.
    #[getter]
    fn dir(&self) -> PyResult<PathBuf> {
        guard(|| Ok(self.inner.dir().to_path_buf()))
    }

    /// Reserves the next id and its path ``<dir>/<id>.<kind>.log`` (the
    /// file itself is created by whoever writes it). Creates the directory
    /// (mode 0700) if needed.
    #[pyo3(signature = (kind="bash"))]
    fn allocate(&self, py: Python<'_>, kind: &str) -> PyResult<PyArtifact> {
        guard(|| {
            py.detach(|| self.inner.allocate(kind))
                .map(PyArtifact::from)
                .map_err(to_py)
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            let dir = self.inner.dir().to_string_lossy();
            Ok(format!(
                "ArtifactStore({})",
                PyString::new(py, &dir).repr()?
            ))
        })
    }
}

/// `resolve` and `read` of `$class`, a local store or a remote one: over
/// the calls of the same names of its `inner` store, GIL released, their
/// errors mapped by `$error`.
macro_rules! artifact_reads {
    ($class:ty, $error:path) => {
        #[::pyo3::pymethods]
        impl $class {
            /// The whole text of ``"artifact://<id>"``.
            fn resolve(&self, py: ::pyo3::Python<'_>, url: &str) -> ::pyo3::PyResult<String> {
                $crate::errors::guard(|| py.detach(|| self.inner.resolve(url)).map_err($error))
            }

            /// Lines ``[offset, offset + limit)`` of an artifact (0-based, line ends
            /// kept; ``limit=None``: to the end). ``id`` is the bare id or its
            /// ``artifact://`` URL.
            #[pyo3(signature = (id, offset=$crate::convert::Whole::Int(0), limit=None))]
            #[pyo3(text_signature = "($self, id, offset=0, limit=None)")]
            fn read(
                &self,
                py: ::pyo3::Python<'_>,
                id: &str,
                offset: $crate::convert::Whole,
                limit: Option<$crate::convert::Whole>,
            ) -> ::pyo3::PyResult<String> {
                $crate::errors::guard(|| {
                    let (offset, limit) = $crate::artifact::line_range(offset, limit)?;
                    py.detach(|| self.inner.read(id, offset, limit))
                        .map_err($error)
                })
            }
        }
    };
}
pub(crate) use artifact_reads;

artifact_reads!(PyArtifactStore, to_py);

/// The lines `read(id, offset, limit)` asks for.
pub fn line_range(offset: Whole, limit: Option<Whole>) -> PyResult<(usize, Option<usize>)> {
    Ok((count_of("offset", offset)?, count("limit", limit)?))
}

/// A reserved artifact: its ``id``, the ``path`` the output goes to, and
/// the ``url`` (``artifact://<id>``) a model uses to read it back.
#[pyclass(frozen, module = "conch", name = "Artifact")]
pub struct PyArtifact {
    inner: Artifact,
}

impl From<Artifact> for PyArtifact {
    fn from(inner: Artifact) -> Self {
        PyArtifact { inner }
    }
}

#[pymethods]
impl PyArtifact {
    /// The id (a decimal number, as a string).
    #[getter]
    fn id(&self) -> &str {
        &self.inner.id
    }

    /// The file the full output goes to.
    #[getter]
    fn path(&self) -> PathBuf {
        self.inner.path.clone()
    }

    /// ``artifact://<id>``.
    #[getter]
    fn url(&self) -> PyResult<String> {
        guard(|| Ok(self.inner.url()))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            let path = self.inner.path.to_string_lossy();
            Ok(format!(
                "Artifact(id={}, path={})",
                PyString::new(py, &self.inner.id).repr()?,
                PyString::new(py, &path).repr()?
            ))
        })
    }
}
