//! Replays `tests/vectors/job_tool.json`: a scripted model calling `bash`
//! (with `async`, or past `auto_background_after`) and `job`, every text
//! exact (`{secs}` stands for a whole number of seconds), as the Python
//! and Node suites do through their faces.

use std::time::Duration;

use conch_core::Snapshot;
use conch_core::tool::{BashTool, BashToolArgs, BashToolConfig, JobTool, JobToolArgs, ToolContext};
use regex::Regex;
use serde_json::Value;

#[test]
fn job_tool_vectors() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/vectors/job_tool.json"
    );
    let cases: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for (n, case) in cases.as_array().unwrap().iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        let mut config = BashToolConfig::new(std::env::temp_dir());
        config.snapshot = Snapshot::None;
        config.session_key = Some(format!("job-tool-vectors-{}-{n}", std::process::id()));
        config.auto_background_after = case["config"]["auto_background_after_ms"]
            .as_u64()
            .map(Duration::from_millis);
        let bash = BashTool::new(config).unwrap();
        let job = JobTool::new(&bash);
        for (i, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = format!("{name}: step {i}");
            let args = step["args"].clone();
            let outcome = match step["tool"].as_str().unwrap() {
                "bash" => bash.execute(
                    serde_json::from_value::<BashToolArgs>(args).unwrap(),
                    ToolContext::default(),
                ),
                "job" => job.execute(serde_json::from_value::<JobToolArgs>(args).unwrap(), None),
                tool => panic!("{at}: unknown tool {tool}"),
            };
            let (kind, text) = match outcome {
                Ok(r) => ("ok", r.text),
                Err(e) => ("failed", e.to_string()),
            };
            let expect = &step["expect"];
            assert_eq!(kind, expect["kind"].as_str().unwrap(), "{at}: {text}");
            if let Some(want) = expect["text"].as_str() {
                assert!(text_matches(want, &text), "{at}:\n{text}\n---\n{want}");
            }
            if let Some(want) = expect["text_starts_with"].as_str() {
                assert!(text.starts_with(want), "{at}:\n{text}");
            }
        }
        bash.close();
    }
}

/// `text` is `want` with each `{secs}` a whole number.
fn text_matches(want: &str, text: &str) -> bool {
    let pattern = want
        .split("{secs}")
        .map(regex::escape)
        .collect::<Vec<_>>()
        .join(r"\d+");
    Regex::new(&format!("^{pattern}$")).unwrap().is_match(text)
}
