//! Replays the shared vectors of the command, notice and render helpers
//! (`tests/vectors/{normalize,intercept,notice,render}.json`), which the C,
//! Python and Node suites replay too. Each case names the function (`fn`)
//! when a file covers several; every failing case is listed, not just the first.

use conch_core::command::intercept::{Interceptor, Rule};
use conch_core::command::{apply_head_tail, normalize_bash_command};
use conch_core::output::notice::{Truncation, format_size};
use conch_core::tool::render::{
    bang_preview, clamp_line, format_output_notice, tool_preview, truncation_warning,
};
use conch_core::wire::{camel_case, from_camel_case};
use serde_json::{Value, json};

fn load(name: &str) -> Vec<Value> {
    let path = format!(
        "{}/../tests/vectors/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let cases: Vec<Value> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(!cases.is_empty(), "{path} has no cases");
    cases
}

/// Runs `check` on every case; fails listing each case whose actual value
/// differs from its `expect`.
fn replay(name: &str, check: impl Fn(&Value) -> Value) {
    let mut failures = Vec::new();
    for case in load(name) {
        let actual = check(&case);
        if actual != case["expect"] {
            failures.push(format!(
                "{name}: {}\n  expected: {}\n  actual:   {actual}",
                case["name"], case["expect"]
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

fn usize_opt(v: &Value) -> Option<usize> {
    v.as_u64().map(|n| n as usize)
}

fn str_of<'a>(case: &'a Value, key: &str) -> &'a str {
    case[key]
        .as_str()
        .unwrap_or_else(|| panic!("{}: `{key}` is not a string", case["name"]))
}

fn u64_of(case: &Value, key: &str) -> u64 {
    case[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{}: `{key}` is not a count", case["name"]))
}

fn usize_of(case: &Value, key: &str) -> usize {
    u64_of(case, key) as usize
}

/// The vectors give truncation metadata as the JSON faces hand it out
/// (camelCase).
fn truncation_of(case: &Value) -> Truncation {
    serde_json::from_value(from_camel_case(case["truncation"].clone())).expect("truncation")
}

#[test]
fn normalize_vectors() {
    replay("normalize", |case| match str_of(case, "fn") {
        "normalize" => {
            let n = normalize_bash_command(str_of(case, "command"));
            json!({"command": n.command, "head_lines": n.head_lines, "tail_lines": n.tail_lines})
        }
        "apply_head_tail" => json!(apply_head_tail(
            str_of(case, "text"),
            usize_opt(&case["head"]),
            usize_opt(&case["tail"]),
        )),
        other => panic!("unknown fn {other}"),
    });
}

#[test]
fn intercept_vectors() {
    replay("intercept", |case| {
        let tool_names: Vec<&str> = case["tool_names"]
            .as_array()
            .expect("tool_names")
            .iter()
            .map(|t| t.as_str().expect("tool name"))
            .collect();
        let command = str_of(case, "command");
        let hit = if case["rules"].is_null() {
            Interceptor::defaults().check(command, &tool_names)
        } else {
            let rules: Vec<Rule> = serde_json::from_value(case["rules"].clone()).expect("rules");
            let (interceptor, errors) = Interceptor::new(&rules);
            let indexes: Vec<usize> = errors.iter().map(|e| e.index).collect();
            let expected: Vec<usize> =
                serde_json::from_value(case["rule_errors"].clone()).expect("rule_errors");
            assert_eq!(indexes, expected, "{}: rule errors", case["name"]);
            interceptor.check(command, &tool_names)
        };
        match hit {
            Some(i) => {
                assert!(i.blocked);
                json!({"message": i.message, "suggested_tool": i.suggested_tool})
            }
            None => Value::Null,
        }
    });
}

#[test]
fn notice_vectors() {
    replay("notice", |case| match str_of(case, "fn") {
        "format_size" => json!(format_size(u64_of(case, "bytes"))),
        "format_output_notice" => json!(format_output_notice(&truncation_of(case))),
        "from_counts" => {
            let c = &case["counts"];
            let truncation = Truncation::from_counts(
                c["truncated"].as_bool().expect("truncated"),
                u64_of(c, "totalLines"),
                u64_of(c, "totalBytes"),
                u64_of(c, "outputLines"),
                u64_of(c, "outputBytes"),
                c["artifactId"].as_str().map(str::to_owned),
                usize_opt(&c["maxBytes"]),
            );
            let notice = truncation.as_ref().map(format_output_notice);
            assert_eq!(json!(notice), case["notice"], "{}: notice", case["name"]);
            camel_case(json!(truncation))
        }
        other => panic!("unknown fn {other}"),
    });
}

#[test]
fn render_vectors() {
    replay("render", |case| match str_of(case, "fn") {
        "tool_preview" => json!(tool_preview(
            str_of(case, "text"),
            usize_of(case, "width"),
            usize_of(case, "max_visual_lines"),
        )),
        "bang_preview" => json!(bang_preview(str_of(case, "text"))),
        "clamp_line" => json!(clamp_line(
            str_of(case, "line"),
            usize_of(case, "max_width")
        )),
        "truncation_warning" => json!(truncation_warning(&truncation_of(case))),
        other => panic!("unknown fn {other}"),
    });
}

/// The vectors' notice strings follow the exact shape the model reads.
#[test]
fn truncation_round_trips_through_json() {
    for case in load("notice") {
        if case["fn"] == "format_output_notice" {
            let t = truncation_of(&case);
            assert_eq!(camel_case(json!(t)), case["truncation"], "{}", case["name"]);
        }
    }
}
