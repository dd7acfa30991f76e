//! `conch serve`: many sessions for remote clients, over stdio (any exec
//! primitive hosts it) or a WebSocket port (a pod's sidecar). The server is
//! conch-remote's; this reads the flags and stops it on a signal, every
//! session closed through the kill ladder first.

use std::net::SocketAddr;
use std::path::PathBuf;

use conch_core::input::{TimeUnit, count_option, interval_option};
use conch_remote::server::{listen, stdio};
use conch_remote::{ServeOptions, Server, Token};

use crate::args::HELP;
use crate::engine_flag::EngineFlag;
use crate::sandbox_flags::SandboxFlags;

/// Serve sessions to remote clients (conch.connect) over stdio or a WebSocket
#[derive(clap::Args)]
#[command(
    override_usage = "conch serve --stdio | --listen HOST:PORT [--token-file FILE] \
                      [--tls-cert FILE --tls-key FILE] [--grace SECS] [--max-sessions N] \
                      [--engine auto|builtin|eval] [sandbox options]",
    help_template = HELP,
    after_help = "The token is read from --token-file, else from CONCH_TOKEN. Listening on an \
                  address other than loopback needs one. GET /readyz and /livez answer on the \
                  listen port without it. See docs/remote.md."
)]
pub struct Args {
    /// frames on stdin and stdout (for docker exec -i, kubectl exec -i, ssh)
    #[arg(long, conflicts_with = "listen", required_unless_present = "listen")]
    stdio: bool,
    /// a WebSocket server on this address (e.g. 127.0.0.1:7333)
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<String>,
    /// the file holding the clients' bearer token (its first line)
    #[arg(long = "token-file", value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// TLS: the server's certificate chain (PEM); needs --tls-key
    #[arg(
        long = "tls-cert",
        value_name = "FILE",
        requires = "tls_key",
        requires = "listen"
    )]
    tls_cert: Option<PathBuf>,
    /// TLS: the certificate's private key (PEM); needs --tls-cert
    #[arg(long = "tls-key", value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// seconds a session waits for its client to come back (0: closed at once)
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 60.0,
        allow_hyphen_values = true
    )]
    grace: f64,
    /// sessions open at once, at most
    #[arg(long = "max-sessions", value_name = "N", allow_hyphen_values = true)]
    max_sessions: Option<f64>,
    #[command(flatten)]
    engine: EngineFlag,
    #[command(flatten)]
    sandbox: SandboxFlags,
}

pub fn main(p: Args) -> Result<i32, String> {
    let mut opts = ServeOptions {
        grace: interval_option("grace", p.grace, TimeUnit::Seconds).map_err(|e| e.to_string())?,
        sandbox: p.sandbox.policy()?,
        engine: p.engine.choice(),
        // A file request under a sandbox runs in this binary, started
        // inside the sandbox (`conch files-helper`).
        files_helper: std::env::current_exe().ok(),
        ..ServeOptions::default()
    };
    if let Some(n) = p.max_sessions {
        opts.max_sessions = count_option("max-sessions", n).map_err(|e| e.to_string())?;
    }
    let token = match (&p.token_file, std::env::var("CONCH_TOKEN")) {
        (Some(file), _) => Some(Token::from_file(file)?),
        (None, Ok(text)) => Some(Token::new(&text).map_err(|e| format!("CONCH_TOKEN: {e}"))?),
        (None, Err(_)) => None,
    };
    let tls = match (&p.tls_cert, &p.tls_key) {
        (Some(cert), Some(key)) => Some(conch_remote::tls::acceptor(cert, key)?),
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4096)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let server = Server::new(opts);
    let outcome = runtime.block_on(async {
        let serving = async {
            match &p.listen {
                None => stdio::serve_stdio(server.clone())
                    .await
                    .map_err(|e| format!("stdio: {e}")),
                Some(addr) => {
                    let addr: SocketAddr = addr.parse().map_err(|_| {
                        format!(
                            "--listen must be HOST:PORT (an IP address and a port), got {addr:?}"
                        )
                    })?;
                    listen::check_exposure(&addr, token.as_ref())?;
                    let listener = tokio::net::TcpListener::bind(addr)
                        .await
                        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
                    eprintln!(
                        "conch serve: listening on {}",
                        listener.local_addr().unwrap_or(addr)
                    );
                    listen::serve_listener(server.clone(), listener, token.clone(), tls.clone())
                        .await
                        .map_err(|e| format!("listening: {e}"))
                }
            }
        };
        tokio::select! {
            served = serving => served,
            () = crate::interrupt::stop_signal() => Ok(()),
        }
    });
    // Whatever ended the server, nothing it started outlives it.
    server.close_all();
    runtime.shutdown_background();
    outcome.map(|()| 0)
}
