//! What each request does (docs/remote.md lists them): the server's own
//! (`hello`, `open`, `attach`, the file requests of [`super::files`]) and a
//! session's: `abort` and `close` of every kind, the artifact reads of
//! [`super::artifacts`] (of every kind with a store), then each kind's own
//! (a shell's `run` and the job requests of [`super::jobs`], a pty's of
//! [`super::pty`]).
//! Options are read by the core's readers, so a bad value is refused with
//! the same text as on a local face.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use conch_core::wire::{self, Given, Spelling};
use conch_core::{CancelToken, JobExitHook, Network, RunOptions, Shell, ShellOptions};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::conn::Outgoing;
use super::hosted::Hosted;
use super::pty::{self, PtyHost};
use super::session::RemoteSession;
use super::{Server, artifacts, files, jobs, tool};
use crate::protocol::{ErrorKind, PROTOCOL, Refusal, Request, error_reply, ok_reply};

/// How long a `close` waits for the ends of the jobs it killed to be sent:
/// far more than a job's kill ladder and its collection take.
const JOB_ENDS_WAIT: Duration = Duration::from_secs(10);

/// Whether `op` is a session's (answered through it).
pub(super) fn is_session_op(op: &str) -> bool {
    matches!(op, "abort" | "close") || artifacts::is_artifact_op(op) || kind_of(op).is_some()
}

/// The kind of session whose request `op` is.
fn kind_of(op: &str) -> Option<&'static str> {
    if matches!(
        op,
        "run" | "background_jobs" | "engine" | "set_network" | "reset"
    ) || jobs::is_job_op(op)
    {
        return Some("shell");
    }
    if pty::is_pty_op(op) {
        return Some("pty");
    }
    if tool::is_tool_op(op) {
        return Some("tool");
    }
    None
}

/// Whether request `op` waits (on a command, a job): an `abort` naming it
/// ends the wait.
pub(super) fn waits(op: &str) -> bool {
    matches!(
        op,
        "run" | "job_poll" | "job_wait_any" | "pty_start" | "tool_execute" | "job_tool_execute"
    )
}

/// Handles a request that is no session's; returns its reply.
pub(super) fn server_op(server: &Arc<Server>, request: &Request, out: &Outgoing) -> Value {
    let outcome = match request.op.as_str() {
        "hello" => Ok(
            json!({"protocol": PROTOCOL, "server": concat!("conch ", env!("CARGO_PKG_VERSION"))}),
        ),
        "open" => return open(server, request, out),
        "attach" => attach(server, request, out),
        op if files::is_file_op(op) => files::file_op(server, request),
        op => Err(Refusal::new(
            ErrorKind::BadRequest,
            format!("unknown op {op:?}"),
        )),
    };
    reply(&request.id, outcome)
}

/// Handles a session's request; returns its reply.
pub(super) fn session_op(
    server: &Server,
    session: &Arc<RemoteSession>,
    request: &Request,
    cancel: Option<CancelToken>,
) -> Value {
    let cancel = cancel.unwrap_or_default();
    let outcome = match request.op.as_str() {
        "abort" => {
            let cancelled = session.cancel_runs(request.field("run"));
            if request.field("run").is_none() {
                abort(&session.hosted);
            }
            Ok(json!({"cancelled": cancelled}))
        }
        "close" => {
            // Answered after the ends of the jobs it kills, as a local
            // close returns after telling them.
            let jobs: Vec<_> = match &session.hosted {
                Hosted::Shell(shell) => shell.jobs().iter().map(|j| j.job).collect(),
                Hosted::Pty(_) | Hosted::Tool(_) => Vec::new(),
            };
            server.close_session(&session.id);
            session.wait_ended(&jobs, JOB_ENDS_WAIT);
            Ok(Value::Null)
        }
        op if artifacts::is_artifact_op(op) => session
            .hosted
            .artifacts(op)
            .and_then(|store| artifacts::artifact_op(store, request)),
        op if kind_of(op) != Some(session.hosted.kind()) => Err(session
            .hosted
            .wrong_kind(op, kind_of(op).unwrap_or("other"))),
        _ => match &session.hosted {
            Hosted::Shell(shell) => shell_op(session, shell, request, cancel),
            Hosted::Pty(pty) => pty.op(session, request, cancel),
            Hosted::Tool(hosted) => tool::tool_op(session, hosted, request, cancel),
        },
    };
    reply(&request.id, outcome)
}

