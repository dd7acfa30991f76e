//! The tools' definitions: the name, description and JSON Schema a host
//! registers with an LLM API (Anthropic `tools`, OpenAI function tools, MCP
//! `tools/list`), built here once so no host writes its own and drifts from
//! what `execute` accepts.
//!
//! The schema is exactly what [`BashToolArgs::from_json`] and
//! [`JobToolArgs::from_json`] accept, with one leniency it does not
//! advertise: `null` counts as a key left out (a nullable type would be
//! refused by some LLM APIs). Keys the tools do not know are ignored, so
//! the schema does not forbid them. The description states the limits the
//! model runs into, from the tool's configuration: the timeout range, the
//! 50 KB view and `artifact://`, head/tail, the refused commands when the
//! interceptor is on, the move to the background when configured; and the
//! shell's version and the system, read from them.
//!
//! [`BashToolArgs::from_json`]: super::BashToolArgs::from_json
//! [`JobToolArgs::from_json`]: super::JobToolArgs::from_json

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::bash_tool::{BashTool, DEFAULT_TIMEOUT_SECS, MAX_TIMEOUT_SECS, MIN_TIMEOUT_SECS};
use super::bash_tool_config::BashToolConfig;
use super::job_tool::{DEFAULT_WAIT_SECS, JOB_OPS, JobTool, MAX_WAIT_SECS};
use crate::command::intercept::Interceptor;
use crate::defaults;
use crate::jobs::JobId;
use crate::output::notice::format_size;
use crate::process::sandbox::{Network, Sandbox};
use crate::run_result::seconds;

/// What a host registers for one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does and its limits, for the model.
    pub description: String,
    /// The JSON Schema (draft 2020-12) of the tool's arguments.
    pub input_schema: Value,
}

impl ToolDefinition {
    /// The definition as compact JSON with every object's keys sorted, the
    /// same text whatever `serde_json` features a build enables (the C face
    /// hands out this text, and its tests compare it byte for byte).
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        write_sorted(
            &serde_json::to_value(self).expect("a definition is JSON"),
            &mut out,
        );
        out
    }
}

fn write_sorted(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_sorted(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sorted(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_text_has_sorted_keys() {
        let d = ToolDefinition {
            name: "t".into(),
            description: "a \"b\"\n".into(),
            input_schema: json!({"type": "object", "required": ["x"], "properties": {"x": {"minimum": 0}}}),
        };
        assert_eq!(
            d.to_json(),
            r#"{"description":"a \"b\"\n","input_schema":{"properties":{"x":{"minimum":0}},"required":["x"],"type":"object"},"name":"t"}"#
        );
    }
}

impl BashTool {
    /// The definition of this `bash` tool, for the model.
    /// The sandbox it states is the one in force: with the network the
    /// host set last ([`BashTool::set_network`]), not the configured one.
    pub fn definition(&self) -> ToolDefinition {
        let config = self.config();
        let interceptor = self.interceptor();
        let sandbox = self.sandbox_in_force();
        ToolDefinition {
            name: config.name.clone(),
            description: bash_description(config, sandbox.as_ref(), interceptor),
            input_schema: bash_schema(config),
        }
    }
}

impl JobTool {
    /// The definition of this `job` tool, for the model.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.names().job.clone(),
            description: job_description(self.names(), self.auto_background_after()),
            input_schema: job_schema(self.names()),
        }
    }
}

/// The names the two tools are called by (each tool's text names the other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolNames {
    pub bash: String,
    pub job: String,
}

