//! `Remote.files` and `RemoteShell.files`: the files of a `conch serve`
//! (inside the server's sandbox) or of one of its sessions (inside its
//! sandbox, relative paths from its cwd), through conch-remote's
//! `RemoteFiles`: this only translates arguments and results.

use std::path::PathBuf;

use conch_remote::RemoteFiles;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::aio;
use crate::convert::{Whole, count, count_of};
use crate::errors::{guard, invalid, remote_to_py};
use crate::result::plain;

/// The files of a ``conch serve`` (``remote.files``) or of a remote shell
/// (``sh.files``: what its commands reach, relative paths from its cwd).
/// One ``read`` returns, and one ``write`` takes, at most 8 MiB.
#[pyclass(frozen, module = "conch", name = "RemoteFiles")]
pub struct PyRemoteFiles {
    files: RemoteFiles,
}

impl PyRemoteFiles {
    pub(crate) fn new(files: RemoteFiles) -> Self {
        PyRemoteFiles { files }
    }
}

/// A path as the server takes it: text.
fn path_text(path: PathBuf) -> PyResult<String> {
    path.into_os_string()
        .into_string()
        .map_err(|p| invalid(format!("path must be UTF-8 text, got {p:?}")))
}

#[pymethods]
impl PyRemoteFiles {
    /// The bytes of the file at ``path`` from ``offset``, ``limit`` of them
    /// (fewer at its end). ``limit=None``: the rest, refused
    /// (``InvalidArgumentError``) when more than 8 MiB remain. Raises
    /// ``NotFoundError`` for a missing path, ``IoError`` for what the
    /// system (or the sandbox) refuses.
    #[pyo3(
        signature = (path, offset=Whole::Int(0), limit=None),
        text_signature = "($self, path, offset=0, limit=None)"
    )]
    fn read<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        offset: Whole,
        limit: Option<Whole>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        guard(|| {
            let path = path_text(path)?;
            let offset = count_of("offset", offset)? as u64;
            let limit = count("limit", limit)?.map(|n| n as u64);
            let data = py
                .detach(|| self.files.read(&path, offset, limit))
                .map_err(remote_to_py)?;
            Ok(PyBytes::new(py, &data))
        })
    }

    /// Replaces the file at ``path`` with ``data`` (``bytes``, or a ``str``
    /// written as UTF-8), atomically, its parent directories made. Its
    /// mode is ``mode``, else the replaced file's, else ``0o666`` less the
    /// server's umask.
    #[pyo3(signature = (path, data, mode=None))]
    fn write(
        &self,
        py: Python<'_>,
        path: PathBuf,
        data: &Bound<'_, PyAny>,
        mode: Option<Whole>,
    ) -> PyResult<()> {
        guard(|| {
            let path = path_text(path)?;
            let data: Vec<u8> = match data.cast::<PyString>() {
                Ok(text) => text.to_str()?.as_bytes().to_vec(),
                Err(_) => data.extract::<Vec<u8>>().map_err(|_| {
                    pyo3::exceptions::PyTypeError::new_err("data must be bytes or str")
                })?,
            };
            let mode = count("mode", mode)?.map(|m| u32::try_from(m).unwrap_or(u32::MAX));
            py.detach(|| self.files.write(&path, &data, mode))
                .map_err(remote_to_py)
        })
    }

    /// What ``path`` is: ``{"name", "type": "file" | "dir" | "symlink" |
    /// "other", "size", "mode", "mtime"}`` (seconds since the epoch), and
    /// ``"target"`` for a symlink, which is never followed.
    fn stat<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let path = path_text(path)?;
            let info = py.detach(|| self.files.stat(&path)).map_err(remote_to_py)?;
            plain(py, &info)
        })
    }

    /// The entries of the directory ``path``, sorted by name, each as
    /// ``stat`` tells it.
    fn list<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyAny>> {
        guard(|| {
            let path = path_text(path)?;
            let entries = py.detach(|| self.files.list(&path)).map_err(remote_to_py)?;
            plain(py, &entries)
        })
    }

    /// Removes a file, a symlink (not its target) or an empty directory;
    /// ``recursive=True``: a directory's whole tree (symlinks in it
    /// removed, never followed).
    #[pyo3(signature = (path, *, recursive=false))]
    fn remove(&self, py: Python<'_>, path: PathBuf, recursive: bool) -> PyResult<()> {
        guard(|| {
            let path = path_text(path)?;
            py.detach(|| self.files.remove(&path, recursive))
                .map_err(remote_to_py)
        })
    }
}

aio::thread_twins! {
    PyRemoteFiles;
    /// ``read`` as a coroutine (same arguments), on a thread of its own.
    fn read_async awaits read;
    /// ``write`` as a coroutine (same arguments), on a thread of its own.
    fn write_async awaits write;
    /// ``stat`` as a coroutine, on a thread of its own.
    fn stat_async awaits stat;
    /// ``list`` as a coroutine, on a thread of its own.
    fn list_async awaits list;
    /// ``remove`` as a coroutine (same arguments), on a thread of its own.
    fn remove_async awaits remove;
}
