//! The client of `conch serve`, under every face's `connect`: a
//! [`Remote`] gives sessions with the local [`conch_core::Shell`]'s
//! methods and results. One connection per `Remote`, driven on a thread of
//! its own; a dropped WebSocket is reconnected and every session resumed
//! where it stopped (see [`link`]).

mod artifacts;
mod files;
mod jobs;
mod link;
mod pty;
mod session;
mod shell;
mod tool;
mod waiting;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use conch_core::wire::Spelling;
use serde_json::{Map, Value};

use crate::protocol::{ErrorKind, Refusal};
pub use artifacts::RemoteArtifacts;
pub use files::RemoteFiles;
use link::Link;
pub use pty::RemotePty;
use session::Session;
pub use shell::RemoteShell;
pub use tool::{RemoteJobTool, RemoteTool, RemoteToolCall};
pub use waiting::RemoteRun;
use waiting::Waiting;

/// Where the server is: a WebSocket URL (`ws://host:port`), or the argv
/// of a command whose stdin and stdout speak the protocol (`docker exec
/// -i box conch serve --stdio`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Url(String),
    Command(Vec<String>),
}

impl From<&str> for Target {
    fn from(url: &str) -> Target {
        Target::Url(url.to_string())
    }
}

impl From<Vec<String>> for Target {
    fn from(argv: Vec<String>) -> Target {
        Target::Command(argv)
    }
}

/// How a client connects.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The server's token (`Authorization: Bearer`); none for stdio.
    pub token: Option<String>,
    /// For `wss://`: the CA certificates (PEM) to trust for the server's
    /// certificate; `None`: the system's bundle.
    pub ca: Option<std::path::PathBuf>,
    /// How long a dropped WebSocket is retried before the sessions are
    /// given up (the server keeps them for its grace period, 60 s unless
    /// told otherwise).
    pub reconnect_within: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            token: None,
            ca: None,
            reconnect_within: Duration::from_secs(60),
        }
    }
}

