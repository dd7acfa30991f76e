//! What a command leaves running in the background writes to that
//! command's own output, never into a later command's result: it becomes a
//! job of the session, read with `Shell::poll` and listed by `Shell::jobs`.

use std::time::{Duration, Instant};

use crate::common::{CUT, HANG, RELEASE, gated, wait_until};
use conch_core::shell::{BashResult, RunOptions, Shell, ShellOptions, Snapshot};
use conch_core::{ArtifactStore, Error, JobStatus, PollOptions};
use regex::Regex;

fn run(sh: &Shell, command: &str) -> BashResult {
    sh.run(RunOptions::new(command), |_| {}).unwrap()
}

fn waiting(wait: Duration) -> PollOptions {
    PollOptions {
        wait,
        ..PollOptions::default()
    }
}

/// The one job `command` leaves behind.
fn job_of(sh: &Shell, command: &str) -> conch_core::JobId {
    let before = sh.jobs().len();
    run(sh, command);
    let jobs = sh.jobs();
    assert_eq!(jobs.len(), before + 1, "{command}: {jobs:?}");
    let job = jobs.last().unwrap();
    assert_eq!(job.command, command);
    job.job
}

/// The job of [`gated`]`(body)`, released: all that `body` writes is the
/// job's.
fn gated_job(sh: &Shell, body: &str) -> conch_core::JobId {
    let job = job_of(sh, &gated(body));
    run(sh, RELEASE);
    job
}

#[test]
fn late_output_belongs_to_the_command_that_started_it() {
    let sh = crate::clean_shell();
    let command = format!("{} echo started", gated("echo late"));
    let r = run(&sh, &command);
    assert_eq!(r.output, "started\n");
    assert_eq!(run(&sh, RELEASE).output, "");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(run(&sh, "echo next").output, "next\n");

    let jobs = sh.jobs();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].command, command);
    assert_eq!(jobs[0].status, JobStatus::Exited);
    assert_eq!(jobs[0].total_bytes, 5);
    let p = sh.poll(jobs[0].job, &PollOptions::default(), None).unwrap();
    assert_eq!(p.output, "late\n");
    assert_eq!((p.cursor, p.next_cursor, p.omitted_bytes), (0, 5, 0));
    assert_eq!(p.status, JobStatus::Exited);
    assert_eq!(p.exit_code, None);
    // The next poll reads from where this one stopped.
    let again = sh.poll(jobs[0].job, &PollOptions::default(), None).unwrap();
    assert_eq!((again.output.as_str(), again.cursor), ("", 5));
}

#[test]
fn a_command_with_nothing_left_behind_makes_no_job() {
    let sh = crate::clean_shell();
    run(&sh, "echo a; (echo b) & wait");
    assert!(sh.jobs().is_empty(), "{:?}", sh.jobs());
    // A job whose output goes elsewhere holds no output: at most, caught
    // between its fork and its redirection, a silent job that ends at once.
    run(&sh, "/bin/sleep 30 >/dev/null 2>&1 & echo c");
    assert!(wait_until(HANG, || sh
        .jobs()
        .iter()
        .all(|j| j.status == JobStatus::Exited)));
    assert!(sh.jobs().iter().all(|j| j.total_bytes == 0));
    assert_eq!(sh.background_jobs().len(), 1);
}

#[test]
fn a_poll_waits_for_the_end_and_returns_as_it_comes() {
    let sh = crate::clean_shell();
    let job = gated_job(&sh, "/bin/sleep 0.5; echo done");
    let t = Instant::now();
    let p = sh.poll(job, &waiting(CUT * 10), None).unwrap();
    assert!(t.elapsed() < CUT, "the poll waited out its bound");
    assert_eq!((p.output.as_str(), p.status), ("done\n", JobStatus::Exited));
    assert!(p.elapsed >= Duration::from_millis(500), "{p:?}");
}

#[test]
fn until_matches_across_pieces_and_returns_while_the_job_runs() {
    let sh = crate::clean_shell();
    let job = gated_job(
        &sh,
        "for i in 1 2 3; do echo line$i; /bin/sleep 0.2; done; /bin/sleep 30",
    );
    let opts = PollOptions {
        wait: CUT * 10,
        until: Some(Regex::new("line2\nline3").unwrap()),
        ..PollOptions::default()
    };
    let t = Instant::now();
    let p = sh.poll(job, &opts, None).unwrap();
    assert!(t.elapsed() < CUT, "until did not end the wait");
    assert_eq!(p.status, JobStatus::Running);
    assert_eq!(p.output, "line1\nline2\nline3\n");
    // An explicit cursor reads again from any offset.
    let opts = PollOptions {
        cursor: Some(6),
        ..PollOptions::default()
    };
    let p = sh.poll(job, &opts, None).unwrap();
    assert_eq!(
        (p.output.as_str(), p.cursor, p.next_cursor),
        ("line2\nline3\n", 6, 18)
    );
    // Without a wait, a poll returns at once.
    let t = Instant::now();
    let p = sh.poll(job, &PollOptions::default(), None).unwrap();
    assert!(t.elapsed() < CUT && p.output.is_empty());
}

#[test]
fn a_cancelled_poll_returns_and_the_job_goes_on() {
    let sh = std::sync::Arc::new(crate::clean_shell());
    let job = job_of(&sh, "(/bin/sleep 1.5; echo still) &");
    let cancel = conch_core::CancelToken::new();
    let canceller = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            cancel.cancel();
        })
    };
    let t = Instant::now();
    let p = sh.poll(job, &waiting(HANG * 3), Some(&cancel)).unwrap();
    canceller.join().unwrap();
    assert!(t.elapsed() < HANG, "the cancel did not end the poll");
    assert_eq!(p.status, JobStatus::Running);
    let p = sh.poll(job, &waiting(HANG), None).unwrap();
    assert_eq!(
        (p.output.as_str(), p.status),
        ("still\n", JobStatus::Exited)
    );
}

