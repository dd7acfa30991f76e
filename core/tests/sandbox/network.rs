//! No socket but `AF_UNIX` (seccomp), TCP to the allowed ports only
//! (Landlock), and the same commands working with the network allowed.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use conch_core::Network;

use super::*;

/// A TCP server answering `HTTP/1.0 200` to every connection, for the
/// test's lifetime; its port.
fn tcp_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            use std::io::Write;
            let mut buf = [0u8; 1024];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    port
}

/// The network commands of the acceptance list, against `tcp` and `udp`.
fn attempts(tcp: u16, udp: u16) -> Vec<String> {
    let mut list = vec![
        format!(
            "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1',{tcp}),2); print('tcp ok')\""
        ),
        format!(
            "python3 -c \"import socket; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.sendto(b'x',('127.0.0.1',{udp})); print('udp ok')\""
        ),
        format!("bash -c 'echo x > /dev/tcp/127.0.0.1/{tcp}' && echo devtcp ok"),
        // A DNS query is a UDP datagram: to the listener, as a resolver.
        format!(
            "python3 -c \"import socket; s=socket.socket(socket.AF_INET6,socket.SOCK_DGRAM); print('udp6 ok')\""
        ),
    ];
    if spawner_has("curl") {
        list.push(format!(
            "curl -sS --max-time 3 http://127.0.0.1:{tcp}/ && echo curl ok"
        ));
    } else {
        eprintln!("curl not found: its attempt is skipped");
    }
    list
}

fn spawner_has(name: &str) -> bool {
    conch_core::process::find_on_path(name).is_some()
}

const UNIX_OK: &str = "python3 -c \"import socket; a,b=socket.socketpair(); a.send(b'x'); \
    print(b.recv(1)); s=socket.socket(socket.AF_UNIX); s.bind('u.sock'); s.listen(); \
    c=socket.socket(socket.AF_UNIX); c.connect('u.sock'); print('unix ok')\"";

#[test]
fn without_network_every_socket_but_unix_fails_and_with_it_they_work() {
    let tcp = tcp_server();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();

    let dir = scratch("net-deny");
    let sh = shell(&dir, Some(Sandbox::default()));
    for attempt in attempts(tcp, udp_port) {
        let (code, output) = out(&sh, &attempt);
        assert_ne!(code, Some(0), "{attempt}: {output}");
        assert!(!output.contains(" ok"), "{attempt}: {output}");
    }
    let mut buf = [0u8; 16];
    assert!(udp.recv(&mut buf).is_err(), "a datagram got out");
    // getent over DNS: no resolver reachable (a name /etc/hosts lacks).
    let (code, _) = out(&sh, "getent hosts conch-sandbox-test.example.com");
    assert_ne!(code, Some(0));
    let (code, output) = out(&sh, UNIX_OK);
    assert_eq!(code, Some(0), "{output}");
    assert!(output.contains("unix ok"), "{output}");
    drop(sh);

    let open = scratch("net-allow");
    let sh = shell(
        &open,
        Some(Sandbox {
            network: Network::Allow,
            ..Sandbox::default()
        }),
    );
    for attempt in attempts(tcp, udp_port) {
        let (code, output) = out(&sh, &attempt);
        assert_eq!(code, Some(0), "{attempt}: {output}");
    }
    assert!(
        udp.recv(&mut buf).is_ok(),
        "no datagram with the network allowed"
    );
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&open);
}

#[test]
fn an_allowed_tcp_port_connects_and_another_does_not() {
    if conch_core::process::sandbox::landlock_abi() < 4 {
        eprintln!("Landlock ABI < 4: no TCP port rules on this kernel; skipped");
        return;
    }
    let allowed = tcp_server();
    let other = tcp_server();
    let dir = scratch("net-port");
    let sh = shell(
        &dir,
        Some(Sandbox {
            allow_tcp_ports: vec![allowed],
            ..Sandbox::default()
        }),
    );
    assert!(sh.sandbox_applied().unwrap().tcp_ports);
    let connect = |port: u16| {
        format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1',{port}),2); print('connected')\""
        )
    };
    let (code, output) = out(&sh, &connect(allowed));
    assert_eq!(code, Some(0), "{output}");
    let (code, output) = out(&sh, &connect(other));
    assert_ne!(code, Some(0), "{output}");
    // UDP stays closed.
    let (code, _) = out(
        &sh,
        "python3 -c \"import socket; socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\"",
    );
    assert_ne!(code, Some(0));
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}