/// Why a remote call failed.
#[derive(Debug)]
pub enum RemoteError {
    /// The server refused the token (or asked for one that was not given).
    Auth(String),
    /// The server cannot be reached, or was lost and did not come back in
    /// time: nothing more can be asked of this `Remote`.
    ConnectionLost(String),
    /// The session is gone on the server (closed, or its grace period ran
    /// out).
    SessionLost(String),
    /// The protocol refused the request: a bad value or type, too many
    /// sessions, a request the server does not know.
    Refused { kind: ErrorKind, message: String },
    /// The core's own error, as a local call would have returned it.
    Core(conch_core::Error),
    /// A tool call's error (blocked, failed, aborted, closed), as the
    /// local tool's `execute` would have returned it.
    Tool(conch_core::tool::ToolError),
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteError::Auth(m)
            | RemoteError::ConnectionLost(m)
            | RemoteError::SessionLost(m)
            | RemoteError::Refused { message: m, .. } => f.write_str(m),
            RemoteError::Core(err) => err.fmt(f),
            RemoteError::Tool(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for RemoteError {}

/// A tool's error found on the client's side (a call refused before it is
/// sent, as the local tool refuses it).
impl From<conch_core::tool::ToolError> for RemoteError {
    fn from(err: conch_core::tool::ToolError) -> Self {
        RemoteError::Tool(err)
    }
}

impl From<Refusal> for RemoteError {
    fn from(refusal: Refusal) -> Self {
        if let Some(err) = refusal.tool_error() {
            return RemoteError::Tool(err);
        }
        match refusal {
            Refusal::Request {
                kind: ErrorKind::UnknownSession,
                message,
            } => RemoteError::SessionLost(message),
            Refusal::Request { kind, message } => RemoteError::Refused { kind, message },
            Refusal::Core(error) => match conch_core::wire::error_from_wire(&error) {
                Some(err) => RemoteError::Core(err),
                // A kind of a newer server's.
                None => RemoteError::Refused {
                    kind: ErrorKind::BadRequest,
                    message: Refusal::Core(error).message().to_string(),
                },
            },
        }
    }
}

/// A connection to a server.
pub struct Remote {
    link: Arc<Link>,
}

/// Connects to the server at `target`.
pub fn connect(target: impl Into<Target>, opts: ConnectOptions) -> Result<Remote, RemoteError> {
    let link = Link::open(target.into(), opts)?;
    let remote = Remote { link };
    remote.call("hello", Map::new())?;
    Ok(remote)
}

impl Remote {
    /// Opens a session with `options` as the local `Shell` takes them, in
    /// their serialized form (docs/api/schema.json, `ShellOptions`): they
    /// are read on the server, where paths and defaults mean something.
    pub fn shell(&self, options: Map<String, Value>) -> Result<RemoteShell, RemoteError> {
        self.shell_spelled(options, Spelling::Wire)
    }

    /// [`Remote::shell`] with options in a face's own spelling (Node's
    /// camelCase and milliseconds), read on the server as that face's: a
    /// refused value is named as the face names it.
    pub fn shell_spelled(
        &self,
        options: Map<String, Value>,
        spelling: Spelling,
    ) -> Result<RemoteShell, RemoteError> {
        let (session, reply) = self.open("shell", options, spelling)?;
        Ok(RemoteShell::new(session, reply["sandbox_applied"].clone()))
    }

    /// Opens a pty session: a terminal running one command at a time, with
    /// the local [`conch_core::pty::PtySession`]'s calls. Each start's
    /// options are read on the server in the serialized spelling.
    pub fn pty(&self) -> Result<RemotePty, RemoteError> {
        self.pty_spelled(Spelling::Wire)
    }

    /// [`Remote::pty`] whose starts give their options in a face's own
    /// spelling (Node's camelCase and milliseconds).
    pub fn pty_spelled(&self, spelling: Spelling) -> Result<RemotePty, RemoteError> {
        let (session, _) = self.open("pty", Map::new(), spelling)?;
        Ok(RemotePty::new(session))
    }

    /// Opens a session hosting the model's `bash` tool and its `job` tool,
    /// with `options` as the local `BashTool` takes them, serialized
    /// (`BashToolConfig` in docs/api/schema.json): read on the server.
    pub fn tool(&self, options: Map<String, Value>) -> Result<RemoteTool, RemoteError> {
        self.tool_spelled(options, Spelling::Wire)
    }

    /// [`Remote::tool`] with options in a face's own spelling (Node's).
    pub fn tool_spelled(
        &self,
        options: Map<String, Value>,
        spelling: Spelling,
    ) -> Result<RemoteTool, RemoteError> {
        let (session, _) = self.open("tool", options, spelling)?;
        Ok(RemoteTool::new(session))
    }

    /// Opens a session of `kind` with `options` (in `spelling`); the
    /// session and the `open` reply's value.
    fn open(
        &self,
        kind: &str,
        options: Map<String, Value>,
        spelling: Spelling,
    ) -> Result<(Session, Value), RemoteError> {
        let mut fields = with_options(Value::Object(options));
        fields.insert("kind".into(), Value::from(kind));
        if spelling == Spelling::CamelCase {
            fields.insert("spelling".into(), Value::from("camel_case"));
        }
        let reply = self.call("open", fields)?;
        let id = reply["session"]
            .as_str()
            .ok_or_else(|| RemoteError::ConnectionLost("the server named no session".into()))?;
        Ok((Session::new(self.link.clone(), id.to_string()), reply))
    }

    /// Closes the connection, and returns once the client's threads ended
    /// (a stdio server's process too); the server closes its sessions
    /// after its grace period (at once for stdio).
    pub fn close(&self) {
        self.link.close();
    }

    /// Asks the server (no session's request) and waits for the reply.
    fn call(&self, op: &str, fields: Map<String, Value>) -> Result<Value, RemoteError> {
        Waiting::ask(&self.link, None, op, fields, None)?.wait()
    }
}

impl Drop for Remote {
    /// Ends the connection without waiting for the link's threads: a drop
    /// may come from a garbage collector holding a lock a job-exit hook
    /// waits for ([`Remote::close`] waits).
    fn drop(&mut self) {
        self.link.stop();
    }
}

/// The fields of a request that carries options: `{"options": …}`.
fn with_options(options: Value) -> Map<String, Value> {
    let mut fields = Map::new();
    fields.insert("options".into(), options);
    fields
}
