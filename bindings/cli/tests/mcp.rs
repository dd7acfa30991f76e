//! `conch mcp` through the built binary, as a client that does not wait for
//! one reply to send the next request: `tools/call`s run in the order they
//! came, each once the one before it ended, while other requests and
//! cancellations are answered; lines of up to the 16 MiB limit are read
//! whole, a longer one dropped; lines that are no message the server takes
//! get JSON-RPC 2.0's error, and the server goes on. Every wait is for a
//! reply, under a hang guard.

use std::io::Write;
use std::time::Instant;

use serde_json::{Value, json};

#[allow(dead_code)] // the helpers other test binaries use too
mod common;
use common::{
    HANG_GUARD, Lines, mcp, mcp_bash, mcp_bash_request, mcp_handshake, mcp_text, scratch_dir,
    wait_until,
};

/// The longest line the server reads (`MAX_LINE` of its transport).
const MAX_LINE: usize = 16 << 20;

/// A `conch mcp` in a scratch directory (its project directory), past the
/// handshake.
fn start(name: &str) -> (Lines, std::path::PathBuf) {
    let dir = scratch_dir(&format!("mcp-{name}"));
    let mut server = Lines::start(&dir, &["mcp"]);
    mcp_handshake(&mut server);
    (server, dir)
}

/// `notifications/cancelled` for the request `id`.
fn cancel(server: &mut Lines, id: u64) {
    let params = json!({"requestId": id});
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}));
}