#[test]
fn a_later_timeout_spares_a_job_and_its_output() {
    let sh = crate::clean_shell();
    let job = job_of(&sh, "(/bin/sleep 1.5; echo survived) &");
    let mut opts = RunOptions::new("/bin/sleep 30");
    opts.timeout = Some(Duration::from_millis(300));
    assert!(sh.run(opts, |_| {}).unwrap().timed_out);
    let p = sh.poll(job, &waiting(HANG), None).unwrap();
    assert_eq!(
        (p.output.as_str(), p.status),
        ("survived\n", JobStatus::Exited)
    );
}

#[test]
fn a_flood_is_bounded_and_spilled_whole_to_an_artifact() {
    let dir = std::env::temp_dir().join(format!("conch-jobs-test-{}", std::process::id()));
    let store = ArtifactStore::new(&dir);
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        artifacts: Some(store.clone()),
        ..ShellOptions::default()
    })
    .unwrap();
    // 4000 lines of 50 bytes: 200,000 bytes, after the command returned.
    let job = gated_job(
        &sh,
        "for ((i = 0; i < 4000; i++)); do printf '%049d\\n' $i; done",
    );
    let p = sh.poll(job, &waiting(HANG), None).unwrap();
    assert_eq!(p.status, JobStatus::Exited);
    assert_eq!(p.total_bytes, 200_000);
    assert!(p.output.len() <= 51_201, "{}", p.output.len());
    assert_eq!(p.omitted_bytes, p.cursor);
    assert!(p.omitted_bytes >= 200_000 - 51_201);
    assert_eq!(p.next_cursor, 200_000);
    assert!(p.output.ends_with(&format!("{:049}\n", 3999)));
    let id = p.artifact_id.expect("spilled");
    let whole = store.resolve(&format!("artifact://{id}")).unwrap();
    assert_eq!(whole.len(), 200_000);
    assert!(whole.starts_with(&format!("{:049}\n{:049}\n", 0, 1)));
    drop(sh);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn ids_are_never_reused_and_unread_finished_jobs_stay_listed() {
    let sh = crate::clean_shell();
    let mut ids = Vec::new();
    // Each outlives its run by far (a run that took 2 s would leave none).
    for _ in 0..20 {
        ids.push(job_of(&sh, "(/bin/sleep 2) &"));
    }
    let mut sorted = ids.clone();
    sorted.dedup();
    assert_eq!(sorted.len(), 20);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(wait_until(HANG, || sh
        .jobs()
        .iter()
        .all(|j| j.status == JobStatus::Exited)));
    let left = sh.jobs();
    assert_eq!(left.iter().map(|j| j.job).collect::<Vec<_>>(), ids);
    assert!(
        left.iter().all(|j| j.status == JobStatus::Exited),
        "{left:?}"
    );
    assert!(matches!(
        sh.poll(ids[19] + 1, &PollOptions::default(), None),
        Err(Error::NotFound(_))
    ));
}

#[test]
fn a_closed_shell_refuses_polls() {
    let sh = crate::clean_shell();
    let job = job_of(&sh, "/bin/sleep 30 &");
    sh.close();
    assert!(matches!(
        sh.poll(job, &PollOptions::default(), None),
        Err(Error::Closed(_))
    ));
}

/// Replays `tests/vectors/jobs.json` (every face replays it alike).
#[test]
fn shared_vectors() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/jobs.json");
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for case in cases.as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let sh = crate::clean_shell();
        for r in case["runs"].as_array().unwrap() {
            let out = run(&sh, r["command"].as_str().unwrap());
            assert_eq!(out.output, r["output"].as_str().unwrap(), "{name}");
        }
        let own = sh.jobs().last().map_or(0, |j| j.job);
        for p in case["polls"].as_array().unwrap() {
            let job = p["job"].as_u64().map_or(own, |j| j as u32);
            let o = &p["options"];
            let opts = conch_core::input::until_option("until", o["until"].as_str().unwrap_or(""))
                .map(|re| PollOptions {
                    wait: Duration::from_millis(o["wait_ms"].as_u64().unwrap_or(0)),
                    until: o["until"].is_string().then_some(re),
                    max_bytes: o["max_bytes"].as_u64().map(|n| n as usize),
                    cursor: o["cursor"].as_u64(),
                });
            let got = opts.and_then(|opts| sh.poll(job, &opts, None));
            if let Some(error) = p["error"].as_str() {
                let e = got.expect_err(name).to_string();
                assert!(e.contains(error), "{name}: {e}");
                continue;
            }
            let got = serde_json::to_value(got.unwrap()).unwrap();
            for (key, want) in p["expect"].as_object().unwrap() {
                assert_eq!(&got[key], want, "{name}: {key} of {got}");
            }
        }
        if let Some(jobs) = case["jobs"].as_array() {
            let listed = serde_json::to_value(sh.jobs()).unwrap();
            assert_eq!(listed.as_array().unwrap().len(), jobs.len(), "{name}");
            for (got, want) in listed.as_array().unwrap().iter().zip(jobs) {
                for (key, want) in want.as_object().unwrap() {
                    assert_eq!(&got[key], want, "{name}: {key} of {got}");
                }
            }
        }
    }
}
