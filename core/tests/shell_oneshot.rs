//! `execute_shell`: a fresh process per call, same result shape.

mod common;

use std::time::{Duration, Instant};

use common::{procs_with, unique_sleep, wait_until};
use conch_core::shell::{ExecuteOptions, execute_shell};

fn exec(cmd: &str) -> conch_core::shell::BashResult {
    execute_shell(
        ExecuteOptions {
            command: cmd.into(),
            ..ExecuteOptions::default()
        },
        |_| {},
    )
    .unwrap()
}

#[test]
fn runs_with_status_output_and_no_state() {
    let r = exec("echo a; echo b >&2; export X=1; exit 4");
    assert_eq!((r.output.as_str(), r.exit_code), ("a\nb\n", Some(4)));
    assert_eq!(exec("echo ${X-unset}").output, "unset\n");
}

#[test]
fn works_for_sh_too() {
    let r = execute_shell(
        ExecuteOptions {
            command: "echo $0; [ -z \"$BASH_VERSION\" ] && echo not-bash".into(),
            shell: Some("/bin/sh".into()),
            ..ExecuteOptions::default()
        },
        |_| {},
    )
    .unwrap();
    assert_eq!(r.output, "/bin/sh\nnot-bash\n");
}

#[test]
fn background_jobs_do_not_hold_the_call_and_do_not_survive_it() {
    let (a, b) = (unique_sleep(300), unique_sleep(300));
    let start = Instant::now();
    let r = exec(&format!(
        "/bin/sleep {a} & setsid /bin/sleep {b} & echo started"
    ));
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!((r.output.as_str(), r.exit_code), ("started\n", Some(0)));
    assert!(wait_until(Duration::from_secs(3), || procs_with(&a).is_empty()));
    assert!(
        wait_until(Duration::from_secs(3), || procs_with(&b).is_empty()),
        "setsid escapee killed"
    );
}

#[test]
fn timeout_kills_the_tree() {
    let marker = unique_sleep(1000);
    let r = execute_shell(
        ExecuteOptions {
            command: format!("echo partial; setsid /bin/sleep {marker} & /bin/sleep 100"),
            timeout: Some(Duration::from_millis(300)),
            ..ExecuteOptions::default()
        },
        |_| {},
    )
    .unwrap();
    assert!(r.timed_out && r.cancelled && r.exit_code.is_none());
    assert_eq!(r.output, "[Command timed out after 0 seconds]\npartial\n");
    assert!(wait_until(Duration::from_secs(3), || procs_with(&marker).is_empty()));
}
