//! `BashTool` end to end, with real processes: every row of the
//! result table (docs/behaviour.md), every error text, the interceptor, cwd and timeout rules,
//! live updates. Artifacts and the head and tail of the complete stream are
//! `bash_output`'s; the helpers here are both modules'.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::Fixture;
use crate::common::{CUT, ESCALATION, HANG};
use conch_core::command::intercept::Rule;
use conch_core::shell::Snapshot;
use conch_core::tool::{
    BashTool, BashToolArgs, BashToolConfig, ToolContext, ToolError, ToolResult, ToolUpdate,
};
use conch_core::{ArtifactStore, CancelToken};

fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "conch-tool-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// A config in a fresh project directory, with its own session.
pub(crate) fn config(name: &str) -> BashToolConfig {
    let mut c = BashToolConfig::new(temp_dir(name));
    c.snapshot = Snapshot::None;
    c.session_key = Some(format!("tool-test-{name}"));
    c
}

pub(crate) fn tool(name: &str) -> Fixture {
    Fixture::new(config(name))
}

pub(crate) fn exec(tool: &BashTool, command: &str) -> Result<ToolResult, ToolError> {
    tool.execute(BashToolArgs::new(command), ToolContext::default())
}

pub(crate) fn failed(outcome: Result<ToolResult, ToolError>) -> ToolError {
    match outcome {
        Err(e @ ToolError::Failed { .. }) => e,
        other => panic!("expected a Failed error, got {other:?}"),
    }
}

// ---- the result table -------------------------------------------------

#[test]
fn success_is_the_output_without_details() {
    let t = tool("success");
    let r = exec(&t, "echo hello; echo world >&2").unwrap();
    assert_eq!(r.text, "hello\nworld");
    assert_eq!(r.details, None);
}

#[test]
fn empty_output_reads_no_output() {
    let t = tool("empty");
    assert_eq!(exec(&t, "true").unwrap().text, "(no output)");
    let e = failed(exec(&t, "false"));
    assert_eq!(e.message(), "(no output)\n\nCommand exited with code 1");
}

#[test]
fn non_zero_exit_is_a_failure_with_the_code() {
    let t = tool("nonzero");
    let e = failed(exec(&t, "echo partial; sh -c 'exit 3'"));
    assert_eq!(e.message(), "partial\n\nCommand exited with code 3");
    assert_eq!(e.to_string(), e.message());
    assert!(e.details().is_none());
    // the session survives and the next call succeeds
    assert_eq!(exec(&t, "echo next").unwrap().text, "next");
}

