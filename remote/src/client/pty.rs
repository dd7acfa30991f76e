//! A pty session on a server, with the local
//! [`conch_core::pty::PtySession`]'s calls: `start` streams the terminal's
//! raw text to `on_chunk` and returns the same [`PtyResult`]; `write`,
//! `write_key`, `resize`, `kill` and `screen_text` reach the running
//! command from any thread, as locally.

use conch_core::CancelToken;
use conch_core::pty::PtyResult;
use serde_json::{Map, Value, json};

use super::session::Session;
use super::waiting::{RemoteRun, read_result};
use super::{RemoteError, with_options};

pub struct RemotePty {
    session: Session,
}

/// A `pty_state` reply: what the local accessors tell, in one answer.
#[derive(serde::Deserialize)]
struct PtyState {
    running: bool,
    cursor: (u16, u16),
    size: (u16, u16),
}

impl RemotePty {
    pub(super) fn new(session: Session) -> Self {
        RemotePty { session }
    }

    /// The session's id on the server.
    pub fn id(&self) -> &str {
        self.session.id()
    }

    /// Runs a command on a new terminal on the server and waits for its
    /// end, as [`conch_core::pty::PtySession::start`]. `options` are the
    /// local `PtyOptions` serialized (docs/api/schema.json), `command`
    /// among them, in the spelling the session was opened with: they are
    /// read on the server, where paths and the sandbox mean something.
    /// `cancel` stops the command as the local token does.
    pub fn start(
        &self,
        options: Map<String, Value>,
        cancel: Option<CancelToken>,
        mut on_chunk: impl FnMut(&str),
    ) -> Result<PtyResult, RemoteError> {
        self.start_run(options, cancel)?.finish(&mut on_chunk)
    }

    /// Asks the server to start a command; the returned run is driven by
    /// the caller, on its thread.
    pub fn start_run(
        &self,
        options: Map<String, Value>,
        cancel: Option<CancelToken>,
    ) -> Result<RemoteRun<PtyResult>, RemoteError> {
        let waiting =
            self.session
                .ask("pty_start", with_options(Value::Object(options)), cancel)?;
        Ok(RemoteRun::new(waiting, None))
    }

    /// Sends input to the running command, as
    /// [`conch_core::pty::PtySession::write`]; the data crosses the wire as
    /// text, so it must be UTF-8.
    pub fn write(&self, data: &[u8]) -> Result<(), RemoteError> {
        let text = std::str::from_utf8(data).map_err(|_| {
            RemoteError::Core(conch_core::Error::InvalidArgument(
                "input for a remote terminal must be UTF-8 text".into(),
            ))
        })?;
        self.call("pty_write", json!({ "data": text })).map(drop)
    }

    /// Sends a named key (`enter`, `ctrl+c`, `up`…), as
    /// [`conch_core::pty::PtySession::write_key`].
    pub fn write_key(&self, key: &str) -> Result<(), RemoteError> {
        self.call("pty_key", json!({ "key": key })).map(drop)
    }

    /// Resizes the terminal (the command gets SIGWINCH), as
    /// [`conch_core::pty::PtySession::resize`].
    pub fn resize(&self, cols: u16, rows: u16) -> Result<(), RemoteError> {
        self.call("pty_resize", json!({"cols": cols, "rows": rows}))
            .map(drop)
    }

    /// Stops the running command, as [`conch_core::pty::PtySession::kill`]:
    /// its result says `cancelled`.
    pub fn kill(&self) -> Result<(), RemoteError> {
        self.call("pty_kill", json!({})).map(drop)
    }

    /// The visible screen as text (the last command's after it ended).
    pub fn screen_text(&self) -> Result<String, RemoteError> {
        read_result(self.call("pty_screen", json!({}))?)
    }

    /// Whether a command is running, as
    /// [`conch_core::pty::PtySession::is_running`].
    pub fn is_running(&self) -> Result<bool, RemoteError> {
        Ok(self.state()?.running)
    }

    /// The cursor as `(row, col)`, 0-based, as
    /// [`conch_core::pty::PtySession::cursor_position`].
    pub fn cursor_position(&self) -> Result<(u16, u16), RemoteError> {
        Ok(self.state()?.cursor)
    }

    /// `(cols, rows)` of the terminal, as
    /// [`conch_core::pty::PtySession::size`].
    pub fn size(&self) -> Result<(u16, u16), RemoteError> {
        Ok(self.state()?.size)
    }

    fn state(&self) -> Result<PtyState, RemoteError> {
        read_result(self.call("pty_state", json!({}))?)
    }

    /// Closes the session: a running command is killed.
    pub fn close(&self) -> Result<(), RemoteError> {
        self.session.close()
    }

    fn call(&self, op: &str, fields: Value) -> Result<Value, RemoteError> {
        let Value::Object(fields) = fields else {
            unreachable!("an object")
        };
        self.session.call(op, fields)
    }
}
