//! `Remote.tool`: the model's `bash` and `job` tools hosted by a `conch
//! serve`, with `BashTool`'s and `JobTool`'s calls, results and rejections
//! (`ToolError`, `BlockedError`, `ToolAbortError`, `Closed`): their
//! `execute` is the local tools' own ([`tool_execute!`]),
//! with conch-remote's client making the call.

use std::sync::Arc;

use conch_core::CancelToken;
use conch_core::tool::{BashToolArgs as CoreArgs, JobToolArgs as CoreJobArgs, ToolUpdate};
use conch_core::wire::Spelling;
use conch_remote::RemoteError;
use napi::bindgen_prelude::{Env, Object};
use napi_derive::napi;
use serde_json::{Value, json};

use crate::errors::Code;
use crate::options;
use crate::stream::Text;
use crate::tool::{BashCall, BashCallFn, JobCall, JobCallFn, ToolDefinition, tool_execute};
use crate::worker;

/// Opens a tool session on `remote` with `options` as `new BashTool` takes
/// them (read on the server, in Node's spelling); resolves with the
/// `RemoteTool`, its definitions fetched once, so `definition()` answers
/// at once as the local one does.
pub(crate) fn open<'env>(
    env: &'env Env,
    remote: Arc<conch_remote::Remote>,
    options: &Object<'env>,
) -> napi::Result<Object<'env>, Code> {
    let sent = options::to_send(Some(options), &[])?;
    worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
        let tool = remote.tool_spelled(sent, Spelling::CamelCase)?;
        Ok::<_, RemoteError>(RemoteTool {
            definition: tool.definition()?,
            job_definition: tool.job_tool().definition()?,
            tool: Arc::new(tool),
        })
    })
}

/// The model's `bash` arguments as the JSON the server reads (the model's
/// own keys), once read here as the local tool reads them.
fn sent_args(args: CoreArgs) -> Value {
    json!({
        "command": args.command,
        "cwd": args.cwd,
        "timeout": args.timeout,
        "head": args.head,
        "tail": args.tail,
        "async": args.run_async,
    })
}

/// The model's `job` arguments as the JSON the server reads.
fn sent_job_args(args: CoreJobArgs) -> Value {
    json!({
        "op": args.op,
        "job": args.job,
        "input": args.input,
        "wait": args.wait,
        "until": args.until,
    })
}

/// The model's `bash` tool on a `conch serve` (from `Remote.tool`), with
/// `BashTool`'s calls.
#[napi]
pub struct RemoteTool {
    tool: Arc<conch_remote::RemoteTool>,
    definition: conch_core::tool::ToolDefinition,
    job_definition: conch_core::tool::ToolDefinition,
}

tool_execute! {
    #[doc = " Runs the model's call on the server, as `BashTool.execute` (the"]
    #[doc = " same arguments, `onUpdate`, `signal`, result and rejections)."]
    impl RemoteTool as BashTool
}

impl BashCall for RemoteTool {
    type Error = RemoteError;

    fn call(&self, args: CoreArgs) -> impl BashCallFn<RemoteError> {
        let args = sent_args(args);
        let tool = self.tool.clone();
        move |cancel: CancelToken, on_update: &mut dyn FnMut(ToolUpdate)| {
            tool.execute(&args, Some(on_update), Some(cancel))
        }
    }
}

#[napi]
impl RemoteTool {
    /// The tool's definition for the model, as `BashTool.definition`.
    #[napi(catch_unwind)]
    pub fn definition(&self) -> ToolDefinition {
        self.definition.clone().into()
    }

    /// The `job` tool of this tool's session (`new JobTool(bashTool)`
    /// locally).
    #[napi(catch_unwind)]
    pub fn job_tool(&self) -> RemoteJobTool {
        RemoteJobTool {
            tool: Arc::new(self.tool.job_tool()),
            definition: self.job_definition.clone(),
        }
    }

    /// Closes the tool for good: its shell and jobs are killed on the
    /// server; later calls of it and of its job tools reject with
    /// `Closed`. Idempotent.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        let tool = self.tool.clone();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| tool.close())
    }
}

/// The model's `job` tool of a `RemoteTool`'s session, with `JobTool`'s
/// calls.
#[napi]
pub struct RemoteJobTool {
    tool: Arc<conch_remote::RemoteJobTool>,
    definition: conch_core::tool::ToolDefinition,
}

tool_execute! {
    #[doc = " Runs the model's call on the server, as `JobTool.execute`; the"]
    #[doc = " signal ends a wait early (never the job)."]
    impl RemoteJobTool as JobTool
}

impl JobCall for RemoteJobTool {
    type Error = RemoteError;

    fn call(&self) -> impl JobCallFn<RemoteError> {
        let tool = self.tool.clone();
        move |args, cancel| tool.execute(&sent_job_args(args), Some(cancel))
    }
}

#[napi]
impl RemoteJobTool {
    /// The tool's definition for the model, as `JobTool.definition`.
    #[napi(catch_unwind)]
    pub fn definition(&self) -> ToolDefinition {
        self.definition.clone().into()
    }
}
