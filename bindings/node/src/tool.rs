//! `BashTool`: what an agent host calls when the model calls `bash`.
//!
//! The result follows the agent-tool shape hosts already use
//! (`{ content: [{ type: 'text', text }], details? }`); failures reject with
//! errors whose `code` is `ToolError`, `Blocked` or `ToolAbortError`, which
//! the package entry turns into its `ToolError`, `BlockedError` and
//! `ToolAbortError` classes.

use std::path::PathBuf;
use std::sync::Arc;

use conch_core::input::count_option;
use conch_core::tool::{
    BashTool as CoreTool, BashToolArgs as CoreArgs, BashToolConfig, Details,
    JobTool as CoreJobTool, JobToolArgs as CoreJobArgs, ToolContext, ToolError,
    ToolResult as CoreResult, ToolUpdate,
};
use conch_core::wire::EnvVars;
use conch_core::{CancelToken, Mask, SandboxOption, defaults};
use napi::bindgen_prelude::{Env, JsError, JsObjectValue, JsValue, Object};
use napi_derive::napi;

use crate::command::InterceptionRule;
use crate::errors::{Code, core_error, from_napi, rejection};
use crate::jobs;
use crate::options::{self, Read};
use crate::result::Js;
use crate::signal::Signal;
use crate::stream::{Callback, JsBlocked, Text};
use crate::teardown;
use crate::worker::{self, Reject};

/// How a `BashTool` is set up by its host.
#[napi(object, object_to_js = false)]
pub struct BashToolOptions {
    /// The project directory: commands run here; relative `cwd` arguments
    /// are resolved against it.
    pub cwd: String,
    /// Where truncated outputs are spilled (`artifact://<id>`); default: nowhere.
    pub artifacts_dir: Option<String>,
    /// The host's tool names: an interception rule applies only when its
    /// tool is among them.
    pub tool_names: Option<Vec<String>>,
    /// Refuse commands the host has a dedicated tool for; default false.
    pub interceptor: Option<bool>,
    /// The interceptor's rules; default: the built-in rules.
    pub rules: Option<Vec<InterceptionRule>>,
    /// Run commands on a PTY when the host has a UI; default false.
    pub virtual_terminal: Option<bool>,
    /// The host shows a UI (a PTY run needs one); default false.
    #[napi(js_name = "hasUI")]
    pub has_ui: Option<bool>,
    /// Isolates this tool's persistent shell from other tools'.
    pub session_key: Option<String>,
    /// bash to run; default: `bash` from `PATH`.
    pub shell: Option<String>,
    /// Prepended to every command.
    pub prefix: Option<String>,
    /// `'auto'` (default), `'none'`, or a snapshot file path.
    pub snapshot: Option<String>,
    /// The loop that runs the commands inside the session's bash:
    /// `'auto'` (default), `'builtin'` or `'eval'`, as `Shell` takes it.
    #[napi(ts_type = "'auto' | 'builtin' | 'eval'")]
    pub engine: Option<String>,
    /// Variables exported in the shell session.
    #[napi(ts_type = "Record<string, string> | null")]
    pub session_env: Option<Read<EnvVars>>,
    /// Which values of `sessionEnv` are replaced by `[masked: NAME]` in
    /// what the tool returns, as `Shell` takes it: `true` (default), those
    /// of names that look secret; `false`, none; a list of names, those
    /// and these.
    #[napi(ts_type = "boolean | Array<string> | null")]
    pub mask: Option<Read<Mask>>,
    /// Least time between two `onUpdate` calls; default 50 ms.
    pub update_interval_ms: Option<f64>,
    /// A command still running after this many milliseconds goes on as a
    /// background job: the call resolves with the notice and the output so
    /// far (the model reads the rest with the job tool). Default: never.
    pub auto_background_after_ms: Option<f64>,
    /// What the model calls this tool (its definition's `name`); default
    /// `'bash'`.
    pub name: Option<String>,
    /// What the model calls the job tool of this tool's session, as this
    /// tool's texts name it; default `'job'`.
    pub job_tool_name: Option<String>,
    /// The sandbox commands run in, as `Shell` takes it, with the project
    /// directory writable; checked here (`SandboxUnavailable`) and stated
    /// in the tool's description.
    #[napi(ts_type = "SandboxOptions | boolean | null")]
    pub sandbox: Option<Read<SandboxOption>>,
}

