//! The session's jobs over the protocol: late output listed and polled, a
//! waiting poll that holds up nothing, started jobs fed, polled, killed and
//! announced, terminal jobs, and the refusals of bad job requests.

use super::*;

#[test]
fn late_output_is_a_job_listed_and_polled() {
    let mut server = Server::start("jobs");
    assert_eq!(
        server.jobs(),
        Vec::<Value>::new(),
        "no jobs before anything ran"
    );
    let command = format!("{} echo started", gated("/bin/sleep 0.3; echo late"));
    server.bash("1", &command, "started\n");
    server.bash("r", RELEASE, "");
    std::thread::sleep(Duration::from_secs(1));
    server.bash("2", "echo next", "next\n");

    let jobs = server.jobs();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let listed = &jobs[0];
    assert_eq!(listed["command"], command);
    assert_eq!(listed["status"], "exited");
    assert_eq!(listed["exitCode"], Value::Null);
    assert_eq!(listed["totalBytes"], 5);
    assert_eq!(listed["artifactId"], Value::Null);
    assert!(
        listed["startedMs"].as_u64().unwrap() > 1_600_000_000_000,
        "{listed}"
    );
    assert!(listed["elapsedMs"].as_u64().unwrap() >= 250, "{listed}");

    let job = listed["job"].clone();
    let poll = server.poll(json!({"job": job}));
    assert_eq!(poll["job"], job);
    assert_eq!(poll["output"], "late\n");
    assert_eq!(poll["status"], "exited");
    assert_eq!(poll["exitCode"], Value::Null);
    assert_eq!(
        (
            &poll["cursor"],
            &poll["nextCursor"],
            &poll["omittedBytes"],
            &poll["totalBytes"]
        ),
        (&json!(0), &json!(5), &json!(0), &json!(5)),
        "{poll}"
    );
    assert!(poll["elapsedMs"].is_u64(), "{poll}");
    // The next poll reads from where that one stopped; a cursor re-reads.
    let again = server.poll(json!({"job": job}));
    assert_eq!(
        (&again["output"], &again["cursor"]),
        (&json!(""), &json!(5))
    );
    let reread =
        server.poll(json!({"job": job, "cursor": 0, "maxBytes": 3, "wait": 0, "until": null}));
    assert_eq!(reread["output"], "te\n", "the newest 3 bytes: {reread}");
    assert_eq!(
        (&reread["cursor"], &reread["omittedBytes"]),
        (&json!(2), &json!(2))
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn a_waiting_poll_holds_up_no_other_request() {
    let mut server = Server::start("poll-wait");
    // The job says "ready" only once a later command makes the file `go`:
    // the poll cannot have returned before.
    server.bash(
        "1",
        "(while [ ! -e go ]; do /bin/sleep 0.05; done; echo ready; /bin/sleep 100) &",
        "",
    );
    let job = server.only_job();
    server.send(
        &json!({"id": "p", "type": "job_poll", "job": job, "wait": 25, "until": "^ready\n"})
            .to_string(),
    );
    // Runs, aborts and listings are answered while the poll waits.
    server.bash("2", "echo next", "next\n");
    assert_eq!(server.jobs()[0]["status"], "running");
    // A command that prints the pid of the process that becomes the sleep:
    // the poll and the abort below come while it runs.
    server.send(
        r#"{"id": "3", "type": "bash", "command": "/bin/sh -c 'echo started $$; exec /bin/sleep 100'"}"#,
    );
    let chunk = server.next(HANG_GUARD);
    assert_eq!(
        (&chunk["type"], &chunk["id"]),
        (&json!("bash_chunk"), &json!("3")),
        "{chunk}"
    );
    let pid: u32 = chunk["chunk"]
        .as_str()
        .and_then(|t| t.strip_prefix("started "))
        .and_then(|t| t.trim_end().parse().ok())
        .unwrap_or_else(|| panic!("not `started <pid>`: {chunk}"));
    wait_sleep_100(pid, true);
    // A poll (here, one that does not wait) is answered while a run runs.
    let quick = server.poll(json!({"job": job}));
    assert_eq!(
        (&quick["output"], &quick["status"]),
        (&json!(""), &json!("running"))
    );
    server.send(r#"{"id": "4", "type": "abort_bash"}"#);
    let abort = server.response(HANG_GUARD);
    assert_eq!(
        (&abort["id"], &abort["success"]),
        (&json!("4"), &json!(true)),
        "{abort}"
    );
    let aborted = server.response(HANG_GUARD);
    assert_eq!(aborted["id"], "3", "{aborted}");
    assert_eq!(aborted["data"]["cancelled"], true, "{aborted}");

    let started = Instant::now();
    server.bash("5", "touch go", "");
    let reply = server.response(HANG_GUARD);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "until ended the wait, not the 25 s"
    );
    assert_eq!(
        (&reply["id"], &reply["command"]),
        (&json!("p"), &json!("job_poll")),
        "{reply}"
    );
    assert_eq!(reply["success"], true, "{reply}");
    assert_eq!(reply["data"]["output"], "ready\n");
    assert_eq!(
        reply["data"]["status"], "running",
        "the poll ends, not the job"
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn max_bytes_keeps_the_newest_output_and_a_cursor_rereads() {
    let mut server = Server::start("poll-bytes");
    server.bash("1", &gated("printf abcdefghij"), "");
    server.bash("r", RELEASE, "");
    let job = server.only_job();
    let poll = server.poll(json!({"job": job, "wait": 25, "maxBytes": 4}));
    assert_eq!(poll["output"], "ghij");
    assert_eq!(poll["status"], "exited");
    assert_eq!(
        (
            &poll["cursor"],
            &poll["nextCursor"],
            &poll["omittedBytes"],
            &poll["totalBytes"]
        ),
        (&json!(6), &json!(10), &json!(6), &json!(10)),
        "{poll}"
    );
    let poll = server.poll(json!({"job": job, "cursor": 2}));
    assert_eq!(
        (&poll["output"], &poll["cursor"]),
        (&json!("cdefghij"), &json!(2))
    );
    let poll = server.poll(json!({"job": job, "cursor": 1e18}));
    assert_eq!(
        (&poll["output"], &poll["cursor"]),
        (&json!(""), &json!(10)),
        "past the end"
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn bad_job_requests_get_error_replies_and_the_server_goes_on() {
    let mut server = Server::start("poll-bad");
    server.bash("1", "/bin/sleep 100 &", "");
    let job = server.only_job();
    for (request, error) in [
        (
            json!({"id": 1, "type": "job_poll"}),
            "job_poll needs a number \"job\"".to_string(),
        ),
        (
            json!({"id": 2, "type": "job_poll", "job": null}),
            "job_poll needs a number \"job\"".into(),
        ),
        (
            json!({"id": 3, "type": "job_poll", "job": "1"}),
            "\"job\" must be a job number".into(),
        ),
        (
            json!({"id": 4, "type": "job_poll", "job": 99}),
            "no job 99 in this session".into(),
        ),
        (
            json!({"id": 5, "type": "job_poll", "job": 0}),
            "no job 0 in this session".into(),
        ),
        (
            json!({"id": 6, "type": "job_poll", "job": -1}),
            "job must be a whole number >= 0, got -1".into(),
        ),
        (
            json!({"id": 7, "type": "job_poll", "job": 1.5}),
            "job must be a whole number >= 0, got 1.5".into(),
        ),
        (
            json!({"id": 8, "type": "job_poll", "job": 1e300}),
            "job must be a whole number below 2^64, got 1e300".into(),
        ),
        (
            json!({"id": 8, "type": "job_poll", "job": 1e18}),
            format!("no job {} in this session", u32::MAX),
        ),
        (
            json!({"id": 9, "type": "job_poll", "job": job, "wait": -1}),
            "wait must be a number >= 0 of seconds up to 2147483.647, got -1".into(),
        ),
        (
            json!({"id": 10, "type": "job_poll", "job": job, "wait": "5"}),
            "\"wait\" must be a number of seconds".into(),
        ),
        (
            json!({"id": 11, "type": "job_poll", "job": job, "until": "("}),
            "until must be a valid regular expression, got \"(\" (error: unclosed group)".into(),
        ),
        (
            json!({"id": 12, "type": "job_poll", "job": job, "until": 5}),
            "\"until\" must be a string (a regular expression)".into(),
        ),
        (
            json!({"id": 13, "type": "job_poll", "job": job, "maxBytes": 0}),
            "maxBytes must be a whole number >= 1, got 0".into(),
        ),
        (
            json!({"id": 14, "type": "job_poll", "job": job, "cursor": -1}),
            "cursor must be a whole number >= 0, got -1".into(),
        ),
        (
            json!({"id": 15, "type": "job_poll", "job": job, "cursor": [1]}),
            "\"cursor\" must be a number of bytes".into(),
        ),
    ] {
        let reply = server.ask(request.clone());
        assert_eq!(reply["command"], "job_poll", "{request}: {reply}");
        assert_eq!(reply["success"], false, "{request}: {reply}");
        assert_eq!(reply["error"], error.as_str(), "{request}");
    }
    // The job and the session are unharmed.
    let poll = server.poll(json!({"job": job, "wait": 0}));
    assert_eq!(
        (&poll["status"], &poll["output"]),
        (&json!("running"), &json!(""))
    );
    server.bash("2", "echo fine", "fine\n");
    assert_eq!(server.finish(), 0);
}

#[test]
fn a_started_job_is_fed_polled_killed_and_its_end_announced() {
    let mut server = Server::start("start");
    let started = server.ask(json!({"id": "s", "type": "job_start",
        "command": "read -r n; echo hi $n; exit 4", "stdin": true}));
    assert_eq!(started["success"], true, "{started}");
    let job = started["data"]["job"].clone();
    let wrote = server.ask(json!({"id": "w", "type": "job_write", "job": job, "data": "ann\n"}));
    assert_eq!(
        (&wrote["command"], &wrote["success"]),
        (&json!("job_write"), &json!(true)),
        "{wrote}"
    );
    let poll = server.poll(json!({"job": job, "wait": 10}));
    assert_eq!(
        (&poll["output"], &poll["status"], &poll["exitCode"]),
        (&json!("hi ann\n"), &json!("exited"), &json!(4)),
        "{poll}"
    );
    // The end is announced as an event too.
    let event = server.job_exit();
    assert_eq!(
        (&event["job"], &event["exitCode"]),
        (&job, &json!(4)),
        "{event}"
    );

    let server_job = server.ask(json!({"id": "s2", "type": "job_start",
        "command": "echo up; /bin/sleep 30"}))["data"]["job"]
        .clone();
    server.poll(json!({"job": server_job, "wait": 10, "until": "up"}));
    let killed = server.ask(json!({"id": "k", "type": "job_kill", "job": server_job}));
    assert_eq!(killed["data"]["status"], "killed", "{killed}");

    let bad = server.ask(json!({"id": "b", "type": "job_write", "job": job, "data": "x"}));
    assert_eq!(bad["success"], false, "{bad}");
    assert!(
        bad["error"].as_str().unwrap().contains("has ended"),
        "{bad}"
    );
    let unknown = server.ask(json!({"id": "u", "type": "job_kill", "job": 99}));
    assert_eq!(unknown["error"], "no job 99 in this session", "{unknown}");
    let missing = server.ask(json!({"id": "m", "type": "job_write", "job": job}));
    assert_eq!(
        missing["error"], "job_write needs a string \"data\"",
        "{missing}"
    );
    let no_command = server.ask(json!({"id": "n", "type": "job_start"}));
    assert_eq!(
        no_command["error"], "job_start needs a string \"command\"",
        "{no_command}"
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn a_server_job_serves_a_bash_request_and_a_counting_job_is_read_once() {
    let mut server = Server::start("serve");
    let started = server.ask(json!({"id": "s", "type": "job_start",
        "command": "exec python3 -u -m http.server 0 --bind 127.0.0.1"}));
    let job = started["data"]["job"].clone();
    let ready =
        server.poll(json!({"job": job, "wait": 10, "until": "Serving HTTP on \\S+ port \\d+"}));
    assert_eq!(ready["status"], "running", "{ready}");
    let text = ready["output"].as_str().unwrap();
    let port: u16 = text
        .split("port ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("no port in {text:?}"));
    let fetch = format!(
        "python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:{port}/\").status)'"
    );
    server.bash("f", &fetch, "200\n");
    let killed = server.ask(json!({"id": "k", "type": "job_kill", "job": job}));
    assert_eq!(killed["data"]["status"], "killed", "{killed}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());

    let counting = server.ask(json!({"id": "c", "type": "job_start",
        "command": "for i in $(seq 1 50); do echo $i; /bin/sleep 0.1; done"}))["data"]["job"]
        .clone();
    let mut output = String::new();
    let deadline = Instant::now() + 6 * HANG_GUARD;
    let last = loop {
        std::thread::sleep(Duration::from_millis(300));
        let poll = server.poll(json!({"job": counting}));
        output.push_str(poll["output"].as_str().unwrap());
        if poll["status"] != "running" || Instant::now() > deadline {
            break poll;
        }
    };
    let expected: String = (1..=50).map(|i| format!("{i}\n")).collect();
    assert_eq!(output, expected);
    assert_eq!(
        (&last["status"], &last["exitCode"]),
        (&json!("exited"), &json!(0))
    );
    assert_eq!(server.finish(), 0);
}

#[test]
fn a_bash_request_past_yield_after_goes_on_as_a_job() {
    let mut server = Server::start("yield");
    let reply = server.ask(json!({"id": "y", "type": "bash",
        "command": "echo first; /bin/sleep 1; echo done", "yieldAfter": 0.3}));
    let job = reply["data"]["backgrounded"].clone();
    assert!(job.is_u64(), "{reply}");
    assert!(
        reply["data"]["output"]
            .as_str()
            .unwrap()
            .ends_with("\nfirst\n"),
        "{reply}"
    );
    let poll = server.poll(json!({"job": job, "wait": 10}));
    assert_eq!(
        (&poll["output"], &poll["exitCode"]),
        (&json!("done\n"), &json!(0)),
        "{poll}"
    );
    let plain =
        server.ask(json!({"id": "p", "type": "bash", "command": "echo quick", "yieldAfter": 5}));
    assert_eq!(plain["data"]["backgrounded"], Value::Null, "{plain}");
    assert_eq!(server.finish(), 0);
}

#[test]
fn jobs_on_a_terminal_with_keys_signals_input_cwd_and_env() {
    let mut server = Server::start("pty-job");
    let job = server.ok(json!({"type": "job_start", "pty": {"cols": 80, "rows": 24},
        "command": "read -r -p 'name? ' n; echo \"hi $n\"; trap 'echo got TERM; exit 7' TERM; echo ready; while :; do :; done"}))["job"]
        .clone();
    assert!(job.is_u64(), "{job}");
    let poll = server.poll(json!({"job": job, "wait": 10, "until": "name\\? "}));
    assert_eq!(poll["output"], "name? ", "{poll}");
    assert_eq!(
        server.ok(json!({"type": "job_write", "job": job, "data": "ann"})),
        json!({ "job": job })
    );
    server.ok(json!({"type": "job_key", "job": job, "key": "enter"}));
    let poll = server.poll(json!({"job": job, "wait": 10, "until": "ready"}));
    assert_eq!(poll["output"], "ann\nhi ann\nready\n", "{poll}");
    // A signal by number (or by name).
    server.ok(json!({"type": "job_signal", "job": job, "signal": 15}));
    let poll = server.poll(json!({"job": job, "wait": 10}));
    assert_eq!(
        (&poll["output"], &poll["status"], &poll["exitCode"]),
        (&json!("got TERM\n"), &json!("exited"), &json!(7)),
        "{poll}"
    );
    let event = server.job_exit();
    assert_eq!(
        (&event["job"], &event["status"], &event["exitCode"]),
        (&job, &json!("exited"), &json!(7)),
        "{event}"
    );
    assert!(
        event["command"].as_str().unwrap().starts_with("read -r -p"),
        "{event}"
    );

    // A pipe, closed; a job's own cwd and variables.
    let cat =
        server.ok(json!({"type": "job_start", "command": "cat; echo eof", "stdin": true}))["job"]
            .clone();
    server.ok(json!({"type": "job_write", "job": cat, "data": "line\n"}));
    server.ok(json!({"type": "job_close_stdin", "job": cat}));
    let poll = server.poll(json!({"job": cat, "wait": 10}));
    assert_eq!(
        (&poll["output"], &poll["exitCode"]),
        (&json!("line\neof\n"), &json!(0)),
        "{poll}"
    );
    let here = server.ok(json!({"type": "job_start", "command": "echo $PWD $ONLY",
        "cwd": "/usr", "env": {"ONLY": "job"}, "timeout": 60}))["job"]
        .clone();
    let poll = server.poll(json!({"job": here, "wait": 10}));
    assert_eq!(poll["output"], "/usr job\n", "{poll}");
    server.bash("b", "echo ${ONLY-unset}", "unset\n");
    // A job's own timeout.
    let slow = server.ok(json!({"type": "job_start", "command": "/bin/sleep 100", "timeout": 0.3}))
        ["job"]
        .clone();
    let poll = server.poll(json!({"job": slow, "wait": 10}));
    assert_eq!(poll["status"], "timed_out", "{poll}");

    // What still runs at the end is killed, and its end told before the
    // server's last line.
    let left = server.ok(json!({"type": "job_start", "command": "/bin/sleep 100"}))["job"].clone();
    let (code, lines) = server.finish_lines();
    assert_eq!(code, 0);
    let told = lines
        .iter()
        .find(|l| l["type"] == "job_exit" && l["job"] == left)
        .unwrap_or_else(|| panic!("no job_exit for job {left}: {lines:?}"));
    assert_eq!(told["status"], "killed", "{told}");
    assert_eq!(told["exitCode"], Value::Null, "{told}");
}

#[test]
fn bad_job_start_and_input_requests_get_error_replies() {
    let mut server = Server::start("start-bad");
    for (request, error) in [
        (
            json!({"type": "job_start", "command": 5}),
            "job_start needs a string \"command\"",
        ),
        (
            json!({"type": "job_start", "command": "true", "env": ["A=1"]}),
            "\"env\": invalid type: sequence, expected a mapping of str to str",
        ),
        (
            json!({"type": "job_start", "command": "true", "env": {"A": 1}}),
            "\"env\": invalid type: integer `1`, expected a string",
        ),
        (
            json!({"type": "job_start", "command": "true", "stdin": "yes"}),
            "\"stdin\": invalid type: string \"yes\", expected a boolean",
        ),
        (
            json!({"type": "job_start", "command": "true", "pty": "80x24"}),
            "\"pty\": invalid type: string \"80x24\", expected an object with `cols` and `rows`",
        ),
        (
            json!({"type": "job_start", "command": "true", "pty": {"cols": 80}}),
            "\"pty\": missing field `rows`",
        ),
        (
            json!({"type": "job_start", "command": "true", "pty": {"cols": -1, "rows": 24}}),
            "cols must be a whole number >= 0, got -1",
        ),
        (
            json!({"type": "job_start", "command": "true", "pty": {"cols": 0, "rows": 24}}),
            "a job's terminal needs at least 1 column and 1 row, got 0x24",
        ),
        (
            json!({"type": "job_start", "command": "true", "timeout": -1}),
            "timeout must be a positive number of seconds up to 2147483.647, got -1",
        ),
        (
            json!({"type": "job_start", "command": "true", "env": {"1X": "y"}}),
            "",
        ),
        (
            json!({"type": "job_start", "command": "a\u{0}b"}),
            "command contains a NUL byte",
        ),
        (
            json!({"type": "job_write", "job": 1}),
            "job_write needs a string \"data\"",
        ),
        (
            json!({"type": "job_key", "job": 1}),
            "job_key needs a string \"key\"",
        ),
        (
            json!({"type": "job_signal", "job": 1}),
            "job_signal needs a string \"signal\"",
        ),
        (
            json!({"type": "job_close_stdin"}),
            "job_close_stdin needs a number \"job\"",
        ),
        (
            json!({"type": "job_kill", "job": -1}),
            "job must be a whole number >= 0, got -1",
        ),
        (
            json!({"type": "job_signal", "job": 99, "signal": "TERM"}),
            "no job 99 in this session",
        ),
        (
            json!({"type": "job_close_stdin", "job": 99}),
            "no job 99 in this session",
        ),
    ] {
        let got = server.refused(request.clone());
        if error.is_empty() {
            assert!(!got.is_empty(), "{request}");
        } else {
            assert_eq!(got, error, "{request}");
        }
    }
    let missing = server.refused(json!({"type": "job_start", "command": "true", "cwd": "nowhere"}));
    assert!(
        missing.starts_with("Working directory does not exist: "),
        "{missing}"
    );
    let job = server.ok(json!({"type": "job_start", "command": "/bin/sleep 100"}))["job"].clone();
    assert_eq!(
        server.refused(json!({"type": "job_key", "job": job, "key": "enter"})),
        format!("job {job} has no terminal: keys need a job started with a PTY")
    );
    assert_eq!(
        server.refused(json!({"type": "job_write", "job": job, "data": "x"})),
        format!("job {job} takes no input")
    );
    let nope = server.refused(json!({"type": "job_signal", "job": job, "signal": "NOPE"}));
    assert!(nope.starts_with("signal must be a signal name"), "{nope}");
    let killed = server.ok(json!({"type": "job_kill", "job": job}));
    assert_eq!(killed["status"], "killed", "{killed}");
    assert_eq!(server.finish(), 0);
}
