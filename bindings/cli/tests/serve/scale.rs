//! Many sessions on one server, and a client that stops reading while a
//! command floods: the server's memory stays bounded and the command waits
//! for the client, as a local one waits for its reader.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use conch_core::RunOptions;
use serde_json::{Map, Value, json};

use super::{CONCH, Listening};

#[test]
fn two_hundred_sessions_on_one_server() {
    let server = Listening::start(&["--max-sessions", "200"], None);
    let remote = server.connect(None).unwrap();
    let shells: Vec<_> = (0..200)
        .map(|_| {
            remote
                .shell(super::options(json!({"snapshot": "none"})))
                .unwrap()
        })
        .collect();
    // The 201st is refused: the server's most.
    match remote.shell(Map::new()) {
        Err(conch_remote::RemoteError::Refused { kind, message }) => {
            assert_eq!(kind, conch_remote::protocol::ErrorKind::TooManySessions);
            assert!(message.contains("200 sessions"), "{message}");
        }
        other => panic!("too many sessions, got {:?}", other.map(|_| ())),
    }
    std::thread::scope(|s| {
        for (part, shells) in shells.chunks(20).enumerate() {
            s.spawn(move || {
                for (i, sh) in shells.iter().enumerate() {
                    let n = part * 20 + i;
                    let r = sh
                        .run(RunOptions::new(format!("echo session {n}")), |_| {})
                        .unwrap();
                    assert_eq!(r.output, format!("session {n}\n"));
                }
            });
        }
    });
    for sh in &shells {
        sh.close().unwrap();
    }
    // Room again.
    remote.shell(Map::new()).unwrap().close().unwrap();
}

/// The resident memory of `pid`, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024
}

#[test]
fn a_client_that_stops_reading_holds_the_flood_back() {
    const GIB: u64 = 1 << 30;
    let mut server = Command::new(CONCH)
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = server.id();
    let mut stdin = server.stdin.take().unwrap();
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    let mut send = |frame: Value| {
        writeln!(stdin, "{frame}").unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"id": 1, "op": "open", "options": {"snapshot": "none"}}));
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let open: Value = serde_json::from_str(&line).unwrap();
    let session = open["ok"]["session"].as_str().unwrap().to_string();
    let before = rss(pid);
    let done = std::env::temp_dir().join(format!("conch-flood-done-{}", std::process::id()));
    let _ = std::fs::remove_file(&done);
    send(
        json!({"id": 2, "op": "run", "session": session, "options": {
        "command": format!("head -c {GIB} /dev/zero | tr '\\0' a; touch {}", done.display())}}),
    );
    // Nobody reads: the pipe to the client fills, then the connection's
    // queue, and the command waits on its own pipe.
    let mut peak = 0;
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        peak = peak.max(rss(pid));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        peak < before + (64 << 20),
        "the server grew by {} MiB while the client did not read",
        (peak - before) >> 20
    );
    assert!(!done.exists(), "the flood waits for the client");
    // Reading again, the command goes on to its end.
    let mut streamed = 0u64;
    let result = loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the server answers"
        );
        let frame: Value = serde_json::from_str(&line).unwrap();
        if frame["event"] == "chunk" {
            streamed += frame["text"].as_str().unwrap().len() as u64;
        } else if frame["id"] == 2 && frame.get("ok").is_some() {
            break frame;
        }
    };
    assert_eq!(streamed, GIB);
    assert_eq!(result["ok"]["total_bytes"], GIB);
    assert_eq!(result["ok"]["exit_code"], 0);
    assert!(done.exists());
    std::fs::remove_file(&done).unwrap();
    drop(stdin);
    assert!(super::exits(&mut server).success());
}
