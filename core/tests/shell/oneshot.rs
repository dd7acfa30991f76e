//! `execute_shell`: a fresh process per call, same result shape.

use std::time::Instant;

use crate::common::{CUT, ESCALATION, HANG, procs_with, unique_sleep, wait_until};
use conch_core::shell::{BashResult, ExecuteOptions, execute_shell};

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

/// Runs `opts`; once the output shows `ready`, waits for a `sleep` with
/// each of `markers` to run. The chunk callback runs on the call's own
/// thread, so the call cannot end (nor kill anything) meanwhile.
fn exec_seeing(opts: ExecuteOptions, markers: &[&str]) -> BashResult {
    let mut text = String::new();
    let mut seen = false;
    let r = execute_shell(opts, |chunk| {
        text.push_str(chunk);
        if !seen && text.contains("ready") {
            seen = true;
            for m in markers {
                assert!(
                    wait_until(HANG, || procs_with(m).len() == 1),
                    "sleep {m} never ran"
                );
            }
        }
    })
    .unwrap();
    assert!(seen, "{:?}", r.output);
    r
}

#[test]
fn background_jobs_do_not_hold_the_call_and_do_not_survive_it() {
    let (a, b) = (unique_sleep(300), unique_sleep(300));
    let start = Instant::now();
    let r = exec_seeing(
        ExecuteOptions {
            command: format!("/bin/sleep {a} & setsid /bin/sleep {b} & echo ready"),
            ..ExecuteOptions::default()
        },
        &[&a, &b],
    );
    // Held until its jobs end, the call would take 300 s.
    assert!(start.elapsed() < HANG, "{:?}", start.elapsed());
    assert_eq!((r.output.as_str(), r.exit_code), ("ready\n", Some(0)));
    assert!(wait_until(HANG, || procs_with(&a).is_empty()));
    assert!(
        wait_until(HANG, || procs_with(&b).is_empty()),
        "setsid escapee killed"
    );
}

#[test]
fn timeout_kills_the_tree() {
    let marker = unique_sleep(1000);
    let start = Instant::now();
    let r = exec_seeing(
        ExecuteOptions {
            command: format!("setsid /bin/sleep {marker} & echo ready; /bin/sleep 100"),
            timeout: Some(CUT),
            ..ExecuteOptions::default()
        },
        &[&marker],
    );
    assert!(
        start.elapsed() < CUT + ESCALATION + HANG,
        "{:?}",
        start.elapsed()
    );
    assert!(r.timed_out && r.cancelled && r.exit_code.is_none());
    assert_eq!(
        r.output,
        format!(
            "[Command timed out after {} seconds]\nready\n",
            CUT.as_secs()
        )
    );
    assert!(wait_until(HANG, || procs_with(&marker).is_empty()));
}
