//! A tool session on a server: the model's `bash` tool ([`RemoteTool`])
//! and the `job` tool of its session ([`RemoteJobTool`]), with the local
//! [`conch_core::tool::BashTool`]'s and [`conch_core::tool::JobTool`]'s
//! calls and results. The arguments are the model's JSON, as a host gets
//! it; a tool's error comes back as [`RemoteError::Tool`], the local
//! [`ToolError`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Instant;

use conch_core::CancelToken;
use conch_core::tool::{ToolDefinition, ToolError, ToolResult, ToolUpdate};
use serde_json::{Map, Value};

use super::session::Session;
use super::waiting::{Waiting, read_result};
use super::{RemoteArtifacts, RemoteError};

/// What the bash tool and its job tool share: the session, and whether
/// the tool was closed (after which both refuse every call, as locally).
struct Shared {
    session: Session,
    closed: AtomicBool,
}

impl Shared {
    /// Sends tool request `op` with the model's `args`, unless the tool is
    /// closed.
    fn ask(
        &self,
        op: &str,
        args: &Value,
        cancel: Option<CancelToken>,
    ) -> Result<Waiting, RemoteError> {
        self.check()?;
        let mut fields = Map::new();
        fields.insert("args".into(), args.clone());
        self.session.ask(op, fields, cancel)
    }

    /// The definition request `op`'s answer.
    fn definition(&self, op: &str) -> Result<ToolDefinition, RemoteError> {
        read_result(self.session.call(op, Map::new())?)
    }

    /// A closed tool's refusal, the local one's `bash tool is closed`.
    fn check(&self) -> Result<(), RemoteError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(RemoteError::Tool(ToolError::Closed {
                message: conch_core::Error::Closed("bash tool").to_string(),
            }));
        }
        Ok(())
    }
}

/// The model's `bash` tool, hosted by a session on a server.
pub struct RemoteTool(Arc<Shared>);

impl RemoteTool {
    pub(super) fn new(session: Session) -> Self {
        RemoteTool(Arc::new(Shared {
            session,
            closed: AtomicBool::new(false),
        }))
    }

    /// The session's id on the server.
    pub fn id(&self) -> &str {
        self.0.session.id()
    }

    /// Runs one call with the model's arguments (its JSON object), as
    /// [`conch_core::tool::BashTool::execute`]: the live updates to
    /// `on_update`, `cancel` aborts the call on the server (the outcome is
    /// then the tool's [`ToolError::Aborted`]).
    pub fn execute(
        &self,
        args: &Value,
        mut on_update: Option<&mut dyn FnMut(ToolUpdate)>,
        cancel: Option<CancelToken>,
    ) -> Result<ToolResult, RemoteError> {
        self.start_execute(args, cancel)?.finish(&mut |text: &str| {
            if let Some(on_update) = on_update.as_mut() {
                on_update(ToolUpdate {
                    text: text.to_string(),
                });
            }
        })
    }

    /// Asks the server for one call; the returned call is driven by the
    /// caller, on its thread.
    pub fn start_execute(
        &self,
        args: &Value,
        cancel: Option<CancelToken>,
    ) -> Result<RemoteToolCall, RemoteError> {
        Ok(RemoteToolCall(self.0.ask("tool_execute", args, cancel)?))
    }

    /// The tool's definition for the model, as the local tool's.
    pub fn definition(&self) -> Result<ToolDefinition, RemoteError> {
        self.0.definition("tool_definition")
    }

    /// The tool's artifact store (its `artifacts_dir`), read on the server
    /// as the local tool's [`conch_core::tool::BashTool::artifacts`] is.
    pub fn artifacts(&self) -> RemoteArtifacts {
        self.0.session.artifacts()
    }

    /// The `job` tool of this tool's session.
    pub fn job_tool(&self) -> RemoteJobTool {
        RemoteJobTool(self.0.clone())
    }

    /// Closes the tool, for good: its shell and jobs are killed on the
    /// server, and every later call of it and of its job tools is refused
    /// as a closed local tool's. Idempotent.
    pub fn close(&self) -> Result<(), RemoteError> {
        if self.0.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.0.session.close()
    }
}

/// The model's `job` tool, on the session of a [`RemoteTool`].
pub struct RemoteJobTool(Arc<Shared>);

impl RemoteJobTool {
    /// Runs one call with the model's arguments, as
    /// [`conch_core::tool::JobTool::execute`]; `cancel` ends a wait early
    /// (never the job).
    pub fn execute(
        &self,
        args: &Value,
        cancel: Option<CancelToken>,
    ) -> Result<ToolResult, RemoteError> {
        self.start_execute(args, cancel)?.finish(&mut |_| {})
    }

    /// Asks the server for one call, driven by the caller.
    pub fn start_execute(
        &self,
        args: &Value,
        cancel: Option<CancelToken>,
    ) -> Result<RemoteToolCall, RemoteError> {
        Ok(RemoteToolCall(self.0.ask(
            "job_tool_execute",
            args,
            cancel,
        )?))
    }

    /// The tool's definition for the model, as the local tool's.
    pub fn definition(&self) -> Result<ToolDefinition, RemoteError> {
        self.0.definition("job_tool_definition")
    }
}

/// A tool call on the server: its updates and outcome arrive as the
/// caller drives it. Dropped before its end, it is aborted on the server.
pub struct RemoteToolCall(Waiting);

impl RemoteToolCall {
    /// Receives the call's updates (their text to `on_update`, on this
    /// thread) until it ends (`Poll::Ready`) or `until` passes
    /// (`Poll::Pending`; `None`: no limit).
    pub fn drive(
        &mut self,
        until: Option<Instant>,
        on_update: &mut dyn FnMut(&str),
    ) -> Poll<Result<ToolResult, RemoteError>> {
        self.0
            .drive(until, on_update)
            .map(|outcome| outcome.and_then(read_result))
    }

    /// Drives the call on this thread until it ends; its outcome.
    fn finish(mut self, on_update: &mut dyn FnMut(&str)) -> Result<ToolResult, RemoteError> {
        loop {
            if let Poll::Ready(outcome) = self.drive(None, on_update) {
                return outcome;
            }
        }
    }
}
