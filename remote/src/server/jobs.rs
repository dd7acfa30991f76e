//! A session's job requests: each is the local `Shell`'s job call of the
//! same name (docs/remote.md lists them), its options and results the
//! core's serialized form. A poll or a wait is cancelled by an `abort`
//! naming it, as a run is.

use std::time::Duration;

use conch_core::defaults;
use conch_core::input::{TimeUnit, count_option, interval_option};
use conch_core::wire::Spelling;
use conch_core::{CancelToken, JobId, JobOptions, PollOptions, Shell};
use serde_json::{Value, json};

use super::ops::{options_object, read};
use crate::protocol::{ErrorKind, Refusal, Request};

/// The job requests, each named for the local job call it makes.
const JOB_OPS: &[&str] = &[
    "job_start",
    "jobs",
    "job_poll",
    "job_write",
    "job_close_stdin",
    "job_key",
    "job_signal",
    "job_kill",
    "job_wait_any",
];

/// Whether `op` is a job request.
pub(super) fn is_job_op(op: &str) -> bool {
    JOB_OPS.contains(&op)
}

/// Handles the job request; its reply's value.
pub(super) fn job_op(
    shell: &Shell,
    request: &Request,
    cancel: CancelToken,
) -> Result<Value, Refusal> {
    Ok(match request.op.as_str() {
        "job_start" => {
            let opts: JobOptions = read(options_object(request)?, Spelling::Wire)?;
            json!({"job": shell.start(opts)?})
        }
        "jobs" => value(&shell.jobs()),
        "job_poll" => {
            let opts: PollOptions = read(options_object(request)?, Spelling::Wire)?;
            value(&shell.poll(job(request)?, &opts, Some(&cancel))?)
        }
        "job_write" => {
            shell.write(job(request)?, text(request, "data")?.as_bytes())?;
            Value::Null
        }
        "job_close_stdin" => {
            shell.close_stdin(job(request)?)?;
            Value::Null
        }
        "job_key" => {
            shell.write_key(job(request)?, &text(request, "key")?)?;
            Value::Null
        }
        "job_signal" => {
            let signal = match request.field("signal") {
                Some(Value::Number(n)) => n.to_string(),
                _ => text(request, "signal")?,
            };
            shell.signal(job(request)?, &signal)?;
            Value::Null
        }
        "job_kill" => value(&shell.kill(job(request)?)?),
        "job_wait_any" => {
            let jobs = match request.field("jobs") {
                Some(Value::Array(items)) => items.iter().map(id).collect::<Result<Vec<_>, _>>()?,
                other => return Err(wrong("jobs", "a list of job ids", other)),
            };
            // As every face: a number of seconds >= 0 (0: look without
            // waiting), none: the longest timeout conch takes.
            let timeout = match request.field("timeout") {
                None => Duration::from_secs_f64(defaults::MAX_TIMEOUT_SECS),
                Some(Value::Number(n)) => {
                    let secs = n.as_f64().unwrap_or(f64::NAN);
                    interval_option("timeout", secs, TimeUnit::Seconds).map_err(bad)?
                }
                other => return Err(wrong("timeout", "a number of seconds", other)),
            };
            json!(shell.wait_any(&jobs, timeout, Some(&cancel))?)
        }
        op => unreachable!("{op} is no job request"),
    })
}

fn value<T: serde::Serialize>(result: &T) -> Value {
    serde_json::to_value(result).expect("a result serializes")
}

/// The request's `job`.
fn job(request: &Request) -> Result<JobId, Refusal> {
    match request.field("job") {
        Some(value) => id(value),
        None => Err(Refusal::new(
            ErrorKind::BadRequest,
            format!("{} needs a job", request.op),
        )),
    }
}

/// A job id as the core reads one: a whole number; past the ids a session
/// gives, the largest id, which the core refuses as any unknown job.
fn id(value: &Value) -> Result<JobId, Refusal> {
    let Some(n) = value.as_f64() else {
        return Err(wrong("job", "a job id (a whole number)", Some(value)));
    };
    let n = count_option("job", n).map_err(bad)?;
    Ok(JobId::try_from(n).unwrap_or(JobId::MAX))
}

/// The text field `name` of the request.
pub(super) fn text(request: &Request, name: &str) -> Result<String, Refusal> {
    match request.field(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        other => Err(wrong(name, "a string", other)),
    }
}

/// The refusal of field `name`, which must be `what` and is `got`.
pub(super) fn wrong(name: &str, what: &str, got: Option<&Value>) -> Refusal {
    let got = got.map_or("nothing".to_string(), Value::to_string);
    Refusal::new(
        ErrorKind::WrongType,
        format!("{name} must be {what}, got {got}"),
    )
}

pub(super) fn bad(err: conch_core::Error) -> Refusal {
    Refusal::new(ErrorKind::BadValue, err.to_string())
}
