//! The WebSocket server: probes, the token, and sessions side by side.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use conch_core::RunOptions;
use conch_remote::RemoteError;
use serde_json::Map;

use super::{CONCH, Listening, exits, wait_sleeping};
use crate::common::unique_sleep;

/// The status line and body of a plain HTTP request to the server.
fn http(addr: &str, request: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(super::common::HANG_GUARD))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let status = reply.lines().next().unwrap_or("").to_string();
    let body = reply.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

#[test]
fn probes_answer_without_a_token() {
    let server = Listening::start(&[], Some("t0ken"));
    let get = |path: &str| {
        http(
            &server.addr,
            &format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n"),
        )
    };
    assert_eq!(get("/readyz"), ("HTTP/1.1 200 OK".into(), "ready\n".into()));
    assert_eq!(get("/livez"), ("HTTP/1.1 200 OK".into(), "live\n".into()));
    assert_eq!(get("/nope").0, "HTTP/1.1 404 Not Found");
    // The upgrade without the token gets 401 and nothing else.
    let (status, body) = get("/");
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 401 Unauthorized", "")
    );
}

#[test]
fn a_missing_or_wrong_token_is_refused_and_the_right_one_runs() {
    let server = Listening::start(&[], Some("s3cret"));
    for token in [None, Some("wrong"), Some("s3cre"), Some("")] {
        match server.connect(token) {
            Err(RemoteError::Auth(m)) => assert!(m.contains("refused"), "{m}"),
            Err(e) => panic!("{token:?}: an auth error, got {e:?}"),
            Ok(_) => panic!("{token:?}: refused"),
        }
    }
    let remote = server.connect(Some("s3cret")).unwrap();
    let sh = remote.shell(Map::new()).unwrap();
    let r = sh
        .run(RunOptions::new("echo over the socket"), |_| {})
        .unwrap();
    assert_eq!(r.output, "over the socket\n");
}

#[test]
fn listening_beyond_loopback_needs_a_token() {
    let out = Command::new(CONCH)
        .args(["serve", "--listen", "0.0.0.0:0"])
        .env_remove("CONCH_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0:0 without a token"),
        "{stderr}"
    );
    let out = Command::new(CONCH)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--token-file",
            "/no/such/token",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the token file"));
}

#[test]
fn a_long_command_in_one_session_never_delays_another() {
    let server = Listening::start(&[], None);
    let remote = server.connect(None).unwrap();
    let busy = remote.shell(Map::new()).unwrap();
    let quick = remote.shell(Map::new()).unwrap();
    let nap = unique_sleep(3072);
    std::thread::scope(|s| {
        s.spawn(|| busy.run(RunOptions::new(format!("/bin/sleep {nap}")), |_| {}));
        wait_sleeping(&nap, true);
        let started = Instant::now();
        for _ in 0..20 {
            assert_eq!(
                quick
                    .run(RunOptions::new("echo hi"), |_| {})
                    .unwrap()
                    .output,
                "hi\n"
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        busy.abort();
    });
}

#[test]
fn sigterm_closes_every_session_and_exits_0() {
    let mut server = Listening::start(&[], None);
    let remote = server.connect(None).unwrap();
    let sh = remote.shell(Map::new()).unwrap();
    let nap = unique_sleep(3072);
    let command = format!("/bin/sleep {nap}");
    std::thread::spawn(move || sh.run(RunOptions::new(command), |_| {}));
    wait_sleeping(&nap, true);
    unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) };
    assert_eq!(exits(&mut server.child).code(), Some(0));
    wait_sleeping(&nap, false);
}

#[test]
fn nothing_outlives_a_server_killed_with_sigkill() {
    let mut server = Listening::start(&[], None);
    let remote = server.connect(None).unwrap();
    let sh = remote.shell(Map::new()).unwrap();
    let nap = unique_sleep(3072);
    let command = format!("/bin/sleep {nap} & /bin/sleep {nap}");
    std::thread::spawn(move || sh.run(RunOptions::new(command), |_| {}));
    wait_until_two(&nap);
    server.child.kill().unwrap();
    exits(&mut server.child);
    wait_sleeping(&nap, false);
}

fn wait_until_two(arg: &str) {
    super::common::wait_until("two sleeps", || super::sleeping(arg).len() == 2);
}
