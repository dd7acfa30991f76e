//! `conch_tool`: the model's `bash` tool (the whole pipeline of the core's
//! `BashTool`: normalize, intercept, cwd, timeout, artifact, engine, result
//! text).

use std::ffi::{c_char, c_int, c_void};

use conch_core::tool::{
    BashTool, BashToolArgs, BashToolConfig, ToolContext, ToolError, ToolUpdate,
};

use crate::boundary::{
    self, c_owned, env_list, free_c_string, into_raw_or_null, opt_c_owned, opt_str_arg,
    opt_str_list, out_arg, str_arg,
};
use crate::callback::{ChunkForwarder, conch_chunk_cb};
use crate::cancel::conch_cancel_token;
use crate::command::parse_rules;
use crate::handle::{self, Castable, OwnershipArc, OwnershipBox};
use crate::options;
use crate::result::{conch_bash_result, conch_bash_result_free, into_c};
use crate::sandbox::{self, conch_sandbox};
use crate::status::{FfiError, FfiResult, conch_status};

/// Receives a live update of a tool call: `utf8` (`len` bytes, then a NUL)
/// is the tail of the output so far, up to 50 KiB; it replaces the previous
/// update, it does not add to it. Updates come at most once per
/// `update_interval_ms`, plus one after the last change.
///
/// Runs on the thread that called `conch_tool_execute`, never concurrently,
/// before it returns; `utf8` is valid only during the call.
pub type conch_update_cb = conch_chunk_cb;

/// The model's `bash` tool (opaque).
///
/// Thread-safe: calls from several threads run one after another on the
/// tool's persistent shell. Cancel a call with its `conch_cancel_token`.
/// `conch_tool_free` may be called while a call runs on another thread
/// (with a `session_key` the tool's shell is closed, which stops the call,
/// and calls waiting for their turn are refused with `CONCH_ERR_CLOSED`;
/// without, the call completes), never concurrently with the start of a
/// call.
pub struct conch_tool {
    _private: [u8; 0],
}

impl Castable for conch_tool {
    type Ownership = OwnershipArc;
    type RustType = BashTool;
}

/// How a tool is set up. Zero-initialize it: zero / NULL fields are the
/// defaults.
#[repr(C)]
pub struct conch_tool_options {
    /// The project directory: commands run there, relative `cwd` arguments
    /// resolve against it; NULL: the host's cwd.
    pub cwd: *const c_char,
    /// Where truncated outputs are spilled (`<dir>/<id>.bash.log`), for the
    /// model to read back as `artifact://<id>`; NULL: no artifacts.
    pub artifacts_dir: *const c_char,
    /// The host's tool names, ended by a NULL pointer: an interceptor rule
    /// applies only when its tool is among them; NULL: none.
    pub tool_names: *const *const c_char,
    /// Refuse commands the host has a dedicated tool for (`cat f` → `read`).
    pub interceptor: bool,
    /// The interceptor's rules as a JSON array of `{"pattern", "flags"?,
    /// "tool", "message"}`; NULL: the default rules. A bad rule fails
    /// `conch_tool_new`.
    pub rules_json: *const c_char,
    /// Run on a PTY when the call says the host has a UI.
    pub virtual_terminal: bool,
    /// Gives this tool its own persistent shell; NULL: the shell is shared
    /// by every tool of the process with the same settings.
    pub session_key: *const c_char,
    /// Least time between two live updates, in milliseconds; 0: 50. At most
    /// 2147483647: a larger value fails `conch_tool_new`.
    pub update_interval_ms: u64,
    /// The bash to run; NULL: `bash` from `PATH`.
    pub shell: *const c_char,
    /// Text put before every command; NULL: none.
    pub prefix: *const c_char,
    /// The rc snapshot: NULL or `"auto"`, `"none"`, or a file path.
    pub snapshot: *const c_char,
    /// The loop that runs the commands inside the session's bash: NULL or
    /// `"auto"` (the loop builtin where bash loads it), `"builtin"` or
    /// `"eval"`, as a shell's `options_json` takes it.
    pub engine: *const c_char,
    /// Variables exported in the shell session (and given to PTY runs),
    /// `"KEY=VALUE"` strings ended by a NULL pointer; NULL: none.
    pub session_env: *const *const c_char,
    /// true: return the values of `session_env` as they are. By default
    /// the value of every variable of `session_env` whose name contains (in
    /// any case) `TOKEN`, `SECRET`, `PASSWORD`, `API_KEY` or `ACCESS_KEY`,
    /// 8 bytes or longer, is replaced by `[masked: NAME]` in the text, the
    /// updates and the artifacts.
    pub skip_mask: bool,
    /// More names whose values are masked so, ended by a NULL pointer;
    /// NULL: none. Not with `skip_mask`.
    pub mask_names: *const *const c_char,
    /// Size of the PTY; 0: 80 columns, 24 rows.
    pub pty_cols: u16,
    pub pty_rows: u16,
    /// What the model calls this tool (its definition's `name`); NULL:
    /// `"bash"`.
    pub name: *const c_char,
    /// What the model calls the job tool of this tool's session, as this
    /// tool's texts name it; NULL: `"job"`.
    pub job_tool_name: *const c_char,
    /// The sandbox commands run in (borrowed: read by `conch_tool_new`),
    /// with the project directory writable; checked by `conch_tool_new`
    /// (`CONCH_ERR_SANDBOX_UNAVAILABLE`) and stated in the tool's
    /// description. NULL: none.
    pub sandbox: *const conch_sandbox,
}

