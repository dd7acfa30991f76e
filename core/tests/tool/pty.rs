//! `BashTool` on its PTY path (virtual terminal on, host with a UI), with
//! real processes: the same result table as the shell path.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::Fixture;
use crate::common::{CUT, ESCALATION, HANG};
use conch_core::CancelToken;
use conch_core::tool::{
    BashTool, BashToolArgs, BashToolConfig, ToolContext, ToolError, ToolResult, ToolUpdate,
};

fn pty_tool(name: &str, tweak: impl FnOnce(&mut BashToolConfig)) -> Fixture {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "conch-tool-pty-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = BashToolConfig::new(&dir);
    config.virtual_terminal = true;
    config.artifacts_dir = Some(dir.join("artifacts"));
    tweak(&mut config);
    Fixture::new(config)
}

fn ui() -> ToolContext<'static> {
    ToolContext {
        has_ui: true,
        ..ToolContext::default()
    }
}

fn exec(tool: &BashTool, command: &str) -> Result<ToolResult, ToolError> {
    tool.execute(BashToolArgs::new(command), ui())
}

#[test]
fn with_a_ui_the_command_runs_on_a_terminal_and_without_one_it_does_not() {
    let t = pty_tool("tty", |_| {});
    let probe = "[ -t 1 ] && echo terminal || echo pipe";
    assert_eq!(exec(&t, probe).unwrap().text, "terminal");
    assert_eq!(
        t.execute(BashToolArgs::new(probe), ToolContext::default())
            .unwrap()
            .text,
        "pipe"
    );
    let plain = pty_tool("tty-off", |c| c.virtual_terminal = false);
    assert_eq!(exec(&plain, probe).unwrap().text, "pipe");
}

#[test]
fn results_follow_the_table_on_the_terminal_too() {
    let t = pty_tool("table", |_| {});
    assert_eq!(exec(&t, "true").unwrap().text, "(no output)");
    let e = exec(&t, "printf 'red\\033[31mtext\\033[0m\\n'; exit 3").unwrap_err();
    assert_eq!(e.message(), "redtext\n\nCommand exited with code 3");
    let r = exec(&t, "seq 1 100 | tail -n 2").unwrap();
    assert_eq!(r.text, "99\n100");

    let mut args = BashToolArgs::new("echo waiting; /bin/sleep 100");
    args.timeout = Some(CUT.as_secs_f64());
    let start = Instant::now();
    let e = t.execute(args, ui()).unwrap_err();
    assert!(matches!(e, ToolError::Failed { .. }));
    assert_eq!(
        e.message(),
        format!(
            "[Command timed out after {} seconds]\nwaiting",
            CUT.as_secs()
        )
    );
    assert!(start.elapsed() < CUT + ESCALATION + HANG);
}

#[test]
fn a_start_failure_has_no_exit_status() {
    let t = pty_tool("nobash", |c| c.shell = Some("/nonexistent/bash".into()));
    let e = exec(&t, "echo hi").unwrap_err();
    assert!(
        e.message().starts_with("PTY error: ")
            && e.message()
                .ends_with("\n\nCommand failed: missing exit status"),
        "{}",
        e.message()
    );
}

/// Runs `command` on the terminal, calling `stop` once the live output
/// shows `started`.
fn stopped_once_started(
    t: &BashTool,
    command: &str,
    cancel: Option<CancelToken>,
    stop: impl Fn(),
) -> Result<ToolResult, ToolError> {
    let mut stopped = false;
    let mut on_update = |u: ToolUpdate| {
        if !stopped && u.text.contains("started") {
            stopped = true;
            stop();
        }
    };
    let start = Instant::now();
    let outcome = t.execute(
        BashToolArgs::new(command),
        ToolContext {
            cancel,
            has_ui: true,
            on_update: Some(&mut on_update),
        },
    );
    // Not stopped, the command would hold the call for 100 s.
    assert!(start.elapsed() < ESCALATION + HANG, "{:?}", start.elapsed());
    outcome
}

#[test]
fn caller_abort_and_ui_kill_are_told_apart() {
    let t = pty_tool("abort", |_| {});
    let cancel = CancelToken::new();
    let outcome = stopped_once_started(
        &t,
        "echo started; /bin/sleep 100",
        Some(cancel.clone()),
        || cancel.cancel(),
    );
    match outcome {
        Err(ToolError::Aborted { message, .. }) => {
            assert_eq!(message, "[Command cancelled]\nstarted")
        }
        other => panic!("expected Aborted, got {other:?}"),
    }

    // The UI kills the terminal (esc): cancelled, but not by the caller.
    let e = stopped_once_started(&t, "echo started; /bin/sleep 100", None, || {
        t.pty().kill().unwrap()
    })
    .unwrap_err();
    assert!(matches!(e, ToolError::Failed { .. }), "{e:?}");
    assert_eq!(e.message(), "[Command cancelled]\nstarted");
}

#[test]
fn a_truncated_terminal_run_has_its_artifact() {
    let t = pty_tool("spill", |_| {});
    let e = exec(&t, "seq 1 30000; exit 1").unwrap_err();
    let trunc = e.details().unwrap().truncation().unwrap();
    let id = trunc.artifact_id.as_deref().unwrap();
    assert_eq!(trunc.total_lines, 30_000);
    assert!(e.message().ends_with(&format!(
        "\n\nCommand exited with code 1\n\n[Showing lines {}-30000 of 30000 (50.0KB limit). Full: artifact://{id}]",
        trunc.shown_range.unwrap().start
    )));
    let full = t.artifacts().unwrap().read(id, 0, None).unwrap();
    assert_eq!(full.lines().count(), 30_000);
}

#[test]
fn a_secret_of_the_env_is_masked_on_the_terminal_too() {
    let t = pty_tool("mask", |c| {
        c.session_env = vec![("API_TOKEN".into(), "tok_9f8e7d6c5b4a3210".into())];
    });
    let r = exec(
        &t,
        "printf '%s' \"${API_TOKEN:0:4}\"; sleep 0.05; printf '%s\\n' \"${API_TOKEN:4}\"",
    );
    assert_eq!(r.unwrap().text, "[masked: API_TOKEN]");
    assert!(!t.pty().screen_text().contains("tok_9f8e7d6c5b4a3210"));
}
