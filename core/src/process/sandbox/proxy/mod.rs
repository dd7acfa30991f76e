//! The session's proxy, which enforces a [`DomainPolicy`]: commands reach
//! the network through it only (the sandbox lets them connect to its port
//! and nowhere else, [`super::enforce`]), and their environment points at
//! it. It speaks the three ways programs ask a proxy for a connection:
//! HTTP `CONNECT` (HTTPS, git, npm), plain HTTP forwarding (`http://`
//! URLs), and SOCKS5 (`ALL_PROXY=socks5h://…`), on one port, told apart by
//! the first byte.
//!
//! It resolves names itself (the sandbox gives commands no DNS) and checks
//! the destination by name first, then each address the name resolved to
//! ([`DomainPolicy::check_address`]). A refusal is answered in the
//! protocol's own way (`403`, SOCKS5's "not allowed by ruleset") and
//! recorded, so the run that made it reports it ([`NetworkControl::take_violations`]).
//!
//! A thread per connection: connections are few (a command's downloads),
//! and a blocking copy loop is the fastest relay on loopback. Closing the
//! proxy shuts every connection down; a proxy that is gone refuses every
//! connection, so commands fail closed.

mod http;
#[cfg(target_os = "linux")]
mod netns;
mod relay;
mod socks;

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use super::Network;
use super::domains::{DomainPolicy, Host, Refusal};
use crate::sync::lock;

/// How long a client may take to say where it wants to go.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the proxy tries to reach an allowed destination.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Violations kept between two runs that collect them: a command that
/// tries thousands of hosts does not grow the session without bound.
const MAX_VIOLATIONS: usize = 100;

/// A connection the policy refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// `host:port` as the command asked for it.
    pub target: String,
    /// The line the command's output gets.
    pub line: String,
}

/// A running proxy, stopped when dropped.
#[derive(Debug)]
pub struct Proxy {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
    /// A second handle on the listener, to wake the accept loop on stop.
    #[cfg(target_os = "linux")]
    listener: TcpListener,
    /// The session's network namespace, where the listener is (see
    /// [`netns`]); `None`: the listener is on the host's loopback.
    netns: Option<OwnedFd>,
}

#[derive(Debug)]
struct Shared {
    policy: RwLock<Arc<DomainPolicy>>,
    violations: Mutex<Vec<Violation>>,
    /// Both ends of each open connection, shut down on stop.
    open: Mutex<HashMap<u64, Vec<TcpStream>>>,
    next: AtomicU64,
    stopped: AtomicBool,
}

