//! Network by name over the protocol: a remote shell whose sandbox allows
//! some domains reports each refused connection in its result
//! (`sandbox_violations` and the `[sandbox] blocked` line cross with the
//! `BashResult`), and `set_network` changes the domains between runs, as
//! `Shell::set_network` does locally. The server is conch-remote's own
//! (what `conch serve --listen` runs), on 127.0.0.1 in this process,
//! driven by the real client over a WebSocket; the HTTPS and HTTP servers
//! are tests/net/server.py's, on 127.0.0.2, named through `resolve`.

use std::net::SocketAddr;
use std::path::PathBuf;

use conch_core::{BashResult, Error as CoreError, Network, RunOptions};
use conch_remote::{ConnectOptions, Remote, RemoteError, RemoteShell};
use serde_json::{Value, json};

mod common;
use common::listen;

#[path = "../../tests/net/servers.rs"]
mod net;
use net::{Servers, blocked, landlock_ports};

/// A conch server listening on 127.0.0.1 in this process (it serves until
/// the test binary ends), and a client connected to it.
fn serve() -> Remote {
    let addr = listen(None);
    conch_remote::connect(format!("ws://{addr}").as_str(), ConnectOptions::default())
        .expect("the client connects")
}

/// Sends `requests` to the server at `addr` as raw frames on one
/// connection, each after the reply to the one before, a `"session"` of
/// `"OPENED"` replaced by the session the last `open` opened; returns the
/// replies.
fn raw(addr: SocketAddr, requests: &[Value]) -> Vec<Value> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/"), stream)
            .await
            .unwrap();
        let mut replies = Vec::new();
        let mut opened = Value::Null;
        for request in requests {
            let mut request = request.clone();
            if request["session"] == "OPENED" {
                request["session"] = opened.clone();
            }
            ws.send(Message::text(request.to_string())).await.unwrap();
            loop {
                let Some(Ok(Message::Text(text))) = ws.next().await else {
                    panic!("the server answers {request}");
                };
                let frame: Value = serde_json::from_str(&text).unwrap();
                if frame["id"] == request["id"] && frame.get("event").is_none() {
                    if request["op"] == "open" {
                        opened = frame["ok"]["session"].clone();
                    }
                    replies.push(frame);
                    break;
                }
            }
        }
        replies
    })
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("conch-remote-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// The names tests/net/server.py's certificate holds, on its address.
fn resolve() -> Value {
    json!({
        "registry.test": "127.0.0.2",
        "unlisted.test": "127.0.0.2",
        "denied.test": "127.0.0.2",
    })
}

/// A domain policy as a host gives it, read as the core reads one.
fn policy(allow: &[&str], deny: &[&str]) -> Network {
    serde_json::from_value(json!({"allow": allow, "deny": deny, "resolve": resolve()})).unwrap()
}

fn run(sh: &RemoteShell, command: &str) -> BashResult {
    sh.run(RunOptions::new(command), |_| {}).unwrap()
}

fn assert_ok(r: &BashResult, what: &str) {
    assert_eq!(r.exit_code, Some(0), "{what}: {}", r.output);
    assert!(r.sandbox_violations.is_empty(), "{what}: {r:?}");
}

fn assert_blocked(r: &BashResult, target: &str) {
    assert_ne!(r.exit_code, Some(0), "{}", r.output);
    assert_eq!(r.sandbox_violations, vec![target.to_string()], "{r:?}");
    let line = format!("{}\n", blocked(target));
    assert!(r.output.ends_with(&line), "{:?}", r.output);
}

#[test]
fn a_remote_shell_reports_refused_names_and_set_network_lets_them_through() {
    if !landlock_ports() {
        return;
    }
    let dir = scratch("network");
    let servers = Servers::start(&dir.join("net"));
    let (https, http) = (servers.https, servers.http);
    let remote = serve();
    let options = json!({
        "cwd": dir,
        "snapshot": "none",
        "sandbox": {"network": {"allow": ["registry.test"], "deny": ["denied.test"], "resolve": resolve()}},
    });
    let Value::Object(options) = options else {
        unreachable!()
    };
    let sh = remote.shell(options).unwrap();

    let r = run(
        &sh,
        &servers.curl(&format!("https://registry.test:{https}/")),
    );
    assert_ok(&r, "an allowed name");
    assert_eq!(r.output, "hello from registry.test\n");
    let unlisted = servers.curl(&format!("https://unlisted.test:{https}/"));
    assert_blocked(&run(&sh, &unlisted), &format!("unlisted.test:{https}"));
    assert_blocked(
        &run(
            &sh,
            &servers.curl(&format!("-f http://denied.test:{http}/")),
        ),
        &format!("denied.test:{http}"),
    );

    // The host approves the name: the next command reaches it.
    sh.set_network(&policy(&["registry.test", "unlisted.test"], &[]))
        .unwrap();
    let r = run(&sh, &unlisted);
    assert_ok(&r, "after set_network");
    assert_eq!(r.output, "hello from unlisted.test\n");
    // Deny takes every name back.
    sh.set_network(&Network::Deny).unwrap();
    assert_blocked(&run(&sh, &unlisted), &format!("unlisted.test:{https}"));
    // The whole network is not opened this way: the core's error.
    match sh.set_network(&Network::Allow) {
        Err(RemoteError::Core(err)) => {
            assert!(matches!(err, CoreError::InvalidArgument(_)), "{err}");
            assert!(
                err.to_string().contains("cannot open the whole network"),
                "{err}"
            );
        }
        other => panic!("the core's InvalidArgument, not {other:?}"),
    }
    sh.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn set_network_is_refused_without_a_domain_policy_or_with_a_bad_one() {
    let remote = serve();
    let Value::Object(options) = json!({"snapshot": "none", "sandbox": {}}) else {
        unreachable!()
    };
    let sh = remote.shell(options).unwrap();
    match sh.set_network(&Network::Deny) {
        Err(RemoteError::Core(err)) => assert!(
            err.to_string()
                .contains("set_network needs a session started with a domain policy"),
            "{err}"
        ),
        other => panic!("the core's InvalidArgument, not {other:?}"),
    }
    sh.close().unwrap();
    // A session with no sandbox has nothing to change either.
    let sh = remote.shell(serde_json::Map::new()).unwrap();
    assert!(matches!(
        sh.set_network(&Network::Deny),
        Err(RemoteError::Core(_))
    ));
    sh.close().unwrap();
}

#[test]
fn a_bad_set_network_request_is_refused_with_the_cores_text() {
    let addr = listen(None);
    let sandbox = json!({"network": {"allow": ["registry.test"], "resolve": resolve()}});
    let open = json!({"id": 1, "op": "open", "options": {"snapshot": "none", "sandbox": sandbox}});
    let ask = |id: u32, network: Option<Value>| {
        let mut request = json!({"id": id, "op": "set_network", "session": "OPENED"});
        if let Some(network) = network {
            request["network"] = network;
        }
        request
    };
    let replies = raw(
        addr,
        &[
            open,
            ask(2, Some(json!({"allow": ["ok.test", "bad pattern"]}))),
            ask(3, Some(json!({"allow": [], "proxy": true}))),
            ask(4, Some(json!(7))),
            ask(5, None),
            ask(
                6,
                Some(json!({"allow": ["ok.test:443", "*.ok.test", "10.0.0.0/8"]})),
            ),
            ask(7, Some(json!("deny"))),
        ],
    );
    assert!(replies[0]["ok"]["session"].is_string(), "{}", replies[0]);
    let replies = &replies[1..];
    let error = |i: usize| {
        (
            replies[i]["error"]["kind"].clone(),
            replies[i]["error"]["message"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        )
    };
    let (kind, message) = error(0);
    assert_eq!(kind, "bad_value", "{}", replies[0]);
    assert!(
        message.contains("network.allow[1] must be a domain pattern"),
        "{message}"
    );
    assert_eq!(
        error(1),
        (json!("bad_value"), "network.proxy is not an option".into()),
        "{}",
        replies[1]
    );
    // Neither a word nor a policy: a type error, named.
    let (kind, message) = error(2);
    assert_eq!(kind, "wrong_type", "{}", replies[2]);
    assert!(
        message.starts_with(
            "network: invalid type: integer `7`, expected \"allow\", \"deny\" or a domain policy"
        ),
        "{message}"
    );
    assert_eq!(error(3).0, "bad_request", "{}", replies[3]);
    assert!(
        error(3).1.contains("set_network needs a network"),
        "{}",
        replies[3]
    );
    assert_eq!(replies[4]["ok"], Value::Null, "{}", replies[4]);
    assert!(replies[4].get("error").is_none(), "{}", replies[4]);
    assert_eq!(replies[5]["ok"], Value::Null, "{}", replies[5]);
    assert!(replies[5].get("error").is_none(), "{}", replies[5]);
}
