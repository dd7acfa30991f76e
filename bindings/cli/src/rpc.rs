//! `conch rpc`: the user's bash over JSON lines on stdin/stdout.
//!
//! Requests, one JSON object per line:
//! - `{"id": …, "type": "bash", "command": "…", "cwd"?: "…", "timeout"?: secs}`
//!   streams `{"type": "bash_chunk", "id": …, "chunk": "…"}` events, then
//!   `{"type": "response", "id": …, "command": "bash", "success": true,
//!   "data": {BashResult, camelCase}}`;
//! - `{"id": …, "type": "abort_bash"}` cancels the oldest bash request not yet
//!   answered (the running one, or the next to run) and is answered at once
//!   with `{"type": "response", "id": …, "command": "abort_bash", "success": true}`.
//!
//! stdin is read on its own thread and commands run on another, so an abort
//! is handled while a command runs, not after it. Every other reply keeps
//! the order of the requests. A line that is not a valid request gets
//! `{"type": "response", "success": false, "error": "…"}` (with the `id`
//! and `command` when they could be read) and the server goes on. At the
//! end of stdin, the queued commands finish, then conch exits, unless
//! nobody reads stdout any more either: then the host is gone, and the
//! running and queued commands are cancelled at once (a command of the
//! host's would otherwise run on, unseen, until its timeout).
//!
//! Commands run in one [`BashSession`]: `cd` and exports persist between
//! requests; each has a timeout (default 300 s, clamped to 1..3600) and
//! spills its full output to an artifact. A `timeout` is checked by the
//! core (`timeout must be a positive number of seconds, got -1`), then
//! clamped.

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};

use conch_core::CancelToken;
use conch_core::shell::options::{TimeUnit, timeout_option};
use conch_core::sync::lock;
use conch_core::tool::{BangOptions, BashSession, BashSessionConfig, clamp_timeout};
use serde_json::{Value, json};

use crate::args::HELP;
use crate::paths::default_artifacts_dir;

/// Serve bash over JSON lines on stdin/stdout
#[derive(clap::Args)]
#[command(
    override_usage = "conch rpc [--cwd DIR] [--artifacts DIR]",
    help_template = HELP,
    after_help = "\
Requests, one per line:
  {\"id\":1,\"type\":\"bash\",\"command\":\"make\",\"cwd\":\"sub\",\"timeout\":60}
  {\"id\":2,\"type\":\"abort_bash\"}
Events {\"type\":\"bash_chunk\",\"id\":1,\"chunk\":\"…\"}; replies
{\"type\":\"response\",\"id\":1,\"command\":\"bash\",\"success\":true,\"data\":{…}}."
)]
pub struct Args {
    /// directory the session's bash starts in
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    cwd: Option<PathBuf>,
    /// where full outputs are spilled (default: see `conch artifact`)
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    artifacts: Option<PathBuf>,
}

/// A request waiting for the command thread.
enum Job {
    Bash {
        id: Value,
        command: String,
        options: BangOptions,
    },
    /// A reply that must keep its place in the order.
    Reply(Value),
}

/// Where replies and events go: whole lines, written under stdout's lock
/// so the two threads never interleave within a line.
#[derive(Clone, Copy)]
struct Out;

impl Out {
    fn send(&self, value: &Value) {
        let mut line = value.to_string();
        line.push('\n');
        let mut stdout = std::io::stdout().lock();
        // A client that went away cannot be told anything.
        let _ = stdout
            .write_all(line.as_bytes())
            .and_then(|()| stdout.flush());
    }
}

pub fn main(p: Args) -> Result<i32, String> {
    let session = Arc::new(BashSession::new(BashSessionConfig {
        cwd: p.cwd,
        artifacts_dir: Some(p.artifacts.unwrap_or_else(default_artifacts_dir)),
        ..BashSessionConfig::default()
    }));
    let out = Out;
    // Cancel tokens of the bash requests not answered yet, oldest first.
    let pending: Arc<Mutex<VecDeque<CancelToken>>> = Arc::default();
    let (jobs, queue) = channel::<Job>();
    let worker = {
        let (session, pending) = (session.clone(), pending.clone());
        std::thread::Builder::new()
            .name("conch-rpc-run".into())
            .spawn(move || run_jobs(queue, &session, &out, &pending))
            .map_err(|e| format!("cannot start the command thread: {e}"))?
    };

    let mut stdin = std::io::stdin().lock();
    let mut line = Vec::new();
    let mut status = 0;
    loop {
        line.clear();
        // Bytes, not `lines()`: a line that is not UTF-8 is a bad request to
        // answer, not the end of the input.
        match stdin.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                crate::eprint_line(&format!("conch rpc: cannot read stdin: {e}"));
                status = 1;
                break;
            }
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        let job = match read_request(&line) {
            Ok(Request::Bash {
                id,
                command,
                cwd,
                timeout,
            }) => {
                let cancel = CancelToken::new();
                lock(&pending).push_back(cancel.clone());
                Job::Bash {
                    id,
                    command,
                    options: BangOptions {
                        cwd,
                        timeout,
                        cancel: Some(cancel),
                    },
                }
            }
            Ok(Request::Abort { id }) => {
                if let Some(oldest) = lock(&pending).front() {
                    oldest.cancel();
                }
                out.send(&json!({"type": "response", "id": id, "command": "abort_bash", "success": true}));
                continue;
            }
            Err(reply) => Job::Reply(reply),
        };
        if jobs.send(job).is_err() {
            break;
        }
    }
    if stdout_reader_gone() {
        for cancel in lock(&pending).iter() {
            cancel.cancel();
        }
    }
    drop(jobs);
    let _ = worker.join();
    session.close();
    Ok(status)
}

/// Whether the read end of stdout is closed (a pipe whose reader exited
/// polls as an error for its writer).
fn stdout_reader_gone() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdout = std::io::stdout();
    let mut fds = [PollFd::new(&stdout, PollFlags::OUT)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut fds, Some(&now)).is_ok()
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}

