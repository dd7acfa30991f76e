//! `conch run`, `conch artifact` and the top-level command, through the
//! built binary.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

mod common;
use common::{wait_exit, wait_sleep_100, wait_until};

/// A scratch directory (also the artifacts directory of the runs).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(common::scratch_dir(&format!("cli-{name}")))
    }

    fn conch(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_conch"));
        cmd.args(args)
            .current_dir(&self.0)
            .env("CONCH_ARTIFACTS_DIR", self.0.join("artifacts"))
            .stdin(Stdio::null());
        cmd
    }

    /// Runs conch to its exit (under the hang guard): status, stdout,
    /// stderr.
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let mut child = self
            .conch(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = read_all(child.stdout.take().unwrap());
        let stderr = read_all(child.stderr.take().unwrap());
        let status = wait_exit(&mut child);
        (
            status.code().expect("conch exited by itself"),
            stdout.join().unwrap(),
            stderr.join().unwrap(),
        )
    }
}

/// Reads a pipe to its end on a thread (so the child never blocks on a full
/// pipe while the test waits for its exit).
fn read_all(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        pipe.read_to_string(&mut text).unwrap();
        text
    })
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn prints_the_model_text_and_exits_with_the_command_status() {
    let s = Scratch::new("status");
    assert_eq!(
        s.run(&["run", "--", "echo hello"]),
        (0, "hello\n".into(), String::new())
    );
    assert_eq!(s.run(&["run", "echo", "two", "words"]).1, "two words\n");
    assert_eq!(
        s.run(&["run", "--", "echo out; sh -c 'exit 3'"]),
        (
            3,
            "out\n\nCommand exited with code 3\n".into(),
            String::new()
        )
    );
    assert_eq!(s.run(&["run", "--", "true"]).1, "(no output)\n");
    let (code, out, _) = s.run(&["run", "--head", "2", "--", "seq 1 10"]);
    assert_eq!((code, out.as_str()), (0, "1\n2\n"));
    assert_eq!(
        s.run(&["run", "--", "seq 1 1000000 | tail -n 2"]).1,
        "999999\n1000000\n"
    );
}

#[test]
fn timeouts_exit_124_and_bad_cwds_exit_1() {
    let s = Scratch::new("errors");
    // The partial output is asserted, so the deadline leaves the echo seconds.
    let (code, out, _) = s.run(&["run", "--timeout", "3", "--", "echo start; /bin/sleep 100"]);
    assert_eq!(
        (code, out.as_str()),
        (124, "[Command timed out after 3 seconds]\nstart\n")
    );
    let (code, out, _) = s.run(&["run", "--cwd", "missing", "--", "pwd"]);
    assert_eq!(code, 1);
    assert_eq!(
        out,
        format!(
            "Working directory does not exist: {}\n",
            s.0.join("missing").display()
        )
    );
    std::fs::write(s.0.join("file"), "").unwrap();
    let (code, out, _) = s.run(&["run", "--cwd", "file", "--", "pwd"]);
    assert_eq!(code, 1);
    assert!(out.starts_with("Working directory is not a directory: "));
}

