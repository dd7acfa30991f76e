//! A tool session: the model's `bash` and `job` tools over the wire, with
//! the local tools' texts, errors and definitions.

use conch_core::CancelToken;
use conch_core::tool::{BashTool, BashToolConfig, JobTool, ToolContext, ToolError, ToolUpdate};
use conch_remote::RemoteError;
use conch_remote::protocol::ErrorKind;
use serde_json::{Value, json};

use super::{options, stdio, wait_sleeping};
use crate::common;

/// The local tool of the same options, to compare with.
fn local(config: Value) -> BashTool {
    let mut config: BashToolConfig = serde_json::from_value(config).unwrap();
    config.session_key = Some(format!("serve test {}", std::process::id()));
    BashTool::new(config).unwrap()
}

fn local_outcome(tool: &BashTool, args: Value) -> Result<conch_core::tool::ToolResult, ToolError> {
    let args = conch_core::tool::BashToolArgs::from_json(&args)?;
    tool.execute(args, ToolContext::default())
}

#[test]
fn a_call_streams_its_updates_and_returns_the_local_result() {
    let remote = stdio(&[]);
    let config = json!({"cwd": "/tmp", "snapshot": "none", "update_interval": 0});
    let tool = remote.tool(options(config.clone())).unwrap();
    let mut updates = Vec::new();
    let mut on_update = |u: ToolUpdate| updates.push(u.text);
    let args = json!({"command": "for i in 1 2 3; do echo $i; /bin/sleep 0.1; done; pwd"});
    let result = tool.execute(&args, Some(&mut on_update), None).unwrap();
    assert_eq!(result.text, "1\n2\n3\n/tmp");
    assert!(!updates.is_empty(), "live updates came");
    assert!(
        updates
            .iter()
            .all(|u| "1\n2\n3\n/tmp\n".starts_with(u.as_str())),
        "{updates:?}"
    );
    let local = local(config);
    for args in [
        args,
        json!({"command": "echo partial; (exit 3)"}),
        json!({"command": "seq 1 10 | tail -n 3"}),
        json!({"command": "pwd", "cwd": "does-not-exist"}),
        json!({"command": 7}),
        json!([]),
    ] {
        let remote = match tool.execute(&args, None, None) {
            Ok(result) => Ok(result),
            Err(RemoteError::Tool(err)) => Err(err),
            Err(other) => panic!("{args}: a tool's outcome, not {other:?}"),
        };
        assert_eq!(remote, local_outcome(&local, args.clone()), "{args}");
    }
    local.close();
    tool.close().unwrap();
}

#[test]
fn the_interceptor_blocks_as_locally() {
    let remote = stdio(&[]);
    let config = json!({"snapshot": "none", "interceptor": true, "tool_names": ["read"]});
    let tool = remote.tool(options(config.clone())).unwrap();
    let args = json!({"command": "cat notes.txt"});
    let Err(RemoteError::Tool(err)) = tool.execute(&args, None, None) else {
        panic!("blocked");
    };
    assert!(
        matches!(&err, ToolError::Blocked { suggested_tool, .. } if suggested_tool == "read"),
        "{err:?}"
    );
    assert_eq!(Err(err), local_outcome(&local(config), args));
}

#[test]
fn a_cancel_token_aborts_the_call_and_a_timeout_fails_it() {
    let remote = stdio(&[]);
    let tool = remote.tool(options(json!({"snapshot": "none"}))).unwrap();
    let token = CancelToken::new();
    let cancel = token.clone();
    let nap = common::unique_sleep(3072);
    let watched = nap.clone();
    std::thread::spawn(move || {
        wait_sleeping(&watched, true);
        cancel.cancel();
    });
    let args = json!({"command": format!("echo before; /bin/sleep {nap}")});
    match tool.execute(&args, None, Some(token)) {
        Err(RemoteError::Tool(ToolError::Aborted { message, .. })) => {
            assert!(message.contains("before"), "{message:?}")
        }
        other => panic!("aborted, as locally: {other:?}"),
    }
    wait_sleeping(&nap, false);
    let nap = common::unique_sleep(3072);
    let args = json!({"command": format!("/bin/sleep {nap}"), "timeout": 1});
    match tool.execute(&args, None, None) {
        Err(RemoteError::Tool(ToolError::Failed { message, .. })) => {
            assert_eq!(message, "[Command timed out after 1 seconds]")
        }
        other => panic!("timed out: {other:?}"),
    }
    wait_sleeping(&nap, false);
    // The session goes on.
    let result = tool.execute(&json!({"command": "echo after"}), None, None);
    assert_eq!(result.unwrap().text, "after");
}

