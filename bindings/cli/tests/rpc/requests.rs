//! Requests and their replies: an abort while a command runs (also one
//! sent right behind it), pipelined requests answered in order, a long
//! line read whole, bad lines answered without stopping, and every option
//! of the schema a field.

use super::*;

#[test]
fn abort_bash_cancels_a_running_command() {
    let mut server = Server::start("abort");
    server.send(r#"{"id": "warm", "type": "bash", "command": "true"}"#);
    assert_eq!(server.response(HANG_GUARD)["success"], true);

    // The command prints the pid of the process that becomes the sleep.
    server.send(
        r#"{"id": 1, "type": "bash", "command": "/bin/sh -c 'echo started $$; exec /bin/sleep 100'"}"#,
    );
    let mut text = String::new();
    while !text.ends_with('\n') {
        let chunk = server.next(HANG_GUARD);
        assert_eq!(chunk["type"], "bash_chunk", "{chunk}");
        assert_eq!(chunk["id"], 1, "{chunk}");
        text.push_str(chunk["chunk"].as_str().unwrap());
    }
    let pid: u32 = text
        .strip_prefix("started ")
        .and_then(|t| t.strip_suffix('\n'))
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("not `started <pid>`: {text:?}"));
    // The sleep runs (so the abort hits it, not a shell between its fork and
    // exec), and the abort is what ends it.
    wait_sleep_100(pid, true);
    server.send(r#"{"id": 2, "type": "abort_bash"}"#);
    let abort_reply = server.response(HANG_GUARD);
    assert_eq!(
        abort_reply,
        json!({"type": "response", "id": 2, "command": "abort_bash", "success": true})
    );
    let bash_reply = server.response(HANG_GUARD);
    assert_eq!(bash_reply["id"], 1);
    assert_eq!(bash_reply["command"], "bash");
    assert_eq!(bash_reply["data"]["cancelled"], true);
    assert_eq!(bash_reply["data"]["timedOut"], false);
    assert_eq!(bash_reply["data"]["exitCode"], Value::Null);
    assert_eq!(
        bash_reply["data"]["output"],
        format!("[Command cancelled]\n{text}")
    );
    wait_sleep_100(pid, false);

    // the session goes on
    server.send(r#"{"id": 3, "type": "bash", "command": "echo alive"}"#);
    assert_eq!(server.response(HANG_GUARD)["data"]["output"], "alive\n");
    assert_eq!(server.finish(), 0);
}

#[test]
fn an_abort_sent_right_behind_its_command_still_cancels_it() {
    let mut server = Server::start("abort-race");
    server.send(
        "{\"id\": 1, \"type\": \"bash\", \"command\": \"/bin/sleep 100\"}\n{\"id\": 2, \"type\": \"abort_bash\"}",
    );
    let first = server.response(HANG_GUARD);
    assert_eq!(first["command"], "abort_bash");
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["data"]["cancelled"], true);
}

#[test]
fn a_hundred_pipelined_requests_are_answered_in_order() {
    let mut server = Server::start("pipeline");
    let batch: String = (0..100)
        .map(|i| {
            format!("{{\"id\": {i}, \"type\": \"bash\", \"command\": \"echo n$(({i} * 2))\"}}\n")
        })
        .collect();
    server.send(batch.trim_end());
    let mut chunks_of = Vec::new();
    for i in 0..100 {
        let mut chunk_text = String::new();
        let reply = loop {
            let v = server.next(HANG_GUARD);
            if v["type"] == "bash_chunk" {
                assert_eq!(v["id"], i, "a chunk of another request: {v}");
                chunk_text.push_str(v["chunk"].as_str().unwrap());
            } else {
                break v;
            }
        };
        assert_eq!(reply["id"], i);
        assert_eq!(reply["success"], true);
        assert_eq!(reply["data"]["output"], format!("n{}\n", i * 2));
        chunks_of.push(chunk_text);
    }
    assert!(
        chunks_of
            .iter()
            .enumerate()
            .all(|(i, c)| *c == format!("n{}\n", i * 2))
    );
    assert_eq!(server.finish(), 0);
}

/// A line that takes many reads (4 MiB, read 64 KiB at a time) comes
/// whole, and so does the short one sent right behind it in the same
/// write: each read is searched for the newline once.
#[test]
fn a_long_line_and_the_one_behind_it_come_whole() {
    let mut server = Server::start("long-line");
    let padding = "x".repeat(4 << 20);
    let long = json!({"id": "long", "type": "bash", "command": format!(": {padding}; echo long")});
    let short = json!({"id": "short", "type": "bash", "command": "echo short"});
    server.send(&format!("{long}\n{short}"));
    for (id, output) in [("long", "long\n"), ("short", "short\n")] {
        let reply = server.response(HANG_GUARD);
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(reply["data"]["output"], output, "{reply}");
    }
    assert_eq!(server.finish(), 0);
}

#[test]
fn bad_lines_get_error_replies_and_the_server_goes_on() {
    let mut server = Server::start("bad");
    server.send("this is not json");
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["type"], "response");
    assert_eq!(reply["success"], false);
    assert!(
        reply["error"]
            .as_str()
            .unwrap()
            .starts_with("Invalid JSON: "),
        "{reply}"
    );

    for (line, error) in [
        ("[1, 2]", "A request must be a JSON object"),
        (r#"{"id": 7}"#, "A request needs a string \"type\""),
        (
            r#"{"id": 8, "type": "bash"}"#,
            "bash needs a string \"command\"",
        ),
        (
            r#"{"id": 9, "type": "bash", "command": "true", "timeout": "x"}"#,
            "\"timeout\": invalid type: string \"x\", expected a number",
        ),
        (r#"{"id": 10, "type": "reboot"}"#, "Unknown command: reboot"),
    ] {
        server.send(line);
        let reply = server.response(HANG_GUARD);
        assert_eq!(reply["success"], false, "{line}");
        assert_eq!(reply["error"], error, "{line}");
    }

    server.send(r#"{"id": 11, "type": "bash", "command": "echo fine", "cwd": "."}"#);
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["id"], 11);
    assert_eq!(reply["data"]["output"], "fine\n");
    server.send(r#"{"id": 12, "type": "bash", "command": "pwd", "cwd": "nowhere"}"#);
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["success"], false);
    assert!(
        reply["error"]
            .as_str()
            .unwrap()
            .starts_with("Working directory does not exist: ")
    );
    server.send(r#"{"id": 13, "type": "bash", "command": "/bin/sleep 5", "timeout": 1}"#);
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["data"]["timedOut"], true);
    assert_eq!(
        reply["data"]["output"],
        "[Command timed out after 1 seconds]\n"
    );
    assert_eq!(server.finish(), 0);
}

/// Every option of `RunOptions` (a `bash` request) and `JobOptions` (a
/// `job_start`) in the core's schema is a request field, camelCase:
/// a valid value is taken, a wrong JSON type is an error reply naming the
/// field. Walked from the schema, so an option the core adds is checked
/// here with no change of the server or of this test.
#[test]
fn every_option_of_the_schema_is_a_request_field() {
    let mut server = Server::start("schema");
    for (def, kind) in [("RunOptions", "bash"), ("JobOptions", "job_start")] {
        for (key, valid, wrong) in conch_core::wire::option_samples(def) {
            let field = conch_core::wire::camel_key(&key);
            let mut request = json!({"type": kind, "command": "true"});
            request[&field] = valid;
            let data = server.ok(request.clone());
            if kind == "job_start" {
                server.ok(json!({"type": "job_kill", "job": data["job"]}));
            }
            request[&field] = wrong;
            let error = server.refused(request.clone());
            assert!(
                error.starts_with(&format!("\"{field}\": invalid type")),
                "{request}: {error}"
            );
        }
    }
}
