//! Replays `tests/vectors/job_steps.json`: jobs started, written to, keyed,
//! signalled, killed and waited for, and runs moved to the background, step
//! by step (every face replays it alike).

use std::time::Duration;

use conch_core::shell::{RunOptions, Shell, ShellOptions, Snapshot};
use conch_core::{Error, JobId, JobOptions, PollOptions};
use serde_json::Value;

#[test]
fn shared_vectors() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/vectors/job_steps.json"
    );
    let cases: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let sh = Shell::new(ShellOptions {
            snapshot: Snapshot::None,
            max_jobs: case["shell"]["max_jobs"]
                .as_u64()
                .map_or(ShellOptions::default().max_jobs, |n| n as usize),
            ..ShellOptions::default()
        })
        .unwrap();
        let mut last: JobId = 0;
        for (i, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = format!("{name}: step {i}");
            let job = step["job"].as_u64().map_or(last, |j| j as JobId);
            let got = play(&sh, step, job, &mut last);
            match (step["error"].as_str(), got) {
                (Some(kind), Err(e)) => assert_eq!(error_kind(&e), kind, "{at}: {e}"),
                (Some(kind), Ok(v)) => panic!("{at}: expected {kind}, got {v}"),
                (None, Err(e)) => panic!("{at}: {e}"),
                (None, Ok(got)) => {
                    if let Some(want) = step.get("expect") {
                        expect(&got, want, &at);
                    }
                }
            }
        }
    }
}

/// Runs one step; its result as JSON (snake_case, as the core serializes).
fn play(sh: &Shell, step: &Value, job: JobId, last: &mut JobId) -> conch_core::Result<Value> {
    let o = &step["options"];
    let ms = |v: &Value| Duration::from_millis(v.as_u64().unwrap_or(0));
    let text = |key: &str| step[key].as_str().unwrap_or_default().to_string();
    Ok(match step["op"].as_str().unwrap() {
        "run" => {
            let r = sh.run(
                RunOptions {
                    yield_after: o["yield_after_ms"].as_u64().map(Duration::from_millis),
                    ..RunOptions::new(text("command"))
                },
                |_| {},
            )?;
            if let Some(id) = r.backgrounded {
                *last = id;
            }
            serde_json::to_value(r).unwrap()
        }
        "start" => {
            let id = sh.start(JobOptions {
                cwd: o["cwd"].as_str().map(Into::into),
                env: o["env"].as_object().map_or_else(Vec::new, |env| {
                    env.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                        .collect()
                }),
                timeout: o["timeout_ms"].as_u64().map(Duration::from_millis),
                stdin: o["stdin"].as_bool().unwrap_or(false),
                pty: o["pty"].as_array().map(|size| {
                    (
                        size[0].as_u64().unwrap() as u16,
                        size[1].as_u64().unwrap() as u16,
                    )
                }),
                ..JobOptions::new(text("command"))
            })?;
            *last = id;
            Value::from(id)
        }
        "poll" => {
            let until = match o["until"].as_str() {
                Some(pattern) => Some(conch_core::input::until_option("until", pattern)?),
                None => None,
            };
            let opts = PollOptions {
                wait: ms(&o["wait_ms"]),
                until,
                max_bytes: o["max_bytes"].as_u64().map(|n| n as usize),
                cursor: o["cursor"].as_u64(),
            };
            serde_json::to_value(sh.poll(job, &opts, None)?).unwrap()
        }
        "write" => {
            sh.write(job, text("data").as_bytes())?;
            Value::Null
        }
        "close_stdin" => {
            sh.close_stdin(job)?;
            Value::Null
        }
        "key" => {
            sh.write_key(job, &text("key"))?;
            Value::Null
        }
        "signal" => {
            sh.signal(job, &text("signal"))?;
            Value::Null
        }
        "kill" => serde_json::to_value(sh.kill(job)?).unwrap(),
        "jobs" => serde_json::to_value(sh.jobs()).unwrap(),
        "wait_any" => {
            let jobs: Vec<JobId> = step["jobs"].as_array().map_or_else(
                || vec![*last],
                |ids| ids.iter().map(|j| j.as_u64().unwrap() as JobId).collect(),
            );
            serde_json::to_value(sh.wait_any(&jobs, ms(&step["timeout_ms"]), None)?).unwrap()
        }
        op => panic!("unknown op {op}"),
    })
}

/// Compares the fields `want` gives (snake_case) with `got`: objects field
/// by field, a list element by element (same length), anything else whole.
fn expect(got: &Value, want: &Value, at: &str) {
    match want {
        Value::Object(fields) => {
            for (key, want) in fields {
                assert_eq!(&got[key], want, "{at}: {key} of {got}");
            }
        }
        Value::Array(items) => {
            let got = got.as_array().unwrap();
            assert_eq!(got.len(), items.len(), "{at}: {got:?}");
            for (got, want) in got.iter().zip(items) {
                expect(got, want, at);
            }
        }
        want => assert_eq!(got, want, "{at}"),
    }
}

/// The error's kind as the vectors name it.
fn error_kind(error: &Error) -> &'static str {
    match error {
        Error::InvalidArgument(_) => "invalid_argument",
        Error::NotFound(_) => "not_found",
        Error::Io { .. } => "io",
        Error::Spawn(_) => "spawn",
        Error::Closed(_) => "closed",
        Error::TooManyJobs(_) => "too_many_jobs",
        Error::NoInput(_) => "no_input",
        Error::SandboxUnavailable(_) => "sandbox_unavailable",
    }
}
