//! `conch rpc --engine` through the built binary: the `engine` request
//! answers the loop the session's bash runs, the flag chooses it over
//! `CONCH_ENGINE`, the two loops word a syntax error as documented, and
//! the `reset` request starts either loop's session afresh (the builtin's
//! by its spare from the second reset on).

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

#[allow(dead_code)] // the helpers other test binaries use too
mod common;

/// The loop a session runs when nothing chooses it: `CONCH_ENGINE` (the
/// test command runs every suite once with `eval`), else the builtin.
fn expected_default() -> &'static str {
    match std::env::var("CONCH_ENGINE").as_deref() {
        Ok("eval") => "eval",
        _ => "builtin",
    }
}

/// The replies of `conch rpc --drain <args>` to `requests`, in order
/// (chunk events left out), with `env` set for the server.
fn replies(args: &[&str], env: &[(&str, &str)], requests: &[Value]) -> Vec<Value> {
    let dir = common::scratch_dir("engine");
    let mut child = Command::new(env!("CARGO_BIN_EXE_conch"))
        .arg("rpc")
        .arg("--drain")
        .args(args)
        .envs(env.iter().copied())
        .env("CONCH_ARTIFACTS_DIR", dir.join("artifacts"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
    }
    drop(stdin);
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    let status = common::wait_exit(&mut child);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(status.success(), "{status}");
    reader
        .join()
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|value| value["type"] == "response")
        .collect()
}

fn engine_of(args: &[&str], env: &[(&str, &str)]) -> Value {
    let replies = replies(args, env, &[json!({"id": 1, "type": "engine"})]);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["command"], "engine", "{replies:?}");
    replies[0].clone()
}

#[test]
fn the_engine_request_names_the_loop_the_flag_chose() {
    let default = engine_of(&[], &[]);
    assert_eq!(default["success"], true, "{default}");
    assert_eq!(default["data"], json!({"engine": expected_default()}));
    for engine in ["builtin", "eval"] {
        let reply = engine_of(&["--engine", engine], &[]);
        assert_eq!(reply["data"], json!({"engine": engine}), "{reply}");
    }
    // The flag wins over the variable; `auto` leaves it to the variable.
    let reply = engine_of(&["--engine", "builtin"], &[("CONCH_ENGINE", "eval")]);
    assert_eq!(reply["data"], json!({"engine": "builtin"}), "{reply}");
    let reply = engine_of(&["--engine", "auto"], &[("CONCH_ENGINE", "eval")]);
    assert_eq!(reply["data"], json!({"engine": "eval"}), "{reply}");
}

#[test]
fn a_bad_conch_engine_is_the_engine_requests_error() {
    let reply = engine_of(&[], &[("CONCH_ENGINE", "bogus")]);
    assert_eq!(reply["success"], false, "{reply}");
    let error = reply["error"].as_str().unwrap();
    assert!(
        error.contains("CONCH_ENGINE") && error.contains("bogus"),
        "{error}"
    );
}

#[test]
fn a_bad_engine_flag_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_conch"))
        .args(["rpc", "--engine", "bash"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "conch rpc: invalid value for --engine: \"bash\"\n"
    );
}

#[test]
fn each_loop_words_a_syntax_error_as_documented() {
    for (engine, name) in [("builtin", "-c"), ("eval", "eval")] {
        let replies = replies(
            &["--engine", engine],
            &[],
            &[
                json!({"id": 1, "type": "bash", "command": "if then"}),
                json!({"id": 2, "type": "engine"}),
            ],
        );
        let output = replies[0]["data"]["output"].as_str().unwrap();
        assert!(
            output.starts_with(&format!("bash: {name}: line 1: syntax error")),
            "{engine}: {output:?}"
        );
        assert_eq!(replies[1]["data"]["engine"], engine);
    }
}

#[test]
fn the_reset_request_starts_the_session_afresh_under_either_loop() {
    for engine in ["builtin", "eval"] {
        let bash = |id: u64, command: &str| json!({"id": id, "type": "bash", "command": command});
        let replies = replies(
            &["--engine", engine],
            &[],
            &[
                bash(1, "pwd; cd / && X=1 && echo $$"),
                json!({"id": 2, "type": "reset"}),
                bash(3, "echo ${X-unset}; pwd; X=1; echo $$"),
                json!({"id": 4, "type": "reset"}),
                bash(5, "echo ${X-unset}; pwd; echo $$"),
            ],
        );
        let out = |i: usize| replies[i]["data"]["output"].as_str().unwrap().to_string();
        let first: Vec<String> = out(0).lines().map(str::to_string).collect();
        let start = &first[0];
        assert_eq!(
            replies[1],
            json!({"type": "response", "id": 2, "command": "reset", "success": true, "data": {}})
        );
        let (second, third) = (out(2), out(4));
        for (text, before) in [
            (&second, &first[1]),
            (&third, &second.lines().last().unwrap().to_string()),
        ] {
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(&lines[..2], ["unset", start.as_str()], "{engine}: {text}");
            assert_ne!(lines[2], before, "{engine}: a new bash");
        }
    }
}