#[test]
fn a_call_cancelled_before_it_is_sent_runs_nothing() {
    // The abort follows the request at once; the server cancels in the
    // order it reads them, whichever of their threads starts first. Many
    // times over, since a lost race runs a command in a millisecond.
    let remote = stdio(&[]);
    let tool = remote.tool(options(json!({"snapshot": "none"}))).unwrap();
    let marker = std::env::temp_dir().join(format!("conch-never-{}", std::process::id()));
    let args = json!({"command": format!("echo never >> {}", marker.display())});
    for i in 0..50 {
        let token = CancelToken::new();
        token.cancel();
        match tool.execute(&args, None, Some(token)) {
            Err(RemoteError::Tool(ToolError::Aborted { .. })) => {}
            other => panic!("call {i}: aborted, as locally: {other:?}"),
        }
    }
    assert!(!marker.exists(), "a cancelled call ran its command");
    let result = tool.execute(&json!({"command": "echo after"}), None, None);
    assert_eq!(result.unwrap().text, "after");
    // A shell's run alike.
    let sh = remote.shell(options(json!({"snapshot": "none"}))).unwrap();
    for i in 0..50 {
        let token = CancelToken::new();
        token.cancel();
        let mut opts = conch_core::RunOptions::new(format!("echo never >> {}", marker.display()));
        opts.cancel = Some(token);
        let r = sh.run(opts, |_| {}).unwrap();
        assert!(r.cancelled && r.exit_code.is_none(), "run {i}: {r:?}");
    }
    assert!(!marker.exists(), "a cancelled run ran its command");
}

#[test]
fn an_abort_of_the_session_aborts_its_call_and_other_kinds_requests_are_refused() {
    let mut server = Raw::start();
    let opened = server.ask(json!({"id": 1, "op": "open", "kind": "tool",
                                   "options": {"snapshot": "none"}}));
    let session = opened["ok"]["session"].clone();
    let refused = server.ask(json!({"id": 2, "op": "run", "session": session,
                                    "options": {"command": "true"}}));
    assert_eq!(
        refused["error"],
        json!({"kind": "bad_request",
               "message": "run is a request of a shell session, and this session is a tool"})
    );
    let nap = common::unique_sleep(3072);
    server.send(json!({"id": 3, "op": "tool_execute", "session": session,
                       "args": {"command": format!("/bin/sleep {nap}")}}));
    wait_sleeping(&nap, true);
    server.send(json!({"id": 4, "op": "abort", "session": session}));
    let aborted = server.reply(3);
    assert_eq!(aborted["error"]["kind"], "tool_error");
    assert_eq!(aborted["error"]["tool_error"]["kind"], "aborted");
    wait_sleeping(&nap, false);
}

/// `conch serve --stdio` spoken to frame by frame.
struct Raw {
    child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Raw {
    fn start() -> Raw {
        use std::process::{Command, Stdio};
        let mut child = Command::new(super::CONCH)
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
        Raw { child, lines }
    }

    fn send(&mut self, frame: Value) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{frame}").unwrap();
    }

    /// The reply to request `id` (events skipped).
    fn reply(&mut self, id: u64) -> Value {
        loop {
            let line = self.lines.next().expect("a reply").unwrap();
            let frame: Value = serde_json::from_str(&line).unwrap();
            if frame["id"] == json!(id) && frame.get("event").is_none() {
                return frame;
            }
        }
    }

