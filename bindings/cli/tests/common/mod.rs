//! Helpers shared by the tests of the `conch` binary: hang guards, the
//! check that a process runs (then no longer runs) a given command,
//! scratch directories, the JSON lines a server writes, and a server
//! speaking them (`conch rpc`, `conch mcp`).

use std::cell::RefCell;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A hang guard for every wait of these tests (a reply, a process appearing
/// or disappearing, the binary exiting): far above what any of them takes,
/// even on a busy machine, so it only ends a test that would hang. Never a
/// measure of speed.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// Polls `done` until it is true; panics naming `what` after the hang guard.
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + HANG_GUARD;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what}: not within {HANG_GUARD:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A `/bin/sleep` argument no other process uses: `base` whole seconds
/// (far beyond any test) and a fraction made of a counter and this
/// process's pid. Tests that look for their sleeps in /proc then find
/// their own only, with other tests of this binary running beside them and
/// another run of the suite (the test command's eval-loop pass) at once.
#[allow(dead_code)] // not every test binary looks for its sleeps by argument
pub fn unique_sleep(base: u32) -> String {
    static N: AtomicUsize = AtomicUsize::new(1);
    let n = N.fetch_add(1, Ordering::SeqCst) % 1000;
    format!("{base}.{n:03}{:05}", std::process::id() % 100_000)
}

/// A background command whose `body` runs once the session's next run is
/// [`RELEASE`]: it is still running when the run that starts it returns,
/// however loaded the machine (what it printed before would be that
/// run's output). It waits while the file its run made is there; `$$` is
/// the session's bash, in the subshell too.
#[allow(dead_code)] // for the binaries whose tests leave jobs
pub fn gated(body: &str) -> String {
    format!(
        ": > /tmp/conch-gate-$$; (while [ -e /tmp/conch-gate-$$ ]; do /bin/sleep 0.02; done; {body}) &"
    )
}

/// The run that lets a [`gated`] command go on: it removes the file.
#[allow(dead_code)] // as `gated`
pub const RELEASE: &str = "rm /tmp/conch-gate-$$";

/// Whether `pid` runs `/bin/sleep 100` (its /proc cmdline): a zombie, a
/// recycled pid, or a process that has not yet exec'd the sleep is not it.
pub fn runs_sleep_100(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == b"/bin/sleep\x00100\x00")
}

/// Waits until `pid` runs `/bin/sleep 100` (`alive`) or no longer does. A
/// kill check asserts both, in that order: the process was there, then it
/// is gone.
pub fn wait_sleep_100(pid: u32, alive: bool) {
    let state = if alive { "runs" } else { "no longer runs" };
    wait_until(&format!("pid {pid} {state} /bin/sleep 100"), || {
        runs_sleep_100(pid) == alive
    });
}

/// Waits for `child` to exit; kills it and panics after the hang guard.
pub fn wait_exit(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("conch did not exit within {HANG_GUARD:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A new, empty directory of this test process, named after `what`.
pub fn scratch_dir(what: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "conch-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The JSON values `stdout` writes, a line each, read on a thread of their
/// own so a test can wait for one under the hang guard; a line that is
/// not JSON fails the test, naming it.
#[allow(dead_code)] // not every test binary talks to a JSON-lines server
pub fn json_lines(stdout: ChildStdout) -> Receiver<serde_json::Value> {
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            let value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if tx.send(value).is_err() {
                return;
            }
        }
    });
    lines
}

/// A `conch rpc` or `conch mcp` speaking JSON lines.
#[allow(dead_code)] // for the binaries that talk to such a server
pub struct Lines {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// The methods of the notifications a `reply` went past.
    pub notified: RefCell<Vec<String>>,
}

#[allow(dead_code)] // as `Lines`
impl Lines {
    /// `conch <args>` started in `dir`, its artifacts in `dir/artifacts`.
    pub fn start(dir: &Path, args: &[&str]) -> Lines {
        let mut child = Command::new(env!("CARGO_BIN_EXE_conch"))
            .args(args)
            .current_dir(dir)
            .env("CONCH_ARTIFACTS_DIR", dir.join("artifacts"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = json_lines(child.stdout.take().unwrap());
        Lines {
            stdin: child.stdin.take(),
            child,
            lines,
            notified: Default::default(),
        }
    }

    pub fn send(&mut self, value: Value) {
        self.send_text(&value.to_string());
    }

    /// `text` and a newline: a line that need not be JSON.
    pub fn send_text(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The server's stdin, for a test that writes to it from a thread of
    /// its own while it reads the replies.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().unwrap()
    }

    /// The next line with this `id` (events and other replies skipped).
    pub fn reply(&self, id: impl Into<Value>) -> Value {
        self.reply_by(id, Instant::now() + HANG_GUARD)
    }

    /// As [`Lines::reply`], with the hang guard of a whole exchange: the
    /// reply comes before `deadline`, however many lines came first.
    pub fn reply_by(&self, id: impl Into<Value>, deadline: Instant) -> Value {
        let id = id.into();
        loop {
            let value = self.next_by(deadline);
            if value.get("id") == Some(&id) && value["type"] != "bash_chunk" {
                return value;
            }
            if let Some(method) = value["method"].as_str() {
                self.notified.borrow_mut().push(method.to_string());
            }
        }
    }

    /// The next line, before `deadline`.
    pub fn next_by(&self, deadline: Instant) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        self.lines
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("no reply before the hang guard ran out: {e}"))
    }

    /// Ends stdin; the server exits with 0.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        assert!(wait_exit(&mut self.child).success());
    }
}

/// An MCP request and its reply.
#[allow(dead_code)] // for the binaries that talk to `conch mcp`
pub fn mcp(server: &mut Lines, id: u64, method: &str, params: Value) -> Value {
    server.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    server.reply(id)
}

/// The MCP handshake, as request 0: the `initialize` reply.
#[allow(dead_code)] // as `mcp`
pub fn mcp_handshake(server: &mut Lines) -> Value {
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "conch-test", "version": "1"}});
    let r = mcp(server, 0, "initialize", init);
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    r
}

/// The `tools/call` of the bash tool that runs `command`.
#[allow(dead_code)] // as `mcp`
pub fn mcp_bash_request(id: u64, command: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "bash", "arguments": {"command": command}}})
}

/// The text of a `tools/call` of the bash tool.
#[allow(dead_code)] // as `mcp`
pub fn mcp_bash(server: &mut Lines, id: u64, command: &str) -> String {
    server.send(mcp_bash_request(id, command));
    mcp_text(&server.reply(id))
}

/// The text of a `tools/call` reply.
#[allow(dead_code)] // as `mcp`
pub fn mcp_text(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_string()
}
