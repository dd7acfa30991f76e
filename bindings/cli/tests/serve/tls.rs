//! `--tls-cert`/`--tls-key`: the WebSocket and the probes over TLS, the
//! client trusting the test CA (tests/tls/README.md).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use conch_core::RunOptions;
use conch_remote::{ConnectOptions, RemoteError, connect};
use serde_json::Map;

use super::{CONCH, Listening};

fn tls_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/tls")
        .join(name)
}

fn tls_server() -> Listening {
    let cert = tls_file("server.pem");
    let key = tls_file("server.key");
    Listening::start(
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        Some("t1s"),
    )
}

fn trusting(ca: Option<PathBuf>) -> ConnectOptions {
    ConnectOptions {
        token: Some("t1s".into()),
        ca,
        ..ConnectOptions::default()
    }
}

#[test]
fn a_tls_server_serves_a_client_that_trusts_its_ca() {
    let server = tls_server();
    let port = server.addr.rsplit(':').next().unwrap();
    for url in [
        format!("wss://127.0.0.1:{port}"),
        format!("wss://localhost:{port}"),
    ] {
        let remote = connect(url.as_str(), trusting(Some(tls_file("ca.pem")))).unwrap();
        let sh = remote.shell(Map::new()).unwrap();
        let r = sh.run(RunOptions::new("echo private"), |_| {}).unwrap();
        assert_eq!(r.output, "private\n");
    }
}

#[test]
fn a_client_refuses_a_server_it_does_not_trust_and_plain_text_gets_nothing() {
    let server = tls_server();
    let url = format!("wss://{}", server.addr);
    // Its own certificate as the CA: not the server's issuer.
    match connect(url.as_str(), trusting(Some(tls_file("server.pem")))) {
        Err(RemoteError::ConnectionLost(m)) => assert!(m.contains("certificate"), "{m}"),
        other => panic!("an untrusted certificate is refused, got {:?}", other.err()),
    }
    // A client speaking plain WebSocket to a TLS port gets no session.
    assert!(connect(server.url().as_str(), trusting(None)).is_err());
}

#[test]
fn a_certificate_without_its_key_is_refused_at_start() {
    let out = Command::new(CONCH)
        .args(["serve", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(tls_file("server.pem"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(CONCH)
        .args(["serve", "--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(tls_file("server.pem"))
        .arg("--tls-key")
        .arg(tls_file("ca.pem"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("private key"), "{stderr}");
}