    fn ask(&mut self, frame: Value) -> Value {
        let id = frame["id"].as_u64().unwrap();
        self.send(frame);
        self.reply(id)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = common::wait_exit(&mut self.child);
    }
}

#[test]
fn the_definitions_are_the_local_ones() {
    let remote = stdio(&[]);
    let config = json!({"cwd": "/tmp", "name": "shell", "job_tool_name": "jobs",
                        "auto_background_after": 5});
    let tool = remote.tool(options(config.clone())).unwrap();
    let local = local(config);
    assert_eq!(tool.definition().unwrap(), local.definition());
    assert_eq!(
        tool.job_tool().definition().unwrap(),
        JobTool::new(&local).definition()
    );
}

#[test]
fn the_job_tool_reads_and_kills_a_job_started_with_async() {
    let remote = stdio(&[]);
    let tool = remote.tool(options(json!({"snapshot": "none"}))).unwrap();
    let jobs = tool.job_tool();
    let nap = common::unique_sleep(3074);
    let args = json!({"command": format!("echo ready; /bin/sleep {nap}"), "async": true});
    let started = tool.execute(&args, None, None).unwrap();
    assert!(started.text.starts_with("Started job 1: "), "{started:?}");
    let poll = json!({"op": "poll", "job": 1, "until": "ready", "wait": 30});
    let polled = jobs.execute(&poll, None).unwrap();
    assert!(
        polled.text.contains("\nready\n[Still running"),
        "{polled:?}"
    );
    wait_sleeping(&nap, true);
    let killed = jobs
        .execute(&json!({"op": "kill", "job": 1}), None)
        .unwrap();
    assert!(killed.text.contains("killed after"), "{killed:?}");
    wait_sleeping(&nap, false);
    match jobs.execute(&json!({"op": "stop"}), None) {
        Err(RemoteError::Tool(ToolError::Failed { message, .. })) => {
            assert_eq!(
                message,
                "Unknown op \"stop\": use poll, write, kill or list"
            )
        }
        other => panic!("the local refusal: {other:?}"),
    }
}

#[test]
fn closing_the_tool_kills_its_jobs_and_refuses_later_calls() {
    let remote = stdio(&[]);
    let tool = remote.tool(options(json!({"snapshot": "none"}))).unwrap();
    let jobs = tool.job_tool();
    let nap = common::unique_sleep(3073);
    let args = json!({"command": format!("/bin/sleep {nap}"), "async": true});
    tool.execute(&args, None, None).unwrap();
    wait_sleeping(&nap, true);
    tool.close().unwrap();
    wait_sleeping(&nap, false);
    for outcome in [
        tool.execute(&json!({"command": "true"}), None, None),
        jobs.execute(&json!({"op": "list"}), None),
    ] {
        match outcome {
            Err(RemoteError::Tool(ToolError::Closed { message })) => {
                assert_eq!(message, "bash tool is closed")
            }
            other => panic!("closed, as locally: {other:?}"),
        }
    }
    tool.close().unwrap();
}

#[test]
fn bad_options_are_refused_with_the_cores_text() {
    let remote = stdio(&[]);
    match remote.tool(options(json!({"update_interval": -1}))) {
        Err(RemoteError::Refused { kind, message }) => {
            assert_eq!(kind, ErrorKind::BadValue);
            assert!(
                message.starts_with("update_interval must be a number >= 0 of seconds"),
                "{message}"
            );
        }
        Err(other) => panic!("a bad value: {other:?}"),
        Ok(_) => panic!("refused"),
    }
    match remote.tool_spelled(
        options(json!({"updateIntervalMs": -1})),
        conch_core::wire::Spelling::CamelCase,
    ) {
        Err(RemoteError::Refused { message, .. }) => {
            assert!(message.starts_with("updateIntervalMs must be"), "{message}")
        }
        Err(other) => panic!("a bad value: {other:?}"),
        Ok(_) => panic!("refused"),
    }
}
