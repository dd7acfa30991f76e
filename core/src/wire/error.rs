//! The serialized form of the core's [`Error`], for a face that gets it
//! from another process (a remote client): `{"kind": …, "message": …}`,
//! plus what a variant carries beyond its text, so the face raises the
//! same error it would raise locally.

use std::io;

use serde_json::{Map, Value, json};

use crate::error::Error;

/// `err` serialized: its kind (`invalid_argument`, `io`, `spawn`, `closed`,
/// `not_found`, `too_many_jobs`, `no_input`, `sandbox_unavailable`), its
/// text, and `running` (too many jobs), `context` and `errno` (an I/O
/// error), `what` (a closed handle).
pub fn error_to_wire(err: &Error) -> Value {
    let message = err.to_string();
    match err {
        Error::InvalidArgument(_) => json!({"kind": "invalid_argument", "message": message}),
        Error::Io { context, source } => json!({"kind": "io", "message": message,
            "context": context, "errno": source.raw_os_error(), "detail": source.to_string()}),
        Error::Spawn(_) => json!({"kind": "spawn", "message": message}),
        Error::Closed(what) => json!({"kind": "closed", "message": message, "what": what}),
        Error::NotFound(_) => json!({"kind": "not_found", "message": message}),
        Error::TooManyJobs(running) => {
            json!({"kind": "too_many_jobs", "message": message, "running": running})
        }
        Error::NoInput(_) => json!({"kind": "no_input", "message": message}),
        Error::SandboxUnavailable(what) => {
            json!({"kind": "sandbox_unavailable", "message": message, "what": what})
        }
    }
}

/// The error `value` serializes, if it is one of the core's kinds.
pub fn error_from_wire(value: &Map<String, Value>) -> Option<Error> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
    let message = text("message").to_string();
    Some(match text("kind") {
        "invalid_argument" => Error::InvalidArgument(message),
        "io" => {
            let source = match value.get("errno").and_then(Value::as_i64) {
                Some(errno) => io::Error::from_raw_os_error(errno as i32),
                None => io::Error::other(text("detail").to_string()),
            };
            Error::io(text("context"), source)
        }
        "spawn" => Error::Spawn(message),
        "closed" => Error::Closed(closed_name(text("what"))),
        "not_found" => Error::NotFound(message),
        "too_many_jobs" => {
            Error::TooManyJobs(value.get("running").and_then(Value::as_u64).unwrap_or(0) as usize)
        }
        "no_input" => Error::NoInput(message),
        "sandbox_unavailable" => Error::SandboxUnavailable(text("what").to_string()),
        _ => return None,
    })
}

/// The name of a closed handle, as the core spells it.
fn closed_name(what: &str) -> &'static str {
    match what {
        "session" => "session",
        "bash tool" => "bash tool",
        _ => "shell",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_as_itself() {
        let errors = [
            Error::InvalidArgument("cwd does not exist: /x".into()),
            Error::io("reading the artifact", io::Error::from_raw_os_error(2)),
            Error::io("the pipe", io::Error::other("no errno")),
            Error::Spawn("cannot start bash".into()),
            Error::Closed("shell"),
            Error::Closed("session"),
            Error::NotFound("no job 7 in this session".into()),
            Error::TooManyJobs(16),
            Error::NoInput("job 2 takes no input".into()),
            Error::SandboxUnavailable("Landlock ABI 4".into()),
        ];
        for err in errors {
            let wire = error_to_wire(&err);
            let back = error_from_wire(wire.as_object().unwrap()).unwrap();
            assert_eq!(back.to_string(), err.to_string());
            assert_eq!(error_to_wire(&back), wire);
        }
        assert!(error_from_wire(json!({"kind": "other"}).as_object().unwrap()).is_none());
    }
}