#[test]
fn calls_run_in_the_order_they_came_while_other_requests_are_answered() {
    let (mut server, dir) = start("order");
    // The first call holds the session until the file `gate` is gone;
    // each call after it adds its number to a variable, sent before the
    // reply of the one before it.
    std::fs::write(dir.join("gate"), "").unwrap();
    server.send(mcp_bash_request(
        1,
        "while [ -e gate ]; do /bin/sleep 0.02; done; L=1; echo $L",
    ));
    for id in 2..=8 {
        server.send(mcp_bash_request(id, &format!("L=\"$L {id}\"; echo $L")));
    }
    // Answered while the first call runs and the others wait for it.
    let r = mcp(&mut server, 20, "ping", json!({}));
    assert_eq!(r["result"], json!({}), "{r}");
    let r = mcp(&mut server, 21, "tools/list", json!({}));
    assert_eq!(r["result"]["tools"][0]["name"], "bash", "{r}");
    let r = mcp(
        &mut server,
        22,
        "resources/read",
        json!({"uri": "artifact://1"}),
    );
    assert_eq!(r["error"]["code"], -32002, "{r}");

    std::fs::remove_file(dir.join("gate")).unwrap();
    let mut expected = String::new();
    for id in 1..=8u64 {
        expected = format!("{expected} {id}").trim_start().to_string();
        assert_eq!(mcp_text(&server.reply(id)), expected, "call {id}");
    }
    server.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cancelled_call_ends_and_a_call_cancelled_before_its_turn_never_runs() {
    let (mut server, dir) = start("cancel");
    server.send(mcp_bash_request(1, ": > started; /bin/sleep 100"));
    wait_until("the first call runs", || dir.join("started").exists());
    server.send(mcp_bash_request(2, "X=ran; : > ran"));
    server.send(mcp_bash_request(3, "echo \"X=$X\""));
    // The second call waits for the first: cancelled, it never runs.
    cancel(&mut server, 2);
    // The third runs once the first, cancelled, ended.
    cancel(&mut server, 1);
    assert_eq!(mcp_text(&server.reply(3)), "X=");
    assert!(!dir.join("ran").exists());
    // The session goes on.
    assert_eq!(mcp_bash(&mut server, 4, "echo on"), "on");
    server.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `ping` whose line is `len` bytes long, padded in its `_meta`.
fn padded_ping(id: u64, len: usize) -> String {
    let bare = json!({"jsonrpc": "2.0", "id": id, "method": "ping",
        "params": {"_meta": {"pad": ""}}})
    .to_string();
    let line = bare.replace(
        "\"pad\":\"\"",
        &format!("\"pad\":\"{}\"", "x".repeat(len - bare.len())),
    );
    assert_eq!(line.len(), len);
    line
}

#[test]
fn lines_up_to_the_limit_are_read_whole_and_a_longer_one_is_dropped() {
    let (mut server, dir) = start("long");
    // Reading a line looks at each byte once: the replies to these four
    // lines of 16 MiB come long before the hang guard (reading each read
    // through the whole line so far took a time growing with its square,
    // about a minute for the four). The guard is for the whole exchange.
    let deadline = Instant::now() + HANG_GUARD;
    let mut stdin = server.take_stdin();
    let writer = std::thread::spawn(move || {
        for id in 1..=4 {
            writeln!(stdin, "{}", padded_ping(id, MAX_LINE)).unwrap();
        }
        // One byte over: dropped, unanswered.
        writeln!(stdin, "{}", padded_ping(5, MAX_LINE + 1)).unwrap();
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 6, "method": "ping"})
        )
        .unwrap();
        stdin
    });
    let mut answered = Vec::new();
    while answered.len() < 5 {
        let r = server.next_by(deadline);
        assert_eq!(r["result"], json!({}), "{r}");
        answered.push(r["id"].clone());
    }
    answered.sort_by_key(|id| id.as_u64());
    assert_eq!(answered, [1, 2, 3, 4, 6].map(Value::from));
    // Its stdin ends with the writer.
    drop(writer.join().unwrap());
    server.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lines_that_are_no_message_get_json_rpc_errors_and_the_server_goes_on() {
    let (mut server, dir) = start("errors");
    let error = |server: &mut Lines, line: &str, id: Value| {
        server.send_text(line);
        let r = server.reply(id.clone());
        assert_eq!(r["jsonrpc"], "2.0", "{r}");
        (
            r["error"]["code"].clone(),
            r["error"]["message"]
                .as_str()
                .unwrap_or_else(|| panic!("{r}"))
                .to_string(),
        )
    };

    // Bad params of a method served: -32602 with the request's id, naming
    // what is wrong.
    let bad_params = [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"bash","arguments":"echo hi"}}"#,
            "tools/call",
            "invalid type: string \"echo hi\", expected a map",
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":["echo hi"]}}"#,
            "tools/call",
            "invalid type: sequence, expected a map",
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{}}"#,
            "resources/read",
            "missing field `uri`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{}}"#,
            "initialize",
            "missing field `protocolVersion`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":[1]}"#,
            "tools/list",
            "params must be an object",
        ),
    ];
    for (id, (line, method, why)) in (1u64..).zip(bad_params) {
        let (code, message) = error(&mut server, line, id.into());
        assert_eq!(code, -32602, "{line}");
        let prefix = format!("Invalid params of {method}: {why}");
        assert!(message.starts_with(&prefix), "{line}: {message}");
    }

    // No id to answer with: -32600 with a null id.
    let no_id = [
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#,
            "Invalid request: bad id: Expected an integer",
        ),
        (
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
            "Invalid request: bad id: Number too large for i64",
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            "Invalid request: bad id: Expect number or string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            "Invalid request: bad id: Expect number or string",
        ),
        (
            "[1,2]",
            "Invalid request: batches are not supported: send one message a line",
        ),
        (
            r#"[{"jsonrpc":"2.0","id":7,"method":"ping"}]"#,
            "Invalid request: batches are not supported: send one message a line",
        ),
        (r#""ping""#, "Invalid request: a message is a JSON object"),
        // Neither a request nor a notification.
        (
            r#"{"jsonrpc":"2.0"}"#,
            "Invalid request: unrecognized JSON-RPC message",
        ),
    ];
    for (line, expected) in no_id {
        let (code, message) = error(&mut server, line, Value::Null);
        assert_eq!(
            (code, message.as_str()),
            (json!(-32600), expected),
            "{line}"
        );
    }

    // A method nobody serves is still -32601.
    let (code, message) = error(
        &mut server,
        r#"{"jsonrpc":"2.0","id":8,"method":"conch/other","params":{}}"#,
        8.into(),
    );
    assert_eq!(
        (code, message.as_str()),
        (json!(-32601), "unknown method: conch/other")
    );

    assert_eq!(mcp_bash(&mut server, 9, "echo on"), "on");
    server.finish();
    let _ = std::fs::remove_dir_all(&dir);
}