/// What one tool call produced. Owned by the caller: free it with
/// `conch_tool_result_free` (which frees everything in it).
#[repr(C)]
pub struct conch_tool_result {
    /// The outcome, also returned by `conch_tool_execute`: `CONCH_OK`,
    /// `CONCH_ERR_BLOCKED` (the interceptor refused the command; nothing
    /// ran), `CONCH_ERR_TOOL` (the command failed, exited non-zero, timed out
    /// or could not run) or `CONCH_ERR_ABORTED` (the call's cancel token).
    pub status: i32,
    /// What the model reads, in every outcome (the output with its notices,
    /// `(no output)`, `Command exited with code N`, `Blocked: …`). Never NULL.
    pub text: *const c_char,
    /// The structured details as JSON, e.g. `{"meta":{"truncation":
    /// {"direction":"tail","truncatedBy":"bytes","totalLines":…,
    /// "artifactId":"3",…}}}`; NULL when there is nothing to say.
    pub details_json: *const c_char,
    /// The tool the model should use instead; set only when `status` is
    /// `CONCH_ERR_BLOCKED`.
    pub suggested_tool: *const c_char,
    /// The status a command-line front end would exit with: the command's
    /// own, 124 on timeout, 130 when aborted, 1 when it could not run.
    pub exit_status: i32,
    /// The engine's result (exit code, counts, artifact id, cwd); NULL when
    /// the command did not run.
    pub bash: *mut conch_bash_result,
}

impl Castable for conch_tool_result {
    type Ownership = OwnershipBox;
    type RustType = conch_tool_result;
}

/// # Safety
/// `opts` fields are NULL or valid, as documented on `conch_tool_options`.
unsafe fn tool_config(opts: &conch_tool_options) -> FfiResult<BashToolConfig> {
    // SAFETY (whole block): every pointer field is NULL or valid (caller).
    unsafe {
        let mut config = BashToolConfig::new(
            options::opt_path(opts.cwd, "opts->cwd")?
                .unwrap_or_else(|| conch_core::defaults::TOOL_CWD.into()),
        );
        config.artifacts_dir = options::opt_path(opts.artifacts_dir, "opts->artifacts_dir")?;
        config.tool_names = opt_str_list(opts.tool_names, "opts->tool_names")?
            .unwrap_or_default()
            .into_iter()
            .map(str::to_string)
            .collect();
        config.interceptor = opts.interceptor;
        config.rules = opt_str_arg(opts.rules_json, "opts->rules_json")?
            .map(|json| parse_rules(json, "opts->rules_json"))
            .transpose()?;
        config.virtual_terminal = opts.virtual_terminal;
        config.session_key =
            opt_str_arg(opts.session_key, "opts->session_key")?.map(str::to_string);
        if let Some(interval) =
            options::interval(opts.update_interval_ms, "opts->update_interval_ms")?
        {
            config.update_interval = interval;
        }
        config.shell = options::opt_path(opts.shell, "opts->shell")?;
        config.prefix = opt_str_arg(opts.prefix, "opts->prefix")?.map(str::to_string);
        config.snapshot = options::snapshot(opts.snapshot, "opts->snapshot")?;
        config.engine = options::parsed(opts.engine, "opts->engine")?;
        config.session_env = env_list(opts.session_env, "opts->session_env")?;
        config.mask = options::mask(opts.skip_mask, opts.mask_names)?.unwrap_or_default();
        if opts.pty_cols > 0 {
            config.pty_cols = opts.pty_cols;
        }
        if opts.pty_rows > 0 {
            config.pty_rows = opts.pty_rows;
        }
        if let Some(name) = opt_str_arg(opts.name, "opts->name")? {
            config.name = name.to_string();
        }
        if let Some(name) = opt_str_arg(opts.job_tool_name, "opts->job_tool_name")? {
            config.job_tool_name = name.to_string();
        }
        config.sandbox = sandbox::opt_sandbox(opts.sandbox, "opts->sandbox->")?;
        Ok(config)
    }
}

