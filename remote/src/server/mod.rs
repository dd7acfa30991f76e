//! `conch serve`: one server, many sessions, one protocol
//! (docs/remote.md), over stdio ([`stdio`]) or a WebSocket ([`listen`]).
//!
//! A session outlives its client's connection for the grace period
//! ([`ServeOptions::grace`]): a client that comes back within it attaches
//! again and gets every frame after the last it saw. Past it, the session
//! is closed (its processes killed, as a local `Shell::close` does).

mod answers;
mod artifacts;
mod conn;
mod files;
mod hosted;
mod jobs;
pub mod listen;
mod ops;
mod pty;
mod session;
pub mod stdio;
mod tool;
mod websocket;

use conch_core::sync::lock;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conch_core::{CancelToken, EngineChoice, Sandbox};

use crate::protocol::{ErrorKind, MAX_FRAME, Refusal, Request, error_reply};
use answers::Answers;
use answers::Seen;
use conn::Outgoing;
pub use session::KEPT_BYTES;
use session::RemoteSession;

/// How a server runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// How long a session waits for its client to come back.
    pub grace: Duration,
    /// Sessions open at once, at most.
    pub max_sessions: usize,
    /// The largest frame read.
    pub max_frame: usize,
    /// The sandbox of a session whose client asks for none (the server's
    /// sandbox flags); a client's own `sandbox` option replaces it.
    pub sandbox: Option<Sandbox>,
    /// The loop of a shell or tool session whose client names none (the server's
    /// `--engine`); a client's own `engine` option replaces it.
    pub engine: EngineChoice,
    /// The program a file request under a sandbox runs in, started inside
    /// that sandbox with the argument [`crate::files::HELPER_ARG`] (the
    /// server's own binary: `conch` sets itself). `None`: such requests
    /// are refused (`SandboxUnavailable`); the others run in the server.
    pub files_helper: Option<PathBuf>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            grace: Duration::from_secs(60),
            max_sessions: 1024,
            max_frame: MAX_FRAME,
            sandbox: None,
            engine: EngineChoice::Auto,
            files_helper: None,
        }
    }
}

/// The server's state: its sessions, and the answers to its own requests
/// that change something (a retried `open` must not open a second
/// session, a retried remove must not fail for the first one's success).
pub struct Server {
    opts: ServeOptions,
    sessions: Mutex<HashMap<String, Arc<RemoteSession>>>,
    next_session: AtomicU64,
    answers: Answers,
}

impl Server {
    pub fn new(opts: ServeOptions) -> Arc<Server> {
        Arc::new(Server {
            opts,
            sessions: Mutex::new(HashMap::new()),
            next_session: AtomicU64::new(1),
            answers: Answers::default(),
        })
    }

    pub fn options(&self) -> &ServeOptions {
        &self.opts
    }

    fn session(&self, id: Option<&str>) -> Result<Arc<RemoteSession>, Refusal> {
        let Some(id) = id else {
            return Err(Refusal::new(
                ErrorKind::BadRequest,
                "this request needs a session",
            ));
        };
        let sessions = lock(&self.sessions);
        sessions.get(id).cloned().ok_or_else(|| {
            Refusal::new(
                ErrorKind::UnknownSession,
                format!("no session {id} (never opened, closed, or its grace period ran out)"),
            )
        })
    }

    /// Takes a request read on the runtime: the cancel token of a request
    /// that waits (a run, a poll, a wait for jobs) is made here, in the
    /// order the requests came, so an abort that follows finds it even
    /// before its thread starts; a request sent `cancelled` (a call
    /// cancelled before it was sent) gets it cancelled already, and runs
    /// nothing, as locally. Then the request is handled on a blocking
    /// thread.
    fn take(self: Arc<Self>, request: Request, out: Outgoing) {
        let waits = ops::waits(&request.op);
        let cancel = waits.then(|| {
            let token = CancelToken::new();
            if request.field("cancelled").and_then(|v| v.as_bool()) == Some(true) {
                token.cancel();
            }
            if let Ok(session) = self.session(request.session.as_deref()) {
                session.register_run(&request.id, token.clone());
            }
            token
        });
        tokio::task::spawn_blocking(move || self.handle(request, &out, cancel));
    }

