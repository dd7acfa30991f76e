//! The loop a remote session's bash runs: the `engine` request answers
//! it, the client's `engine` option chooses it, and the server's
//! `--engine` chooses it for the sessions whose client names none (a
//! tool's included, through `CONCH_ENGINE`).

use conch_core::{Engine, RunOptions};
use conch_remote::RemoteError;
use serde_json::{Map, json};

use super::{options, stdio};

/// The loop a session runs when nothing chooses it: `CONCH_ENGINE` (the
/// test command runs every suite once with `eval`), else the builtin.
fn expected_default() -> Engine {
    match std::env::var("CONCH_ENGINE").as_deref() {
        Ok("eval") => Engine::Eval,
        _ => Engine::Builtin,
    }
}

#[test]
fn a_remote_shell_tells_its_engine_as_the_client_chose_it() {
    let remote = stdio(&[]);
    let sh = remote.shell(Map::new()).unwrap();
    assert_eq!(sh.engine().unwrap(), expected_default());
    for engine in [Engine::Builtin, Engine::Eval] {
        let sh = remote
            .shell(options(json!({"engine": engine.as_str()})))
            .unwrap();
        assert_eq!(sh.engine().unwrap(), engine);
        let r = sh.run(RunOptions::new("if then"), |_| {}).unwrap();
        let name = if engine == Engine::Builtin {
            "-c"
        } else {
            "eval"
        };
        assert!(
            r.output.starts_with(&format!("bash: {name}: line 1: ")),
            "{engine:?}: {:?}",
            r.output
        );
        sh.close().unwrap();
        assert!(
            matches!(sh.engine(), Err(RemoteError::SessionLost(_))),
            "a closed session has no engine"
        );
    }
    match remote.shell(options(json!({"engine": "bash"}))) {
        Err(RemoteError::Refused { message, .. }) => assert!(message.contains("bash"), "{message}"),
        Err(other) => panic!("refused as a bad value, not {other:?}"),
        Ok(_) => panic!("engine \"bash\" refused"),
    }
}

/// `trap -p` in a tool session of `remote`: the eval loop's traps are the
/// session's, which it lists; the loop builtin's commands see none.
fn traps_of_a_tool(remote: &conch_remote::Remote) -> String {
    let tool = remote
        .tool(options(json!({"cwd": "/tmp", "snapshot": "none"})))
        .unwrap();
    let text = match tool.execute(&json!({"command": "trap -p"}), None, None) {
        Ok(result) => result.text,
        Err(other) => panic!("a tool's result, not {other:?}"),
    };
    tool.close().unwrap();
    text
}

#[test]
fn the_servers_engine_is_that_of_sessions_that_name_none() {
    let remote = stdio(&["--engine", "eval"]);
    let sh = remote.shell(Map::new()).unwrap();
    assert_eq!(sh.engine().unwrap(), Engine::Eval);
    let own = remote.shell(options(json!({"engine": "builtin"}))).unwrap();
    assert_eq!(own.engine().unwrap(), Engine::Builtin);
    // A tool's session, which has no engine option, runs it too.
    assert!(traps_of_a_tool(&remote).contains("__conch"));
    let remote = stdio(&["--engine", "builtin"]);
    let sh = remote.shell(Map::new()).unwrap();
    assert_eq!(sh.engine().unwrap(), Engine::Builtin);
    assert!(!traps_of_a_tool(&remote).contains("__conch"));
}
