//! A client's one connection, on a thread of its own: requests go out as
//! frames, replies and events come back to whoever waits for them (by the
//! request's id). When a WebSocket drops, the link connects again (for
//! [`ConnectOptions::reconnect_within`]), attaches every session after the
//! last frame it saw, and sends again every request not yet answered: the
//! server answers a request once, and the frames numbered twice are
//! dropped here. A stdio server that exits is not come back to.

use conch_core::sync::lock;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use conch_core::{JobExitHook, JobInfo};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc as tmpsc;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::{ConnectOptions, RemoteError, Target};
use crate::protocol::{MAX_FRAME, Refusal, read_reply};
use crate::tls::{Io, connector};

/// What a waiting caller receives.
#[derive(Debug)]
pub(super) enum Frame {
    /// An event about its request (a chunk of output).
    Event(Map<String, Value>),
    /// Its reply: the last frame.
    Reply(Result<Value, Refusal>),
}

struct Pending {
    /// The request, to send again after a reconnect.
    frame: Arc<str>,
    to: mpsc::Sender<Frame>,
}

#[derive(Default)]
struct State {
    pending: HashMap<String, Pending>,
    /// The last frame seen of each session.
    sessions: HashMap<String, u64>,
    /// Who is told of the end of a session's jobs.
    exits: HashMap<String, JobExitHook>,
    /// Why the link ended, once it did.
    lost: Option<String>,
}