#[test]
fn timeout_is_a_failure_that_starts_with_the_notice() {
    let t = tool("timeout");
    let start = Instant::now();
    let mut args = BashToolArgs::new("echo before; /bin/sleep 100");
    args.timeout = Some(CUT.as_secs_f64());
    let e = failed(t.execute(args, ToolContext::default()));
    assert_eq!(
        e.message(),
        format!(
            "[Command timed out after {} seconds]\nbefore",
            CUT.as_secs()
        )
    );
    assert!(
        start.elapsed() < CUT + ESCALATION + HANG,
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn timeout_zero_is_clamped_to_one_second() {
    let t = tool("timeout0");
    let start = Instant::now();
    let mut args = BashToolArgs::new("/bin/sleep 100");
    args.timeout = Some(0.0);
    let e = failed(t.execute(args, ToolContext::default()));
    let took = start.elapsed();
    assert_eq!(e.message(), "[Command timed out after 1 seconds]");
    // The clamped timeout ran its full second (a timeout never fires early).
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(
        took < Duration::from_secs(1) + ESCALATION + HANG,
        "{took:?}"
    );
}

#[test]
fn timeout_above_an_hour_is_clamped_and_still_runs() {
    assert_eq!(
        conch_core::tool::clamp_timeout(Some(99999.0)),
        Duration::from_secs(3600)
    );
    let t = tool("timeout99999");
    let mut args = BashToolArgs::new("echo fine");
    args.timeout = Some(99999.0);
    let run = t.run(args, ToolContext::default());
    assert_eq!(run.outcome.unwrap().text, "fine");
    assert_eq!(run.bash.unwrap().exit_code, Some(0));
}

#[test]
fn abort_by_the_caller_is_an_abort_error_and_the_tool_recovers() {
    let t = tool("abort");
    let cancel = CancelToken::new();
    let marker = crate::common::unique_sleep(100);
    // The caller cancels once the live output shows the command started
    // and the sleep itself runs (not bash between fork and exec).
    let mut on_update = {
        let (cancel, marker) = (cancel.clone(), marker.clone());
        move |u: ToolUpdate| {
            if u.text.contains("started") {
                crate::common::wait_until(HANG, || crate::common::procs_with(&marker).len() == 1);
                cancel.cancel();
            }
        }
    };
    let start = Instant::now();
    let outcome = t.execute(
        BashToolArgs::new(format!("echo started; /bin/sleep {marker}")),
        ToolContext {
            cancel: Some(cancel),
            on_update: Some(&mut on_update),
            ..ToolContext::default()
        },
    );
    // Not stopped, the sleep would hold the call for 100 s.
    assert!(start.elapsed() < ESCALATION + HANG, "{:?}", start.elapsed());
    match outcome {
        Err(ToolError::Aborted { message, details }) => {
            assert_eq!(message, "[Command cancelled]\nstarted");
            assert!(details.is_none());
        }
        other => panic!("expected Aborted, got {other:?}"),
    }
    assert_eq!(exec(&t, "echo again").unwrap().text, "again");
}

#[test]
fn a_token_cancelled_before_the_call_aborts_it() {
    let t = tool("precancel");
    let cancel = CancelToken::new();
    cancel.cancel();
    let outcome = t.execute(
        BashToolArgs::new("echo never"),
        ToolContext {
            cancel: Some(cancel),
            ..ToolContext::default()
        },
    );
    assert!(
        matches!(&outcome, Err(ToolError::Aborted { message, .. }) if message == "[Command cancelled]"),
        "{outcome:?}"
    );
}

#[test]
fn sessions_start_whatever_descriptors_the_host_holds() {
    // The status pipe of a new session lands on whatever descriptor is
    // free; holding more and more files walks it across every number up
    // to past the one bash reports on (62).
    let mut held = Vec::new();
    for i in 0..70 {
        held.push(std::fs::File::open("/dev/null").unwrap());
        let mut c = config("fds");
        c.session_key = Some(format!("tool-test-fds-{i}"));
        let t = Fixture::new(c);
        assert_eq!(
            exec(&t, "echo up").unwrap().text,
            "up",
            "with {} files held",
            i + 1
        );
    }
}

// ---- errors before the command runs ------------------------------------

#[test]
fn missing_cwd_and_file_cwd_have_the_spec_texts() {
    let t = tool("cwd");
    let root = t.config().cwd.clone();
    std::fs::write(root.join("file.txt"), "x").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();

    let mut args = BashToolArgs::new("pwd");
    args.cwd = Some("nope".into());
    let e = failed(t.execute(args, ToolContext::default()));
    assert_eq!(
        e.message(),
        format!(
            "Working directory does not exist: {}",
            root.join("nope").display()
        )
    );

    let mut args = BashToolArgs::new("pwd");
    args.cwd = Some("file.txt".into());
    let e = failed(t.execute(args, ToolContext::default()));
    assert_eq!(
        e.message(),
        format!(
            "Working directory is not a directory: {}",
            root.join("file.txt").display()
        )
    );

    let mut args = BashToolArgs::new("pwd");
    args.cwd = Some("sub".into());
    let r = t.execute(args, ToolContext::default()).unwrap();
    assert_eq!(r.text, root.join("sub").display().to_string());
    // without a cwd argument, the tool's cwd (a `cd` does not carry over)
    exec(&t, "cd /").unwrap();
    assert_eq!(exec(&t, "pwd").unwrap().text, root.display().to_string());
}

#[test]
fn a_missing_tool_cwd_is_reported_at_the_call() {
    let mut c = config("gone");
    let project = c.cwd.clone();
    c.cwd = c.cwd.join("gone");
    let t = BashTool::new(c).unwrap();
    let _ = std::fs::remove_dir_all(project);
    let e = failed(exec(&t, "pwd"));
    assert!(
        e.message()
            .starts_with("Working directory does not exist: ")
            && e.message().ends_with("/gone"),
        "{}",
        e.message()
    );
}

#[test]
fn an_exit_that_leaves_its_cwd_gone_says_so_instead_of_the_same_directory() {
    let t = tool("exit-gone");
    let root = t.dir.clone();
    std::fs::create_dir(root.join("sub")).unwrap();
    let e = failed(exec(&t, "echo bye; exit 3"));
    assert!(
        e.message()
            .contains("starts a new shell in the same working directory")
    );
    let mut args = BashToolArgs::new("rmdir \"$PWD\"; exit 3");
    args.cwd = Some("sub".into());
    let e = failed(t.execute(args, ToolContext::default()));
    assert_eq!(
        e.message(),
        "(no output)\n\nCommand exited with code 3\n\n[Shell restarted: this command ended the \
         shell session, and its working directory no longer exists. Give the next command a cwd \
         that exists; it starts a new shell without the variables, functions, aliases and shell \
         options set earlier]"
    );
    // What the line says: that directory fails, one that exists works.
    let mut args = BashToolArgs::new("pwd");
    args.cwd = Some("sub".into());
    let e = failed(t.execute(args, ToolContext::default()));
    assert!(
        e.message()
            .starts_with("Working directory does not exist: ")
    );
    assert_eq!(exec(&t, "pwd").unwrap().text, root.display().to_string());
}

fn intercepting(name: &str, tools: &[&str], rules: Option<Vec<Rule>>) -> Fixture {
    let mut c = config(name);
    c.interceptor = true;
    c.tool_names = tools.iter().map(|s| s.to_string()).collect();
    c.rules = rules;
    Fixture::new(c)
}

fn blocked(outcome: Result<ToolResult, ToolError>) -> (String, String) {
    match outcome {
        Err(ToolError::Blocked {
            message,
            suggested_tool,
        }) => (message, suggested_tool),
        other => panic!("expected Blocked, got {other:?}"),
    }
}

#[test]
fn intercepted_commands_are_blocked_per_segment() {
    let t = intercepting(
        "intercept",
        &["read", "grep", "find", "edit", "write"],
        None,
    );
    std::fs::write(t.config().cwd.join("f"), "secret\n").unwrap();
    let (message, tool) = blocked(exec(&t, "cat f"));
    assert_eq!(tool, "read");
    assert_eq!(
        message,
        "Blocked: Use the `read` tool instead of cat/head/tail. It provides better context and handles binary files.\n\nOriginal command: cat f"
    );
    for (command, tool) in [
        ("cd . && cat f", "read"),
        ("FOO=1 cat f", "read"),
        ("(cat f)", "read"),
        ("true; grep -r x .", "grep"),
        ("sed -i s/a/b/ f", "edit"),
        ("echo hi > out.txt", "write"),
        ("find . -name '*.rs'", "find"),
    ] {
        assert_eq!(blocked(exec(&t, command)).1, tool, "{command}");
    }
    // the message quotes the command as written, head/tail stages included
    let (message, _) = blocked(exec(&t, "  cat f | head -n 5  "));
    assert!(
        message.ends_with("Original command: cat f | head -n 5"),
        "{message}"
    );
    // not blocked: quoted text, filters fed by a pipe, writes to /dev/null
    assert_eq!(exec(&t, "echo \"cat f\"").unwrap().text, "cat f");
    assert_eq!(exec(&t, "printf 'a\\nb\\n' | grep b").unwrap().text, "b");
    assert_eq!(exec(&t, "echo x > /dev/null").unwrap().text, "(no output)");
}

#[test]
fn rules_apply_only_when_the_host_has_their_tool() {
    let t = intercepting("intercept-notool", &["grep"], None);
    std::fs::write(t.config().cwd.join("f"), "content\n").unwrap();
    assert_eq!(exec(&t, "cat f").unwrap().text, "content");
    assert_eq!(blocked(exec(&t, "grep x f")).1, "grep");
    // the interceptor off: nothing is blocked
    let t = tool("intercept-off");
    std::fs::write(t.config().cwd.join("f"), "content\n").unwrap();
    assert_eq!(exec(&t, "cat f").unwrap().text, "content");
}

#[test]
fn custom_rules_replace_the_defaults_and_bad_ones_fail_at_new() {
    let rule = |pattern: &str| Rule {
        pattern: pattern.into(),
        flags: Some("i".into()),
        tool: "deploy".into(),
        message: "Use the deploy tool".into(),
    };
    let t = intercepting(
        "intercept-custom",
        &["deploy", "read"],
        Some(vec![rule(r"^KUBECTL\b")]),
    );
    let (message, tool) = blocked(exec(&t, "cd . && kubectl apply -f x.yaml"));
    assert_eq!(tool, "deploy");
    assert_eq!(
        message,
        "Blocked: Use the deploy tool\n\nOriginal command: cd . && kubectl apply -f x.yaml"
    );
    assert_eq!(exec(&t, "cat /dev/null").unwrap().text, "(no output)");

    let mut c = config("intercept-bad");
    c.interceptor = true;
    c.rules = Some(vec![rule("ok"), rule("(unclosed")]);
    let _ = std::fs::remove_dir_all(&c.cwd);
    for interceptor in [true, false] {
        c.interceptor = interceptor;
        let err = BashTool::new(c.clone())
            .err()
            .expect("an invalid rule is an error");
        assert!(
            err.to_string()
                .starts_with("interceptor rule 1 (`(unclosed`)"),
            "interceptor {interceptor}: {err}"
        );
    }
}

// ---- live updates ------------------------------------------------------

#[test]
fn live_updates_stream_the_tail_at_a_bounded_pace() {
    let t = tool("updates");
    // Each line waits until an update has shown the one before: a file the
    // update callback creates.
    let dir = t.config().cwd.clone();
    let mut updates: Vec<String> = Vec::new();
    let mut on_update = |u: ToolUpdate| {
        for i in 1..=3 {
            if u.text.contains(&format!("line{i}\n")) {
                std::fs::write(dir.join(format!("shown{i}")), "").unwrap();
            }
        }
        updates.push(u.text);
    };
    let mut args = BashToolArgs::new(
        "for i in 1 2 3; do echo line$i; until [ -e shown$i ]; do /bin/sleep 0.01; done; done",
    );
    // Only if an update never came (a hang guard).
    args.timeout = Some(HANG.as_secs_f64());
    let r = t
        .execute(
            args,
            ToolContext {
                on_update: Some(&mut on_update),
                ..ToolContext::default()
            },
        )
        .unwrap();
    assert_eq!(r.text, "line1\nline2\nline3");
    assert_eq!(
        updates,
        ["line1\n", "line1\nline2\n", "line1\nline2\nline3\n"]
    );

    let mut count = 0usize;
    let mut largest = 0usize;
    let mut on_update = |u: ToolUpdate| {
        count += 1;
        largest = largest.max(u.text.len());
    };
    let start = Instant::now();
    exec_with_updates(&t, "seq 1 3000000", &mut on_update);
    let took = start.elapsed();
    assert!(largest <= 51_200, "{largest}");
    // One update per interval at most, plus the first and the last: slower
    // runs only allow more.
    let interval = t.config().update_interval;
    let most = (took.as_millis() / interval.as_millis()) as usize + 2;
    assert!(count <= most, "{count} updates in {took:?}");
}

fn exec_with_updates(t: &BashTool, command: &str, on_update: &mut dyn FnMut(ToolUpdate)) {
    t.execute(
        BashToolArgs::new(command),
        ToolContext {
            on_update: Some(on_update),
            ..ToolContext::default()
        },
    )
    .unwrap();
}

#[test]
fn shell_state_persists_between_calls_but_the_cwd_does_not() {
    let t = tool("persist");
    exec(&t, "export GREETING=hi; shout() { echo \"${1^^}\"; }; cd /").unwrap();
    let r = exec(&t, "echo $GREETING; shout quiet; pwd").unwrap();
    assert_eq!(r.text, format!("hi\nQUIET\n{}", t.config().cwd.display()));
}

#[test]
fn tools_and_sessions_can_be_shared_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<BashTool>();
    shareable::<conch_core::tool::BashSession>();
    let t = std::sync::Arc::new(tool("threads"));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let t = t.clone();
            std::thread::spawn(move || exec(&t, &format!("echo {i}")).unwrap().text)
        })
        .collect();
    let mut outputs: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    outputs.sort();
    assert_eq!(outputs, ["0", "1", "2", "3"]);
}

