//! How a server ends: its host gone, the end of its stdin, a stop signal
//! (also with a client that stopped reading), `--drain`; what runs meanwhile.

use super::*;

#[test]
fn a_host_that_goes_away_takes_its_command_with_it() {
    // Its host gone, stdin ends and nobody reads stdout: conch rpc cancels
    // the running command and exits, leaving nothing.
    let stamp = format!("1000.{}", std::process::id());
    let mut child = Command::new(env!("CARGO_BIN_EXE_conch"))
        .arg("rpc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let line = format!("{{\"id\":1,\"type\":\"bash\",\"command\":\"/bin/sleep {stamp}\"}}\n");
    stdin.write_all(line.as_bytes()).unwrap();
    let found = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == stamp.as_bytes()))
        })
    };
    let start = Instant::now();
    while !found() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the sleep never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(child.stdout.take());
    drop(stdin);
    let status = wait_exit(&mut child);
    assert!(status.code().is_some(), "{status:?}");
    let start = Instant::now();
    while found() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the sleep outlived the server"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_end_of_stdin_cancels_the_running_command_and_ends_the_server() {
    let mut server = Server::start("eof");
    let stamp = format!("1000.{}1", std::process::id());
    server.send(
        &json!({"id": 1, "type": "bash", "command": format!("/bin/sleep {stamp}")}).to_string(),
    );
    wait_running(&stamp);
    let started = Instant::now();
    drop(server.stdin.take());
    let reply = server.response(HANG_GUARD);
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["data"]["cancelled"], true, "{reply}");
    assert_eq!(wait_exit(&mut server.child).code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(!running(&stamp), "the command outlived the server");
}

#[test]
fn a_job_start_queued_at_the_end_of_stdin_never_runs() {
    let mut server = Server::start("eof-job");
    let stamp = format!("1000.{}2", std::process::id());
    let marker = server.dir.join("SIDEFX");
    server.send(
        &json!({"id": 1, "type": "bash", "command": format!("/bin/sleep {stamp}")}).to_string(),
    );
    server.send(
        &json!({"id": 2, "type": "job_start", "command": format!("echo ran > {}", marker.display())})
            .to_string(),
    );
    wait_running(&stamp);
    drop(server.stdin.take());
    let bash = server.response(HANG_GUARD);
    assert_eq!(
        (&bash["id"], &bash["data"]["cancelled"]),
        (&json!(1), &json!(true)),
        "{bash}"
    );
    let start = server.response(HANG_GUARD);
    assert_eq!(
        (&start["id"], &start["command"], &start["success"]),
        (&json!(2), &json!("job_start"), &json!(false)),
        "{start}"
    );
    assert_eq!(
        start["error"], "not started: the input ended first",
        "{start}"
    );
    assert_eq!(wait_exit(&mut server.child).code(), Some(0));
    assert!(
        !marker.exists(),
        "the queued job ran after the end of stdin"
    );
}

#[test]
fn a_stop_signal_answers_the_running_command_and_exits_0() {
    for (n, signal) in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT]
        .into_iter()
        .enumerate()
    {
        let mut server = Server::start("stop");
        let stamp = format!("1000.{}3{n}", std::process::id());
        server.send(
            &json!({"id": 1, "type": "bash", "command": format!("/bin/sleep {stamp}")}).to_string(),
        );
        wait_running(&stamp);
        // SAFETY: kill(2) on the server's own pid, a process of this test.
        assert_eq!(unsafe { libc::kill(server.child.id() as i32, signal) }, 0);
        let reply = server.response(HANG_GUARD);
        assert_eq!(
            (&reply["id"], &reply["data"]["cancelled"]),
            (&json!(1), &json!(true)),
            "signal {signal}: {reply}"
        );
        assert_eq!(
            wait_exit(&mut server.child).code(),
            Some(0),
            "signal {signal}"
        );
        wait_until("the command is gone", || !running(&stamp));
    }
}

#[test]
fn a_stopped_server_whose_client_stopped_reading_exits_anyway() {
    let stamp = format!("1000.{}4", std::process::id());
    let mut child = Command::new(env!("CARGO_BIN_EXE_conch"))
        .arg("rpc")
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Fills the pipe to the client, who never reads it, while it sleeps.
    let command = format!("(head -c 10000000 /dev/zero | tr '\\0' x) & /bin/sleep {stamp}");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"id": 1, "type": "bash", "command": command})
    )
    .unwrap();
    wait_running(&stamp);
    // SAFETY: kill(2) on the server's own pid, a process of this test.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(wait_exit(&mut child).code(), Some(0));
    wait_until("the command is gone", || !running(&stamp));
}

#[test]
fn with_drain_the_commands_already_read_finish() {
    let dir = std::env::temp_dir();
    let out = Command::new(env!("CARGO_BIN_EXE_conch"))
        .args(["rpc", "--drain"])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let line = "{\"id\":1,\"type\":\"bash\",\"command\":\"/bin/sleep 0.3; echo done\"}\n";
            child.stdin.take().unwrap().write_all(line.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(r#""output":"done\n""#), "{text}");
}

#[test]
fn the_end_of_stdin_ends_a_waiting_poll() {
    let mut server = Server::start("poll-end");
    server.bash("1", "/bin/sleep 100 & echo started", "started\n");
    let job = server.only_job();
    server.send(&json!({"id": "p", "type": "job_poll", "job": job, "wait": 25}).to_string());
    // Let the poll start waiting (were it not, it would find the session
    // closed: an error reply, also within the bound below).
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    drop(server.stdin.take());
    let reply = server.response(HANG_GUARD);
    assert_eq!(
        (&reply["id"], &reply["command"]),
        (&json!("p"), &json!("job_poll")),
        "{reply}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the close ended the wait"
    );
    if reply["success"] == true {
        let status = reply["data"]["status"].as_str().unwrap();
        assert!(["killed", "running"].contains(&status), "{reply}");
    } else {
        assert_eq!(reply["error"], "session is closed", "{reply}");
    }
    assert_eq!(wait_exit(&mut server.child).code(), Some(0));
}