    /// Handles one request: a session's is answered through the session
    /// (numbered, kept for a retry), the others straight to the client.
    fn handle(self: &Arc<Self>, request: Request, out: &Outgoing, cancel: Option<CancelToken>) {
        if ops::is_session_op(&request.op) {
            let session = match self.session(request.session.as_deref()) {
                Ok(session) => session,
                Err(refusal) => {
                    out.send_value(&error_reply(&request.id, &refusal));
                    return;
                }
            };
            match session.seen(&request.id) {
                Seen::Running => {}
                Seen::Answered(reply) => {
                    session.forget_run(&request.id);
                    session.send(reply);
                }
                Seen::New => {
                    let reply = ops::session_op(self, &session, &request, cancel);
                    session.forget_run(&request.id);
                    session.answer(&request.id, reply);
                }
            }
        } else if ops::answered_once(&request.op) {
            let reply = match self.answers.seen(&request.id) {
                Seen::New => {
                    let reply = ops::server_op(self, &request, out);
                    self.answers.keep(&request.id, &reply);
                    out.send_value(&reply);
                    return;
                }
                // The first one's connection dropped before its reply.
                Seen::Running => match self.answers.wait(&request.id) {
                    Some(reply) => reply,
                    None => return,
                },
                Seen::Answered(reply) => reply,
            };
            ops::retried(self, &request, &reply, out);
            out.send_value(&reply);
        } else {
            let reply = ops::server_op(self, &request, out);
            out.send_value(&reply);
        }
    }

    /// Adds a new session, unless the server holds its most.
    fn add(
        &self,
        make: impl FnOnce(String) -> Result<RemoteSession, Refusal>,
    ) -> Result<Arc<RemoteSession>, Refusal> {
        let id = format!("s{}", self.next_session.fetch_add(1, Ordering::SeqCst));
        if lock(&self.sessions).len() >= self.opts.max_sessions {
            return Err(Refusal::new(
                ErrorKind::TooManySessions,
                format!(
                    "the server holds {} sessions, its most: close one first",
                    self.opts.max_sessions
                ),
            ));
        }
        let session = Arc::new(make(id.clone())?);
        lock(&self.sessions).insert(id, session.clone());
        Ok(session)
    }

    /// Closes the session `id` (its processes killed); false when there
    /// was none.
    fn close_session(&self, id: &str) -> bool {
        let session = lock(&self.sessions).remove(id);
        match session {
            Some(session) => {
                session.hosted.close();
                true
            }
            None => false,
        }
    }

    /// The client of `out` is gone: its sessions wait for it for the grace
    /// period, then close.
    fn connection_ended(self: &Arc<Self>, out: &Outgoing) {
        let sessions: Vec<_> = lock(&self.sessions).values().cloned().collect();
        for session in sessions {
            let Some(n) = session.detach(out) else {
                continue;
            };
            if self.opts.grace.is_zero() {
                self.close_session(&session.id);
                continue;
            }
            let server = self.clone();
            let grace = self.opts.grace;
            tokio::runtime::Handle::current().spawn(async move {
                tokio::time::sleep(grace).await;
                tokio::task::spawn_blocking(move || {
                    if session.still_detached(n) {
                        server.close_session(&session.id);
                    }
                });
            });
        }
    }

    /// Closes every session, in parallel: each through the kill ladder.
    pub fn close_all(&self) {
        let sessions: Vec<_> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        std::thread::scope(|scope| {
            for session in &sessions {
                scope.spawn(|| session.hosted.close());
            }
        });
    }

    /// Sessions open now.
    pub fn session_count(&self) -> usize {
        lock(&self.sessions).len()
    }
}
