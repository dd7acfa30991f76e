//! The process-wide session cache: keyed sharing, isolation, closing and
//! bounded size. One test: the registry is global to the process.

use std::time::Duration;

use conch_core::registry::{self, ExecuteBashOptions, MAX_SESSIONS};
use conch_core::{CancelToken, Snapshot};

fn opts(key: &str) -> ExecuteBashOptions {
    ExecuteBashOptions {
        session_key: Some(key.into()),
        snapshot: Snapshot::None,
        ..ExecuteBashOptions::default()
    }
}

fn run(cmd: &str, o: ExecuteBashOptions) -> conch_core::BashResult {
    registry::execute_bash(cmd, o, |_| {}).unwrap()
}

#[test]
fn sessions_are_shared_by_key_isolated_bounded_and_closable() {
    run("export SHARED=a", opts("agent-1"));
    assert_eq!(run("echo ${SHARED-none}", opts("agent-1")).output, "a\n");
    assert_eq!(run("echo ${SHARED-none}", opts("agent-2")).output, "none\n");
    let mut with_env = opts("agent-1");
    with_env.session_env = vec![("Z".into(), "1".into()), ("A".into(), "2".into())];
    assert_eq!(
        run("echo ${SHARED-none}$Z$A", with_env.clone()).output,
        "none12\n"
    );
    // Session env order does not make another session.
    with_env.session_env.reverse();
    run("export MARK=same", with_env.clone());
    assert_eq!(run("echo $MARK", with_env).output, "same\n");

    // Timeout and cancel are results, never errors.
    let mut t = opts("agent-1");
    t.timeout = Some(Duration::from_millis(300));
    // Only the notice is checked, and the sleep outlasts the timeout by far.
    let r = run("/bin/sleep 100", t);
    assert!(
        r.timed_out
            && r.output
                .starts_with("[Command timed out after 0.3 seconds]")
    );
    let mut c = opts("agent-1");
    let token = CancelToken::new();
    token.cancel();
    c.cancel = Some(token);
    let r = run("echo never", c);
    assert!(r.cancelled && r.output.starts_with("[Command cancelled]"));

    registry::close("agent-1");
    assert_eq!(run("echo ${SHARED-none}", opts("agent-1")).output, "none\n");

    // Bounded: past the maximum, the least recently used idle session goes.
    registry::close_all();
    run("export FIRST=1", opts("lru-0"));
    for i in 1..=MAX_SESSIONS {
        run("true", opts(&format!("lru-{i}")));
    }
    assert!(registry::len() <= MAX_SESSIONS);
    assert_eq!(
        run("echo ${FIRST-evicted}", opts("lru-0")).output,
        "evicted\n"
    );
    registry::close_all();
    assert_eq!(registry::len(), 0);
}
