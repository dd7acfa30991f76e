//! Replays `tests/vectors/tool.json` through `BashTool`, as the C, Python
//! and Node suites do through their faces.
//!
//! Each case: `name`; `config` (optional) with `interceptor`, `tool_names`,
//! `rules` and `artifacts` (true: a fresh, empty artifacts directory, so the
//! first artifact is `artifact://0`); `args`, the model's arguments
//! (`command`, `cwd`, `timeout`, `head`, `tail`); `expect` with `kind`
//! (`ok`, `failed`, `aborted`, `blocked`), the text as `text` or as
//! `text_starts_with`/`text_ends_with`, `truncated` (whether the result
//! carries truncation metadata) and `suggested_tool` for blocked commands.
//! `{cwd}` in a text stands for the tool's cwd, a fresh directory given
//! by its canonical path.

use std::path::PathBuf;

use conch_core::Snapshot;
use conch_core::command::intercept::Rule;
use conch_core::tool::{BashTool, BashToolArgs, BashToolConfig, ToolContext, ToolError};
use serde_json::{Value, json};

fn cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/tool.json");
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn fresh_dir(n: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("conch-tool-vectors-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// What a case produced, in the vector's terms.
fn outcome(case: &Value, n: usize) -> (Value, String, PathBuf) {
    let dir = fresh_dir(n);
    let config = &case["config"];
    let mut c = BashToolConfig::new(&dir);
    c.snapshot = Snapshot::None;
    c.session_key = Some(format!("tool-vectors-{n}"));
    c.interceptor = config["interceptor"].as_bool().unwrap_or(false);
    c.tool_names = serde_json::from_value(config["tool_names"].clone()).unwrap_or_default();
    c.rules = serde_json::from_value::<Option<Vec<Rule>>>(config["rules"].clone()).unwrap();
    if config["artifacts"].as_bool().unwrap_or(false) {
        c.artifacts_dir = Some(dir.join("artifacts"));
    }
    let tool = BashTool::new(c).unwrap();
    let args: BashToolArgs = serde_json::from_value(case["args"].clone()).unwrap();
    let result = tool.execute(args, ToolContext::default());
    tool.close();
    let (kind, text, truncated, suggested) = match result {
        Ok(r) => ("ok", r.text, r.details.is_some(), None),
        Err(ToolError::Blocked {
            message,
            suggested_tool,
        }) => ("blocked", message, false, Some(suggested_tool)),
        Err(e @ ToolError::Failed { .. }) => ("failed", e.to_string(), e.details().is_some(), None),
        Err(e @ ToolError::Aborted { .. }) => {
            ("aborted", e.to_string(), e.details().is_some(), None)
        }
        Err(e @ ToolError::Closed { .. }) => ("closed", e.to_string(), false, None),
    };
    let mut got = json!({"kind": kind, "truncated": truncated});
    if let Some(tool) = suggested {
        got["suggested_tool"] = tool.into();
        got.as_object_mut().unwrap().remove("truncated");
    }
    (got, text, dir)
}

#[test]
fn tool_vectors() {
    let mut failures = Vec::new();
    for (n, case) in cases().iter().enumerate() {
        let (got, text, dir) = outcome(case, n);
        let cwd = dir.display().to_string();
        let expect = &case["expect"];
        let placeholder = |key: &str| expect[key].as_str().map(|t| t.replace("{cwd}", &cwd));
        let mut wrong = Vec::new();
        for key in ["kind", "truncated", "suggested_tool"] {
            if !expect[key].is_null() && expect[key] != got[key] {
                wrong.push(format!("{key}: expected {}, got {}", expect[key], got[key]));
            }
        }
        if let Some(want) = placeholder("text")
            && want != text
        {
            wrong.push(format!("text: expected {want:?}, got {text:?}"));
        }
        if let Some(want) = placeholder("text_starts_with")
            && !text.starts_with(&want)
        {
            wrong.push(format!(
                "text: expected to start with {want:?}, got {:?}",
                head(&text)
            ));
        }
        if let Some(want) = placeholder("text_ends_with")
            && !text.ends_with(&want)
        {
            wrong.push(format!(
                "text: expected to end with {want:?}, got {:?}",
                tail(&text)
            ));
        }
        if !wrong.is_empty() {
            failures.push(format!("{}:\n  {}", case["name"], wrong.join("\n  ")));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The first 200 characters.
fn head(text: &str) -> String {
    text.chars().take(200).collect()
}

/// The last 200 characters.
fn tail(text: &str) -> String {
    let skip = text.chars().count().saturating_sub(200);
    text.chars().skip(skip).collect()
}
