//! `conch.PtySession` and `conch.PtyResult`: one command at a time on a
//! pseudo-terminal, with a virtual screen.

use std::sync::Arc;

use conch_core::pty::{self, PtyOptions};
use pyo3::prelude::*;

use crate::aio;
use crate::command_method::command_method;
use crate::convert::{self, Whole, cells};
use crate::errors::{guard, to_py};
use crate::offload::offload;
use crate::option_signatures::pty_options;
use crate::signature::text_signature;

/// A pseudo-terminal that runs one command at a time (``bash -c``), for
/// programs that want a terminal: prompts, progress bars, full-screen
/// tools. ``start`` blocks (GIL released) while other threads ``write``
/// input, ``resize`` or ``kill``; ``screen_text()`` shows what a user
/// would see. A context manager: leaving it kills a running command.
#[pyclass(frozen, module = "conch", name = "PtySession")]
pub struct PyPtySession {
    inner: Arc<pty::PtySession>,
}

impl PyPtySession {
    /// Wraps a terminal owned elsewhere (a `BashTool`'s).
    pub fn shared(inner: Arc<pty::PtySession>) -> Self {
        PyPtySession { inner }
    }
}

#[pymethods]
impl PyPtySession {
    #[new]
    fn new() -> PyResult<Self> {
        guard(|| {
            Ok(PyPtySession {
                inner: Arc::new(pty::PtySession::new()),
            })
        })
    }

    /// Sends input to the running command as typed (``bytes`` or ``str``):
    /// Kitty keyboard sequences become legacy bytes, cursor keys follow the
    /// terminal's mode. Blocks while the terminal's input buffer is full.
    fn write(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let bytes = convert::input_bytes(data)?;
            let session = self.inner.clone();
            py.detach(move || session.write(&bytes)).map_err(to_py)
        })
    }

    /// Sends a named key: ``"enter"``, ``"ctrl+c"``, ``"up"``, ``"f5"``,
    /// ``"shift+tab"``...
    fn write_key(&self, py: Python<'_>, key: String) -> PyResult<()> {
        guard(|| {
            let session = self.inner.clone();
            py.detach(move || session.write_key(&key)).map_err(to_py)
        })
    }

    /// Resizes the terminal (the command gets SIGWINCH); sizes are clamped
    /// to what the terminal accepts, as at ``start``.
    fn resize(&self, cols: Whole, rows: Whole) -> PyResult<()> {
        guard(|| {
            let (cols, rows) = (cells("cols", cols)?, cells("rows", rows)?);
            self.inner.resize(cols, rows).map_err(to_py)
        })
    }

    /// Stops the running command (its whole process tree); returns at once.
    fn kill(&self) -> PyResult<()> {
        guard(|| self.inner.kill().map_err(to_py))
    }

    /// Whether a command is running.
    fn is_running(&self) -> PyResult<bool> {
        guard(|| Ok(self.inner.is_running()))
    }

    /// The visible screen as text (the last command's, once it ended).
    fn screen_text(&self) -> PyResult<String> {
        guard(|| Ok(self.inner.screen_text()))
    }

    /// The cursor as ``(row, col)``, 0-based.
    fn cursor_position(&self) -> PyResult<(u16, u16)> {
        guard(|| Ok(self.inner.cursor_position()))
    }

    /// ``(cols, rows)`` of the terminal.
    fn size(&self) -> PyResult<(u16, u16)> {
        guard(|| Ok(self.inner.size()))
    }

    fn __repr__(&self) -> PyResult<String> {
        guard(|| {
            let (cols, rows) = self.inner.size();
            let state = if self.inner.is_running() {
                "running"
            } else {
                "idle"
            };
            Ok(format!("<conch.PtySession {state} {cols}x{rows}>"))
        })
    }
}

command_method! {
    PyPtySession => PtyResult;
    #[doc = text_signature!("start($self, command, *, ", pty_options!(), ", on_chunk=None, cancel=None)")]
    /// Runs ``command`` on a new ``cols`` x ``rows`` terminal and blocks
    /// until it ends; returns a ``conch.PtyResult``. ``on_chunk(text)``
    /// gets the raw terminal text (escape sequences intact) on this thread;
    /// the result's ``output`` is the sanitized text for a model (at most
    /// ``max_bytes``, the tail). ``timeout`` (seconds), ``kill()`` and
    /// ``cancel`` stop the command's whole process tree. A command that
    /// cannot start is reported in ``output`` (``PTY error: ...``) with
    /// ``exit_code=None``. Raises ``conch.InvalidArgumentError`` if a
    /// command is already running on this session. ``sandbox``: the
    /// sandbox the command runs in, as ``Shell(sandbox=...)`` takes it
    /// (made for this run, removed after it).
    #[pyo3(text_signature = None)]
    fn start |this, py, command, options, on_chunk, token| {
        let opts = PtyOptions {
            cancel: Some(token.clone()),
            ..crate::options::read("start", options, &[("command", command.into_any())])?
        };
        let session = this.inner.clone();
        let result = offload(py, on_chunk, token, move |sink| session.start(opts, sink))?;
        result.map_err(to_py)
    }
}

aio::coroutine_twins! {
    PyPtySession;
    /// ``start`` as a coroutine (same arguments). Cancelling the awaiting
    /// task kills the command; ``on_chunk`` is called on a worker thread.
    fn start_async(command) awaits start;
}

aio::context_manager! {
    PyPtySession,
    exit: |session, _py| guard(|| {
        if session.inner.is_running() {
            // Only fails when the command ended meanwhile.
            let _ = session.inner.kill();
        }
        Ok(())
    }),
    /// ``async with``: the session itself.
    __aenter__,
    /// ``async with`` exit: kills a running command, as ``with`` does.
    __aexit__,
}