/// Details as the JSON the other faces hand out (camelCase, as Node's).
fn details_json(details: Option<&conch_core::tool::Details>) -> FfiResult<Option<String>> {
    details
        .map(|d| {
            serde_json::to_value(d)
                .map(|v| conch_core::wire::camel_case(v).to_string())
                .map_err(|e| FfiError::internal(format!("cannot serialize the details: {e}")))
        })
        .transpose()
}

/// Makes the C result of a call and the status it returns; a call refused
/// because the tool was closed (freed while the call waited on another
/// thread) is `CONCH_ERR_CLOSED`, with no result.
fn result_into_c(
    outcome: Result<conch_core::tool::ToolResult, ToolError>,
    exit_status: i32,
    bash: Option<conch_core::BashResult>,
) -> FfiResult<(*mut conch_tool_result, conch_status, String)> {
    let (status, text, details, suggested_tool) = match outcome {
        Ok(ok) => {
            let details = details_json(ok.details.as_ref())?;
            (conch_status::CONCH_OK, ok.text, details, None)
        }
        Err(e) => {
            let details = details_json(e.details())?;
            match e {
                ToolError::Blocked {
                    message,
                    suggested_tool,
                } => (
                    conch_status::CONCH_ERR_BLOCKED,
                    message,
                    details,
                    Some(suggested_tool),
                ),
                ToolError::Failed { message, .. } => {
                    (conch_status::CONCH_ERR_TOOL, message, details, None)
                }
                ToolError::Aborted { message, .. } => {
                    (conch_status::CONCH_ERR_ABORTED, message, details, None)
                }
                ToolError::Closed { message } => {
                    return Err(FfiError {
                        status: conch_status::CONCH_ERR_CLOSED,
                        message,
                        misuse: false,
                    });
                }
            }
        }
    };
    let c_text = c_owned(text.clone())?;
    let details = opt_c_owned(details)?;
    let suggested_tool = opt_c_owned(suggested_tool)?;
    let bash = match bash {
        Some(b) => into_c(b)?,
        None => std::ptr::null_mut(),
    };
    let result = handle::into_raw(conch_tool_result {
        status: status as i32,
        text: c_text.into_raw(),
        details_json: into_raw_or_null(details),
        suggested_tool: into_raw_or_null(suggested_tool),
        exit_status,
        bash,
    });
    Ok((result, status, text))
}

/// Creates the model's `bash` tool. `opts` may be NULL (all defaults).
/// Fails on bad options, e.g. an interceptor rule that does not compile.
/// Returns the handle (free with `conch_tool_free`), or NULL on error.
///
/// # Safety
/// `opts` is NULL or points to valid options.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_tool_new(opts: *const conch_tool_options) -> *mut conch_tool {
    boundary::pointer("conch_tool_new", || {
        // SAFETY: the caller's guarantee.
        let config = match unsafe { opts.as_ref() } {
            // SAFETY: the caller's guarantee on the fields.
            Some(o) => unsafe { tool_config(o) }?,
            None => BashToolConfig::default(),
        };
        Ok(handle::into_raw(BashTool::new(config)?))
    })
}

/// The tool's definition for the model, to register with an LLM API as it
/// is: a JSON object `{"description": …, "input_schema": {…}, "name": …}`
/// (compact, every object's keys sorted), where `input_schema` is the JSON
/// Schema of exactly the arguments `conch_tool_execute` accepts.
///
/// Returns a new string (free with `conch_string_free`), or NULL on error
/// (`tool` NULL).
///
/// # Safety
/// `tool` is NULL or a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_tool_definition(tool: *mut conch_tool) -> *mut c_char {
    boundary::pointer("conch_tool_definition", || {
        // SAFETY: the caller's guarantee.
        let tool = unsafe { handle::to_arc(tool, "tool") }?;
        boundary::c_string(tool.definition().to_json())
    })
}

