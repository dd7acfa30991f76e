//! `conch rpc` through the built binary: abort while a command runs,
//! pipelined requests in order, bad lines answered without stopping, the
//! session's jobs listed and polled (a waiting poll holds up nothing). Every
//! wait is for an event (a reply, a process in /proc) under a hang guard.
//! Here: the server under test and its helpers. The tests: `requests`
//! (aborts, pipelining, bad lines, the schema's options), `lifetime` (how
//! a server ends) and `jobs` (the session's jobs).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "../common/mod.rs"]
mod common;
mod jobs;
mod lifetime;
mod requests;

use common::{HANG_GUARD, RELEASE, gated, wait_exit, wait_sleep_100, wait_until};

/// A running `conch rpc` with a line reader on its stdout.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    dir: PathBuf,
    /// `job_exit` events read while waiting for a reply.
    exits: std::cell::RefCell<Vec<Value>>,
}

impl Server {
    fn start(name: &str) -> Server {
        let dir = common::scratch_dir(&format!("rpc-{name}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_conch"))
            .arg("rpc")
            .current_dir(&dir)
            .env("CONCH_ARTIFACTS_DIR", dir.join("artifacts"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = common::json_lines(child.stdout.take().unwrap());
        Server {
            stdin: child.stdin.take(),
            child,
            lines,
            dir,
            exits: Default::default(),
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
            if value["type"] == "job_exit" {
                self.exits.borrow_mut().push(value);
            }
        }
    }

    /// The next `job_exit` event (one read earlier first).
    fn job_exit(&self) -> Value {
        if let Some(event) = self.exits.borrow_mut().pop() {
            return event;
        }
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let value = self.next(deadline.saturating_duration_since(Instant::now()));
            if value["type"] == "job_exit" {
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

impl Server {
    /// Sends a request and returns its reply (the next one: only for
    /// requests sent when nothing else is pending).
    fn ask(&mut self, request: Value) -> Value {
        self.send(&request.to_string());
        let reply = self.response(HANG_GUARD);
        assert_eq!(reply["id"], request["id"], "{reply}");
        reply
    }

    /// Runs a command, expecting exactly `output`.
    fn bash(&mut self, id: &str, command: &str, output: &str) {
        let reply = self.ask(json!({"id": id, "type": "bash", "command": command}));
        assert_eq!(reply["data"]["output"], output, "{command}: {reply}");
    }

    /// The session's jobs (the `data` of a successful `job_list`).
    fn jobs(&mut self) -> Vec<Value> {
        let reply = self.ask(json!({"id": "list", "type": "job_list"}));
        assert_eq!(reply["command"], "job_list", "{reply}");
        assert_eq!(reply["success"], true, "{reply}");
        reply["data"].as_array().unwrap().clone()
    }

    /// The `data` of a successful `job_poll` with `fields`.
    fn poll(&mut self, fields: Value) -> Value {
        let mut request = json!({"id": "poll", "type": "job_poll"});
        for (k, v) in fields.as_object().unwrap() {
            request[k] = v.clone();
        }
        let reply = self.ask(request);
        assert_eq!(reply["command"], "job_poll", "{reply}");
        assert_eq!(reply["success"], true, "{reply}");
        reply["data"].clone()
    }

    /// The id of the one job of the session.
    fn only_job(&mut self) -> u64 {
        let jobs = self.jobs();
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        jobs[0]["job"].as_u64().unwrap()
    }
}

/// Whether a process with `stamp` among its arguments is alive.
fn running(stamp: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == stamp.as_bytes()))
    })
}

/// Waits (under the hang guard) until a process with `stamp` runs.
fn wait_running(stamp: &str) {
    let start = Instant::now();
    while !running(stamp) {
        assert!(start.elapsed() < HANG_GUARD, "the command never started");
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Server {
    /// Closes stdin, waits for the server to finish, and returns its exit
    /// status with the lines it wrote that were not read yet (`job_exit`
    /// events read while waiting for replies included).
    fn finish_lines(mut self) -> (i32, Vec<Value>) {
        drop(self.stdin.take());
        let code = wait_exit(&mut self.child).code().unwrap();
        let mut lines = std::mem::take(&mut *self.exits.borrow_mut());
        loop {
            match self.lines.recv_timeout(HANG_GUARD) {
                Ok(value) => lines.push(value),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => panic!("stdout stayed open after the exit"),
            }
        }
        (code, lines)
    }

    /// The `data` of a successful reply to `request` (with `id` "r").
    fn ok(&mut self, mut request: Value) -> Value {
        request["id"] = "r".into();
        let reply = self.ask(request.clone());
        assert_eq!(reply["success"], true, "{request}: {reply}");
        assert_eq!(reply["command"], request["type"], "{reply}");
        reply["data"].clone()
    }

    /// The error of a failed reply to `request`.
    fn refused(&mut self, mut request: Value) -> String {
        request["id"] = "e".into();
        let reply = self.ask(request.clone());
        assert_eq!(reply["success"], false, "{request}: {reply}");
        assert_eq!(reply["command"], request["type"], "{reply}");
        reply["error"].as_str().unwrap().to_string()
    }
}
