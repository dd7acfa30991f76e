//! The tools' definitions: `tests/vectors/tool_definition.json` replayed
//! through `BashTool::definition` and `JobTool::definition`, and the schema
//! held to what the tools accept: every argument object of the vectors
//! (`tool.json`, `job_tool.json`) and a list of wrong ones, checked by a
//! JSON Schema validator and by the tools' own argument parsing, must be
//! accepted by both or refused by both.

use std::time::Duration;

use conch_core::command::intercept::Rule;
use conch_core::tool::{BashTool, BashToolArgs, BashToolConfig, JobTool, JobToolArgs};
use serde_json::{Value, json};

fn vectors(name: &str) -> Vec<Value> {
    let path = format!(
        "{}/../tests/vectors/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// A tool made from a vector's `config`; no command runs, so it needs no
/// session of its own.
fn tool(config: &Value) -> BashTool {
    let mut c = BashToolConfig::new(std::env::temp_dir());
    for (key, value) in config.as_object().unwrap() {
        match key.as_str() {
            "interceptor" => c.interceptor = value.as_bool().unwrap(),
            "tool_names" => c.tool_names = serde_json::from_value(value.clone()).unwrap(),
            "rules" => {
                c.rules = serde_json::from_value::<Option<Vec<Rule>>>(value.clone()).unwrap()
            }
            "name" => c.name = value.as_str().unwrap().into(),
            "job_tool_name" => c.job_tool_name = value.as_str().unwrap().into(),
            "virtual_terminal" => c.virtual_terminal = value.as_bool().unwrap(),
            "auto_background_after_ms" => {
                c.auto_background_after = Some(Duration::from_millis(value.as_u64().unwrap()))
            }
            other => panic!("unknown config key {other}"),
        }
    }
    BashTool::new(c).unwrap()
}

/// What the vectors' `{system}` stands for, read here as a user would:
/// `bash` on `PATH` and `uname`.
fn system_sentence() -> String {
    let out = |program: &str, args: &[&str]| {
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let version = out(
        "bash",
        &[
            "-c",
            r#"printf %s "${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}""#,
        ],
    );
    let os = match out("uname", &["-s"]).as_str() {
        "Darwin" => "macOS".to_string(),
        other => other.to_string(),
    };
    format!(
        "The shell is bash {version} on {os} {} ({}).",
        out("uname", &["-r"]),
        out("uname", &["-m"])
    )
}

#[test]
fn definition_vectors() {
    let system = Value::String(system_sentence());
    let cases: Vec<Value> = vectors("tool_definition")
        .into_iter()
        .map(|case| {
            let text = case.to_string();
            let system = system.to_string();
            serde_json::from_str(&text.replace("{system}", &system[1..system.len() - 1])).unwrap()
        })
        .collect();
    assert!(!cases.is_empty());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let bash = tool(&case["config"]);
        let job = JobTool::new(&bash);
        let got = json!({
            "bash": serde_json::to_value(bash.definition()).unwrap(),
            "job": serde_json::to_value(job.definition()).unwrap(),
        });
        assert_eq!(got, case["expect"], "{name}");
    }
}

/// Whether the validator accepts `args` under `schema`.
fn valid(schema: &Value, args: &Value) -> bool {
    jsonschema::draft202012::new(schema)
        .expect("the schema compiles")
        .is_valid(args)
}

/// The argument objects of the vectors, per tool.
fn vector_args() -> (Vec<Value>, Vec<Value>) {
    let mut bash: Vec<Value> = vectors("tool")
        .into_iter()
        .map(|c| c["args"].clone())
        .collect();
    let mut job = Vec::new();
    for case in vectors("job_tool") {
        for step in case["steps"].as_array().unwrap() {
            match step["tool"].as_str().unwrap() {
                "bash" => bash.push(step["args"].clone()),
                "job" => job.push(step["args"].clone()),
                other => panic!("unknown tool {other}"),
            }
        }
    }
    (bash, job)
}

#[test]
fn the_schema_accepts_exactly_what_the_tools_parse() {
    let bash_tool = tool(&json!({}));
    let job_tool = JobTool::new(&bash_tool);
    let bash_schema = bash_tool.definition().input_schema;
    let job_schema = job_tool.definition().input_schema;
    let (mut bash, mut job) = vector_args();
    assert!(
        bash.len() > 10 && job.len() > 10,
        "the vectors hold the args"
    );
    bash.extend([
        json!({"command": "ls", "head": 2.0, "tail": 0, "timeout": -3, "async": false}),
        json!({"command": "ls", "unknown": 1}),
        json!({"command": "ls", "timeout": 1e300, "head": 1e18}),
        json!({}),
        json!([]),
        json!("ls"),
        json!({"command": ["ls"]}),
        json!({"command": "ls", "cwd": 1}),
        json!({"command": "ls", "timeout": "5"}),
        json!({"command": "ls", "head": -1}),
        json!({"command": "ls", "tail": 0.5}),
        json!({"command": "ls", "head": "3"}),
        json!({"command": "ls", "async": "true"}),
        json!({"command": "ls", "async": 1}),
    ]);
    job.extend([
        json!({"op": "list", "other": true}),
        json!({"op": "poll", "job": 4294967295u64, "wait": 1e9}),
        json!({"op": "poll", "job": 4294967296u64}),
        json!({"op": "poll", "job": -1}),
        json!({"op": "poll", "job": 1.5}),
        json!({"op": "stop"}),
        json!({"op": 1}),
        json!({"job": 1}),
        json!({"op": "write", "job": 1, "input": 5}),
        json!({"op": "poll", "job": 1, "wait": "5"}),
        json!({"op": "poll", "job": 1, "until": ["x"]}),
        json!(null),
    ]);
    let (mut accepted, mut refused) = (0, 0);
    for args in &bash {
        let parsed = BashToolArgs::from_json(args);
        assert_eq!(
            valid(&bash_schema, args),
            parsed.is_ok(),
            "bash {args}: {parsed:?}"
        );
        if parsed.is_ok() {
            accepted += 1
        } else {
            refused += 1
        }
    }
    for args in &job {
        let parsed = JobToolArgs::from_json(args);
        assert_eq!(
            valid(&job_schema, args),
            parsed.is_ok(),
            "job {args}: {parsed:?}"
        );
        if parsed.is_ok() {
            accepted += 1
        } else {
            refused += 1
        }
    }
    assert!(
        accepted > 20 && refused > 20,
        "{accepted} accepted, {refused} refused"
    );
}

/// The one leniency the schema does not advertise (some LLM APIs refuse
/// nullable types): the tools take `null` as a key left out.
#[test]
fn null_is_a_key_left_out_though_the_schema_says_nothing_of_it() {
    let bash_tool = tool(&json!({}));
    let schema = bash_tool.definition().input_schema;
    let args = json!({"command": "ls", "cwd": null, "timeout": null, "head": null, "async": null});
    assert!(!valid(&schema, &args));
    assert_eq!(
        BashToolArgs::from_json(&args).unwrap(),
        BashToolArgs::new("ls")
    );
    let job_schema = JobTool::new(&bash_tool).definition().input_schema;
    let args = json!({"op": "list", "job": null});
    assert!(!valid(&job_schema, &args));
    assert!(JobToolArgs::from_json(&args).is_ok());
}