/// Aborts whatever the session runs.
fn abort(hosted: &Hosted) {
    match hosted {
        Hosted::Shell(shell) => shell.abort(),
        Hosted::Pty(pty) => pty.abort(),
        // A tool's calls are its waiting requests, cancelled already.
        Hosted::Tool(_) => {}
    }
}

/// Handles a shell session's request.
fn shell_op(
    session: &RemoteSession,
    shell: &Shell,
    request: &Request,
    cancel: CancelToken,
) -> Result<Value, Refusal> {
    match request.op.as_str() {
        "run" => run(session, shell, request, cancel),
        "background_jobs" => Ok(json!(shell.background_jobs())),
        "engine" => Ok(json!(shell.engine()?.as_str())),
        "set_network" => set_network(shell, request),
        "reset" => {
            shell.reset()?;
            Ok(Value::Null)
        }
        _ => jobs::job_op(shell, request, cancel),
    }
}

fn reply(id: &Value, outcome: Result<Value, Refusal>) -> Value {
    match outcome {
        Ok(value) => ok_reply(id, value),
        Err(refusal) => error_reply(id, &refusal),
    }
}

/// Whether request `op` of the server's own changes something, so that
/// a retry gets the first one's answer instead of running again.
pub(super) fn answered_once(op: &str) -> bool {
    matches!(op, "open" | "file_write" | "file_remove")
}

/// A retry of `request`, answered `reply` before: an `open`'s session goes
/// to the retrying connection, as the first answer's did to the one that
/// dropped.
pub(super) fn retried(server: &Server, request: &Request, reply: &Value, out: &Outgoing) {
    if request.op == "open"
        && let Some(session) = reply["ok"]["session"].as_str()
        && let Ok(session) = server.session(Some(session))
    {
        session.attach(out.clone(), 0);
    }
}

/// Opens a session with the server's defaults and the client's options,
/// attached to the client's connection.
fn open(server: &Arc<Server>, request: &Request, out: &Outgoing) -> Value {
    let outcome = (|| {
        let given = options_object(request)?;
        let own_sandbox = given.get("sandbox").is_some_and(|s| !s.is_null());
        let own_engine = given.get("engine").is_some_and(|e| !e.is_null());
        let spelling = match request.field("spelling").and_then(Value::as_str) {
            None | Some("wire") => Spelling::Wire,
            Some("camel_case") => Spelling::CamelCase,
            Some(other) => {
                return Err(Refusal::new(
                    ErrorKind::BadValue,
                    format!("spelling must be \"wire\" or \"camel_case\", got {other:?}"),
                ));
            }
        };
        // The session's events are sent by what it hosts, made before it
        // (nothing is sent before the session exists).
        let events: Arc<OnceLock<Weak<RemoteSession>>> = Arc::default();
        let hosted = match request.field("kind").map(|k| (k, k.as_str())) {
            None | Some((_, Some("shell"))) => {
                let mut opts: ShellOptions = read(given, spelling)?;
                if !own_sandbox {
                    opts.sandbox = server.options().sandbox.clone();
                }
                if !own_engine {
                    opts.engine = server.options().engine;
                }
                files::let_run_helper(&mut opts, server.options());
                opts.on_job_exit = Some(job_exit_events(events.clone()));
                Hosted::Shell(Arc::new(Shell::new(opts)?))
            }
            Some((_, Some("pty"))) => Hosted::Pty(Box::new(PtyHost::open(
                &given,
                spelling,
                server.options().sandbox.clone(),
            )?)),
            Some((_, Some("tool"))) => Hosted::Tool(Box::new(tool::HostedTool::open(
                given,
                spelling,
                server.options(),
            )?)),
            Some((kind, _)) => {
                return Err(Refusal::new(
                    ErrorKind::BadValue,
                    format!("kind must be \"shell\", \"pty\" or \"tool\", got {kind}"),
                ));
            }
        };
        let sandbox_applied = match &hosted {
            Hosted::Shell(shell) => json!(shell.sandbox_applied()),
            // Each start makes its own sandbox.
            Hosted::Pty(_) => Value::Null,
            // A tool states its sandbox in its description.
            Hosted::Tool(_) => Value::Null,
        };
        let session = server.add(|id| Ok(RemoteSession::new(id, hosted)))?;
        let _ = events.set(Arc::downgrade(&session));
        session.attach(out.clone(), 0);
        Ok(json!({
            "session": session.id,
            "sandbox_applied": sandbox_applied,
        }))
    })();
    reply(&request.id, outcome)
}

