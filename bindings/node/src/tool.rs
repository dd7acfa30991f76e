//! `BashTool`: what an agent host calls when the model calls `bash`.
//!
//! The result follows the agent-tool shape hosts already use
//! (`{ content: [{ type: 'text', text }], details? }`); failures reject with
//! errors whose `code` is `ToolError`, `Blocked` or `ToolAbortError`, which
//! the package entry turns into its `ToolError`, `BlockedError` and
//! `ToolAbortError` classes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use conch_core::output::notice::{Direction, TruncatedBy, Truncation as CoreTruncation};
use conch_core::tool::{
    BashTool as CoreTool, BashToolArgs as CoreArgs, BashToolConfig, Details, ToolContext,
    ToolError, ToolResult as CoreResult, ToolUpdate,
};
use conch_core::{CancelToken, defaults};
use napi::bindgen_prelude::{Env, JsError, JsObjectValue, JsValue, Object};
use napi_derive::napi;

use crate::command::InterceptionRule;
use crate::errors::{Code, core_error};
use crate::options;
use crate::result::count;
use crate::signal::Signal;
use crate::stream::{Callback, JsBlocked};
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
    /// Variables exported in the shell session.
    pub session_env: Option<HashMap<String, String>>,
    /// Least time between two `onUpdate` calls; default 50 ms.
    pub update_interval_ms: Option<f64>,
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
}

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

/// Lines `start..=end` (1-based) of the whole output.
#[napi(object)]
pub struct LineRange {
    pub start: i64,
    pub end: i64,
}

/// What was shown of an output, and where the whole of it is.
#[napi(object)]
pub struct Truncation {
    #[napi(ts_type = "'head' | 'tail'")]
    pub direction: String,
    #[napi(ts_type = "'bytes' | 'lines'")]
    pub truncated_by: String,
    pub total_lines: i64,
    pub total_bytes: i64,
    pub output_lines: i64,
    pub output_bytes: i64,
    /// The byte limit that cut the output.
    pub max_bytes: Option<i64>,
    /// The lines shown, when they are one contiguous range.
    pub shown_range: Option<LineRange>,
    /// The artifact holding the whole output (`artifact://<artifactId>`).
    pub artifact_id: Option<String>,
}

impl From<&CoreTruncation> for Truncation {
    fn from(t: &CoreTruncation) -> Self {
        Truncation {
            direction: match t.direction {
                Direction::Head => "head",
                Direction::Tail => "tail",
            }
            .into(),
            truncated_by: match t.truncated_by {
                TruncatedBy::Bytes => "bytes",
                TruncatedBy::Lines => "lines",
            }
            .into(),
            total_lines: count(t.total_lines),
            total_bytes: count(t.total_bytes),
            output_lines: count(t.output_lines),
            output_bytes: count(t.output_bytes),
            max_bytes: t.max_bytes.map(|n| count(n as u64)),
            shown_range: t.shown_range.map(|r| LineRange {
                start: count(r.start),
                end: count(r.end),
            }),
            artifact_id: t.artifact_id.clone(),
        }
    }
}

/// Metadata a host keeps next to the text.
#[napi(object)]
pub struct ToolMeta {
    /// Set when the text is not the whole output.
    pub truncation: Option<Truncation>,
}

/// The structured part of a tool result.
#[napi(object)]
pub struct ToolDetails {
    pub meta: ToolMeta,
}

impl From<&Details> for ToolDetails {
    fn from(d: &Details) -> Self {
        ToolDetails {
            meta: ToolMeta {
                truncation: d.truncation().map(Truncation::from),
            },
        }
    }
}

/// A successful call: the text the model reads.
#[napi(object, object_from_js = false)]
pub struct ToolResult {
    pub content: Vec<TextContent>,
    pub details: Option<ToolDetails>,
}

impl From<CoreResult> for ToolResult {
    fn from(r: CoreResult) -> Self {
        ToolResult {
            details: r.details.as_ref().map(ToolDetails::from),
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

/// Builds `Error(message)` with `name`, `code`, `details` and `suggestedTool`.
fn tool_error(env: &Env, tool: &ToolError) -> napi::Result<napi::Error> {
    let (name, code) = match tool {
        ToolError::Blocked { .. } => ("BlockedError", "Blocked"),
        ToolError::Failed { .. } => ("ToolError", "ToolError"),
        ToolError::Aborted { .. } => ("ToolAbortError", "ToolAbortError"),
    };
    let error = JsError::from(napi::Error::new(code, tool.message())).into_unknown(*env);
    let mut object = error.coerce_to_object()?;
    object.set_named_property("name", name)?;
    if let Some(details) = tool.details() {
        object.set_named_property("details", ToolDetails::from(details))?;
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
    pub fn new(options: BashToolOptions) -> napi::Result<Self, Code> {
        let mut config = BashToolConfig::new(options.cwd);
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
        config.session_env = options::env(options.session_env);
        if let Some(interval) = options::interval("updateIntervalMs", options.update_interval_ms)? {
            config.update_interval = interval;
        }
        let inner = CoreTool::new(config).map_err(core_error)?;
        Ok(BashTool {
            inner: Arc::new(inner),
            has_ui: options.has_ui.unwrap_or(defaults::HAS_UI),
        })
    }

    /// Runs the model's call. Resolves with the text the model reads;
    /// rejects with `ToolError` (the command failed, timed out or exited
    /// non-zero: the message is still what the model reads), `BlockedError`
    /// (`.suggestedTool`) or `ToolAbortError` (the signal fired).
    #[napi(
        catch_unwind,
        ts_args_type = "args: BashToolArgs, options?: ToolExecuteOptions",
        ts_return_type = "Promise<ToolResult>"
    )]
    pub fn execute<'env>(
        &self,
        env: &'env Env,
        args: BashToolArgs,
        options: Option<ToolExecuteOptions>,
    ) -> napi::Result<Object<'env>, Code> {
        let (on_update, signal) = match options {
            Some(o) => (o.on_update, o.signal),
            None => (None, None),
        };
        let head = options::lines("head", args.head);
        let tail = options::lines("tail", args.tail);
        let core_args = CoreArgs {
            command: args.command,
            cwd: args.cwd,
            timeout: args.timeout,
            head: head?,
            tail: tail?,
            ..CoreArgs::default()
        };
        let cancel = CancelToken::new();
        let tool = self.inner.clone();
        let has_ui = self.has_ui;
        let token = cancel.clone();
        worker::spawn(env, signal, on_update, cancel, move |updates| {
            let mut forward = |update: ToolUpdate| {
                let bytes = update.text.len();
                let partial = ToolPartialResult {
                    content: text_content(update.text),
                };
                updates.send_value(partial, bytes);
            };
            let context = ToolContext {
                on_update: Some(&mut forward),
                cancel: Some(token),
                has_ui,
            };
            tool.execute(core_args, context).map(ToolResult::from)
        })
    }

    /// Closes the tool's persistent shell when it has its own `sessionKey`.
    #[napi(catch_unwind)]
    pub fn close(&self) {
        let _blocked = JsBlocked::enter();
        self.inner.close();
    }
}