pub(super) struct Link {
    state: Mutex<State>,
    requests: tmpsc::UnboundedSender<Arc<str>>,
    /// Request ids: this client's prefix and a count, so two clients of a
    /// server never share one.
    prefix: String,
    next: AtomicU64,
    /// Ends the link's thread.
    stop: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// The ends of jobs, to the thread that tells their hooks: a hook may
    /// call the server (poll the job that ended), so it never runs on the
    /// link's thread, which that call waits on. `None` once closed.
    exits: Mutex<Option<mpsc::Sender<(JobExitHook, JobInfo)>>>,
    /// The link's two threads, joined by [`Link::close`]: nothing of a
    /// closed client runs on (a C host may unload the library, valgrind
    /// finds no thread alive at exit).
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// One open transport: frames read, frames written.
enum Transport {
    Ws(Box<WebSocketStream<Box<dyn Io>>>),
    Stdio(Box<Piped>),
}

/// A stdio server: the child, its stdout's lines, its stdin (`None` once
/// closed).
struct Piped {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    stdin: Option<tokio::process::ChildStdin>,
}

impl Link {
    /// Connects to `target`, then drives the connection; both on a thread
    /// of the link's (SIGPIPE blocked there), the connection's outcome
    /// handed back, so a refused token or an unreachable server is this
    /// call's error.
    pub fn open(target: Target, opts: ConnectOptions) -> Result<Arc<Link>, RemoteError> {
        let cannot_start = |e: std::io::Error| {
            RemoteError::ConnectionLost(format!("cannot start the client: {e}"))
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(cannot_start)?;
        let (requests, outgoing) = tmpsc::unbounded_channel();
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let (exits, ended) = mpsc::channel::<(JobExitHook, JobInfo)>();
        let told = std::thread::Builder::new()
            .name("conch-remote-exits".into())
            .spawn(move || {
                // A hook's call to the server may write to a gone peer.
                conch_core::process::block_sigpipe();
                // In order, one at a time, until the link is closed.
                for (hook, info) in ended {
                    hook.call(info);
                }
            })
            .map_err(cannot_start)?;
        let link = Arc::new(Link {
            state: Mutex::new(State::default()),
            requests,
            prefix: format!("c{:x}", random()),
            next: AtomicU64::new(1),
            stop: Mutex::new(Some(stop)),
            exits: Mutex::new(Some(exits)),
            threads: Mutex::new(vec![told]),
        });
        let driven = link.clone();
        let (connected, outcome) = mpsc::channel();
        let driving = std::thread::Builder::new()
            .name("conch-remote".into())
            .spawn(move || {
                // The server's end may close while a frame is written to it
                // (a stdio server that exited): EPIPE, never a SIGPIPE that
                // kills a host keeping its default.
                conch_core::process::block_sigpipe();
                let transport = match runtime.block_on(connect(&target, &opts)) {
                    Ok(transport) => transport,
                    Err(err) => {
                        let _ = connected.send(Err(err));
                        return;
                    }
                };
                let _ = connected.send(Ok(()));
                runtime.block_on(drive(&driven, target, opts, transport, outgoing, stopped));
            })
            .map_err(cannot_start)?;
        link.threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(driving);
        let outcome = outcome.recv().unwrap_or_else(|_| {
            Err(RemoteError::ConnectionLost(
                "the client's thread ended".into(),
            ))
        });
        if let Err(err) = outcome {
            link.close();
            return Err(err);
        }
        Ok(link)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Sends request `op`; returns its id and where its frames arrive.
    pub fn request(
        &self,
        session: Option<&str>,
        op: &str,
        mut fields: Map<String, Value>,
    ) -> Result<(Value, mpsc::Receiver<Frame>), RemoteError> {
        let id = json!(format!(
            "{}-{}",
            self.prefix,
            self.next.fetch_add(1, Ordering::SeqCst)
        ));
        fields.insert("id".into(), id.clone());
        fields.insert("op".into(), json!(op));
        if let Some(session) = session {
            fields.insert("session".into(), json!(session));
        }
        let frame: Arc<str> = Value::Object(fields).to_string().into();
        let (to, from) = mpsc::channel();
        {
            let mut state = self.state();
            if let Some(lost) = &state.lost {
                return Err(RemoteError::ConnectionLost(lost.clone()));
            }
            state.pending.insert(
                id.to_string(),
                Pending {
                    frame: frame.clone(),
                    to,
                },
            );
        }
        self.send(frame);
        Ok((id, from))
    }

    /// An id no request of this client had.
    pub fn fresh_id(&self) -> Value {
        json!(format!(
            "{}-{}",
            self.prefix,
            self.next.fetch_add(1, Ordering::SeqCst)
        ))
    }

    /// Sends a frame nobody waits a reply for (an abort's).
    pub fn send(&self, frame: Arc<str>) {
        let _ = self.requests.send(frame);
    }

    /// A session this link attaches again after a reconnect.
    pub fn track(&self, session: &str) {
        self.state()
            .sessions
            .entry(session.to_string())
            .or_insert(0);
    }

    pub fn untrack(&self, session: &str) {
        let mut state = self.state();
        state.sessions.remove(session);
        state.exits.remove(session);
    }

    /// Tells `hook` of every job of `session` that ends from now on.
    pub fn on_job_exit(&self, session: &str, hook: JobExitHook) {
        self.state().exits.insert(session.to_string(), hook);
    }

    /// Why the link is gone.
    pub fn lost(&self) -> RemoteError {
        let why = self.state().lost.clone();
        RemoteError::ConnectionLost(why.unwrap_or_else(|| "the connection was closed".into()))
    }

    /// Asks the link to end the connection, without waiting; waiting
    /// callers get [`RemoteError::ConnectionLost`].
    pub fn stop(&self) {
        if let Some(stop) = lock(&self.stop).take() {
            let _ = stop.send(());
        }
    }

    /// Ends the connection and waits for the link's threads to end: the
    /// hooks of job ends already told run first, none after. (Called from
    /// one of those threads, that one is not waited for.)
    pub fn close(&self) {
        self.stop();
        drop(lock(&self.exits).take());
        let threads = std::mem::take(&mut *lock(&self.threads));
        let me = std::thread::current().id();
        for thread in threads {
            if thread.thread().id() != me {
                let _ = thread.join();
            }
        }
    }

    /// Hands a frame from the server to whoever waits for it.
    fn route(&self, frame: &str) {
        let Ok(Value::Object(frame)) = serde_json::from_str::<Value>(frame) else {
            return;
        };
        let mut state = self.state();
        if let (Some(session), Some(seq)) = (
            frame.get("session").and_then(Value::as_str),
            frame.get("seq").and_then(Value::as_u64),
        ) && let Some(last) = state.sessions.get_mut(session)
        {
            if seq <= *last {
                return; // seen before the reconnect
            }
            *last = seq;
        }
        if frame.get("event").and_then(Value::as_str) == Some("job_exit") {
            let hook = frame
                .get("session")
                .and_then(Value::as_str)
                .and_then(|session| state.exits.get(session).cloned());
            drop(state);
            let info = frame
                .get("job")
                .cloned()
                .map(serde_json::from_value::<JobInfo>);
            if let (Some(hook), Some(Ok(info))) = (hook, info)
                && let Some(exits) = &*lock(&self.exits)
            {
                let _ = exits.send((hook, info));
            }
            return;
        }
        let Some(key) = frame.get("id").map(Value::to_string) else {
            return;
        };
        if frame.contains_key("event") {
            if let Some(p) = state.pending.get(&key) {
                let _ = p.to.send(Frame::Event(frame));
            }
        } else if let Some(p) = state.pending.remove(&key)
            && let Some((_, outcome)) = read_reply(&frame)
        {
            let _ = p.to.send(Frame::Reply(outcome));
        }
    }

    /// Ends the link for `why`: every waiting caller is woken.
    fn end(&self, why: String) {
        let mut state = self.state();
        state.lost.get_or_insert(why);
        state.pending.clear();
    }
}

/// Drives the link until it is closed or lost for good.
async fn drive(
    link: &Link,
    target: Target,
    opts: ConnectOptions,
    mut transport: Transport,
    mut outgoing: tmpsc::UnboundedReceiver<Arc<str>>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    loop {
        let why = tokio::select! {
            why = pump(link, &mut transport, &mut outgoing) => why,
            _ = &mut stopped => {
                transport.close().await;
                link.end("the connection was closed".into());
                return;
            }
        };
        transport.close().await;
        if matches!(target, Target::Command(_)) {
            link.end(why);
            return;
        }
        match reconnect(&target, &opts, &mut stopped).await {
            Some(again) => {
                transport = again;
                resume(link, &mut transport).await;
            }
            None => {
                link.end(format!(
                    "{why}; not back within {} s",
                    opts.reconnect_within.as_secs()
                ));
                return;
            }
        }
    }
}

/// Moves frames both ways until the transport ends; returns why.
async fn pump(
    link: &Link,
    transport: &mut Transport,
    outgoing: &mut tmpsc::UnboundedReceiver<Arc<str>>,
) -> String {
    loop {
        tokio::select! {
            frame = transport.read() => match frame {
                Ok(Some(frame)) => link.route(&frame),
                Ok(None) => return "the server closed the connection".to_string(),
                Err(e) => return format!("the connection failed: {e}"),
            },
            frame = outgoing.recv() => match frame {
                Some(frame) => {
                    if let Err(e) = transport.write(&frame).await {
                        return format!("the connection failed: {e}");
                    }
                }
                None => return "the client was dropped".to_string(),
            },
        }
    }
}

/// After a reconnect: attaches every session after its last frame, then
/// sends again every request not answered.
async fn resume(link: &Link, transport: &mut Transport) {
    let (attaches, retries): (Vec<String>, Vec<Arc<str>>) = {
        let state = link.state();
        let attaches = state
            .sessions
            .iter()
            .map(|(session, after)| {
                json!({"id": format!("{}-attach", link.prefix), "op": "attach",
                       "session": session, "after": after})
                .to_string()
            })
            .collect();
        let retries = state.pending.values().map(|p| p.frame.clone()).collect();
        (attaches, retries)
    };
    for frame in attaches {
        let _ = transport.write(&frame).await;
    }
    for frame in retries {
        let _ = transport.write(&frame).await;
    }
}

/// Connects again, for as long as the options allow.
async fn reconnect(
    target: &Target,
    opts: &ConnectOptions,
    stopped: &mut tokio::sync::oneshot::Receiver<()>,
) -> Option<Transport> {
    let deadline = Instant::now() + opts.reconnect_within;
    let mut pause = Duration::from_millis(50);
    while Instant::now() < deadline {
        if let Ok(transport) = connect(target, opts).await {
            return Some(transport);
        }
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = &mut *stopped => return None,
        }
        pause = (pause * 2).min(Duration::from_secs(2));
    }
    None
}

/// Opens the transport to `target`.
async fn connect(target: &Target, opts: &ConnectOptions) -> Result<Transport, RemoteError> {
    match target {
        Target::Url(url) => {
            let lost = |what: String| {
                RemoteError::ConnectionLost(format!("cannot connect to {url}: {what}"))
            };
            let mut request = url.as_str().into_client_request().map_err(|e| {
                RemoteError::ConnectionLost(format!("not a WebSocket URL: {url} ({e})"))
            })?;
            if let Some(token) = &opts.token {
                let value = format!("Bearer {token}").parse().map_err(|_| {
                    RemoteError::Auth("the token is not a valid header value".into())
                })?;
                request.headers_mut().insert("authorization", value);
            }
            let uri = request.uri().clone();
            let secure = uri.scheme_str() == Some("wss");
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_matches(['[', ']'])
                .to_string();
            let port = uri.port_u16().unwrap_or(if secure { 443 } else { 80 });
            let tcp = TcpStream::connect((host.as_str(), port))
                .await
                .map_err(|e| lost(e.to_string()))?;
            let _ = tcp.set_nodelay(true);
            let stream: Box<dyn Io> = if secure {
                let tls = connector(opts.ca.as_deref()).map_err(&lost)?;
                let name = ServerName::try_from(host.clone()).map_err(|e| lost(e.to_string()))?;
                Box::new(
                    tls.connect(name, tcp)
                        .await
                        .map_err(|e| lost(e.to_string()))?,
                )
            } else {
                Box::new(tcp)
            };
            let config = WebSocketConfig::default()
                .max_message_size(Some(MAX_FRAME))
                .max_frame_size(Some(MAX_FRAME));
            match tokio_tungstenite::client_async_with_config(request, stream, Some(config)).await {
                Ok((ws, _)) => Ok(Transport::Ws(Box::new(ws))),
                Err(WsError::Http(response)) if response.status() == 401 => {
                    Err(RemoteError::Auth(format!(
                        "{url} refused the {}",
                        if opts.token.is_some() {
                            "token"
                        } else {
                            "connection: it asks for a token"
                        }
                    )))
                }
                Err(e) => Err(lost(e.to_string())),
            }
        }
        Target::Command(argv) => {
            let Some((program, args)) = argv.split_first() else {
                return Err(RemoteError::ConnectionLost(
                    "the server command is empty".into(),
                ));
            };
            let mut child = tokio::process::Command::new(program)
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| RemoteError::ConnectionLost(format!("cannot start {program}: {e}")))?;
            let stdin = child.stdin.take().expect("piped");
            let stdout = child.stdout.take().expect("piped");
            Ok(Transport::Stdio(Box::new(Piped {
                child,
                lines: BufReader::new(stdout).lines(),
                stdin: Some(stdin),
            })))
        }
    }
}

impl Transport {
    /// The next frame; `None` when the server ended the connection.
    async fn read(&mut self) -> Result<Option<String>, String> {
        match self {
            Transport::Ws(ws) => loop {
                match ws.next().await {
                    None | Some(Ok(Message::Close(_))) => return Ok(None),
                    Some(Ok(Message::Text(text))) => return Ok(Some(text.to_string())),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e.to_string()),
                }
            },
            Transport::Stdio(piped) => piped.lines.next_line().await.map_err(|e| e.to_string()),
        }
    }

