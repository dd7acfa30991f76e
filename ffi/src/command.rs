//! Command helpers: head/tail extraction and the bash interceptor.

use std::ffi::{c_char, c_int};

use conch_core::command::intercept::{Rule, check_bash_interception, default_rules};
use conch_core::command::{apply_head_tail, normalize_bash_command};

use crate::boundary::{
    self, c_owned, c_string, free_c_string, opt_str_arg, opt_str_list, out_arg, str_arg,
};
use crate::handle::{self, Castable, OwnershipBox};
use crate::status::{FfiError, FfiResult};

/// A line count for C: `-1` when there is none.
fn count_or_none(n: Option<usize>) -> i64 {
    n.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX))
}

/// Takes a trailing `| head -n N` / `| tail -n N` (and `-N`, `--lines=N`)
/// off a command, so the limit can be applied to the complete output.
///
/// Returns the command to run (free with `conch_string_free`) and writes the
/// extracted limits to `*head` and `*tail` (`-1`: none); NULL on error.
///
/// # Safety
/// `cmd` is NULL or a C string; `head` and `tail` are NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_normalize_bash_command(
    cmd: *const c_char,
    head: *mut i64,
    tail: *mut i64,
) -> *mut c_char {
    boundary::pointer("conch_normalize_bash_command", || {
        // SAFETY (whole block): the caller's guarantees.
        let (cmd, head, tail) = unsafe {
            (
                str_arg(cmd, "cmd")?,
                out_arg(head, "head")?,
                out_arg(tail, "tail")?,
            )
        };
        let normalized = normalize_bash_command(cmd);
        let command = c_string(normalized.command)?;
        *head = count_or_none(normalized.head_lines);
        *tail = count_or_none(normalized.tail_lines);
        Ok(command)
    })
}

/// Keeps the first `head` lines of `text`, then the last `tail` lines of
/// that, as `head -n H | tail -n T` would; a negative count means no limit.
/// Returns a new string (free with `conch_string_free`), or NULL on error.
///
/// # Safety
/// `text` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_apply_head_tail(
    text: *const c_char,
    head: i64,
    tail: i64,
) -> *mut c_char {
    boundary::pointer("conch_apply_head_tail", || {
        // SAFETY: the caller's guarantee.
        let text = unsafe { str_arg(text, "text") }?;
        let limit = |n: i64| usize::try_from(n).ok();
        c_string(apply_head_tail(text, limit(head), limit(tail)))
    })
}

/// A blocked command: why, and which host tool to use instead. Owned by the
/// caller: free with `conch_interception_free`.
#[repr(C)]
pub struct conch_interception {
    /// `Blocked: <rule message>\n\nOriginal command: <command>`.
    pub message: *const c_char,
    /// The tool the model should use instead (e.g. `"read"`).
    pub suggested_tool: *const c_char,
}

impl Castable for conch_interception {
    type Ownership = OwnershipBox;
    type RustType = conch_interception;
}

/// Interceptor rules from their JSON form (also used by the tool options).
pub(crate) fn parse_rules(json: &str, name: &str) -> FfiResult<Vec<Rule>> {
    serde_json::from_str(json).map_err(|e| {
        FfiError::arg(format!(
            "{name} is not a JSON array of {{pattern, flags?, tool, message}}: {e}"
        ))
    })
}

/// Checks whether a command should be blocked in favour of one of the host's
/// tools (`cat f` → `read`, `sed -i` → `edit`, …).
///
/// `tool_names` is the host's tool names, ended by a NULL pointer (a rule
/// only blocks when its tool is among them). `rules_json` may be NULL (the
/// default rules) or a JSON array of `{"pattern", "flags"?, "tool",
/// "message"}`; an invalid pattern is `CONCH_ERR_INVALID_ARG` naming every
/// bad rule. On `CONCH_OK`, `*out` is NULL when the command may run, or the
/// interception (free with `conch_interception_free`).
///
/// # Safety
/// `command` and `rules_json` are NULL or C strings; `tool_names` is NULL or
/// a NULL-terminated array of C strings; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_check_bash_interception(
    command: *const c_char,
    tool_names: *const *const c_char,
    rules_json: *const c_char,
    out: *mut *mut conch_interception,
) -> c_int {
    boundary::status("conch_check_bash_interception", || {
        // SAFETY (whole block): the caller's guarantees.
        let (command, tool_names, rules_json, out) = unsafe {
            (
                str_arg(command, "command")?,
                opt_str_list(tool_names, "tool_names")?
                    .ok_or_else(|| FfiError::arg("tool_names is NULL"))?,
                opt_str_arg(rules_json, "rules_json")?,
                out_arg(out, "out")?,
            )
        };
        let rules = rules_json
            .map(|json| parse_rules(json, "rules_json"))
            .transpose()?;
        let hit = check_bash_interception(command, &tool_names, rules.as_deref())?;
        *out = match hit {
            None => std::ptr::null_mut(),
            Some(hit) => {
                let message = c_owned(hit.message)?;
                let suggested_tool = c_owned(hit.suggested_tool)?;
                handle::into_raw(conch_interception {
                    message: message.into_raw(),
                    suggested_tool: suggested_tool.into_raw(),
                })
            }
        };
        Ok(())
    })
}

/// Frees an interception and its strings. NULL is a no-op.
///
/// # Safety
/// `interception` is NULL or one returned by conch, not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_interception_free(interception: *mut conch_interception) {
    boundary::quiet("conch_interception_free", || {
        // SAFETY: `interception` is NULL or made by
        // `conch_check_bash_interception`, not freed before (caller's
        // guarantee), strings by `CString::into_raw`.
        unsafe {
            let Some(i) = handle::take(interception) else {
                return;
            };
            free_c_string(i.message);
            free_c_string(i.suggested_tool);
        }
    })
}

/// The default interceptor rules as a JSON array of `{"pattern", "tool",
/// "message"}`, a starting point for custom `rules_json`. Returns a new
/// string (free with `conch_string_free`), or NULL on an internal error.
#[unsafe(no_mangle)]
pub extern "C" fn conch_default_interceptor_rules() -> *mut c_char {
    boundary::pointer("conch_default_interceptor_rules", || {
        let json = serde_json::to_string(&default_rules())
            .map_err(|e| FfiError::internal(format!("cannot serialize the default rules: {e}")))?;
        c_string(json)
    })
}
