//! What the model reads when it starts an editor through the `bash` tool,
//! which has no terminal (docs/behaviour.md, section 9, "Programs that
//! need a terminal"): a failure that starts with the notice, in the
//! foreground and as an `async` job.

use std::path::PathBuf;

use conch_core::Snapshot;
use conch_core::tool::{
    BashToolArgs, BashToolConfig, JobTool, JobToolArgs, ToolContext, ToolError,
};

use crate::Fixture;

const NOTICE: &str = "[vi needs a terminal: stopped. Edit files with the edit tool, or start it \
as a job with a PTY]";

fn tool(name: &str) -> (Fixture, PathBuf) {
    let dir = std::env::temp_dir().join(format!("conch-tool-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "hello\n").unwrap();
    let mut config = BashToolConfig::new(&dir);
    config.snapshot = Snapshot::None;
    config.session_key = Some(format!("tool-test-{name}"));
    (Fixture::new(config), dir)
}

#[test]
fn an_editor_fails_with_the_notice_and_the_next_command_runs() {
    let (t, _dir) = tool("no-terminal");
    let outcome = t.execute(BashToolArgs::new("vi notes.txt"), ToolContext::default());
    match outcome {
        Err(ToolError::Failed { message, .. }) => {
            assert!(message.starts_with(&format!("{NOTICE}\n")), "{message}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    let next = t
        .execute(BashToolArgs::new("cat notes.txt"), ToolContext::default())
        .unwrap();
    assert_eq!(next.text, "hello");
}

#[test]
fn an_editor_as_a_job_is_killed_and_its_poll_ends_with_the_notice() {
    let (t, _dir) = tool("no-terminal-job");
    let args = BashToolArgs {
        run_async: true,
        ..BashToolArgs::new("vi notes.txt")
    };
    let started = t.execute(args, ToolContext::default()).unwrap();
    assert!(
        started.text.starts_with("Started job 1: vi notes.txt"),
        "{}",
        started.text
    );
    let jobs = JobTool::new(&t);
    let poll = JobToolArgs {
        op: "poll".into(),
        job: Some(1),
        wait: Some(60.0),
        ..JobToolArgs::default()
    };
    let text = match jobs.execute(poll, None) {
        Ok(r) => r.text,
        Err(e) => e.to_string(),
    };
    assert!(
        text.starts_with("Job 1 (vi notes.txt): killed after "),
        "{text}"
    );
    assert!(text.trim_end().ends_with(NOTICE), "{text}");
}
