//! Frames a client should never send, written by hand to a stdio server:
//! each gets an error reply and the server goes on.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use super::{CONCH, exits};

struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Raw {
    fn start() -> Raw {
        let mut child = Command::new(CONCH)
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Raw {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.stdout.read_line(&mut line).unwrap() > 0,
            "the server replies"
        );
        serde_json::from_str(&line).unwrap()
    }

    /// The next reply, past the events before it.
    fn reply(&mut self) -> Value {
        loop {
            let frame = self.read();
            if frame.get("event").is_none() {
                return frame;
            }
        }
    }

    /// Sends `line`; the reply.
    fn ask(&mut self, line: &str) -> Value {
        self.send(line);
        self.read()
    }
}

#[test]
fn malformed_frames_get_an_error_and_the_server_goes_on() {
    let mut raw = Raw::start();
    let cases = [
        ("not json", Value::Null, "bad_request", "not JSON"),
        (
            "[1,2]",
            Value::Null,
            "bad_request",
            "a request is a JSON object",
        ),
        (
            r#"{"id":1}"#,
            json!(1),
            "bad_request",
            "a request needs an op",
        ),
        (
            r#"{"id":2,"op":"fly"}"#,
            json!(2),
            "bad_request",
            "unknown op \"fly\"",
        ),
        (
            r#"{"id":3,"op":"run","session":"s404"}"#,
            json!(3),
            "unknown_session",
            "no session s404",
        ),
        (
            r#"{"id":4,"op":"run"}"#,
            json!(4),
            "bad_request",
            "this request needs a session",
        ),
        (
            r#"{"id":{},"op":"hello"}"#,
            Value::Null,
            "bad_request",
            "id must be",
        ),
        (
            r#"{"id":5,"op":"open","options":[]}"#,
            json!(5),
            "wrong_type",
            "options must be an object",
        ),
    ];
    for (line, id, kind, message) in cases {
        let reply = raw.ask(line);
        assert_eq!(reply["id"], id, "{line}: {reply}");
        assert_eq!(reply["error"]["kind"], kind, "{line}: {reply}");
        let text = reply["error"]["message"].as_str().unwrap();
        assert!(text.starts_with(message), "{line}: {text}");
    }
    let hello = raw.ask(r#"{"id":"h","op":"hello"}"#);
    assert_eq!(hello["ok"]["protocol"], 1, "{hello}");
    drop(raw.stdin.take());
    assert_eq!(exits(&mut raw.child).code(), Some(0));
}

#[test]
fn an_oversized_frame_is_refused_without_being_kept() {
    let mut raw = Raw::start();
    let big = format!(
        r#"{{"id":1,"op":"hello","pad":"{}"}}"#,
        "x".repeat(17 << 20)
    );
    let reply = raw.ask(&big);
    assert_eq!(reply["error"]["kind"], "bad_request", "{reply}");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("larger than")
    );
    assert_eq!(raw.ask(r#"{"id":2,"op":"hello"}"#)["ok"]["protocol"], 1);
}

#[test]
fn a_retried_request_is_answered_once() {
    let dir = std::env::temp_dir().join(format!("conch-serve-retry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut raw = Raw::start();
    let open = json!({"id": "o1", "op": "open",
                      "options": {"snapshot": "none", "cwd": dir}})
    .to_string();
    let first = raw.ask(&open);
    let session = first["ok"]["session"].as_str().unwrap().to_string();
    assert_eq!(raw.ask(&open), first, "a retried open opens nothing more");
    let run = json!({"id": "r1", "op": "run", "session": session,
                     "options": {"command": "echo ran >> count; wc -l < count"}})
    .to_string();
    raw.send(&run);
    let once = raw.reply();
    raw.send(&run);
    let again = raw.reply();
    assert_eq!(once["ok"]["output"], "1\n");
    assert_eq!(again["ok"], once["ok"], "answered again, not run again");
    assert_eq!(std::fs::read_to_string(dir.join("count")).unwrap(), "ran\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_retried_change_of_the_servers_own_is_answered_once() {
    let path = std::env::temp_dir().join(format!("conch-once-{}", std::process::id()));
    std::fs::write(&path, "x").unwrap();
    let mut raw = Raw::start();
    let remove = json!({"id": "r1", "op": "file_remove", "path": path}).to_string();
    let first = raw.ask(&remove);
    assert_eq!(first["ok"], Value::Null, "{first}");
    assert!(!path.exists());
    // Sent again (a client that lost the reply): the first answer, not
    // the missing file of a second remove.
    assert_eq!(raw.ask(&remove), first);
    let open = r#"{"id": "o1", "op": "open", "options": {"snapshot": "none"}}"#;
    let opened = raw.ask(open);
    assert_eq!(raw.ask(open)["ok"]["session"], opened["ok"]["session"]);
}