impl Proxy {
    /// Starts a proxy for `policy` on a free loopback port. `isolate`: in
    /// a network namespace of its own for the session's processes to
    /// enter ([`Proxy::netns`]), where the host may make one (Linux, as
    /// root); else, or when it cannot, on the host's loopback.
    pub fn start(policy: DomainPolicy, isolate: bool) -> io::Result<Proxy> {
        let (listener, netns) = match isolated(isolate) {
            Some((listener, netns)) => (listener, Some(netns)),
            None => (TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?, None),
        };
        let addr = listener.local_addr()?;
        #[cfg(target_os = "linux")]
        let waker = listener.try_clone()?;
        let shared = Arc::new(Shared {
            policy: RwLock::new(Arc::new(policy)),
            violations: Mutex::default(),
            open: Mutex::default(),
            next: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        });
        let accept = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("conch-proxy".into())
                .spawn(move || accept_loop(&listener, &shared))?
        };
        Ok(Proxy {
            shared,
            addr,
            accept: Some(accept),
            #[cfg(target_os = "linux")]
            listener: waker,
            netns,
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The network namespace the session's processes enter, where the
    /// proxy is the only thing they can reach; `None`: they stay in the
    /// host's.
    pub fn netns(&self) -> Option<BorrowedFd<'_>> {
        self.netns.as_ref().map(|fd| fd.as_fd())
    }

    /// The variables that point a command's programs at the proxy: the
    /// HTTP ones (curl, git, pip, npm, Python), SOCKS5 for the rest,
    /// loopback left direct (the sandbox decides what of it is reachable),
    /// and Node's switch to honour them (Node 22.21 and later).
    pub fn env(&self) -> Vec<(String, String)> {
        let http = format!("http://{}", self.addr);
        let socks = format!("socks5h://{}", self.addr);
        let local = "localhost,127.0.0.1,::1".to_string();
        let mut env = Vec::new();
        for (name, value) in [
            ("HTTP_PROXY", &http),
            ("HTTPS_PROXY", &http),
            ("ALL_PROXY", &socks),
            ("NO_PROXY", &local),
        ] {
            env.push((name.to_string(), value.clone()));
            env.push((name.to_ascii_lowercase(), value.clone()));
        }
        env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
        env
    }

    /// The handle a session keeps to change the policy and collect the
    /// violations.
    pub fn control(&self) -> NetworkControl {
        NetworkControl(self.shared.clone())
    }

    /// Stops accepting and shuts every open connection down; from now on
    /// connections to the port are refused. Idempotent.
    pub fn stop(&mut self) {
        if self.shared.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        // Wakes the accept loop, which sees `stopped` and drops the
        // listener: a listener shut down fails its `accept` (Linux); a
        // connection wakes it elsewhere (never into a namespace's port
        // from the host's loopback, where another program may listen).
        #[cfg(target_os = "linux")]
        let _ = rustix::net::shutdown(&self.listener, rustix::net::Shutdown::Read);
        #[cfg(not(target_os = "linux"))]
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        for (_, streams) in lock(&self.shared.open).drain() {
            for stream in streams {
                let _ = stream.shutdown(Shutdown::Both);
            }
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The listener and the namespace of an isolated proxy, if asked and made.
#[cfg(target_os = "linux")]
fn isolated(isolate: bool) -> Option<(TcpListener, OwnedFd)> {
    if !isolate {
        return None;
    }
    let made = netns::listen_in_new_namespace().ok()?;
    Some((made.listener, made.netns))
}

#[cfg(not(target_os = "linux"))]
fn isolated(_isolate: bool) -> Option<(TcpListener, OwnedFd)> {
    None
}

/// Why a session's network cannot be changed.
const NO_DOMAIN_POLICY: &str = "set_network needs a session started with a domain policy \
     (a sandbox whose network is {\"allow\": [...]})";

/// What a session changes and reads of its proxy between runs: the policy
/// and the violations. A handle apart from the sandbox that owns the
/// proxy, so a run's end or a `set_network` never waits for what holds the
/// sandbox (a program run in it).
#[derive(Debug, Clone)]
pub struct NetworkControl(Arc<Shared>);

impl NetworkControl {
    /// Replaces the domain lists: connections made from now on are checked
    /// against `network` (open ones go on). `Deny` is an empty domain
    /// policy; `Allow` is refused, the sandbox being made for the proxy.
    pub fn set_network(&self, network: &Network) -> crate::Result<()> {
        let policy = match network {
            Network::Domains(policy) => policy.clone(),
            Network::Deny => DomainPolicy::default(),
            Network::Allow => {
                return Err(crate::Error::InvalidArgument(
                    "set_network cannot open the whole network to a sandboxed session: \
                     list the domains it may reach"
                        .into(),
                ));
            }
        };
        *self.0.policy.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(policy);
        Ok(())
    }

    /// `set_network` of a session without a proxy: what it is refused with.
    pub fn absent() -> crate::Error {
        crate::Error::InvalidArgument(NO_DOMAIN_POLICY.into())
    }

    /// The violations since the last call, oldest first.
    pub fn take_violations(&self) -> Vec<Violation> {
        std::mem::take(&mut *lock(&self.0.violations))
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let shared = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("conch-proxy-conn".into())
            .spawn(move || serve(client, &shared));
        // Out of threads: the connection is dropped, the client sees it
        // closed, and the next one is tried again.
        drop(spawned);
    }
}

/// One client connection: the request, the check, then the relay.
fn serve(client: TcpStream, shared: &Shared) {
    let id = shared.next.fetch_add(1, Ordering::Relaxed);
    if let Ok(copy) = client.try_clone() {
        lock(&shared.open).insert(id, vec![copy]);
    }
    // A stop between the insert and here would miss this connection.
    if !shared.stopped.load(Ordering::SeqCst) {
        let _ = client.set_read_timeout(Some(REQUEST_TIMEOUT));
        let mut first = [0u8; 1];
        let result = match client.peek(&mut first) {
            Ok(1) if first[0] == socks::VERSION => socks::serve(client, shared, id),
            Ok(1) => http::serve(client, shared, id),
            _ => Ok(()),
        };
        drop(result);
    }
    lock(&shared.open).remove(&id);
}

impl Shared {
    /// Checks `host:port` against the policy, resolves it and connects;
    /// a refusal is recorded as a violation.
    fn open(&self, id: u64, host: &Host, port: u16) -> Result<TcpStream, Refusal> {
        let policy = self
            .policy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let result = connect(&policy, host, port);
        if let Err(refusal) = &result
            && refusal.is_violation()
        {
            let target = format!("{host}:{port}");
            let mut violations = lock(&self.violations);
            if violations.len() < MAX_VIOLATIONS {
                violations.push(Violation {
                    line: refusal.line(&target),
                    target,
                });
            }
        }
        if let Ok(upstream) = &result
            && let Ok(copy) = upstream.try_clone()
            && let Some(streams) = lock(&self.open).get_mut(&id)
        {
            streams.push(copy);
        }
        result
    }
}

fn connect(policy: &DomainPolicy, host: &Host, port: u16) -> Result<TcpStream, Refusal> {
    policy.check_target(host, port)?;
    let addresses: Vec<IpAddr> = match host {
        Host::Ip(ip) => vec![*ip],
        Host::Name(name) => match policy.resolve.get(name) {
            Some(ip) => vec![*ip],
            None => (name.as_str(), port)
                .to_socket_addrs()
                .map_err(|_| Refusal::Unreachable("the name does not resolve".into()))?
                .map(|a| a.ip())
                .collect(),
        },
    };
    let mut refused = None;
    let mut failed = None;
    for ip in addresses {
        if let Err(refusal) = policy.check_address(host, ip, port) {
            refused.get_or_insert(refusal);
            continue;
        }
        match TcpStream::connect_timeout(&SocketAddr::new(ip, port), CONNECT_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(e) => failed = Some(e),
        }
    }
    Err(match (failed, refused) {
        (Some(e), _) => Refusal::Unreachable(format!("cannot connect: {e}")),
        (None, Some(refusal)) => refusal,
        (None, None) => Refusal::Unreachable("the name has no address".into()),
    })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