fn bash_description(
    config: &BashToolConfig,
    sandbox: Option<&Sandbox>,
    interceptor: Option<&Interceptor>,
) -> String {
    let view = format_size(defaults::MAX_BYTES as u64);
    let job = &config.job_tool_name;
    let mut text = String::from(
        "Runs a bash command in a persistent shell session and returns its output (stdout and \
         stderr merged, in order). Variables and functions carry over to the next call (aliases \
         too, once `shopt -s expand_aliases` is set); the working directory does not: each call \
         starts in the project directory, or in `cwd`.",
    );
    if let Some(system) = system_sentence(config.shell.as_deref()) {
        text.push(' ');
        text.push_str(&system);
    }
    if !config.virtual_terminal {
        text.push_str(
            " Commands get no input (stdin is empty) and no terminal: use non-interactive options.",
        );
    }
    text.push_str(&format!(
        "\n\n- timeout: seconds, clamped to {}-{}, default {}. At the deadline the command and \
         every process it started are killed; the text starts `[Command timed out after N \
         seconds]`, then the output so far.\n\
         - Output: at most {view} is shown (the last lines, unless head is given). When the \
         command printed more, the text ends `[Showing lines A-B of T ({view} limit). Full: \
         artifact://<id>]` and the whole output is kept as `artifact://<id>`.\n\
         - head / tail: keep the first / last N lines of the whole output; a trailing `| head \
         -n N` or `| tail -n N` is read as the same limit.\n\
         - A non-zero exit status fails the call; the text ends `Command exited with code N`.\n\
         - async: true starts the command as a background job and returns at once with its \
         number; read its output, send it input or stop it with the `{job}` tool.",
        MIN_TIMEOUT_SECS, MAX_TIMEOUT_SECS, DEFAULT_TIMEOUT_SECS,
    ));
    if let Some(after) = config.auto_background_after {
        text.push_str(&format!(
            "\n- A command still running after {} seconds goes on as a background job: the call \
             returns its output so far, and the `{job}` tool reads the rest.",
            seconds(after)
        ));
    }
    if let Some(sandbox) = sandbox {
        text.push_str("\n\n");
        text.push_str(&sandbox_text(sandbox, &config.cwd));
    }
    if let Some(interceptor) = interceptor {
        let mut refused: Vec<&str> = Vec::new();
        for rule in interceptor.active_rules(&config.tool_names) {
            if !refused.contains(&rule.message.as_str()) {
                refused.push(&rule.message);
            }
        }
        if !refused.is_empty() {
            text.push_str(
                "\n\nThese commands are refused without running (the text says which tool to use \
                 instead):",
            );
            for message in refused {
                text.push_str(&format!("\n- {message}"));
            }
        }
    }
    text
}

/// Which shell and system the commands run on, read from them (`The
/// shell is bash 5.2.15 on Linux 6.1.0 (x86_64).`): the model writes for
/// GNU or BSD tools, and for the bash it has. `None` when no bash is found
/// (the tool's first call then says why).
pub(crate) fn system_sentence(shell: Option<&Path>) -> Option<String> {
    let bash = crate::process::bash::find_bash(shell).ok()?;
    let version = crate::process::bash::version_of(&bash)?;
    let uname = rustix::system::uname();
    let field = |c: &std::ffi::CStr| c.to_string_lossy().into_owned();
    let os = match field(uname.sysname()).as_str() {
        "Darwin" => "macOS".to_string(),
        other => other.to_string(),
    };
    Some(format!(
        "The shell is bash {version} on {os} {} ({}).",
        field(uname.release()),
        field(uname.machine())
    ))
}

/// What the sandbox allows, for the model: why a command gets `Permission
/// denied`, `Read-only file system` or `Operation not permitted`, and why
/// some files read as empty.
fn sandbox_text(sandbox: &Sandbox, cwd: &Path) -> String {
    let mut writable = vec![cwd.display().to_string(), "$TMPDIR".to_string()];
    for path in &sandbox.writable {
        let shown = path.display().to_string();
        if !writable.contains(&shown) {
            writable.push(shown);
        }
    }
    let mut text = format!(
        "Commands run in a sandbox: files can be written only under {}",
        writable.join(", ")
    );
    if let Some(readable) = &sandbox.readable {
        let readable: Vec<String> = readable.iter().map(|p| p.display().to_string()).collect();
        text.push_str(&format!(
            "; read only there, under {} and the system directories",
            readable.join(", ")
        ));
    }
    match &sandbox.network {
        Network::Allow => text.push_str("; the network is open"),
        Network::Deny if sandbox.allow_tcp_ports.is_empty() => {
            text.push_str("; no network (no TCP, no UDP, no DNS; local UNIX sockets work)")
        }
        Network::Deny => {
            let ports: Vec<String> = sandbox.allow_tcp_ports.iter().map(u16::to_string).collect();
            text.push_str(&format!(
                "; no network but TCP connections to port {} (no UDP, no DNS)",
                ports.join(", ")
            ));
        }
        Network::Domains(domains) => {
            let allowed: Vec<String> = domains.allow.iter().map(|p| p.to_string()).collect();
            let allowed = match allowed.is_empty() {
                true => "none yet".to_string(),
                false => allowed.join(", "),
            };
            text.push_str(&format!(
                "; the network only through the proxy the environment names (HTTP_PROXY, \
                 HTTPS_PROXY, ALL_PROXY), to the allowed domains ({allowed}); a refused \
                 connection adds a line `[sandbox] blocked: host:port is not in the allowed \
                 domains` to the output: ask the user to allow the domain"
            ));
        }
    }
    let limits = &sandbox.limits;
    let mut caps = Vec::new();
    if let Some(n) = limits.cpu_seconds {
        caps.push(format!("{n} s of CPU per process"));
    }
    if let Some(n) = limits.memory_bytes {
        caps.push(format!("{} of memory per process", format_size(n)));
    }
    if let Some(n) = limits.file_size_bytes {
        caps.push(format!("files of at most {}", format_size(n)));
    }
    if let Some(n) = limits.open_files {
        caps.push(format!("{n} open files per process"));
    }
    if let Some(n) = limits.processes {
        caps.push(format!("{n} processes at once"));
    }
    if let Some(n) = limits.session_memory_bytes {
        caps.push(format!("{} of memory in all", format_size(n)));
    }
    if !caps.is_empty() {
        text.push_str(&format!("; limits: {}", caps.join(", ")));
    }
    text.push_str(
        "; secrets read as empty (/etc/shadow, SSH host keys, /root, other users' homes, \
         credential stores such as ~/.ssh). What it refuses fails with `Permission denied`, \
         `Read-only file system` or `Operation not permitted`: do not retry it another way.",
    );
    text
}

