//! `conch rpc`'s requests: one JSON line read into a [`Request`], each
//! value checked by the core's parser of its option, or the error reply
//! for a line that is not a request.

use conch_core::JobOptions;
use conch_core::input::until_option;
use conch_core::input::{TimeUnit, count_option, interval_option, max_bytes_option};
use conch_core::shell::RunOptions;
use conch_core::tool::clamp_timeout;
use conch_core::wire;
use conch_core::{JobId, Network, PollOptions};
use serde::Deserialize;
use serde::de::DeserializeOwned;
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
    Engine {
        id: Value,
    },
    SetNetwork {
        id: Value,
        network: Network,
    },
    Reset {
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
            let run: RunOptions =
                options("bash", &request).map_err(|e| error_reply(&id, kind, &e))?;
            let timeout = run.timeout.map(|t| clamp_timeout(Some(t.as_secs_f64())));
            Ok(Request::Bash {
                id: id.clone(),
                run: RunOptions { timeout, ..run },
            })
        }
        Some("job_start") => {
            let opts = options("job_start", &request).map_err(|e| error_reply(&id, kind, &e))?;
            Ok(Request::Start { id, opts })
        }
        Some("abort_bash") => Ok(Request::Abort { id }),
        Some("job_list") => Ok(Request::JobList { id }),
        Some("engine") => Ok(Request::Engine { id }),
        Some("reset") => Ok(Request::Reset { id }),
        Some("set_network") => {
            let network = network(&request).map_err(|e| error_reply(&id, kind, &e))?;
            Ok(Request::SetNetwork { id, network })
        }
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

/// The options of a request (`bash`: [`RunOptions`], `job_start`:
/// [`JobOptions`]) read by the core type's serde derive from the request's
/// other fields, camelCase as on every JSON line ([`wire::from_camel_case`]):
/// an option the core adds is a request field with no change here. A value
/// of a wrong type is refused naming its field; one the core's check
/// refuses, with the core's text.
fn options<T: DeserializeOwned>(
    kind: &str,
    request: &serde_json::Map<String, Value>,
) -> Result<T, String> {
    if !matches!(request.get("command"), Some(Value::String(_))) {
        return Err(format!("{kind} needs a string \"command\""));
    }
    let fields = |keep: &dyn Fn(&str) -> bool| {
        let fields = request
            .iter()
            .filter(|(key, _)| key.as_str() != "id" && key.as_str() != "type" && keep(key))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        wire::from_camel_case(Value::Object(fields))
    };
    serde_json::from_value(fields(&|_| true)).map_err(|error| {
        let text = error.to_string();
        if text.contains(" must be ") || text.contains(" needs ") {
            return text;
        }
        // serde's text names no field: the first refused alone is the one.
        let culprit = request.keys().find(|name| {
            let alone = fields(&|key| key == "command" || key == name.as_str());
            serde_json::from_value::<T>(alone).is_err()
        });
        match culprit {
            Some(name) => format!("\"{name}\": {text}"),
            None => text,
        }
    })
}

/// The `network` of a `set_network`: `"deny"` or `{"allow": [...], "deny":
/// [...], "resolve": {...}}`, read by the core's reader of a sandbox's
/// `network` as it is (its names and addresses are no camelCase keys).
fn network(request: &serde_json::Map<String, Value>) -> Result<Network, String> {
    let given = request
        .get("network")
        .filter(|v| !v.is_null())
        .ok_or("set_network needs a \"network\": \"deny\" or {\"allow\": [...], \"deny\": [...], \"resolve\": {...}}")?;
    Network::deserialize(given).map_err(|e| e.to_string())
}

/// A string field (`None` when absent).
fn text(value: Option<&Value>, name: &str) -> Result<Option<String>, String> {
    match value {
        None => Ok(None),
        Some(Value::String(t)) => Ok(Some(t.clone())),
        Some(_) => Err(format!("\"{name}\" must be a string")),
    }
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
