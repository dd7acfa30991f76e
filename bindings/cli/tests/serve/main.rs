//! `conch serve` as a real process, driven by the real client
//! (conch-remote, what every face's `connect` wraps): over stdio (the
//! server a subprocess of the client) and over a WebSocket on 127.0.0.1.

#[allow(dead_code)] // the helpers other test binaries use too
#[path = "../common/mod.rs"]
mod common;

mod engine;
mod faults;
mod files;
mod jobs;
mod listen;
mod pty;
mod resume;
mod scale;
mod tls;
mod tool;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use conch_core::{JobOptions, RunOptions};
use conch_remote::{ConnectOptions, Remote, RemoteError, Target, connect};
use serde_json::{Map, Value, json};

use common::{wait_exit, wait_until};

pub const CONCH: &str = env!("CARGO_BIN_EXE_conch");

/// A `conch serve --listen 127.0.0.1:0` process and the address it took.
pub struct Listening {
    pub child: Child,
    pub addr: String,
}

impl Listening {
    /// Starts a server with `args` after `--listen 127.0.0.1:0` and
    /// `CONCH_TOKEN` set to `token`, when given.
    pub fn start(args: &[&str], token: Option<&str>) -> Listening {
        let mut command = Command::new(CONCH);
        command
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("CONCH_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.env("CONCH_TOKEN", token);
        }
        let mut child = command.spawn().expect("conch serve starts");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("conch serve: listening on ")
            .unwrap_or_else(|| panic!("the server says where it listens, got {line:?}"))
            .to_string();
        // Later lines are not read: a server that writes more would block,
        // so it writes nothing more.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Listening { child, addr }
    }

    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    pub fn connect(&self, token: Option<&str>) -> Result<Remote, conch_remote::RemoteError> {
        connect(
            self.url().as_str(),
            ConnectOptions {
                token: token.map(str::to_string),
                ..ConnectOptions::default()
            },
        )
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stdio server, a subprocess of the client.
pub fn stdio(args: &[&str]) -> Remote {
    let mut argv = vec![CONCH.to_string(), "serve".into(), "--stdio".into()];
    argv.extend(args.iter().map(|a| a.to_string()));
    connect(Target::Command(argv), ConnectOptions::default()).expect("a stdio server")
}

/// Session options as a JSON object.
pub fn options(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("options are an object"),
    }
}

/// The pids of the processes running `/bin/sleep <arg>`.
pub fn sleeping(arg: &str) -> Vec<u32> {
    let want = format!("/bin/sleep\0{arg}\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want.as_bytes())
        })
        .collect()
}

/// Waits until `/bin/sleep <arg>` runs (`true`) or no longer does.
pub fn wait_sleeping(arg: &str, running: bool) {
    wait_until(&format!("/bin/sleep {arg} running: {running}"), || {
        sleeping(arg).is_empty() != running
    });
}

#[test]
fn a_stdio_server_runs_commands_as_a_local_shell_does() {
    let remote = stdio(&[]);
    let sh = remote
        .shell(options(json!({"cwd": "/tmp", "snapshot": "none"})))
        .unwrap();
    let mut streamed = String::new();
    let r = sh
        .run(
            RunOptions::new("echo one; echo two >&2; cd /; exit_code=7; (exit 7)"),
            |c| streamed.push_str(c),
        )
        .unwrap();
    assert_eq!(r.output, "one\ntwo\n");
    assert_eq!(streamed, "one\ntwo\n");
    assert_eq!(r.exit_code, Some(7));
    assert_eq!(r.working_dir.as_deref(), Some("/"));
    assert!(!r.cancelled && !r.timed_out);
    // The session persists between runs.
    sh.run(RunOptions::new("export KEPT=yes"), |_| {}).unwrap();
    let r = sh.run(RunOptions::new("echo $KEPT; pwd"), |_| {}).unwrap();
    assert_eq!(r.output, "yes\n/\n");
    sh.close().unwrap();
}