#[test]
fn a_call_from_its_own_update_callback_fails_at_once() {
    let tool = std::sync::Arc::new(tool("reentry"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn({
        let tool = tool.clone();
        move || {
            let mut nested = Vec::new();
            let mut on_update = |_: ToolUpdate| {
                nested.push(exec(&tool, "echo inner"));
            };
            let outer = tool.execute(
                BashToolArgs::new("echo one; /bin/sleep 0.2; echo two"),
                ToolContext {
                    on_update: Some(&mut on_update),
                    ..ToolContext::default()
                },
            );
            tx.send((outer, nested)).unwrap();
        }
    });
    let (outer, nested) = rx.recv_timeout(HANG).expect("the call hung");
    assert_eq!(outer.unwrap().text, "one\ntwo");
    assert!(!nested.is_empty());
    for result in nested {
        match result {
            Err(ToolError::Failed { message, .. }) => assert!(
                message.starts_with(
                    "a call was made from inside a callback of a run on the same tool:"
                ),
                "{message}"
            ),
            other => panic!("expected a failure, got {other:?}"),
        }
    }
    assert_eq!(exec(&tool, "echo after").unwrap().text, "after");
}

fn closed(outcome: Result<ToolResult, ToolError>) {
    match outcome {
        Err(ToolError::Closed { message }) => assert_eq!(message, "bash tool is closed"),
        other => panic!("expected the tool's Closed error, got {other:?}"),
    }
}

#[test]
fn close_is_final_for_the_tool_and_its_job_tools() {
    use conch_core::tool::{JobTool, JobToolArgs};
    let t = tool("close-final");
    let list = || JobToolArgs {
        op: "list".into(),
        ..JobToolArgs::default()
    };
    let before = JobTool::new(&t);
    exec(&t, "export MARK=kept").unwrap();
    let started = t.execute(
        BashToolArgs {
            run_async: true,
            ..BashToolArgs::new("/bin/sleep 30")
        },
        ToolContext::default(),
    );
    assert!(started.unwrap().text.starts_with("Started job 1: "));
    assert!(!t.is_closed());
    t.close();
    assert!(t.is_closed());
    t.close();
    // Not a fresh bash: nothing runs any more, in any form.
    closed(exec(&t, "echo $MARK"));
    closed(t.execute(
        BashToolArgs {
            run_async: true,
            ..BashToolArgs::new("echo started")
        },
        ToolContext::default(),
    ));
    closed(before.execute(list(), None));
    closed(JobTool::new(&t).execute(list(), None));
    let run = t.run(BashToolArgs::new("echo again"), ToolContext::default());
    assert!(run.bash.is_none());
    assert_eq!(run.exit_status(), 1);
}

#[test]
fn a_call_waiting_for_its_turn_is_refused_when_the_tool_closes() {
    let t = std::sync::Arc::new(tool("close-queued"));
    let marker = crate::common::unique_sleep(100);
    let first = std::thread::spawn({
        let (t, marker) = (t.clone(), marker.clone());
        move || exec(&t, &format!("/bin/sleep {marker}"))
    });
    assert!(crate::common::wait_until(
        HANG,
        || crate::common::procs_with(&marker).len() == 1
    ));
    let second = std::thread::spawn({
        let t = t.clone();
        move || exec(&t, "echo second")
    });
    // Time for the second call to take its place behind the first.
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    t.close();
    // The call in progress is stopped (its shell is closed), the one
    // waiting refused: it neither runs on the closed shell nor on a new one.
    assert!(first.join().unwrap().is_err());
    closed(second.join().unwrap());
    assert!(start.elapsed() < ESCALATION + HANG, "{:?}", start.elapsed());
    assert!(crate::common::procs_with(&marker).is_empty());
}

#[test]
fn closing_a_tool_of_a_shared_session_spares_the_session() {
    // No session key: the session is every such tool's. A session env of
    // this test's own keeps it apart from other tests' shared sessions.
    let mut c = BashToolConfig::new(temp_dir("close-shared"));
    c.snapshot = Snapshot::None;
    c.session_env = vec![("CLOSE_SHARED".into(), std::process::id().to_string())];
    let (a, b) = (Fixture::new(c.clone()), Fixture::new(c));
    exec(&a, "export SHARED=kept").unwrap();
    a.close();
    closed(exec(&a, "echo $SHARED"));
    assert_eq!(exec(&b, "echo $SHARED").unwrap().text, "kept");
}

// ---- secrets -------------------------------------------------------------

#[test]
fn a_secret_of_the_env_is_masked_in_the_text_the_updates_and_the_artifact() {
    const TOKEN: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    let mut c = config("mask");
    let artifacts = c.cwd.join("artifacts");
    c.artifacts_dir = Some(artifacts.clone());
    c.session_env = vec![("GITHUB_TOKEN".into(), TOKEN.into())];
    let t = Fixture::new(c);
    let r = exec(&t, "printenv GITHUB_TOKEN").unwrap();
    assert_eq!(r.text, "[masked: GITHUB_TOKEN]");
    // Truncated: the text points to the artifact, which is masked too.
    let mut updates = String::new();
    let mut on_update = |u: ToolUpdate| updates.push_str(&u.text);
    let r = t
        .execute(
            BashToolArgs::new("for i in $(seq 1 3000); do echo \"$i $GITHUB_TOKEN\"; done"),
            ToolContext {
                on_update: Some(&mut on_update),
                ..ToolContext::default()
            },
        )
        .unwrap();
    assert!(
        r.text
            .contains("\n3000 [masked: GITHUB_TOKEN]\n\n[Showing lines ")
            && r.text.contains("Full: artifact://"),
        "{}",
        r.text
    );
    assert!(!r.text.contains(TOKEN) && !updates.contains(TOKEN));
    let store = ArtifactStore::new(&artifacts);
    let id = r
        .text
        .rsplit("artifact://")
        .next()
        .unwrap()
        .trim_end_matches(']');
    let full = std::fs::read_to_string(store.path_of(id, "bash")).unwrap();
    assert_eq!(full.lines().count(), 3000);
    assert!(full.lines().all(|l| l.ends_with(" [masked: GITHUB_TOKEN]")));
    // mask: false shows it.
    let mut c = config("mask-off");
    c.session_env = vec![("GITHUB_TOKEN".into(), TOKEN.into())];
    c.mask = conch_core::Mask::Off;
    let t = Fixture::new(c);
    assert_eq!(exec(&t, "printenv GITHUB_TOKEN").unwrap().text, TOKEN);
}
