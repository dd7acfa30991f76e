//! A `"pty"` session: a core `PtySession`, one command at a time on a
//! terminal, with the local `PtySession`'s calls as requests (docs/remote.md
//! lists them). `pty_start` holds its thread for the command's life, while
//! `pty_write`, `pty_key`, `pty_resize`, `pty_kill`, `pty_screen` and
//! `pty_state` reach the running command from threads of their own, as local calls do
//! from other threads.

use std::time::{Duration, Instant};

use conch_core::pty::{PtyOptions, PtySession};
use conch_core::wire::Spelling;
use conch_core::{CancelToken, Sandbox};
use serde_json::{Map, Value, json};

use super::jobs::{text, wrong};
use super::ops::{options_object, read};
use super::session::RemoteSession;
use crate::protocol::{ErrorKind, Refusal, Request};

/// The requests of a pty session.
const PTY_OPS: &[&str] = &[
    "pty_start",
    "pty_write",
    "pty_key",
    "pty_resize",
    "pty_kill",
    "pty_screen",
    "pty_state",
];

/// How long a closing session waits for its command's kill ladder
/// (SIGINT, SIGTERM, SIGKILL, each after a grace) before it lets go.
const CLOSE_WAIT: Duration = Duration::from_secs(30);
/// How often a closing session looks whether its command is gone (the core
/// tells no one of a run's end but its `start`, which another thread holds).
const CLOSE_LOOK: Duration = Duration::from_millis(10);

/// Whether `op` is a pty session's request.
pub(super) fn is_pty_op(op: &str) -> bool {
    PTY_OPS.contains(&op)
}

/// What a pty session hosts: the terminal, the spelling its client opened
/// it with (each start's options are read in it) and the server's sandbox,
/// for a start that names none.
pub(crate) struct PtyHost {
    pty: PtySession,
    spelling: Spelling,
    sandbox: Option<Sandbox>,
}

impl PtyHost {
    /// A pty session's host. Its `open` takes no options: each start
    /// gives its own, as a local `PtySession` is made with none.
    pub fn open(
        options: &Map<String, Value>,
        spelling: Spelling,
        sandbox: Option<Sandbox>,
    ) -> Result<PtyHost, Refusal> {
        if let Some(name) = options.keys().next() {
            return Err(Refusal::new(
                ErrorKind::BadValue,
                format!(
                    "a pty session takes no options (each pty_start gives its own), got {name}"
                ),
            ));
        }
        Ok(PtyHost {
            pty: PtySession::new(),
            spelling,
            sandbox,
        })
    }

    /// Handles the pty request; its reply's value.
    pub fn op(
        &self,
        session: &RemoteSession,
        request: &Request,
        cancel: CancelToken,
    ) -> Result<Value, Refusal> {
        let pty = &self.pty;
        match request.op.as_str() {
            "pty_start" => self.start(session, request, cancel),
            "pty_write" => Ok(pty
                .write(text(request, "data")?.as_bytes())
                .map(|()| Value::Null)?),
            "pty_key" => Ok(pty
                .write_key(&text(request, "key")?)
                .map(|()| Value::Null)?),
            "pty_resize" => {
                let (cols, rows) = (cells(request, "cols")?, cells(request, "rows")?);
                Ok(pty.resize(cols, rows).map(|()| Value::Null)?)
            }
            "pty_kill" => Ok(pty.kill().map(|()| Value::Null)?),
            "pty_screen" => Ok(json!(pty.screen_text())),
            "pty_state" => Ok(json!({
                "running": pty.is_running(),
                "cursor": pty.cursor_position(),
                "size": pty.size(),
            })),
            op => unreachable!("{op} is no pty request"),
        }
    }

    /// Runs the command of the request's options on the terminal, its
    /// output sent as `chunk` events as it comes; `cancel` (an abort
    /// naming the request, or the session's) stops it as the local cancel
    /// token does.
    fn start(
        &self,
        session: &RemoteSession,
        request: &Request,
        cancel: CancelToken,
    ) -> Result<Value, Refusal> {
        let given = options_object(request)?;
        let own_sandbox = given.get("sandbox").is_some_and(|s| !s.is_null());
        let mut opts: PtyOptions = read(given, self.spelling)?;
        if !own_sandbox {
            opts.sandbox = self.sandbox.clone();
        }
        opts.cancel = Some(cancel);
        let id = &request.id;
        let result = self.pty.start(opts, |text| {
            session.send(json!({"event": "chunk", "id": id, "text": text}));
        })?;
        Ok(serde_json::to_value(result).expect("a result serializes"))
    }

    /// Stops what runs (an `abort` naming no request); nothing running is
    /// no error.
    pub fn abort(&self) {
        let _ = self.pty.kill();
    }

    /// Stops what runs and waits, within a bound, for it to be gone.
    pub fn close(&self) {
        self.abort();
        let until = Instant::now() + CLOSE_WAIT;
        while self.pty.is_running() && Instant::now() < until {
            std::thread::sleep(CLOSE_LOOK);
        }
    }
}

/// A terminal size field: a whole number, past what a terminal takes the
/// largest it takes (the core clamps it further, as a local resize does).
fn cells(request: &Request, name: &str) -> Result<u16, Refusal> {
    match request.field(name).and_then(Value::as_u64) {
        Some(n) => Ok(u16::try_from(n).unwrap_or(u16::MAX)),
        None => Err(wrong(name, "a whole number >= 0", request.field(name))),
    }
}
