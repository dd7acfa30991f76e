//! The model's arguments as JSON, read the one way every JSON face (C, the
//! CLI's MCP server) reads them, so they accept exactly what the tools'
//! definitions ([`super::definition`]) tell the model to send.
//!
//! The rules, for both tools: the arguments are a JSON object; keys the
//! tool does not know are ignored (as the Python and Node faces ignore
//! them); `null` is the same as leaving the key out (models send it for
//! "not given"); a count (`head`, `tail`, `job`) is a whole number >= 0,
//! `5.0` included, as JSON Schema's `integer` is; a number of seconds is
//! any number (the tool clamps it). A value of the wrong kind is refused
//! with a text that names the key and what it takes, which the model reads
//! as the call's failure.

use serde_json::{Map, Value};

use super::bash_tool::BashToolArgs;
use super::job_tool::{JOB_OPS, JobToolArgs, unknown_op};
use super::result::ToolError;
use crate::input::count_option;
use crate::jobs::JobId;

impl BashToolArgs {
    /// Reads the model's `bash` arguments from JSON (see the module docs).
    pub fn from_json(args: &Value) -> Result<BashToolArgs, ToolError> {
        let args = Args::of(args)?;
        Ok(BashToolArgs {
            command: args
                .text("command")?
                .ok_or_else(|| refused("command is required: the bash command to run"))?,
            cwd: args.text("cwd")?,
            timeout: args.number("timeout")?,
            head: args.count("head")?,
            tail: args.count("tail")?,
            run_async: args.flag("async")?.unwrap_or(false),
        })
    }
}

impl JobToolArgs {
    /// Reads the model's `job` arguments from JSON (see the module docs).
    /// An `op` that is not one of the four is refused here, with the text
    /// `execute` gives for it.
    pub fn from_json(args: &Value) -> Result<JobToolArgs, ToolError> {
        let args = Args::of(args)?;
        let op = args
            .text("op")?
            .ok_or_else(|| refused("op is required: one of poll, write, kill or list"))?;
        if !JOB_OPS.contains(&op.as_str()) {
            return Err(refused(unknown_op(&op)));
        }
        let job = match args.count("job")? {
            Some(n) => Some(JobId::try_from(n).map_err(|_| {
                refused(format!(
                    "job must be a job number (at most {}), got {n}",
                    JobId::MAX
                ))
            })?),
            None => None,
        };
        Ok(JobToolArgs {
            op,
            job,
            input: args.text("input")?,
            wait: args.number("wait")?,
            until: args.text("until")?,
        })
    }
}

/// The model's arguments object, read key by key.
struct Args<'a>(&'a Map<String, Value>);

impl<'a> Args<'a> {
    fn of(value: &'a Value) -> Result<Args<'a>, ToolError> {
        match value {
            Value::Object(map) => Ok(Args(map)),
            other => Err(refused(format!(
                "the arguments must be a JSON object, got {}",
                shown(other)
            ))),
        }
    }

    /// The value of `key`, `None` when absent or null.
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.get(key).filter(|v| !v.is_null())
    }

    fn text(&self, key: &str) -> Result<Option<String>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(wrong(key, "a string", other)),
        }
    }

    fn number(&self, key: &str) -> Result<Option<f64>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(wrong(key, "a number of seconds", other)),
        }
    }

    fn count(&self, key: &str) -> Result<Option<usize>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => {
                // An integer is read as one (beyond f64's exact range too).
                let counted = match n.as_i64() {
                    Some(whole) => count_option(key, whole),
                    None => count_option(key, n.as_f64().unwrap_or(f64::NAN)),
                };
                counted.map(Some).map_err(|e| refused(e.to_string()))
            }
            Some(other) => Err(wrong(key, "a whole number >= 0", other)),
        }
    }

    fn flag(&self, key: &str) -> Result<Option<bool>, ToolError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(wrong(key, "true or false", other)),
        }
    }
}

/// `<key> must be <what>, got <value>`, the core's wording for a bad value.
fn wrong(key: &str, what: &str, value: &Value) -> ToolError {
    refused(format!("{key} must be {what}, got {}", shown(value)))
}

fn shown(value: &Value) -> String {
    value.to_string()
}

fn refused(message: impl Into<String>) -> ToolError {
    ToolError::failed(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bash(v: Value) -> Result<BashToolArgs, String> {
        BashToolArgs::from_json(&v).map_err(|e| e.message().to_string())
    }

    fn job(v: Value) -> Result<JobToolArgs, String> {
        JobToolArgs::from_json(&v).map_err(|e| e.message().to_string())
    }

    #[test]
    fn bash_arguments_as_the_model_sends_them() {
        let args = bash(
            json!({"command": "ls", "cwd": "src", "timeout": 5, "head": 3.0,
                               "tail": 2, "async": true, "extra": [1]}),
        )
        .unwrap();
        assert_eq!(
            args,
            BashToolArgs {
                command: "ls".into(),
                cwd: Some("src".into()),
                timeout: Some(5.0),
                head: Some(3),
                tail: Some(2),
                run_async: true,
            }
        );
        assert_eq!(
            bash(json!({"command": "ls", "cwd": null, "head": null})).unwrap(),
            BashToolArgs::new("ls")
        );
    }

    #[test]
    fn bash_refusals_name_the_key() {
        let cases = [
            (json!([]), "the arguments must be a JSON object, got []"),
            (json!({}), "command is required: the bash command to run"),
            (json!({"command": 1}), "command must be a string, got 1"),
            (
                json!({"command": "x", "timeout": "5"}),
                "timeout must be a number of seconds, got \"5\"",
            ),
            (
                json!({"command": "x", "head": -1}),
                "head must be a whole number >= 0, got -1",
            ),
            (
                json!({"command": "x", "tail": 1.5}),
                "tail must be a whole number >= 0, got 1.5",
            ),
            (
                json!({"command": "x", "async": "yes"}),
                "async must be true or false, got \"yes\"",
            ),
        ];
        for (args, message) in cases {
            assert_eq!(bash(args.clone()).unwrap_err(), message, "{args}");
        }
    }

    #[test]
    fn job_arguments_and_refusals() {
        assert_eq!(
            job(json!({"op": "write", "job": 2, "input": "y\n", "wait": 0.5, "until": "ok"}))
                .unwrap(),
            JobToolArgs {
                op: "write".into(),
                job: Some(2),
                input: Some("y\n".into()),
                wait: Some(0.5),
                until: Some("ok".into()),
            }
        );
        let cases = [
            (
                json!({}),
                "op is required: one of poll, write, kill or list",
            ),
            (
                json!({"op": "stop"}),
                "Unknown op \"stop\": use poll, write, kill or list",
            ),
            (
                json!({"op": "poll", "job": "1"}),
                "job must be a whole number >= 0, got \"1\"",
            ),
            (
                json!({"op": "poll", "job": 4294967296u64}),
                "job must be a job number (at most 4294967295), got 4294967296",
            ),
        ];
        for (args, message) in cases {
            assert_eq!(job(args.clone()).unwrap_err(), message, "{args}");
        }
    }
}