/// A tool's definition for the model, to register with an LLM API as it is.
#[napi(object, object_from_js = false)]
pub struct ToolDefinition {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does and its limits.
    pub description: String,
    /// The JSON Schema of exactly the arguments `execute` accepts (keys as
    /// written, `input_schema` in the other faces).
    #[napi(ts_type = "Record<string, unknown>")]
    pub input_schema: serde_json::Value,
}

impl From<conch_core::tool::ToolDefinition> for ToolDefinition {
    fn from(d: conch_core::tool::ToolDefinition) -> Self {
        ToolDefinition {
            name: d.name,
            description: d.description,
            input_schema: d.input_schema,
        }
    }
}

/// The model's arguments to `bash`.
#[napi(object, object_to_js = false)]
pub struct BashToolArgs {
    pub command: String,
    /// Directory to run in, relative to the tool's cwd.
    pub cwd: Option<String>,
    /// Seconds, clamped to [1, 3600]; default 300.
    pub timeout: Option<f64>,
    /// Keep the first N lines of the output.
    pub head: Option<f64>,
    /// Keep the last N lines (of the head, when both are given).
    pub tail: Option<f64>,
    /// Start the command as a background job and return at once with its
    /// number (`Started job N: …`); the job tool reads it. Default false.
    #[napi(js_name = "async")]
    pub run_async: Option<bool>,
}

impl BashToolArgs {
    /// The core's arguments; a bad `head` or `tail` throws as for `Shell`.
    pub(crate) fn into_core(self) -> napi::Result<CoreArgs, Code> {
        Ok(CoreArgs {
            command: self.command,
            cwd: self.cwd,
            timeout: self.timeout,
            head: options::lines("head", self.head)?,
            tail: options::lines("tail", self.tail)?,
            run_async: self.run_async.unwrap_or(false),
        })
    }
}

/// The promise of one `bash` call of `tool` (the local tool's or a remote
/// one's, settled alike): the arguments read here (a bad `head` or `tail`
/// throws), the call made on a pooled thread, given the token the options'
/// signal cancels and the sink of their `onUpdate`.
pub(crate) fn execute_call<'env, C: BashCall>(
    tool: &C,
    env: &'env Env,
    args: BashToolArgs,
    options: Option<ToolExecuteOptions>,
) -> napi::Result<Object<'env>, Code> {
    let call = tool.call(args.into_core()?);
    let (on_update, signal) = match options {
        Some(o) => (o.on_update, o.signal),
        None => (None, None),
    };
    let cancel = CancelToken::new();
    let token = cancel.clone();
    worker::spawn(env, signal, on_update, cancel, move |updates| {
        let mut forward = |update: ToolUpdate| {
            let bytes = update.text.len();
            let partial = ToolPartialResult {
                content: text_content(update.text),
            };
            updates.send_value(partial, bytes);
        };
        call(token, &mut forward).map(ToolResult::from)
    })
}

/// A `bash` call, made on a pooled thread with the token the call's signal
/// cancels and the sink of its `onUpdate`.
pub(crate) trait BashCallFn<E>:
    FnOnce(CancelToken, &mut dyn FnMut(ToolUpdate)) -> Result<CoreResult, E> + Send + 'static
{
}

impl<E, F> BashCallFn<E> for F where
    F: FnOnce(CancelToken, &mut dyn FnMut(ToolUpdate)) -> Result<CoreResult, E> + Send + 'static
{
}

/// A class with `BashTool`'s `execute` (`BashTool`, `RemoteTool`): the call
/// it makes of the model's arguments, taken on the JS thread.
pub(crate) trait BashCall {
    type Error: Reject;
    fn call(&self, args: CoreArgs) -> impl BashCallFn<Self::Error>;
}