fn run_jobs(
    queue: Receiver<Job>,
    session: &BashSession,
    out: &Out,
    pending: &Mutex<VecDeque<CancelToken>>,
) {
    for job in queue {
        match job {
            Job::Reply(reply) => out.send(&reply),
            Job::Bash {
                id,
                command,
                options,
            } => {
                let result = session.execute_bash_with(&command, options, |chunk| {
                    out.send(&json!({"type": "bash_chunk", "id": id, "chunk": chunk}));
                });
                lock(pending).pop_front();
                out.send(&match result {
                    Ok(data) => json!({"type": "response", "id": id, "command": "bash", "success": true, "data": data}),
                    Err(e) => json!({"type": "response", "id": id, "command": "bash", "success": false, "error": e.to_string()}),
                });
            }
        }
    }
}

enum Request {
    Bash {
        id: Value,
        command: String,
        cwd: Option<PathBuf>,
        timeout: Option<std::time::Duration>,
    },
    Abort {
        id: Value,
    },
}

/// A request, or the error reply for a line that is not one.
fn read_request(line: &[u8]) -> Result<Request, Value> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| error_reply(&Value::Null, None, &format!("Invalid JSON: {e}")))?;
    let Value::Object(request) = value else {
        return Err(error_reply(
            &Value::Null,
            None,
            "A request must be a JSON object",
        ));
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let kind = request.get("type").and_then(Value::as_str);
    match kind {
        Some("bash") => {
            let command = match request.get("command") {
                Some(Value::String(c)) => c.clone(),
                _ => return Err(error_reply(&id, kind, "bash needs a string \"command\"")),
            };
            let cwd = match request.get("cwd") {
                None | Some(Value::Null) => None,
                Some(Value::String(c)) => Some(PathBuf::from(c)),
                Some(_) => return Err(error_reply(&id, kind, "\"cwd\" must be a string")),
            };
            let timeout = match request.get("timeout") {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => {
                    let seconds = n.as_f64();
                    if let Some(s) = seconds {
                        timeout_option("timeout", s, TimeUnit::Seconds)
                            .map_err(|e| error_reply(&id, kind, &e.to_string()))?;
                    }
                    Some(clamp_timeout(seconds))
                }
                Some(_) => {
                    return Err(error_reply(
                        &id,
                        kind,
                        "\"timeout\" must be a number of seconds",
                    ));
                }
            };
            Ok(Request::Bash {
                id,
                command,
                cwd,
                timeout,
            })
        }
        Some("abort_bash") => Ok(Request::Abort { id }),
        Some(other) => Err(error_reply(&id, kind, &format!("Unknown command: {other}"))),
        None => Err(error_reply(&id, None, "A request needs a string \"type\"")),
    }
}

fn error_reply(id: &Value, command: Option<&str>, error: &str) -> Value {
    let mut reply = json!({"type": "response", "success": false, "error": error});
    if !id.is_null() {
        reply["id"] = id.clone();
    }
    if let Some(command) = command {
        reply["command"] = command.into();
    }
    reply
}
