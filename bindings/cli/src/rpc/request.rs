//! `conch rpc`'s requests: one JSON line read into a [`Request`], each
//! value checked by the core's parser of its option, or the error reply
//! for a line that is not a request.

use std::path::PathBuf;
use std::time::Duration;

use conch_core::JobOptions;
use conch_core::input::until_option;
use conch_core::input::{
    TimeUnit, count_option, interval_option, max_bytes_option, timeout_option,
};
use conch_core::shell::RunOptions;
use conch_core::tool::clamp_timeout;
use conch_core::{JobId, PollOptions};
use serde_json::{Value, json};

use super::JobCall;

pub(super) enum Request {
    Bash {
        id: Value,
        run: RunOptions,
    },
    Start {
        id: Value,
        opts: JobOptions,
    },
    Abort {
        id: Value,
    },
    JobList {
        id: Value,
    },
    JobCall {
        id: Value,
        job: JobId,
        call: JobCall,
    },
}

/// A request, or the error reply for a line that is not one.
pub(super) fn read_request(line: &[u8]) -> Result<Request, Value> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| error_reply(&Value::Null, None, &format!("Invalid JSON: {e}")))?;
    let Value::Object(request) = value else {
        return Err(error_reply(
            &Value::Null,
            None,
            "A request must be a JSON object",
        ));
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let kind = request.get("type").and_then(Value::as_str);
    match kind {
        Some("bash") => {
            let fail = |e: String| error_reply(&id, kind, &e);
            let field = |name: &str| request.get(name).filter(|v| !v.is_null());
            let command = match field("command") {
                Some(Value::String(c)) => c.clone(),
                _ => return Err(fail("bash needs a string \"command\"".into())),
            };
            let yield_after = seconds(field("yieldAfter"), "yieldAfter").map_err(fail)?;
            Ok(Request::Bash {
                id: id.clone(),
                run: RunOptions {
                    command,
                    cwd: text(field("cwd"), "cwd").map_err(fail)?.map(PathBuf::from),
                    timeout: tool_timeout(field("timeout")).map_err(fail)?,
                    yield_after,
                    ..RunOptions::default()
                },
            })
        }
        Some("job_start") => {
            let opts = start_request(&request).map_err(|e| error_reply(&id, kind, &e))?;
            Ok(Request::Start { id, opts })
        }
        Some("abort_bash") => Ok(Request::Abort { id }),
        Some("job_list") => Ok(Request::JobList { id }),
        Some(
            name @ ("job_poll" | "job_write" | "job_close_stdin" | "job_key" | "job_signal"
            | "job_kill"),
        ) => {
            let (job, call) =
                job_request(name, &request).map_err(|error| error_reply(&id, kind, &error))?;
            Ok(Request::JobCall { id, job, call })
        }
        Some(other) => Err(error_reply(&id, kind, &format!("Unknown command: {other}"))),
        None => Err(error_reply(&id, None, "A request needs a string \"type\"")),
    }
}

/// The job and the call of a job request, each value checked by the
/// core's parser of its option; `null` is an absent field.
fn job_request(
    name: &str,
    request: &serde_json::Map<String, Value>,
) -> Result<(JobId, JobCall), String> {
    let field = |name: &str| request.get(name).filter(|v| !v.is_null());
    let number = |name: &str, what: &str| match field(name) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(format!("\"{name}\" must be {what}")),
    };
    let job = number("job", "a job number")?.ok_or(format!("{name} needs a number \"job\""))?;
    // One past the ids a session gives (`u32`) is the largest id, which no
    // session reaches: the core refuses it as any unknown job.
    let job =
        JobId::try_from(count_option("job", job).map_err(|e| e.to_string())?).unwrap_or(JobId::MAX);
    let needed =
        |key: &str| text(field(key), key)?.ok_or(format!("{name} needs a string \"{key}\""));
    let call = match name {
        "job_write" => JobCall::Write(needed("data")?),
        "job_close_stdin" => JobCall::CloseStdin,
        "job_key" => JobCall::Key(needed("key")?),
        "job_signal" => JobCall::Signal(match field("signal") {
            Some(Value::Number(n)) => n.to_string(),
            _ => needed("signal")?,
        }),
        "job_kill" => JobCall::Kill,
        _ => JobCall::Poll(poll_options(request)?),
    };
    Ok((job, call))
}