    async fn write(&mut self, frame: &str) -> Result<(), String> {
        match self {
            Transport::Ws(ws) => ws
                .send(Message::text(frame))
                .await
                .map_err(|e| e.to_string()),
            Transport::Stdio(piped) => {
                let stdin = piped.stdin.as_mut().ok_or("the connection was closed")?;
                let mut line = Vec::with_capacity(frame.len() + 1);
                line.extend_from_slice(frame.as_bytes());
                line.push(b'\n');
                stdin.write_all(&line).await.map_err(|e| e.to_string())
            }
        }
    }

    /// Ends the transport: a WebSocket's close handshake; a stdio server's
    /// stdin closed (it closes its sessions and exits), then waited for.
    async fn close(&mut self) {
        match self {
            Transport::Ws(ws) => {
                let _ = tokio::time::timeout(Duration::from_secs(2), SinkExt::close(ws)).await;
            }
            Transport::Stdio(piped) => {
                drop(piped.stdin.take());
                let exited = tokio::time::timeout(Duration::from_secs(10), piped.child.wait());
                if exited.await.is_err() {
                    let _ = piped.child.kill().await;
                }
            }
        }
    }
}

/// A number no other client of the server picks in practice: the clock's
/// nanoseconds, the process id and a count.
fn random() -> u64 {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed =
        nanos ^ (u64::from(std::process::id()) << 32) ^ COUNT.fetch_add(1, Ordering::SeqCst);
    mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}
