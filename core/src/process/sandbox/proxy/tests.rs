use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;

use super::*;

/// A server on loopback that answers each connection with what it read
/// first, then closes.
fn echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buffer = [0u8; 4096];
                let n = stream.read(&mut buffer).unwrap_or(0);
                let _ = stream.write_all(&buffer[..n]);
            });
        }
    });
    port
}

fn proxy(allow: &[&str], deny: &[&str]) -> Proxy {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let resolve = BTreeMap::from([
        ("ok.test".to_string(), "127.0.0.1".to_string()),
        ("other.test".to_string(), "127.0.0.1".to_string()),
    ]);
    let policy = DomainPolicy::parse("network", &owned(allow), &owned(deny), &resolve).unwrap();
    Proxy::start(policy, false).unwrap()
}

fn send(proxy: &Proxy, bytes: &[u8]) -> Vec<u8> {
    let mut client = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    client.write_all(bytes).unwrap();
    let mut answer = Vec::new();
    let _ = client.read_to_end(&mut answer);
    answer
}

#[test]
fn connect_to_an_allowed_name_tunnels_and_an_unlisted_one_is_a_violation() {
    let port = echo_server();
    let proxy = proxy(&["ok.test"], &[]);
    let answer = send(
        &proxy,
        format!("CONNECT ok.test:{port} HTTP/1.1\r\n\r\nhello").as_bytes(),
    );
    assert_eq!(
        String::from_utf8_lossy(&answer),
        "HTTP/1.1 200 Connection established\r\n\r\nhello"
    );
    assert!(proxy.control().take_violations().is_empty());

    let answer = send(
        &proxy,
        format!("CONNECT other.test:{port} HTTP/1.1\r\n\r\n").as_bytes(),
    );
    let text = String::from_utf8_lossy(&answer);
    let line = format!("[sandbox] blocked: other.test:{port} is not in the allowed domains");
    assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
    assert!(
        text.ends_with("conch's proxy: refused by the sandbox's domain policy\n"),
        "{text}"
    );
    let violations = proxy.control().take_violations();
    assert_eq!(
        violations,
        vec![Violation {
            target: format!("other.test:{port}"),
            line
        }]
    );
    assert!(proxy.control().take_violations().is_empty(), "taken once");
}

#[test]
fn plain_http_is_forwarded_in_origin_form_one_request_per_connection() {
    let port = echo_server();
    let proxy = proxy(&["ok.test"], &[]);
    let request = format!(
        "GET http://ok.test:{port}/a?b HTTP/1.1\r\nHost: ok.test\r\nProxy-Connection: keep-alive\r\n\r\n"
    );
    let answer = String::from_utf8(send(&proxy, request.as_bytes())).unwrap();
    assert_eq!(
        answer,
        "GET /a?b HTTP/1.1\r\nHost: ok.test\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn socks5_checks_names_and_addresses() {
    let port = echo_server();
    let proxy = proxy(&["ok.test", "127.0.0.0/8"], &["127.0.0.9"]);
    let p = port.to_be_bytes();
    let mut by_name = vec![5, 1, 0, 5, 1, 0, 3, 7];
    by_name.extend_from_slice(b"ok.test");
    by_name.extend_from_slice(&[p[0], p[1]]);
    by_name.extend_from_slice(b"ping");
    assert_eq!(
        send(&proxy, &by_name),
        [&[5, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0][..], b"ping"].concat()
    );

    let by_address = [5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, p[0], p[1], b'!'];
    assert_eq!(send(&proxy, &by_address)[12..], *b"!");

    let denied = [5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 9, p[0], p[1]];
    assert_eq!(send(&proxy, &denied), [5, 0, 5, 2, 0, 1, 0, 0, 0, 0, 0, 0]);
    let v = proxy.control().take_violations();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].target, format!("127.0.0.9:{port}"));
}

#[test]
fn a_new_policy_applies_to_the_next_connection_and_a_stopped_proxy_refuses() {
    let port = echo_server();
    let mut proxy = proxy(&[], &[]);
    let request = format!("CONNECT ok.test:{port} HTTP/1.1\r\n\r\nx");
    assert!(send(&proxy, request.as_bytes()).starts_with(b"HTTP/1.1 403"));
    let resolve = BTreeMap::from([("ok.test".to_string(), "127.0.0.1".to_string())]);
    let wider = DomainPolicy::parse("network", &["ok.test".into()], &[], &resolve).unwrap();
    proxy
        .control()
        .set_network(&Network::Domains(wider))
        .unwrap();
    assert!(send(&proxy, request.as_bytes()).starts_with(b"HTTP/1.1 200"));
    let port = proxy.port();
    proxy.stop();
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens after a stop"
    );
}
