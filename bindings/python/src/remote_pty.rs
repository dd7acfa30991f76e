//! `conch.RemotePty`: a terminal on a `conch serve`, with the calls and
//! results of a local `conch.PtySession` (the same `PtyResult`, errors,
//! cancel tokens and asyncio twin): a host moves its terminal to a
//! container by changing the line that makes it.

use std::sync::Arc;

use conch_core::pty::PtyOptions;
use conch_core::sync::Slot;
use conch_remote::RemotePty;
use pyo3::prelude::*;

use crate::aio;
use crate::command_method::command_method;
use crate::convert::{self, Whole, cells};
use crate::errors::{guard, remote_to_py};
use crate::offload::drive_here;
use crate::options;
use crate::remote::{close_slot, open_slot};

/// A terminal on a ``conch serve`` (from ``Remote.pty()``), with
/// ``conch.PtySession``'s calls: ``start`` (and ``start_async``) blocks
/// while other threads ``write``, ``write_key``, ``resize`` or ``kill``;
/// ``screen_text()`` asks the server for the screen. Input crosses the
/// wire as text: bytes must be UTF-8. A context manager: leaving it closes
/// the session, killing a running command.
#[pyclass(frozen, module = "conch", name = "RemotePty")]
pub struct PyRemotePty {
    /// `None` once closed.
    pty: Slot<RemotePty>,
}

impl PyRemotePty {
    pub(crate) fn new(pty: RemotePty) -> Self {
        PyRemotePty {
            pty: Slot::new(pty),
        }
    }

    fn open(&self) -> PyResult<Arc<RemotePty>> {
        open_slot(&self.pty, "pty session")
    }

    /// Runs `call` on the open session with the GIL released.
    fn call<T: Send>(
        &self,
        py: Python<'_>,
        call: impl FnOnce(&RemotePty) -> Result<T, conch_remote::RemoteError> + Send,
    ) -> PyResult<T> {
        let pty = self.open()?;
        py.detach(|| call(&pty)).map_err(remote_to_py)
    }
}

#[pymethods]
impl PyRemotePty {
    /// Sends input to the running command as typed (``str``, or ``bytes``
    /// of UTF-8 text), as ``PtySession.write``.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let bytes = convert::input_bytes(data)?;
            self.call(py, |pty| pty.write(&bytes))
        })
    }

    /// Sends a named key: ``"enter"``, ``"ctrl+c"``, ``"up"``, ``"f5"``...
    fn write_key(&self, py: Python<'_>, key: String) -> PyResult<()> {
        guard(|| self.call(py, |pty| pty.write_key(&key)))
    }

    /// Resizes the terminal (the command gets SIGWINCH), as
    /// ``PtySession.resize``.
    fn resize(&self, py: Python<'_>, cols: Whole, rows: Whole) -> PyResult<()> {
        guard(|| {
            let (cols, rows) = (cells("cols", cols)?, cells("rows", rows)?);
            self.call(py, |pty| pty.resize(cols, rows))
        })
    }

    /// Stops the running command (its whole process tree); returns once
    /// the server has it.
    fn kill(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| self.call(py, RemotePty::kill))
    }

    /// The visible screen as text (the last command's, once it ended).
    fn screen_text(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| self.call(py, RemotePty::screen_text))
    }

    /// Whether a command is running.
    fn is_running(&self, py: Python<'_>) -> PyResult<bool> {
        guard(|| self.call(py, RemotePty::is_running))
    }

    /// The cursor as ``(row, col)``, 0-based.
    fn cursor_position(&self, py: Python<'_>) -> PyResult<(u16, u16)> {
        guard(|| self.call(py, RemotePty::cursor_position))
    }

    /// ``(cols, rows)`` of the terminal.
    fn size(&self, py: Python<'_>) -> PyResult<(u16, u16)> {
        guard(|| self.call(py, RemotePty::size))
    }

    /// Closes the session on the server: a running command is killed.
    /// Idempotent.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| close_slot(py, &self.pty, RemotePty::close))
    }
}

command_method! {
    PyRemotePty => PtyResult;
    /// Runs ``command`` on a new terminal on the server, as
    /// ``PtySession.start`` does (the same options, read there, callback,
    /// cancel token and ``conch.PtyResult``).
    fn start |this, py, command, options, on_chunk, token| {
        let mut sent = options::to_send::<PtyOptions>("start", options)?;
        sent.insert("command".into(), command.to_str()?.into());
        let pty = this.open()?;
        let mut run = py
            .detach(|| pty.start_run(sent, Some(token.clone())))
            .map_err(remote_to_py)?;
        let result = drive_here(py, on_chunk, token, |until, sink| {
            run.drive(Some(until), sink)
        })?;
        result.map_err(remote_to_py)
    }
}

aio::coroutine_twins! {
    PyRemotePty;
    /// ``start`` as a coroutine (same arguments). Cancelling the awaiting
    /// task kills the command on the server; ``on_chunk`` is called on a
    /// worker thread.
    fn start_async(command) awaits start;
}

aio::context_manager! {
    PyRemotePty,
    exit: |pty, py| pty.close(py),
    /// ``async with``: the session itself.
    __aenter__,
    /// ``async with`` exit: ``close()`` on a thread of its own.
    __aexit__,
}