/// Declares `execute` of a class with `BashTool`'s calls ([`BashCall`],
/// settled by [`execute_call`]) or `JobTool`'s ([`JobCall`], settled by
/// [`job_call`]), in a `#[napi] impl` block of its own, with its doc
/// comments.
///
/// Doc comments as `#[doc = "…"]` attributes (see [`crate::quick::streamed_call!`]).
macro_rules! tool_execute {
    ($(#[doc = $doc:literal])* impl $class:ident as BashTool) => {
        crate::tool::tool_execute!(@emit [$(#[doc = $doc])*] $class execute_call
            "args: BashToolArgs, options?: ToolExecuteOptions"
            (BashToolArgs, ToolExecuteOptions));
    };
    ($(#[doc = $doc:literal])* impl $class:ident as JobTool) => {
        crate::tool::tool_execute!(@emit [$(#[doc = $doc])*] $class job_call
            "args: JobToolArgs, options?: JobToolExecuteOptions"
            (JobToolArgs, JobToolExecuteOptions));
    };
    (@emit [$($doc:tt)*] $class:ident $call:ident $ts:literal ($args:ident, $options:ident)) => {
        #[napi_derive::napi]
        impl $class {
            $($doc)*
            #[napi(catch_unwind, ts_args_type = $ts, ts_return_type = "Promise<ToolResult>")]
            pub fn execute<'env>(
                &self,
                env: &'env napi::bindgen_prelude::Env,
                args: crate::tool::$args,
                options: Option<crate::tool::$options>,
            ) -> napi::Result<napi::bindgen_prelude::Object<'env>, crate::errors::Code> {
                crate::tool::$call(self, env, args, options)
            }
        }
    };
}

pub(crate) use tool_execute;

/// What a host provides to one call.
#[napi(object, object_to_js = false)]
pub struct ToolExecuteOptions {
    /// Receives the tail of the output while the command runs (at most
    /// once per update interval), all before the promise settles.
    #[napi(ts_type = "(partial: ToolPartialResult) => void")]
    pub on_update: Option<Callback<ToolPartialResult>>,
    /// Aborting it kills the command; the call rejects with `ToolAbortError`.
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
}

/// One block of a tool result.
#[napi(object)]
pub struct TextContent {
    /// Always `'text'`.
    #[napi(js_name = "type", ts_type = "'text'")]
    pub kind: String,
    pub text: String,
}

fn text_content(text: String) -> Vec<TextContent> {
    vec![TextContent {
        kind: "text".into(),
        text,
    }]
}

/// A successful call: the text the model reads.
#[napi(object, object_from_js = false)]
pub struct ToolResult {
    pub content: Vec<TextContent>,
    #[napi(ts_type = "ToolDetails | null")]
    pub details: Option<Js<Details>>,
}

impl From<CoreResult> for ToolResult {
    fn from(r: CoreResult) -> Self {
        ToolResult {
            details: r.details.map(Js),
            content: text_content(r.text),
        }
    }
}

/// A live update: the tail of the output so far.
#[napi(object, object_from_js = false)]
pub struct ToolPartialResult {
    pub content: Vec<TextContent>,
}

impl Reject for ToolError {
    fn reject(self, env: &Env) -> napi::Error {
        tool_error(env, &self).unwrap_or_else(|err| err)
    }
}

/// Builds `Error(message)` with `name`, `code`, `details` and `suggestedTool`;
/// a closed tool is the plain `Closed` error of every closed handle.
fn tool_error(env: &Env, tool: &ToolError) -> napi::Result<napi::Error> {
    let (name, code) = match tool {
        ToolError::Blocked { .. } => ("BlockedError", "Blocked"),
        ToolError::Failed { .. } => ("ToolError", "ToolError"),
        ToolError::Aborted { .. } => ("ToolAbortError", "ToolAbortError"),
        ToolError::Closed { message } => {
            let closed = napi::Error::new(Code::Closed, message.as_str());
            return Ok(rejection(env, closed));
        }
    };
    let error = JsError::from(napi::Error::new(code, tool.message())).into_unknown(*env);
    let mut object = error.coerce_to_object()?;
    object.set_named_property("name", name)?;
    if let Some(details) = tool.details() {
        object.set_named_property("details", Js(details))?;
    }
    if let ToolError::Blocked { suggested_tool, .. } = tool {
        object.set_named_property("suggestedTool", suggested_tool.as_str())?;
    }
    Ok(napi::Error::from_unknown_without_coercion(
        object.to_unknown(),
    ))
}

/// The model's `bash` tool for one host: a persistent shell (shared by the
/// tool's calls), interception, artifacts, results the model can read.
#[napi]
pub struct BashTool {
    inner: Arc<CoreTool>,
    has_ui: bool,
}

#[napi]
impl BashTool {
    /// Checks the configuration (a bad interception rule throws).
    #[napi(constructor, catch_unwind)]
    pub fn new(env: Env, options: BashToolOptions) -> napi::Result<Self, Code> {
        let mut config = BashToolConfig::new(options.cwd);
        if let Some(name) = options.name {
            config.name = name;
        }
        if let Some(name) = options.job_tool_name {
            config.job_tool_name = name;
        }
        config.artifacts_dir = options.artifacts_dir.map(PathBuf::from);
        config.tool_names = options.tool_names.unwrap_or_default();
        config.interceptor = options.interceptor.unwrap_or(defaults::INTERCEPTOR);
        config.rules = options
            .rules
            .map(|rules| rules.into_iter().map(Into::into).collect());
        config.virtual_terminal = options
            .virtual_terminal
            .unwrap_or(defaults::VIRTUAL_TERMINAL);
        config.session_key = options.session_key;
        config.shell = options.shell.map(PathBuf::from);
        config.prefix = options.prefix;
        config.snapshot = options::snapshot(options.snapshot)?;
        config.engine = options::engine(options.engine)?;
        config.session_env = Read::get(&env, "sessionEnv", options.session_env)?.0;
        config.mask = Read::get(&env, "mask", options.mask)?;
        if let Some(interval) = options::interval("updateIntervalMs", options.update_interval_ms)? {
            config.update_interval = interval;
        }
        config.auto_background_after =
            options::deadline("autoBackgroundAfterMs", options.auto_background_after_ms)?;
        config.sandbox = Read::get(&env, "sandbox", options.sandbox)?.0;
        let inner = Arc::new(CoreTool::new(config).map_err(core_error)?);
        teardown::close_with_env(&env, &inner).map_err(from_napi)?;
        Ok(BashTool {
            inner,
            has_ui: options.has_ui.unwrap_or(defaults::HAS_UI),
        })
    }
}

tool_execute! {
    #[doc = " Runs the model's call. Resolves with the text the model reads;"]
    #[doc = " rejects with `ToolError` (the command failed, timed out or exited"]
    #[doc = " non-zero: the message is still what the model reads), `BlockedError`"]
    #[doc = " (`.suggestedTool`), `ToolAbortError` (the signal fired) or, once the"]
    #[doc = " tool is closed, `Closed` (`bash tool is closed`)."]
    impl BashTool as BashTool
}

impl BashCall for BashTool {
    type Error = ToolError;

    fn call(&self, args: CoreArgs) -> impl BashCallFn<ToolError> {
        let tool = self.inner.clone();
        let has_ui = self.has_ui;
        move |cancel: CancelToken, on_update: &mut dyn FnMut(ToolUpdate)| {
            let context = ToolContext {
                on_update: Some(on_update),
                cancel: Some(cancel),
                has_ui,
            };
            tool.execute(args, context)
        }
    }
}

#[napi]
impl BashTool {
    /// The tool's definition for the model: `{ name, description,
    /// inputSchema }`.
    #[napi(catch_unwind)]
    pub fn definition(&self) -> ToolDefinition {
        self.inner.definition().into()
    }

    /// Closes the tool for good: later calls of it and of its job tools
    /// reject with `Closed`. With its own `sessionKey`, its shell is closed
    /// too (what it runs is killed); a shared shell lives on for other
    /// tools (`closeAllBashSessions()`). Idempotent.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        let _blocked = JsBlocked::enter();
        self.inner.close();
    }
}

/// The model's arguments to `job`.
#[napi(object, object_to_js = false)]
pub struct JobToolArgs {
    /// `'poll'`, `'write'`, `'kill'` or `'list'`.
    pub op: String,
    /// The job (every op but `list`): the number `bash` gave.
    pub job: Option<f64>,
    /// Text to write to the job's input (`write`).
    pub input: Option<String>,
    /// Seconds to wait for the job to end or `until` to match (`poll`,
    /// `write`): clamped to [0, 600], default 5.
    pub wait: Option<f64>,
    /// Return as soon as the new output matches this regular expression.
    pub until: Option<String>,
}

/// What a host provides to one `JobTool.execute` call.
#[napi(object, object_to_js = false)]
pub struct JobToolExecuteOptions {
    /// Aborting it ends the wait early (never the job).
    #[napi(ts_type = "AbortSignal")]
    pub signal: Option<Signal>,
}

/// The model's `job` tool: polls, writes to, kills and lists the jobs of a
/// `BashTool`'s session (started with `async: true` or moved to the
/// background at `autoBackgroundAfterMs`).
#[napi]
pub struct JobTool {
    inner: Arc<CoreJobTool>,
}

#[napi]
impl JobTool {
    /// The job tool of `bashTool`'s session.
    #[napi(constructor, catch_unwind)]
    pub fn new(bash_tool: &BashTool) -> Self {
        JobTool {
            inner: Arc::new(CoreJobTool::new(&bash_tool.inner)),
        }
    }

    /// The tool's definition for the model: `{ name, description,
    /// inputSchema }`.
    #[napi(catch_unwind)]
    pub fn definition(&self) -> ToolDefinition {
        self.inner.definition().into()
    }
}

tool_execute! {
    #[doc = " Runs the model's call (off the JS thread: it may wait up to `wait`"]
    #[doc = " seconds). Resolves with the text the model reads; rejects with"]
    #[doc = " `ToolError` for the model's mistakes (the message says what to do"]
    #[doc = " instead), `ToolAbortError` when the signal fired and `Closed` once"]
    #[doc = " its bash tool is closed."]
    impl JobTool as JobTool
}

impl JobCall for JobTool {
    type Error = ToolError;

    fn call(&self) -> impl JobCallFn<ToolError> {
        let tool = self.inner.clone();
        move |args, cancel| tool.execute(args, Some(cancel))
    }
}

impl JobToolArgs {
    /// The core's arguments; a bad job number is the model's mistake: a
    /// `ToolError` it reads.
    fn into_core(self) -> Result<CoreJobArgs, ToolError> {
        let job = self
            .job
            .map(model_job)
            .transpose()
            .map_err(|message| ToolError::Failed {
                message,
                details: None,
            })?;
        Ok(CoreJobArgs {
            op: self.op,
            job,
            input: self.input,
            wait: self.wait,
            until: self.until,
        })
    }
}

/// The promise of one `job` call of `tool` (the local tool's or a remote
/// one's, settled alike), made on a pooled thread with the core's arguments
/// and the token the options' signal cancels.
pub(crate) fn job_call<'env, C: JobCall>(
    tool: &C,
    env: &'env Env,
    args: JobToolArgs,
    options: Option<JobToolExecuteOptions>,
) -> napi::Result<Object<'env>, Code> {
    let call = tool.call();
    let signal = options.and_then(|o| o.signal);
    let cancel = CancelToken::new();
    let token = cancel.clone();
    worker::spawn::<Text, _, _, _>(env, signal, None, cancel, move |_| {
        call(args.into_core()?, token).map(ToolResult::from)
    })
}

/// A `job` call, made on a pooled thread with the core's arguments and the
/// token the call's signal cancels.
pub(crate) trait JobCallFn<E>:
    FnOnce(CoreJobArgs, CancelToken) -> Result<CoreResult, E> + Send + 'static
{
}

impl<E, F> JobCallFn<E> for F where
    F: FnOnce(CoreJobArgs, CancelToken) -> Result<CoreResult, E> + Send + 'static
{
}

/// A class with `JobTool`'s `execute` (`JobTool`, `RemoteJobTool`): the
/// call it makes.
pub(crate) trait JobCall {
    type Error: Reject + From<ToolError>;
    fn call(&self) -> impl JobCallFn<Self::Error>;
}

/// The model's job number, or the text of what is wrong with it.
fn model_job(value: f64) -> Result<conch_core::jobs::JobId, String> {
    let n = count_option("job", value).map_err(|e| e.to_string())? as u64;
    conch_core::jobs::JobId::try_from(n).map_err(|_| jobs::unknown_job(n).to_string())
}
