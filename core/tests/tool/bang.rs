//! `BashSession`, the user's `!cmd` surface, with real processes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::common::{ESCALATION, HANG, Seen};
use conch_core::shell::Snapshot;
use conch_core::tool::{BangOptions, BashSession, BashSessionConfig, model_text};

struct Fixture {
    session: BashSession,
    dir: PathBuf,
}

impl std::ops::Deref for Fixture {
    type Target = BashSession;
    fn deref(&self) -> &BashSession {
        &self.session
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.session.close();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn session(name: &str, tweak: impl FnOnce(&mut BashSessionConfig, &Path)) -> Fixture {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "conch-bang-{}-{name}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let mut config = BashSessionConfig {
        cwd: Some(dir.clone()),
        snapshot: Snapshot::None,
        ..BashSessionConfig::default()
    };
    tweak(&mut config, &dir);
    Fixture {
        session: BashSession::new(config),
        dir,
    }
}

#[test]
fn state_and_cwd_persist_between_bang_commands() {
    let s = session("persist", |_, _| {});
    std::fs::create_dir(s.dir.join("sub")).unwrap();
    s.execute_bash("cd sub; export GREETING=hi", |_| {})
        .unwrap();
    let r = s.execute_bash("echo $GREETING $PWD", |_| {}).unwrap();
    assert_eq!(r.output, format!("hi {}\n", s.dir.join("sub").display()));
    // a per-run cwd applies to that run only
    let r = s
        .execute_bash_with(
            "pwd",
            BangOptions {
                cwd: Some("..".into()),
                ..BangOptions::default()
            },
            |_| {},
        )
        .unwrap();
    assert_eq!(r.output, format!("{}\n", s.dir.display()));
    let r = s.execute_bash("pwd", |_| {}).unwrap();
    assert_eq!(r.output, format!("{}\n", s.dir.join("sub").display()));
}

#[test]
fn abort_from_another_thread_ends_the_command_at_once() {
    let s = Arc::new(session("abort", |_, _| {}));
    s.execute_bash("true", |_| {}).unwrap();
    assert!(!s.is_running());
    let seen = Seen::default();
    let aborter = {
        let (s, seen) = (s.clone(), seen.clone());
        std::thread::spawn(move || {
            seen.wait_for("started");
            assert!(s.is_running());
            let at = Instant::now();
            s.abort();
            at
        })
    };
    let r = s
        .execute_bash("echo started; /bin/sleep 100", |c| seen.push(c))
        .unwrap();
    let aborted_at = aborter.join().unwrap();
    // Not stopped, the sleep would hold the run for 100 s.
    assert!(
        aborted_at.elapsed() < ESCALATION + HANG,
        "{:?}",
        aborted_at.elapsed()
    );
    assert!(r.cancelled);
    assert!(!r.timed_out);
    assert_eq!(r.output, "[Command cancelled]\nstarted\n");
    assert_eq!(seen.text(), "started\n");
    assert!(!s.is_running());
    let record = s.last_record().unwrap();
    assert!(record.cancelled);
    assert_eq!(
        model_text(&record),
        "Ran `echo started; /bin/sleep 100`\n```\n[Command cancelled]\nstarted\n```\n\n(command cancelled)"
    );
    // the session still works
    assert_eq!(s.execute_bash("echo ok", |_| {}).unwrap().output, "ok\n");
}

#[test]
fn bang_commands_have_a_timeout() {
    let s = session("timeout", |c, _| c.timeout = Some(Duration::from_secs(1)));
    let start = Instant::now();
    let r = s.execute_bash("/bin/sleep 100", |_| {}).unwrap();
    assert!(start.elapsed() < Duration::from_secs(1) + ESCALATION + HANG);
    assert!(r.timed_out && r.cancelled);
    assert_eq!(r.output, "[Command timed out after 1 seconds]\n");
    // a per-run timeout wins (the session's would cut the sleep)
    let r = s
        .execute_bash_with(
            "/bin/sleep 1.5; echo done",
            BangOptions {
                timeout: Some(Duration::from_secs(30)),
                ..BangOptions::default()
            },
            |_| {},
        )
        .unwrap();
    assert_eq!(r.output, "done\n");
}

#[test]
fn big_outputs_spill_to_an_artifact_and_records_are_bounded() {
    let s = session("records", |c, dir| {
        c.max_records = 3;
        c.artifacts_dir = Some(dir.join("artifacts"));
    });
    let artifacts = s.dir.join("artifacts");
    let r = s.execute_bash("seq 1 100000; false", |_| {}).unwrap();
    let id = r.artifact_id.clone().unwrap();
    assert_eq!(r.exit_code, Some(1));
    let text = model_text(&s.last_record().unwrap());
    assert!(
        text.starts_with("Ran `seq 1 100000; false`\n```\n"),
        "{}",
        &text[..40]
    );
    assert!(text.ends_with(&format!(
        "100000\n```\n\nCommand exited with code 1\n\n[Showing lines {}-100000 of 100000 (50.0KB limit). Full: artifact://{id}]",
        100_001 - r.output_lines
    )));
    let full = std::fs::read_to_string(artifacts.join(format!("{id}.bash.log"))).unwrap();
    assert_eq!(full.lines().count(), 100_000);
    for i in 0..4 {
        s.execute_bash(&format!("echo {i}"), |_| {}).unwrap();
    }
    let records = s.records();
    assert_eq!(records.len(), 3);
    assert_eq!(
        records
            .iter()
            .map(|r| r.output.as_str())
            .collect::<Vec<_>>(),
        ["1\n", "2\n", "3\n"]
    );
    assert!(records.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
    assert_eq!(model_text(&records[2]), "Ran `echo 3`\n```\n3\n```");
}

#[test]
fn a_bad_run_cwd_is_an_error_with_the_spec_text() {
    let s = session("badcwd", |_, _| {});
    let err = s
        .execute_bash_with(
            "pwd",
            BangOptions {
                cwd: Some("missing".into()),
                ..BangOptions::default()
            },
            |_| {},
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Working directory does not exist: {}",
            s.dir.join("missing").display()
        )
    );
    assert!(!s.is_running());
}

#[test]
fn a_run_token_cancels_that_run_even_before_it_starts() {
    let s = session("token", |_, _| {});
    let cancel = conch_core::CancelToken::new();
    cancel.cancel();
    let start = Instant::now();
    let r = s
        .execute_bash_with(
            "/bin/sleep 30",
            BangOptions {
                cancel: Some(cancel),
                ..BangOptions::default()
            },
            |_| {},
        )
        .unwrap();
    // Started, the sleep would hold the run for 30 s.
    assert!(start.elapsed() < HANG);
    assert!(r.cancelled);
    assert_eq!(r.output, "[Command cancelled]\n");
}