/// The hook that makes each job's end an event of the session.
fn job_exit_events(events: Arc<OnceLock<Weak<RemoteSession>>>) -> JobExitHook {
    JobExitHook::new(move |info| {
        if let Some(session) = events.get().and_then(Weak::upgrade) {
            session.job_ended(&info);
        }
    })
}

/// Attaches the client's connection to a session, after the frames it saw.
fn attach(server: &Server, request: &Request, out: &Outgoing) -> Result<Value, Refusal> {
    let session = server.session(request.session.as_deref())?;
    let after = match request.field("after") {
        None => 0,
        Some(v) => v.as_u64().ok_or_else(|| {
            Refusal::new(
                ErrorKind::WrongType,
                format!("after must be a whole number >= 0, got {v}"),
            )
        })?,
    };
    let last = session.attach(out.clone(), after);
    Ok(json!({"session": session.id, "seq": last}))
}

/// Runs a command, its output sent as `chunk` events as it comes.
fn run(
    session: &RemoteSession,
    shell: &Shell,
    request: &Request,
    cancel: CancelToken,
) -> Result<Value, Refusal> {
    let mut opts: RunOptions = read(options_object(request)?, Spelling::Wire)?;
    opts.cancel = Some(cancel);
    let id = &request.id;
    let result = shell.run(opts, |text| {
        session.send(json!({"event": "chunk", "id": id, "text": text}));
    })?;
    Ok(serde_json::to_value(result).expect("a result serializes"))
}

/// Changes the domains a session with a domain policy may reach
/// (`Shell::set_network`): the request's `network`, read as a sandbox's
/// `network` is (`"deny"`, or the lists of a domain policy).
fn set_network(shell: &Shell, request: &Request) -> Result<Value, Refusal> {
    let Some(given) = request.field("network") else {
        return Err(Refusal::new(
            ErrorKind::BadRequest,
            "set_network needs a network: \"deny\" or a domain policy",
        ));
    };
    let given = Given::from(given.clone());
    let network: Network = wire::read_value("network", given, Spelling::Wire)?;
    shell.set_network(&network)?;
    Ok(Value::Null)
}

/// The request's `options` object (none given: no option).
pub(super) fn options_object(request: &Request) -> Result<Map<String, Value>, Refusal> {
    match request.field("options") {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(other) => Err(Refusal::new(
            ErrorKind::WrongType,
            format!("options must be an object, got {other}"),
        )),
    }
}

/// Reads options as the core type `T`, by the core's readers, their names
/// and units those of `spelling` (a refused value is named as its face
/// names it).
pub(super) fn read<T: DeserializeOwned>(
    fields: Map<String, Value>,
    spelling: Spelling,
) -> Result<T, Refusal> {
    let fields = fields
        .into_iter()
        .map(|(k, v)| (k, Given::from(v)))
        .collect();
    Ok(wire::read_options(fields, spelling)?)
}