/// The options of a `job_poll`.
fn poll_options(request: &serde_json::Map<String, Value>) -> Result<PollOptions, String> {
    let field = |name: &str| request.get(name).filter(|v| !v.is_null());
    let number = |name: &str, what: &str| match field(name) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(format!("\"{name}\" must be {what}")),
    };
    let wait = number("wait", "a number of seconds")?
        .map(|s| interval_option("wait", s, TimeUnit::Seconds))
        .transpose()
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let until = match field("until") {
        None => None,
        Some(Value::String(pattern)) => {
            Some(until_option("until", pattern).map_err(|e| e.to_string())?)
        }
        Some(_) => return Err("\"until\" must be a string (a regular expression)".into()),
    };
    let max_bytes = number("maxBytes", "a number of bytes")?
        .map(|n| max_bytes_option("maxBytes", n))
        .transpose()
        .map_err(|e| e.to_string())?;
    let cursor = number("cursor", "a number of bytes")?
        .map(|n| count_option("cursor", n))
        .transpose()
        .map_err(|e| e.to_string())?
        .map(|n| n as u64);
    Ok(PollOptions {
        wait,
        until,
        max_bytes,
        cursor,
    })
}

/// The options of a `job_start`.
fn start_request(request: &serde_json::Map<String, Value>) -> Result<JobOptions, String> {
    let field = |name: &str| request.get(name).filter(|v| !v.is_null());
    let command =
        text(field("command"), "command")?.ok_or("job_start needs a string \"command\"")?;
    let env = match field("env") {
        None => Vec::new(),
        Some(Value::Object(vars)) => vars
            .iter()
            .map(|(k, v)| match v {
                Value::String(v) => Ok((k.clone(), v.clone())),
                _ => Err(format!("\"env\" values must be strings (\"{k}\" is not)")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"env\" must be an object of strings".into()),
    };
    let stdin = match field("stdin") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("\"stdin\" must be a boolean".into()),
    };
    let pty = match field("pty") {
        None => None,
        Some(Value::Object(size)) => {
            let side = |key: &str| {
                size.get(key)
                    .and_then(Value::as_f64)
                    .ok_or(format!("\"pty\" needs a number \"{key}\""))
                    .and_then(|n| count_option(&format!("pty.{key}"), n).map_err(|e| e.to_string()))
                    .map(|n| u16::try_from(n).unwrap_or(u16::MAX))
            };
            Some((side("cols")?, side("rows")?))
        }
        Some(_) => return Err("\"pty\" must be an object {\"cols\", \"rows\"}".into()),
    };
    Ok(JobOptions {
        cwd: text(field("cwd"), "cwd")?.map(PathBuf::from),
        env,
        timeout: seconds(field("timeout"), "timeout")?,
        stdin,
        pty,
        ..JobOptions::new(command)
    })
}

/// A string field (`None` when absent).
fn text(value: Option<&Value>, name: &str) -> Result<Option<String>, String> {
    match value {
        None => Ok(None),
        Some(Value::String(t)) => Ok(Some(t.clone())),
        Some(_) => Err(format!("\"{name}\" must be a string")),
    }
}

/// A number of seconds (`None` when absent), checked as a timeout.
fn seconds(value: Option<&Value>, name: &str) -> Result<Option<Duration>, String> {
    match value {
        None => Ok(None),
        Some(Value::Number(n)) => {
            timeout_option(name, n.as_f64().unwrap_or(f64::NAN), TimeUnit::Seconds)
                .map(Some)
                .map_err(|e| e.to_string())
        }
        Some(_) => Err(format!("\"{name}\" must be a number of seconds")),
    }
}

/// A `bash` request's timeout: checked by the core, then clamped as the
/// bash tool clamps it.
fn tool_timeout(value: Option<&Value>) -> Result<Option<Duration>, String> {
    Ok(seconds(value, "timeout")?.map(|t| clamp_timeout(Some(t.as_secs_f64()))))
}

pub(super) fn error_reply(id: &Value, command: Option<&str>, error: &str) -> Value {
    let mut reply = json!({"type": "response", "success": false, "error": error});
    if !id.is_null() {
        reply["id"] = id.clone();
    }
    if let Some(command) = command {
        reply["command"] = command.into();
    }
    reply
}