#[test]
fn a_stdio_server_closes_its_sessions_when_the_client_goes() {
    let remote = stdio(&["--grace", "60"]);
    let sh = remote.shell(Map::new()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let nap = common::unique_sleep(3071);
    let command = format!("/bin/sleep {nap}");
    let handle = std::thread::spawn(move || {
        let r = sh.run(RunOptions::new(command), |_| {});
        tx.send(()).unwrap();
        r
    });
    wait_sleeping(&nap, true);
    remote.close();
    // No grace over stdio: nobody can come back.
    wait_sleeping(&nap, false);
    rx.recv_timeout(common::HANG_GUARD)
        .expect("the run returns");
    assert!(matches!(
        handle.join().unwrap(),
        Err(conch_remote::RemoteError::ConnectionLost(_))
    ));
}

#[test]
fn an_abort_from_the_cancel_token_stops_the_remote_command() {
    let remote = stdio(&[]);
    let sh = remote.shell(Map::new()).unwrap();
    let token = conch_core::CancelToken::new();
    let cancel = token.clone();
    let nap = common::unique_sleep(3071);
    let watched = nap.clone();
    std::thread::spawn(move || {
        wait_sleeping(&watched, true);
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let mut opts = RunOptions::new(format!("echo before; /bin/sleep {nap}"));
    opts.cancel = Some(token);
    let r = sh.run(opts, |_| {}).unwrap();
    assert!(r.cancelled, "{r:?}");
    assert!(
        r.output.starts_with("[Command cancelled]\n"),
        "{:?}",
        r.output
    );
    assert!(started.elapsed() < common::HANG_GUARD);
    wait_sleeping(&nap, false);
    // The session goes on.
    let r = sh.run(RunOptions::new("echo after"), |_| {}).unwrap();
    assert_eq!(r.output, "after\n");
}

#[test]
fn bad_options_are_refused_with_the_cores_text() {
    let remote = stdio(&[]);
    let refused = |opts: Value| match remote.shell(options(opts)) {
        Err(conch_remote::RemoteError::Refused { kind, message }) => (kind, message),
        Err(e) => panic!("refused as a bad value, not {e:?}"),
        Ok(_) => panic!("refused"),
    };
    let (kind, message) = refused(json!({"max_bytes": 0}));
    assert_eq!(kind, conch_remote::protocol::ErrorKind::BadValue);
    assert!(message.starts_with("max_bytes must be"), "{message}");
    let (kind, _) = refused(json!({"max_bytes": "many"}));
    assert_eq!(kind, conch_remote::protocol::ErrorKind::WrongType);
    let sh = remote.shell(Map::new()).unwrap();
    let mut opts = RunOptions::new("true");
    opts.cwd = Some("/no/such/dir".into());
    match sh.run(opts, |_| {}) {
        Err(conch_remote::RemoteError::Core(conch_core::Error::InvalidArgument(m))) => {
            assert!(m.contains("/no/such/dir"), "{m}")
        }
        other => panic!("the core's InvalidArgument, as locally: {other:?}"),
    }
}

#[test]
fn a_closed_session_is_lost_to_later_calls() {
    let remote = stdio(&[]);
    let sh = remote.shell(Map::new()).unwrap();
    sh.close().unwrap();
    match sh.run(RunOptions::new("true"), |_| {}) {
        Err(conch_remote::RemoteError::SessionLost(m)) => assert!(m.contains("no session"), "{m}"),
        other => panic!("SessionLost, got {other:?}"),
    }
}

#[test]
fn a_run_from_inside_a_runs_callback_fails_at_once() {
    let remote = stdio(&[]);
    let sh = remote.shell(options(json!({"snapshot": "none"}))).unwrap();
    let mut refused = Vec::new();
    let result = sh
        .run(RunOptions::new("echo outer"), |_| {
            refused.push(sh.run(RunOptions::new("echo inner"), |_| {}).err());
            refused.push(sh.start(JobOptions::new("echo job")).err());
        })
        .unwrap();
    assert_eq!(result.output, "outer\n");
    assert_eq!(refused.len(), 2);
    for err in refused {
        let err = err.expect("refused");
        assert!(
            matches!(&err, RemoteError::Core(conch_core::Error::InvalidArgument(m)) if m.contains("from inside a callback")),
            "{err}"
        );
    }
    // The session goes on.
    let after = sh.run(RunOptions::new("echo after"), |_| {}).unwrap();
    assert_eq!(after.output, "after\n");
}

/// Waits for a server process to exit; its status.
pub fn exits(child: &mut Child) -> std::process::ExitStatus {
    wait_exit(child)
}