/// Runs one call of the `bash` tool and blocks until it ends.
///
/// `args_json` is the model's arguments as it sent them: `{"command": …,
/// "cwd"?: …, "timeout"?: seconds (clamped to 1–3600, default 300),
/// "head"?: N, "tail"?: N, "async"?: bool}`, as `conch_tool_definition`'s
/// schema describes them (unknown keys are ignored, `null` is a key left
/// out). `cancel` (may be NULL) aborts the call from
/// any thread. `has_ui`: the host shows a UI (with `virtual_terminal`, the
/// command then runs on a PTY). `on_update` (may be NULL) gets live updates
/// on this thread, with `user`.
///
/// Returns `CONCH_OK`, or the tool's outcome `CONCH_ERR_BLOCKED`,
/// `CONCH_ERR_TOOL`, `CONCH_ERR_ABORTED`; in these four cases `*out` is set
/// (free with `conch_tool_result_free`): the model reads `text` whatever
/// the outcome. Other codes (NULL arguments, bad `args_json`,
/// `CONCH_ERR_CLOSED`, `CONCH_ERR_PANIC`) leave `*out` untouched.
/// `CONCH_ERR_CLOSED` (`bash tool is closed`): `conch_tool_free` was called
/// on another thread before this call's command started (for a tool with
/// its own `session_key`, also while it waited for its turn).
///
/// # Safety
/// `tool` is a live handle; `args_json` a C string; `cancel` NULL or a live
/// token; `on_update`, if not NULL, safe to call with `user`; `out`
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_tool_execute(
    tool: *mut conch_tool,
    args_json: *const c_char,
    cancel: *const conch_cancel_token,
    has_ui: bool,
    on_update: conch_update_cb,
    user: *mut c_void,
    out: *mut *mut conch_tool_result,
) -> c_int {
    boundary::status("conch_tool_execute", || {
        // SAFETY (whole block): the caller's guarantees.
        let (tool, args_json, cancel, out) = unsafe {
            (
                handle::to_arc(tool, "tool")?,
                str_arg(args_json, "args_json")?,
                options::cancel(cancel),
                out_arg(out, "out")?,
            )
        };
        let args = serde_json::from_str(args_json)
            .map_err(|e| e.to_string())
            .and_then(|json| BashToolArgs::from_json(&json).map_err(|e| e.to_string()))
            .map_err(|e| {
                FfiError::arg(format!(
                    "args_json is not the bash tool's arguments \
                     ({{\"command\", \"cwd\"?, \"timeout\"?, \"head\"?, \"tail\"?, \"async\"?}}): {e}"
                ))
            })?;
        let mut forwarder = ChunkForwarder::new(on_update, user);
        let mut forward = |update: ToolUpdate| forwarder.forward(&update.text);
        let ctx = ToolContext {
            // Without a callback the core skips its live-update machinery.
            on_update: match on_update {
                Some(_) => Some(&mut forward),
                None => None,
            },
            cancel,
            has_ui,
        };
        let run = tool.run(args, ctx);
        let exit_status = run.exit_status();
        let (result, status, text) = result_into_c(run.outcome, exit_status, run.bash)?;
        *out = result;
        match status {
            conch_status::CONCH_OK => Ok(()),
            _ => Err(FfiError {
                status,
                message: text,
                misuse: false,
            }),
        }
    })
}

/// Closes and frees the handle. A call of it still in progress on another
/// thread whose command has not started is refused (`CONCH_ERR_CLOSED`). A
/// tool with its own `session_key` closes its shell (killing what it still
/// runs, so a call in progress is stopped); shared shells live on until
/// `conch_close_sessions`, and a command running on one completes. NULL is
/// a no-op.
///
/// # Safety
/// `tool` is NULL or a live handle, not used again after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_tool_free(tool: *mut conch_tool) {
    boundary::quiet("conch_tool_free", || {
        // SAFETY: `tool` is NULL or a live handle from `conch_tool_new`, not
        // used again (caller's guarantee); this takes its own reference.
        if let Some(tool) = unsafe { handle::take(tool) } {
            tool.close();
        }
    })
}

/// Frees a tool result and everything in it. NULL is a no-op.
///
/// # Safety
/// `result` is NULL or a result returned by conch, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_tool_result_free(result: *mut conch_tool_result) {
    boundary::quiet("conch_tool_result_free", || {
        // SAFETY: `result` is NULL or made by `result_into_c`, not freed
        // before (caller's guarantee): strings by `CString::into_raw`, `bash`
        // by `into_c`.
        unsafe {
            let Some(r) = handle::take(result) else {
                return;
            };
            free_c_string(r.text);
            free_c_string(r.details_json);
            free_c_string(r.suggested_tool);
            conch_bash_result_free(r.bash);
        }
    })
}