#[test]
fn blocked_commands_exit_1_with_the_block_message() {
    let s = Scratch::new("blocked");
    std::fs::write(s.0.join("notes.txt"), "hello\n").unwrap();
    let (code, out, _) = s.run(&["run", "--tools", "read,grep", "--", "cd . && cat notes.txt"]);
    assert_eq!(code, 1);
    assert!(out.starts_with("Blocked: Use the `read` tool"), "{out}");
    assert!(out.ends_with("\n\nOriginal command: cd . && cat notes.txt\n"));
    let (_, json, _) = s.run(&["run", "--json", "--tools", "read", "--", "cat notes.txt"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["suggestedTool"], "read");

    // A rules file replaces the defaults; a bad one is a usage error.
    let rules = s.0.join("rules.json");
    std::fs::write(
        &rules,
        r#"{"rules": [{"pattern": "^rm\\s", "tool": "trash", "message": "Use trash"}]}"#,
    )
    .unwrap();
    let rules = rules.to_str().unwrap();
    let (code, out, _) = s.run(&[
        "run",
        "--tools",
        "trash,read",
        "--interceptor",
        rules,
        "--",
        "rm -rf x",
    ]);
    assert_eq!(
        (code, out.as_str()),
        (1, "Blocked: Use trash\n\nOriginal command: rm -rf x\n")
    );
    assert_eq!(
        s.run(&[
            "run",
            "--tools",
            "trash,read",
            "--interceptor",
            rules,
            "--",
            "cat notes.txt"
        ])
        .1,
        "hello\n"
    );
    std::fs::write(
        s.0.join("bad.json"),
        r#"{"rules": [{"pattern": "(", "tool": "t", "message": "m"}]}"#,
    )
    .unwrap();
    let (code, _, err) = s.run(&["run", "--interceptor", "bad.json", "--", "true"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("conch run: invalid interceptor config bad.json: interceptor rule 0"),
        "{err}"
    );
}

#[test]
fn truncated_output_is_readable_with_conch_artifact() {
    let s = Scratch::new("artifact");
    let (code, out, _) = s.run(&["run", "--", "seq 1 100000; sh -c 'exit 1'"]);
    assert_eq!(code, 1);
    let notice = out.lines().last().unwrap();
    let id = notice
        .strip_suffix(']')
        .and_then(|n| n.rsplit_once("artifact://"))
        .map(|(_, id)| id.to_string())
        .unwrap_or_else(|| panic!("no artifact in {notice}"));
    assert!(notice.starts_with("[Showing lines ") && notice.contains(" of 100000 (50.0KB limit)"));
    let (code, text, _) = s.run(&["artifact", &id, "--offset", "99997"]);
    assert_eq!((code, text.as_str()), (0, "99998\n99999\n100000\n"));
    let (_, text, _) = s.run(&["artifact", &format!("artifact://{id}"), "--limit", "2"]);
    assert_eq!(text, "1\n2\n");
    let (_, whole, _) = s.run(&["artifact", &id]);
    assert_eq!(whole.lines().count(), 100_000);
    let (code, _, err) = s.run(&["artifact", "99"]);
    assert_eq!(
        (code, err.as_str()),
        (
            1,
            format!("Artifact 99 not found. Available: {id}\n").as_str()
        )
    );
}

#[test]
fn json_prints_the_engine_result() {
    let s = Scratch::new("json");
    let (code, out, _) = s.run(&["run", "--json", "--", "echo a; echo b >&2; sh -c 'exit 2'"]);
    assert_eq!(code, 2);
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["output"], "a\nb\n");
    assert_eq!(json["exitCode"], 2);
    assert_eq!(json["timedOut"], false);
    assert_eq!(json["totalLines"], 2);
    assert_eq!(
        json["workingDir"],
        s.0.canonicalize().unwrap().to_str().unwrap()
    );
}

#[test]
fn ctrl_c_aborts_the_command_with_130() {
    let s = Scratch::new("sigint");
    // The command leaves the pid of the process that becomes the sleep in
    // sleep.pid (written whole, then renamed into place).
    let mut child = s
        .conch(&[
            "run",
            "--",
            "echo started; /bin/sh -c 'echo $$ >sleep.tmp && mv sleep.tmp sleep.pid && exec /bin/sleep 100'",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = read_all(child.stdout.take().unwrap());
    let pid_file = s.0.join("sleep.pid");
    wait_until("the command wrote sleep.pid", || pid_file.exists());
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_sleep_100(pid, true);
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(130));
    assert_eq!(stdout.join().unwrap(), "[Command cancelled]\nstarted\n");
    wait_sleep_100(pid, false);
}

#[test]
fn pty_mode_runs_on_a_terminal() {
    let s = Scratch::new("pty");
    let probe = "[ -t 1 ] && echo terminal || echo pipe";
    assert_eq!(s.run(&["run", "--pty", "--", probe]).1, "terminal\n");
    assert_eq!(s.run(&["run", "--", probe]).1, "pipe\n");
    let (code, out, _) = s.run(&["pty", "--cols", "50", "--", "stty size; exit 5"]);
    assert_eq!(code, 5);
    assert!(out.contains(" 50"), "{out:?}");
}

#[test]
fn version_usage_and_unknown_commands() {
    let s = Scratch::new("usage");
    assert_eq!(
        s.run(&["--version"]).1,
        format!("conch {}\n", env!("CARGO_PKG_VERSION"))
    );
    let (code, out, _) = s.run(&["run", "--help"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("conch run [--cwd DIR]"));
    let (code, _, err) = s.run(&["frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("conch: unknown command `frobnicate`"));
    let (code, _, err) = s.run(&["run", "--bogus", "--", "true"]);
    assert_eq!(
        (code, err.as_str()),
        (2, "conch run: unknown option --bogus\n")
    );
}

/// The sandboxed session directories of `host` under `tmp` (its private
/// directory there, `conch-<uid>`).
fn session_dirs(tmp: &std::path::Path, host: u32) -> Vec<PathBuf> {
    let prefix = format!("sandbox-{host}-");
    let mut found = Vec::new();
    for private in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        for entry in std::fs::read_dir(private.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(entry.path());
            }
        }
    }
    found
}

#[test]
fn a_killed_hosts_sandbox_directory_is_removed_by_the_next_host() {
    let scratch = Scratch::new("abandoned");
    let tmp = scratch.0.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // A host killed while its sandboxed session runs leaves its directory
    // (and whatever its commands put in their temp directory).
    let mut host = scratch
        .conch(&[
            "run",
            "--sandbox",
            "--",
            "touch \"$TMPDIR/left\"; /bin/sleep 100",
        ])
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = host.id();
    wait_until("the session's temp file", || {
        session_dirs(&tmp, pid)
            .iter()
            .any(|d| d.join("tmp/left").exists())
    });
    let left = session_dirs(&tmp, pid);
    host.kill().unwrap();
    host.wait().unwrap();
    assert!(left.iter().all(|d| d.exists()), "nobody removed {left:?}");
    // The next host's first sandboxed session sweeps it away.
    let mut next = scratch.conch(&["run", "--sandbox", "--", "echo next"]);
    let out = next.env("TMPDIR", &tmp).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "next\n");
    assert!(left.iter().all(|d| !d.exists()), "still there: {left:?}");
}