fn bash_schema(config: &BashToolConfig) -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The bash command to run."
            },
            "cwd": {
                "type": "string",
                "description": "Directory to run in, relative to the project directory (`~` is the home directory). Default: the project directory."
            },
            "timeout": {
                "type": "number",
                "description": format!(
                    "Seconds before the command is killed, clamped to {MIN_TIMEOUT_SECS}-{MAX_TIMEOUT_SECS}. Default: {DEFAULT_TIMEOUT_SECS}."
                )
            },
            "head": {
                "type": "integer",
                "minimum": 0,
                "description": "Keep only the first N lines of the output."
            },
            "tail": {
                "type": "integer",
                "minimum": 0,
                "description": "Keep only the last N lines of the output (of the first `head` lines, when both are given)."
            },
            "async": {
                "type": "boolean",
                "description": format!(
                    "Start the command as a background job and return at once with its number (read it with the `{}` tool). Default: false.",
                    config.job_tool_name
                )
            }
        },
        "required": ["command"]
    })
}

fn job_description(names: &ToolNames, auto_background_after: Option<Duration>) -> String {
    let bash = &names.bash;
    let started = match auto_background_after {
        Some(after) => format!(
            "commands started with `async: true`, or still running after {} seconds",
            seconds(after)
        ),
        None => "commands started with `async: true`".to_string(),
    };
    format!(
        "Reads, feeds and stops the background jobs of the `{bash}` tool's session: {started}.\n\n\
         - op \"poll\": the job's new output since the last poll, waiting up to `wait` seconds \
         (0-{MAX_WAIT_SECS}, default {DEFAULT_WAIT_SECS}) for the job to end or for its output to \
         match `until` (a regular expression).\n\
         - op \"write\": sends `input` to the job's stdin (end it with a newline for a line), \
         then polls.\n\
         - op \"kill\": stops the job and every process it started.\n\
         - op \"list\": every job of the session with its status.\n\n\
         poll, write and kill need `job`: the number `{bash}` gave when it started the job."
    )
}

fn job_schema(names: &ToolNames) -> Value {
    json!({
        "type": "object",
        "properties": {
            "op": {
                "type": "string",
                "enum": JOB_OPS,
                "description": "What to do: poll, write, kill or list."
            },
            "job": {
                "type": "integer",
                "minimum": 0,
                "maximum": JobId::MAX,
                "description": format!("The job: the number `{}` gave when it started it (every op but list).", names.bash)
            },
            "input": {
                "type": "string",
                "description": "Text to send to the job's stdin (write)."
            },
            "wait": {
                "type": "number",
                "description": format!(
                    "Seconds to wait for the job to end or `until` to match (poll, write), clamped to 0-{MAX_WAIT_SECS}. Default: {DEFAULT_WAIT_SECS}."
                )
            },
            "until": {
                "type": "string",
                "description": "Return as soon as the new output matches this regular expression (poll, write)."
            }
        },
        "required": ["op"]
    })
}
