//! A tool session: the model's `bash` tool and the `job` tool of its
//! session, as a host calls them locally. The arguments are the model's
//! JSON, read by the core as every JSON face reads them; the live updates
//! go out as `update` events; the outcome is the tool's result, or its
//! error (blocked, failed, aborted, closed) as a `tool_error` reply, which
//! each face raises as it raises it locally.

use std::sync::atomic::{AtomicU64, Ordering};

use conch_core::ArtifactStore;
use conch_core::CancelToken;
use conch_core::tool::{
    BashTool, BashToolArgs, BashToolConfig, JobTool, JobToolArgs, ToolContext, ToolError,
    ToolUpdate,
};
use conch_core::wire::Spelling;
use serde_json::{Map, Value, json};

use super::ServeOptions;
use super::ops::read;
use super::session::RemoteSession;
use crate::protocol::{Refusal, Request};

/// The requests of a tool session.
const TOOL_OPS: &[&str] = &[
    "tool_execute",
    "tool_definition",
    "job_tool_execute",
    "job_tool_definition",
];

/// Whether `op` is a tool session's request.
pub(super) fn is_tool_op(op: &str) -> bool {
    TOOL_OPS.contains(&op)
}

/// Numbers the tools' own shells: a tool opened with no `session_key`
/// gets one of its own, since locally a tool without one shares the
/// process's shell with every other tool, and here the process is the
/// server, its other tools other clients'.
static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

/// A bash tool and its job tool.
pub(crate) struct HostedTool {
    bash: BashTool,
    job: JobTool,
}

impl HostedTool {
    /// Makes the tool of `options` (the `BashTool`'s, read by the core);
    /// `server_sandbox` is the sandbox of a client that gives none.
    pub fn open(
        options: Map<String, Value>,
        spelling: Spelling,
        server: &ServeOptions,
    ) -> Result<HostedTool, Refusal> {
        let own = |name: &str| options.get(name).is_some_and(|v| !v.is_null());
        let (own_sandbox, own_engine) = (own("sandbox"), own("engine"));
        let mut config: BashToolConfig = read(options, spelling)?;
        if !own_sandbox {
            config.sandbox = server.sandbox.clone();
        }
        if !own_engine {
            config.engine = server.engine;
        }
        if config.session_key.is_none() {
            let n = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
            config.session_key = Some(format!("conch serve tool {n}"));
        }
        let bash = BashTool::new(config)?;
        let job = JobTool::new(&bash);
        Ok(HostedTool { bash, job })
    }

    /// The store its outputs spill to (`None`: it has none).
    pub fn artifacts(&self) -> Option<&ArtifactStore> {
        self.bash.artifacts()
    }

    /// Closes the tool: its shell and its jobs are killed.
    pub fn close(&self) {
        self.bash.close();
    }
}

/// Handles a tool session's request; its reply's value.
pub(super) fn tool_op(
    session: &RemoteSession,
    tool: &HostedTool,
    request: &Request,
    cancel: CancelToken,
) -> Result<Value, Refusal> {
    let args = request.field("args").cloned().unwrap_or(Value::Null);
    let outcome = match request.op.as_str() {
        "tool_definition" => return Ok(value(&tool.bash.definition())),
        "job_tool_definition" => return Ok(value(&tool.job.definition())),
        "tool_execute" => BashToolArgs::from_json(&args).and_then(|args| {
            let id = &request.id;
            let mut on_update = |update: ToolUpdate| {
                let mut event = json!({"event": "update", "id": id});
                if let (Value::Object(event), Value::Object(update)) = (&mut event, value(&update))
                {
                    event.extend(update);
                }
                session.send(event);
            };
            let ctx = ToolContext {
                on_update: Some(&mut on_update),
                cancel: Some(cancel),
                ..ToolContext::default()
            };
            tool.bash.execute(args, ctx)
        }),
        "job_tool_execute" => {
            JobToolArgs::from_json(&args).and_then(|args| tool.job.execute(args, Some(cancel)))
        }
        op => unreachable!("{op} is no tool request"),
    };
    outcome
        .map(|result| value(&result))
        .map_err(|err: ToolError| Refusal::from(err))
}

fn value<T: serde::Serialize>(result: &T) -> Value {
    serde_json::to_value(result).expect("a result serializes")
}
