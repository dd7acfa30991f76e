//! `conch rpc` through the built binary: abort while a command runs,
//! pipelined requests in order, bad lines answered without stopping. Every
//! wait is for an event (a reply, a process in /proc) under a hang guard.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::{HANG_GUARD, wait_exit, wait_sleep_100};

/// A running `conch rpc` with a line reader on its stdout.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    dir: PathBuf,
}

impl Server {
    fn start(name: &str) -> Server {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "conch-rpc-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_conch"))
            .arg("rpc")
            .current_dir(&dir)
            .env("CONCH_ARTIFACTS_DIR", dir.join("artifacts"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.unwrap();
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            lines,
            dir,
        }
    }

    fn send(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn next(&self, within: Duration) -> Value {
        match self.lines.recv_timeout(within) {
            Ok(value) => value,
            Err(RecvTimeoutError::Timeout) => panic!("no reply within {within:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("conch rpc closed its stdout"),
        }
    }

    /// The next reply, skipping chunk events.
    fn response(&self, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let value = self.next(deadline.saturating_duration_since(Instant::now()));
            if value["type"] == "response" {
                return value;
            }
        }
    }

    /// Closes stdin and waits for the server to finish.
    fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        wait_exit(&mut self.child).code().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn abort_bash_cancels_a_running_command() {
    let mut server = Server::start("abort");
    server.send(r#"{"id": "warm", "type": "bash", "command": "true"}"#);
    assert_eq!(server.response(HANG_GUARD)["success"], true);

    // The command prints the pid of the process that becomes the sleep.
    server.send(
        r#"{"id": 1, "type": "bash", "command": "/bin/sh -c 'echo started $$; exec /bin/sleep 100'"}"#,
    );
    let mut text = String::new();
    while !text.ends_with('\n') {
        let chunk = server.next(HANG_GUARD);
        assert_eq!(chunk["type"], "bash_chunk", "{chunk}");
        assert_eq!(chunk["id"], 1, "{chunk}");
        text.push_str(chunk["chunk"].as_str().unwrap());
    }
    let pid: u32 = text
        .strip_prefix("started ")
        .and_then(|t| t.strip_suffix('\n'))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not `started <pid>`: {text:?}"));
    // The sleep runs (so the abort hits it, not a shell between its fork and
    // exec), and the abort is what ends it.
    wait_sleep_100(pid, true);
    server.send(r#"{"id": 2, "type": "abort_bash"}"#);
    let abort_reply = server.response(HANG_GUARD);
    assert_eq!(
        abort_reply,
        json!({"type": "response", "id": 2, "command": "abort_bash", "success": true})
    );
    let bash_reply = server.response(HANG_GUARD);
    assert_eq!(bash_reply["id"], 1);
    assert_eq!(bash_reply["command"], "bash");
    assert_eq!(bash_reply["data"]["cancelled"], true);
    assert_eq!(bash_reply["data"]["timedOut"], false);
    assert_eq!(bash_reply["data"]["exitCode"], Value::Null);
    assert_eq!(
        bash_reply["data"]["output"],
        format!("[Command cancelled]\n{text}")
    );
    wait_sleep_100(pid, false);

    // the session goes on
    server.send(r#"{"id": 3, "type": "bash", "command": "echo alive"}"#);
    assert_eq!(server.response(HANG_GUARD)["data"]["output"], "alive\n");
    assert_eq!(server.finish(), 0);
}

#[test]
fn an_abort_sent_right_behind_its_command_still_cancels_it() {
    let mut server = Server::start("abort-race");
    server.send(
        "{\"id\": 1, \"type\": \"bash\", \"command\": \"/bin/sleep 100\"}\n{\"id\": 2, \"type\": \"abort_bash\"}",
    );
    let first = server.response(HANG_GUARD);
    assert_eq!(first["command"], "abort_bash");
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["data"]["cancelled"], true);
}

#[test]
fn a_hundred_pipelined_requests_are_answered_in_order() {
    let mut server = Server::start("pipeline");
    let batch: String = (0..100)
        .map(|i| {
            format!("{{\"id\": {i}, \"type\": \"bash\", \"command\": \"echo n$(({i} * 2))\"}}\n")
        })
        .collect();
    server.send(batch.trim_end());
    let mut chunks_of = Vec::new();
    for i in 0..100 {
        let mut chunk_text = String::new();
        let reply = loop {
            let v = server.next(HANG_GUARD);
            if v["type"] == "bash_chunk" {
                assert_eq!(v["id"], i, "a chunk of another request: {v}");
                chunk_text.push_str(v["chunk"].as_str().unwrap());
            } else {
                break v;
            }
        };
        assert_eq!(reply["id"], i);
        assert_eq!(reply["success"], true);
        assert_eq!(reply["data"]["output"], format!("n{}\n", i * 2));
        chunks_of.push(chunk_text);
    }
    assert!(
        chunks_of
            .iter()
            .enumerate()
            .all(|(i, c)| *c == format!("n{}\n", i * 2))
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn bad_lines_get_error_replies_and_the_server_goes_on() {
    let mut server = Server::start("bad");
    server.send("this is not json");
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["type"], "response");
    assert_eq!(reply["success"], false);
    assert!(
        reply["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid JSON: "),
        "{reply}"
    );

    for (line, error) in [
        ("[1, 2]", "A request must be a JSON object"),
        (r#"{"id": 7}"#, "A request needs a string \"type\""),
        (
            r#"{"id": 8, "type": "bash"}"#,
            "bash needs a string \"command\"",
        ),
        (
            r#"{"id": 9, "type": "bash", "command": "true", "timeout": "x"}"#,
            "\"timeout\" must be a number of seconds",
        ),
        (r#"{"id": 10, "type": "reboot"}"#, "Unknown command: reboot"),
    ] {
        server.send(line);
        let reply = server.response(HANG_GUARD);
        assert_eq!(reply["success"], false, "{line}");
        assert_eq!(reply["error"], error, "{line}");
    }

    server.send(r#"{"id": 11, "type": "bash", "command": "echo fine", "cwd": "."}"#);
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["id"], 11);
    assert_eq!(reply["data"]["output"], "fine\n");
    server.send(r#"{"id": 12, "type": "bash", "command": "pwd", "cwd": "nowhere"}"#);
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["success"], false);
    assert!(
        reply["error"]
            .as_str()
            .unwrap()
            .starts_with("Working directory does not exist: ")
    );
    server.send(r#"{"id": 13, "type": "bash", "command": "/bin/sleep 5", "timeout": 1}"#);
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["data"]["timedOut"], true);
    assert_eq!(
        reply["data"]["output"],
        "[Command timed out after 1 seconds]\n"
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn a_host_that_goes_away_takes_its_command_with_it() {
    // Its host gone, stdin ends and nobody reads stdout: conch rpc cancels
    // the running command and exits, leaving nothing.
    let stamp = format!("1000.{}", std::process::id());
    let mut child = Command::new(env!("CARGO_BIN_EXE_conch"))
        .arg("rpc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let line = format!("{{\"id\":1,\"type\":\"bash\",\"command\":\"/bin/sleep {stamp}\"}}\n");
    stdin.write_all(line.as_bytes()).unwrap();
    let found = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == stamp.as_bytes()))
        })
    };
    let start = Instant::now();
    while !found() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the sleep never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(child.stdout.take());
    drop(stdin);
    let status = wait_exit(&mut child);
    assert!(status.code().is_some(), "{status:?}");
    let start = Instant::now();
    while found() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the sleep outlived the server"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
