//! The pure text functions: head/tail extraction, interception, sanitizing.

use conch_core::command::intercept::{self, Rule as CoreRule};
use conch_core::command::normalize;
use conch_core::output::sanitize;
use napi_derive::napi;

use crate::errors::{Code, core_error};
use crate::options;

/// A command with its trailing `| head` / `| tail` stages taken off.
#[napi(object, object_from_js = false)]
pub struct NormalizedCommand {
    /// The command to run, trimmed.
    pub command: String,
    /// Keep the first N lines of the output (applied before `tailLines`).
    pub head_lines: Option<u32>,
    /// Then keep the last N lines.
    pub tail_lines: Option<u32>,
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Takes trailing `| head -n N` / `| tail -n N` stages off the last pipeline
/// of `command` (quotes, `||` and heredocs understood; `head -c`, `tail -f`,
/// `tail -n +N` left alone).
#[napi(catch_unwind)]
pub fn normalize_bash_command(command: String) -> NormalizedCommand {
    let n = normalize::normalize_bash_command(&command);
    NormalizedCommand {
        command: n.command,
        head_lines: n.head_lines.map(count),
        tail_lines: n.tail_lines.map(count),
    }
}

/// Keeps the first `head` lines of `text`, then the last `tail` lines of
/// what is left, as `head -n H | tail -n T` would.
#[napi(catch_unwind)]
pub fn apply_head_tail(
    text: String,
    head: Option<f64>,
    tail: Option<f64>,
) -> napi::Result<String, Code> {
    let head = options::lines("head", head)?;
    let tail = options::lines("tail", tail)?;
    Ok(normalize::apply_head_tail(&text, head, tail))
}

/// One interception rule: a command matching `pattern` is blocked when the
/// host has the tool `tool`.
#[napi(object)]
pub struct InterceptionRule {
    /// A regex matched against each simple command of the command line.
    pub pattern: String,
    /// Any of `i`, `m`, `s`, `x`.
    pub flags: Option<String>,
    /// The host tool the model should use instead.
    pub tool: String,
    /// Why, shown after `Blocked: `.
    pub message: String,
}

impl From<InterceptionRule> for CoreRule {
    fn from(r: InterceptionRule) -> Self {
        CoreRule {
            pattern: r.pattern,
            flags: r.flags,
            tool: r.tool,
            message: r.message,
        }
    }
}

impl From<CoreRule> for InterceptionRule {
    fn from(r: CoreRule) -> Self {
        InterceptionRule {
            pattern: r.pattern,
            flags: r.flags,
            tool: r.tool,
            message: r.message,
        }
    }
}

/// A blocked command.
#[napi(object, object_from_js = false)]
pub struct Interception {
    /// Always true.
    pub block: bool,
    /// `Blocked: <rule message>\n\nOriginal command: <command>`.
    pub message: String,
    /// The tool the model should use instead.
    pub suggested_tool: String,
}

/// Checks `command` against `rules` (default: the built-in rules) for a host
/// that has the tools `toolNames`; `null` when nothing blocks it. Throws
/// `InvalidArgument` naming every rule whose pattern does not compile.
#[napi(catch_unwind)]
pub fn check_bash_interception(
    command: String,
    tool_names: Vec<String>,
    rules: Option<Vec<InterceptionRule>>,
) -> napi::Result<Option<Interception>, Code> {
    let rules: Option<Vec<CoreRule>> = rules.map(|r| r.into_iter().map(CoreRule::from).collect());
    let hit = intercept::check_bash_interception(&command, &tool_names, rules.as_deref())
        .map_err(core_error)?;
    Ok(hit.map(|i| Interception {
        block: i.blocked,
        message: i.message,
        suggested_tool: i.suggested_tool,
    }))
}

/// The built-in interception rules (cat/head/tail → read, grep/rg → grep,
/// find → find, sed -i/perl -i/awk -i inplace → edit, echo > f → write).
#[napi(catch_unwind)]
pub fn default_interceptor_rules() -> Vec<InterceptionRule> {
    intercept::default_rules()
        .into_iter()
        .map(InterceptionRule::from)
        .collect()
}

/// Strips escape sequences and control characters (`\r\n` and a lone `\r`
/// become `\n`), as every command's output is cleaned.
#[napi(catch_unwind)]
pub fn sanitize_text(text: String) -> String {
    sanitize::sanitize_text(&text)
}
