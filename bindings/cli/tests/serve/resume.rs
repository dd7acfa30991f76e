//! A dropped connection loses nothing: the client connects again and the
//! session resumes after the last frame it saw. Past the grace period,
//! nothing is left running. The drop is real: the client reaches the
//! server through a TCP relay the test cuts.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conch_core::RunOptions;
use conch_remote::{ConnectOptions, RemoteError, connect};
use serde_json::Map;

use super::{Listening, wait_sleeping};
use crate::common::unique_sleep;

/// A TCP relay to `to`; `cut` ends every connection through it, and
/// while `down` new ones are refused (closed at once).
struct Relay {
    addr: String,
    open: Arc<Mutex<Vec<TcpStream>>>,
    down: Arc<AtomicBool>,
}

impl Relay {
    fn to(to: &str) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let open = Arc::new(Mutex::new(Vec::new()));
        let down = Arc::new(AtomicBool::new(false));
        let (to, conns, refusing) = (to.to_string(), open.clone(), down.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if refusing.load(Ordering::SeqCst) {
                    continue; // dropped: closed
                }
                let server = TcpStream::connect(&to).unwrap();
                conns
                    .lock()
                    .unwrap()
                    .extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap());
                pipe(server, client);
            }
        });
        Relay { addr, open, down }
    }

    fn cut(&self) {
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 16384];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 || to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

#[test]
fn a_cut_connection_resumes_with_every_byte() {
    let server = Listening::start(&[], None);
    let relay = Relay::to(&server.addr);
    let remote = connect(
        format!("ws://{}", relay.addr).as_str(),
        ConnectOptions::default(),
    )
    .unwrap();
    let sh = remote.shell(Map::new()).unwrap();
    let streamed = Arc::new(Mutex::new(String::new()));
    let seen = streamed.clone();
    let command = "for i in $(seq 1 300); do echo line$i; /bin/sleep 0.01; done";
    let run = std::thread::spawn(move || {
        let mut opts = RunOptions::new(command);
        opts.timeout = Some(Duration::from_secs(120));
        sh.run(opts, |c| seen.lock().unwrap().push_str(c))
    });
    for lines in [20, 100, 200] {
        super::common::wait_until("output after the cut", || {
            streamed.lock().unwrap().lines().count() > lines
        });
        relay.cut();
    }
    let result = run.join().unwrap().expect("the run ends, through the cuts");
    let want: String = (1..=300).map(|i| format!("line{i}\n")).collect();
    assert_eq!(
        *streamed.lock().unwrap(),
        want,
        "every line streamed, once, in order"
    );
    assert_eq!(result.output, want);
    assert_eq!(result.exit_code, Some(0));
}

#[test]
fn past_the_grace_period_nothing_is_left_running() {
    let server = Listening::start(&["--grace", "1"], None);
    let relay = Relay::to(&server.addr);
    let remote = connect(
        format!("ws://{}", relay.addr).as_str(),
        ConnectOptions {
            reconnect_within: Duration::from_secs(30),
            ..ConnectOptions::default()
        },
    )
    .unwrap();
    let sh = remote.shell(Map::new()).unwrap();
    let nap = unique_sleep(3073);
    let command = format!("/bin/sleep {nap}");
    let run = std::thread::spawn(move || sh.run(RunOptions::new(command), |_| {}));
    wait_sleeping(&nap, true);
    relay.down.store(true, Ordering::SeqCst);
    relay.cut();
    // The server waits a second for the client, then closes the session.
    wait_sleeping(&nap, false);
    relay.down.store(false, Ordering::SeqCst);
    // The client comes back to a server that no longer has the session.
    match run.join().unwrap() {
        Err(RemoteError::SessionLost(_)) | Err(RemoteError::ConnectionLost(_)) => {}
        other => panic!("the session is lost, got {other:?}"),
    }
}
