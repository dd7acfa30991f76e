//! The sandbox on the other ways to run a command: `execute_shell`,
//! `PtySession`, the bash tool (and its definition).

use conch_core::tool::{BashTool, BashToolArgs, BashToolConfig, ToolContext};
use conch_core::{ExecuteOptions, PtyOptions, PtySession, execute_shell};

use super::*;

#[test]
fn execute_shell_and_pty_runs_are_sandboxed_and_clean_up() {
    let dir = scratch("faces-oneshot");
    let outside = scratch("faces-oneshot-outside");
    let command = format!(
        "echo $TMPDIR; touch {}/x; echo rc=$?; touch ok; touch \"$TMPDIR/t\" && echo tmp ok",
        outside.display()
    );
    let r = execute_shell(
        ExecuteOptions {
            command: command.clone(),
            cwd: Some(dir.clone()),
            sandbox: Some(Sandbox::default()),
            ..ExecuteOptions::default()
        },
        |_| {},
    )
    .unwrap();
    assert!(
        r.output.contains("rc=1") && r.output.contains("tmp ok"),
        "{}",
        r.output
    );
    let tmpdir = r.output.lines().next().unwrap().to_string();
    assert!(!Path::new(&tmpdir).exists(), "TMPDIR left: {tmpdir}");
    assert!(dir.join("ok").exists());

    let pty = PtySession::new();
    let mut opts = PtyOptions::new(command);
    opts.cwd = Some(dir.clone());
    opts.sandbox = Some(Sandbox::default());
    let r = pty.start(opts, |_| {}).unwrap();
    let text = &r.summary.output;
    assert!(text.contains("rc=1") && text.contains("tmp ok"), "{text}");
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn the_bash_tool_writes_in_its_project_only_and_says_so() {
    let project = scratch("faces-tool");
    let mut config = BashToolConfig::new(&project);
    config.session_key = Some(format!("sandbox-test-{}", std::process::id()));
    config.sandbox = Some(Sandbox {
        allow_tcp_ports: vec![8080],
        limits: conch_core::Limits {
            cpu_seconds: Some(60),
            ..conch_core::Limits::default()
        },
        ..Sandbox::default()
    });
    let tool = BashTool::new(config).unwrap();
    let description = tool.definition().description;
    let expected = format!(
        "Commands run in a sandbox: files can be written only under {}, $TMPDIR; no network but \
         TCP connections to port 8080 (no UDP, no DNS); limits: 60 s of CPU per process; secrets \
         read as empty",
        project.display()
    );
    assert!(description.contains(&expected), "{description}");
    // Without a sandbox, no word of it.
    let plain = BashTool::new(BashToolConfig::new(&project)).unwrap();
    assert!(!plain.definition().description.contains("sandbox"));

    let run = tool.run(
        BashToolArgs::new("touch made && touch /etc/conch-sandbox-tool"),
        ToolContext {
            on_update: None,
            cancel: None,
            has_ui: false,
        },
    );
    let text = run
        .bash
        .as_ref()
        .map(|b| b.output.clone())
        .unwrap_or_default();
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(project.join("made").exists());
    assert!(!Path::new("/etc/conch-sandbox-tool").exists());
    let _ = std::fs::remove_dir_all(&project);
}
