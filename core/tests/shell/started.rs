//! Jobs started beside the session (`Shell::start`) and runs moved to the
//! background (`RunOptions::yield_after`): real servers, real pipes, real
//! terminals, their whole trees killed.

use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{
    CUT, ESCALATION, HANG, TempDir, alive, gone, procs_with, unique_sleep, wait_until,
};
use crate::poll;
use conch_core::shell::{BashResult, RunOptions, Shell, ShellOptions, Snapshot};
use conch_core::{Error, JobExitHook, JobId, JobOptions, JobPoll, JobStatus, PollOptions};
use regex::Regex;

fn run(sh: &Shell, command: &str) -> BashResult {
    sh.run(RunOptions::new(command), |_| {}).unwrap()
}

fn start(sh: &Shell, command: &str) -> JobId {
    sh.start(JobOptions::new(command)).unwrap()
}

fn until(sh: &Shell, job: JobId, pattern: &str) -> JobPoll {
    let opts = PollOptions {
        wait: HANG,
        until: Some(Regex::new(pattern).unwrap()),
        ..PollOptions::default()
    };
    sh.poll(job, &opts, None).unwrap()
}

#[test]
fn a_server_job_is_reached_from_the_session_and_killed_with_its_port() {
    let sh = crate::clean_shell();
    let t = Instant::now();
    let job = start(&sh, "exec python3 -m http.server 0 --bind 127.0.0.1");
    let first = until(&sh, job, "Serving HTTP");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(first.status, JobStatus::Running);
    let port: u16 = Regex::new(r"port (\d+)")
        .unwrap()
        .captures(&first.output)
        .unwrap()[1]
        .parse()
        .unwrap();
    let r = run(
        &sh,
        &format!("curl -s -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{port}/"),
    );
    assert_eq!(r.output, "200");
    let fin = sh.kill(job).unwrap();
    assert_eq!(fin.status, JobStatus::Killed);
    assert_eq!(fin.exit_code, None);
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    assert_eq!(sh.jobs()[0].status, JobStatus::Killed);
}

#[test]
fn polls_every_few_hundred_ms_read_each_line_once() {
    let sh = crate::clean_shell();
    let job = start(
        &sh,
        "for i in $(seq 1 50); do echo $i; /bin/sleep 0.1; done",
    );
    let mut text = String::new();
    let last = loop {
        std::thread::sleep(Duration::from_millis(300));
        let p = poll(&sh, job, Duration::ZERO);
        assert_eq!(p.omitted_bytes, 0);
        text.push_str(&p.output);
        if p.status != JobStatus::Running {
            break p;
        }
    };
    let expected: String = (1..=50).map(|i| format!("{i}\n")).collect();
    assert_eq!(text, expected);
    assert_eq!((last.status, last.exit_code), (JobStatus::Exited, Some(0)));
}

#[test]
fn a_job_answers_its_prompt_on_a_pipe_and_on_a_terminal() {
    let sh = crate::clean_shell();
    let piped = sh
        .start(JobOptions {
            stdin: true,
            ..JobOptions::new("read -p 'name? ' n; echo hi $n")
        })
        .unwrap();
    sh.write(piped, b"ann\n").unwrap();
    let p = poll(&sh, piped, HANG);
    // bash shows a `read -p` prompt only on a terminal.
    assert_eq!(p.output, "hi ann\n");
    assert_eq!(p.exit_code, Some(0));

    let tty = sh
        .start(JobOptions {
            pty: Some((80, 24)),
            ..JobOptions::new("python3 -c 'print(input(\"name? \"))'")
        })
        .unwrap();
    until(&sh, tty, "name\\? ");
    sh.write(tty, b"ann\n").unwrap();
    let p = poll(&sh, tty, HANG);
    assert_eq!(p.status, JobStatus::Exited);
    assert!(p.output.contains("ann\nann\n"), "{:?}", p.output);
    assert_eq!(p.exit_code, Some(0));
}

#[test]
fn ctrl_c_on_a_terminal_job_interrupts_its_command() {
    let sh = crate::clean_shell();
    let marker = unique_sleep(30);
    let job = sh
        .start(JobOptions {
            pty: Some((80, 24)),
            ..JobOptions::new(format!("/bin/sleep {marker}"))
        })
        .unwrap();
    // Once the command runs (a ctrl+c before would reach bash between
    // commands, which it handles as bash does).
    assert!(wait_until(CUT, || procs_with(&marker).len() == 1));
    sh.write_key(job, "ctrl+c").unwrap();
    let p = poll(&sh, job, HANG);
    assert_eq!((p.status, p.exit_code), (JobStatus::Exited, Some(130)));
    let piped = start(&sh, "/bin/sleep 30");
    assert!(matches!(
        sh.write_key(piped, "ctrl+c"),
        Err(Error::NoInput(_))
    ));
    sh.kill(piped).unwrap();
}

#[test]
fn cursor_keys_to_a_terminal_job_follow_its_application_cursor_mode() {
    let sh = crate::clean_shell();
    // Each of the two reads takes the three bytes of one key, as a curses
    // program with `keypad(stdscr, TRUE)` would, and shows them.
    let read = "dd bs=1 count=3 2>/dev/null | od -An -tx1";
    let job = sh
        .start(JobOptions {
            pty: Some((80, 24)),
            ..JobOptions::new(format!(
                "stty -icanon -echo; printf '\\033[?1happ\\n'; {read}; \
                 printf '\\033[?1lnormal\\n'; {read}"
            ))
        })
        .unwrap();
    until(&sh, job, "app");
    sh.write_key(job, "up").unwrap();
    until(&sh, job, "normal");
    sh.write_key(job, "up").unwrap();
    let p = poll(&sh, job, HANG);
    assert_eq!((p.status, p.exit_code), (JobStatus::Exited, Some(0)));
    let all = sh
        .poll(
            job,
            &PollOptions {
                cursor: Some(0),
                ..PollOptions::default()
            },
            None,
        )
        .unwrap()
        .output;
    let keys: Vec<&str> = all.lines().filter(|l| l.starts_with(' ')).collect();
    assert_eq!(keys, [" 1b 4f 41", " 1b 5b 41"], "{all:?}");
}

#[test]
fn a_job_terminal_is_clamped_as_a_pty_run_is() {
    let sh = crate::clean_shell();
    for (asked, got) in [((1, 1), "5 20"), ((u16::MAX, u16::MAX), "200 400")] {
        let job = sh
            .start(JobOptions {
                pty: Some(asked),
                ..JobOptions::new("stty size")
            })
            .unwrap();
        let p = poll(&sh, job, HANG);
        assert_eq!(p.output.trim_end(), got, "{asked:?}");
    }
}

#[test]
fn a_job_starts_from_the_session_state_and_changes_none_of_it() {
    let sh = crate::clean_shell();
    run(
        &sh,
        "cd /tmp; v=plain; export E=exported; f() { echo \"f:$1\"; }; shopt -s expand_aliases; \
         alias hi='echo alias'; set -o pipefail; declare -a arr=(1 2)",
    );
    let job = start(
        &sh,
        "echo $PWD $v $E ${arr[1]} $(printenv E); f x; hi; [[ -o pipefail ]] && echo pipefail; \
         cd /; v=changed; unset -f f; echo \"$# $BASH_SUBSHELL\"; declare -F | grep ' __conch'; \
         declare -p | grep '^declare -[-a-zA-Z]* __conch'; true",
    );
    let p = poll(&sh, job, HANG);
    assert_eq!(
        p.output,
        "/tmp plain exported 2 exported\nf:x\nalias\npipefail\n0 1\n"
    );
    assert_eq!(p.exit_code, Some(0));
    assert_eq!(run(&sh, "echo $PWD $v; f y").output, "/tmp plain\nf:y\n");
}

#[test]
fn a_job_has_its_own_cwd_env_and_exit_status() {
    let sh = crate::clean_shell();
    let job = sh
        .start(JobOptions {
            cwd: Some("/usr".into()),
            env: vec![("ONLY".into(), "job".into())],
            ..JobOptions::new("echo $PWD $ONLY; exit 3")
        })
        .unwrap();
    let p = poll(&sh, job, HANG);
    assert_eq!((p.output.as_str(), p.exit_code), ("/usr job\n", Some(3)));
    assert_eq!(
        run(&sh, "echo \"$PWD ${ONLY-unset}\"")
            .output
            .trim_end()
            .split(' ')
            .nth(1),
        Some("unset")
    );
    let bad = sh.start(JobOptions {
        cwd: Some("/no/such/dir".into()),
        ..JobOptions::new("true")
    });
    assert!(matches!(bad, Err(Error::InvalidArgument(_))), "{bad:?}");
}

#[test]
fn a_chatty_job_stays_bounded_and_its_artifact_stops_at_the_cap() {
    let dir = std::env::temp_dir().join(format!("conch-started-{}", std::process::id()));
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        artifacts: Some(conch_core::ArtifactStore::new(&dir)),
        job_artifact_cap: 10 << 20,
        ..ShellOptions::default()
    })
    .unwrap();
    let job = start(&sh, "yes");
    std::thread::sleep(Duration::from_millis(1500));
    let small = PollOptions {
        max_bytes: Some(1000),
        ..PollOptions::default()
    };
    let p = sh.poll(job, &small, None).unwrap();
    assert!(p.output.len() <= 1000);
    assert!(p.omitted_bytes > 0, "{p:?}");
    assert!(p.artifact_truncated, "{p:?}");
    let id = p.artifact_id.clone().unwrap();
    let t = Instant::now();
    let fin = sh.kill(job).unwrap();
    assert!(t.elapsed() < CUT, "{:?}", t.elapsed());
    assert_eq!(fin.status, JobStatus::Killed);
    let size = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{id}."))
        })
        .unwrap()
        .metadata()
        .unwrap()
        .len();
    assert_eq!(size, 10 << 20);
    assert!(fin.total_bytes > size, "{fin:?}");
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_past_yield_after_goes_on_as_a_job_and_the_session_as_it_was() {
    let sh = crate::clean_shell();
    run(&sh, "cd /tmp; kept=1");
    let t = Instant::now();
    let r = sh
        .run(
            RunOptions {
                yield_after: Some(Duration::from_secs(1)),
                ..RunOptions::new("echo first; cd /; export X=1; /bin/sleep 3; echo done")
            },
            |_| {},
        )
        .unwrap();
    let took = t.elapsed();
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(2),
        "{took:?}"
    );
    let job = r.backgrounded.expect("backgrounded");
    assert!(
        r.output
            .starts_with("[Command still running after 1 seconds"),
        "{}",
        r.output
    );
    assert!(r.output.ends_with("\nfirst\n"), "{}", r.output);
    assert_eq!(
        (r.exit_code, r.cancelled, r.session_ended),
        (None, false, false)
    );
    assert_eq!(
        run(&sh, "echo \"$PWD ${X-unset} $kept\"").output,
        "/tmp unset 1\n"
    );
    let p = poll(&sh, job, HANG);
    assert_eq!((p.output.as_str(), p.exit_code), ("done\n", Some(0)));
    assert_eq!(p.status, JobStatus::Exited);
    // A quick command under the same option is an ordinary run.
    let quick = sh
        .run(
            RunOptions {
                yield_after: Some(Duration::from_secs(5)),
                ..RunOptions::new("cd /usr; echo quick")
            },
            |_| {},
        )
        .unwrap();
    assert_eq!(
        (quick.output.as_str(), quick.backgrounded),
        ("quick\n", None)
    );
    assert_eq!(run(&sh, "pwd").output, "/usr\n");
}

#[test]
fn a_backgrounded_run_spares_what_earlier_runs_left() {
    let sh = crate::clean_shell();
    let marker = unique_sleep(60);
    run(&sh, &format!("/bin/sleep {marker} &"));
    assert!(wait_until(CUT, || procs_with(&marker).len() == 1));
    let earlier = procs_with(&marker);
    let r = sh
        .run(
            RunOptions {
                yield_after: Some(Duration::from_millis(300)),
                ..RunOptions::new("/bin/sleep 30")
            },
            |_| {},
        )
        .unwrap();
    let job = r.backgrounded.unwrap();
    let fin = sh.kill(job).unwrap();
    assert_eq!(fin.status, JobStatus::Killed);
    std::thread::sleep(Duration::from_millis(200));
    assert!(alive(earlier[0]), "an earlier run's background work died");
    assert_eq!(run(&sh, "echo on").output, "on\n");
    sh.close();
    assert!(gone(earlier[0]));
}

/// `command` run with a `yield_after` it outlives: its job.
fn backgrounded(sh: &Shell, command: &str) -> JobId {
    let r = sh
        .run(
            RunOptions {
                yield_after: Some(Duration::from_millis(100)),
                ..RunOptions::new(command)
            },
            |_| {},
        )
        .unwrap();
    r.backgrounded.unwrap_or_else(|| panic!("{command}: {r:?}"))
}

#[test]
fn a_backgrounded_run_that_ends_its_bash_keeps_its_exit_code() {
    let sh = crate::clean_shell();
    let dir = TempDir::new("bg-exit");
    // Each waits for its gate until the test removes it: it is still
    // running at its `yield_after`, however loaded the machine.
    let gate = format!("{dir}/gate");
    let gated = |body: &str| format!("while [ -e {gate} ]; do /bin/sleep 0.02; done; {body}");
    for (body, code, output) in [
        // The fresh bash that `exit` starts in its place reads no protocol
        // text as commands; what the command left keeps the job going.
        ("echo a; exit 7", 7, "a\n"),
        ("(/bin/sleep 0.3; echo late) & exit 3", 3, "late\n"),
        // `exec`: the program's own status.
        ("exec /bin/true", 0, ""),
        ("exec /bin/sh -c 'exit 5'", 5, ""),
    ] {
        std::fs::write(&gate, "").unwrap();
        let job = backgrounded(&sh, &gated(body));
        std::fs::remove_file(&gate).unwrap();
        let p = poll(&sh, job, HANG);
        assert_eq!(
            (p.status, p.exit_code, p.output.as_str()),
            (JobStatus::Exited, Some(code), output),
            "{body}"
        );
    }
    assert_eq!(run(&sh, "echo on").output, "on\n");
}

#[test]
fn a_signal_ends_a_backgrounded_run_as_it_ends_a_started_job() {
    let sh = crate::clean_shell();
    for sig in ["TERM", "KILL", "HUP", "INT"] {
        let mut seen = Vec::new();
        for moved in [true, false] {
            let marker = unique_sleep(30);
            let command = format!("/bin/sleep {marker}; echo after");
            let job = if moved {
                backgrounded(&sh, &command)
            } else {
                start(&sh, &command)
            };
            assert!(wait_until(CUT, || procs_with(&marker).len() == 1));
            sh.signal(job, sig).unwrap();
            let p = poll(&sh, job, HANG);
            seen.push((p.status, p.exit_code, p.output));
        }
        // A started job runs `( command )`: its bash dies of the signal
        // too, and the line with it (SIGINT: as `sleep` died of it).
        assert_eq!(seen[0], seen[1], "{sig}");
        assert!(seen[0].1.is_some_and(|c| c > 128), "{sig}: {seen:?}");
    }
    assert_eq!(run(&sh, "echo on").output, "on\n");
}

/// A session that runs at most `max_jobs` jobs at once.
fn limited_to(max_jobs: usize) -> Shell {
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        max_jobs,
        ..ShellOptions::default()
    })
    .unwrap()
}

#[test]
fn the_job_limit_refuses_a_start_and_keeps_a_run_in_the_foreground() {
    let sh = limited_to(2);
    let a = start(&sh, "/bin/sleep 30");
    let b = start(&sh, "/bin/sleep 30");
    let before = sh.jobs().len();
    assert!(matches!(
        sh.start(JobOptions::new("/bin/sleep 30")),
        Err(Error::TooManyJobs(2))
    ));
    assert_eq!(sh.jobs().len(), before);
    let r = sh
        .run(
            RunOptions {
                yield_after: Some(Duration::from_millis(100)),
                ..RunOptions::new("/bin/sleep 0.5; echo fg")
            },
            |_| {},
        )
        .unwrap();
    assert_eq!((r.output.as_str(), r.backgrounded), ("fg\n", None));
    sh.kill(a).unwrap();
    sh.kill(b).unwrap();
    assert!(sh.start(JobOptions::new("true")).is_ok());
}

#[test]
fn starts_at_once_never_run_more_jobs_than_the_limit() {
    let sh = limited_to(4);
    let marker = unique_sleep(30);
    let barrier = std::sync::Barrier::new(8);
    let started: Vec<_> = std::thread::scope(|s| {
        let starts: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    sh.start(JobOptions::new(format!("/bin/sleep {marker}")))
                })
            })
            .collect();
        starts.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let refused = started
        .iter()
        .filter(|r| matches!(r, Err(Error::TooManyJobs(4))))
        .count();
    assert_eq!(refused, 4, "{started:?}");
    assert!(wait_until(CUT, || procs_with(&marker).len() == 4));
    let running = |sh: &Shell| {
        sh.jobs()
            .iter()
            .filter(|j| j.status == JobStatus::Running)
            .count()
    };
    assert_eq!(running(&sh), 4);
    // A start that fails after taking its room gives it back.
    for r in started.iter().flatten().take(2) {
        sh.kill(*r).unwrap();
    }
    let nowhere = JobOptions {
        cwd: Some("/nonexistent/conch-test".into()),
        ..JobOptions::new("true")
    };
    assert!(sh.start(nowhere).is_err());
    start(&sh, &format!("/bin/sleep {marker}"));
    start(&sh, &format!("/bin/sleep {marker}"));
    assert_eq!(running(&sh), 4);
}

#[test]
fn a_start_waiting_behind_a_run_finds_its_room_taken_by_that_run() {
    let sh = limited_to(1);
    let marker = unique_sleep(30);
    std::thread::scope(|s| {
        let run = s.spawn(|| {
            let opts = RunOptions {
                yield_after: Some(Duration::from_secs(1)),
                ..RunOptions::new(format!("/bin/sleep {marker}"))
            };
            sh.run(opts, |_| {}).unwrap().backgrounded.unwrap()
        });
        // Called while the run is in the foreground (as a rule: its
        // `yield_after` is far off), the start waits for its turn, when the
        // run has become the one job the session may run.
        assert!(wait_until(CUT, || procs_with(&marker).len() == 1));
        assert!(matches!(
            sh.start(JobOptions::new("/bin/sleep 30")),
            Err(Error::TooManyJobs(1))
        ));
        let job = run.join().unwrap();
        let jobs = sh.jobs();
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        assert_eq!((jobs[0].job, jobs[0].status), (job, JobStatus::Running));
    });
}

#[test]
fn a_job_timeout_kills_its_tree_setsid_escapes_included() {
    let sh = crate::clean_shell();
    let (inner, escaped) = (unique_sleep(60), unique_sleep(60));
    let job = sh
        .start(JobOptions {
            timeout: Some(Duration::from_millis(500)),
            ..JobOptions::new(format!(
                "setsid /bin/sleep {escaped} & (/bin/sleep {inner} &); /bin/sleep 60"
            ))
        })
        .unwrap();
    assert!(wait_until(CUT, || procs_with(&inner).len() == 1
        && procs_with(&escaped).len() == 1));
    let p = poll(&sh, job, HANG);
    assert_eq!((p.status, p.exit_code), (JobStatus::TimedOut, None));
    assert!(wait_until(ESCALATION, || procs_with(&inner).is_empty()
        && procs_with(&escaped).is_empty()));
}

#[test]
fn closing_the_shell_kills_every_job() {
    let sh = crate::clean_shell();
    let marker = unique_sleep(60);
    for _ in 0..3 {
        start(&sh, &format!("/bin/sleep {marker}"));
    }
    let piped = sh
        .start(JobOptions {
            stdin: true,
            ..JobOptions::new(format!("/bin/sleep {marker}"))
        })
        .unwrap();
    assert!(wait_until(CUT, || procs_with(&marker).len() == 4));
    sh.close();
    assert!(procs_with(&marker).is_empty());
    assert!(matches!(sh.write(piped, b"x"), Err(Error::Closed(_))));
}

#[test]
fn misuse_of_jobs_gets_typed_errors() {
    let sh = crate::clean_shell();
    assert!(matches!(sh.write(99, b"x"), Err(Error::NotFound(_))));
    assert!(matches!(sh.kill(99), Err(Error::NotFound(_))));
    let job = start(&sh, "echo bye");
    assert_eq!(poll(&sh, job, HANG).status, JobStatus::Exited);
    assert!(matches!(sh.write(job, b"x"), Err(Error::NoInput(_))));
    let marker = unique_sleep(30);
    let no_stdin = start(&sh, &format!("/bin/sleep {marker}"));
    assert!(matches!(sh.write(no_stdin, b"x"), Err(Error::NoInput(_))));
    assert!(wait_until(CUT, || procs_with(&marker).len() == 1));
    assert!(matches!(
        sh.signal(no_stdin, "NOPE"),
        Err(Error::InvalidArgument(_))
    ));
    sh.signal(no_stdin, "term").unwrap();
    let p = poll(&sh, no_stdin, HANG);
    assert_eq!((p.status, p.exit_code), (JobStatus::Exited, Some(143)));
    assert!(matches!(
        sh.start(JobOptions::new("a\0b")),
        Err(Error::InvalidArgument(_))
    ));
    let closed = sh
        .start(JobOptions {
            stdin: true,
            ..JobOptions::new("cat; echo eof")
        })
        .unwrap();
    sh.write(closed, b"typed\n").unwrap();
    sh.close_stdin(closed).unwrap();
    assert_eq!(poll(&sh, closed, HANG).output, "typed\neof\n");
    assert!(matches!(sh.write(closed, b"x"), Err(Error::NoInput(_))));
}

#[test]
fn a_job_gets_a_state_larger_than_a_pipe_holds() {
    let sh = crate::clean_shell();
    // 3 MiB of variables: more than the state pipe holds at once.
    sh.run(
        RunOptions::new("BIG=$(head -c 3145728 /dev/zero | tr '\\0' x); f() { echo in-f; }"),
        |_| {},
    )
    .unwrap();
    let job = start(&sh, "echo ${#BIG}; f");
    let p = poll(&sh, job, HANG);
    assert_eq!((p.status, p.exit_code), (JobStatus::Exited, Some(0)));
    assert_eq!(p.output, "3145728\nin-f\n");
}

#[test]
fn a_signal_right_after_start_reaches_the_command() {
    let sh = crate::clean_shell();
    for _ in 0..5 {
        let marker = unique_sleep(30);
        let job = start(&sh, &format!("/bin/sleep {marker}"));
        sh.signal(job, "TERM").unwrap();
        let p = poll(&sh, job, HANG);
        assert_eq!((p.status, p.exit_code), (JobStatus::Exited, Some(143)));
        assert!(wait_until(CUT, || procs_with(&marker).is_empty()));
    }
}

#[test]
fn a_job_killed_by_a_signal_shows_nothing_of_its_root() {
    let sh = crate::clean_shell();
    for sig in ["KILL", "TERM", "INT"] {
        let marker = unique_sleep(30);
        let job = start(&sh, &format!("echo before; /bin/sleep {marker}"));
        until(&sh, job, "before");
        // A signal that meets the subshell between `echo` and the fork of
        // `sleep` leaves `sleep` running, as it would in bash -c.
        assert!(wait_until(CUT, || procs_with(&marker).len() == 1));
        sh.signal(job, sig).unwrap();
        let p = poll(&sh, job, HANG);
        assert_eq!(p.status, JobStatus::Exited, "{sig}");
        assert!(p.exit_code.is_some_and(|c| c > 128), "{sig}: {p:?}");
        // bash -c prints nothing of the command that died either.
        assert_eq!(p.output, "", "{sig}");
    }
}

#[test]
fn a_kill_is_not_kept_waiting_by_a_write_the_job_does_not_read() {
    let sh = Arc::new(crate::clean_shell());
    let marker = unique_sleep(30);
    let job = sh
        .start(JobOptions {
            stdin: true,
            ..JobOptions::new(format!("/bin/sleep {marker}"))
        })
        .unwrap();
    assert!(wait_until(CUT, || procs_with(&marker).len() == 1));
    // Far more than a pipe holds: the write waits for a reader.
    let writer = std::thread::spawn({
        let sh = sh.clone();
        move || sh.write(job, &vec![b'x'; 4 << 20])
    });
    assert!(wait_until(CUT, || {
        let p = sh.jobs();
        p.iter().any(|j| j.job == job) && !writer.is_finished()
    }));
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    let fin = sh.kill(job).unwrap();
    // The write gives up after 10 s; the kill must not wait for it.
    assert!(asked.elapsed() < ESCALATION + CUT, "{:?}", asked.elapsed());
    assert_eq!(fin.status, JobStatus::Killed);
    match writer.join().unwrap() {
        Err(Error::NoInput(why)) => assert!(why.contains("bytes were written"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(procs_with(&marker).is_empty());
}

#[test]
fn races_between_polls_writes_kills_and_exits_lose_nothing() {
    let sh = Arc::new(crate::clean_shell());
    for _ in 0..5 {
        // A poll racing the job's exit.
        let job = start(&sh, "echo a; echo b");
        let p = poll(&sh, job, HANG);
        assert_eq!((p.output.as_str(), p.exit_code), ("a\nb\n", Some(0)));
    }
    // Two concurrent polls of one job, with a write meanwhile, then a
    // kill during a poll: every byte read once, nothing hangs.
    let job = sh
        .start(JobOptions {
            stdin: true,
            ..JobOptions::new("while read -r l; do echo got $l; done")
        })
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let pollers: Vec<_> = (0..2)
        .map(|_| {
            let (sh, seen) = (sh.clone(), seen.clone());
            std::thread::spawn(move || {
                loop {
                    let p = poll(&sh, job, Duration::from_millis(200));
                    seen.lock().unwrap().push_str(&p.output);
                    if p.status != JobStatus::Running {
                        return p.status;
                    }
                }
            })
        })
        .collect();
    for i in 0..20 {
        sh.write(job, format!("{i}\n").as_bytes()).unwrap();
    }
    assert!(wait_until(HANG, || seen
        .lock()
        .unwrap()
        .matches("got")
        .count()
        == 20));
    let fin = sh.kill(job).unwrap();
    for p in pollers {
        assert_eq!(p.join().unwrap(), JobStatus::Killed);
    }
    let expected: String = (0..20).map(|i| format!("got {i}\n")).collect();
    assert_eq!(format!("{}{}", seen.lock().unwrap(), fin.output), expected);
}

#[test]
fn wait_any_and_the_exit_hook_report_ends() {
    let ended = Arc::new(Mutex::new(Vec::new()));
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        on_job_exit: Some(JobExitHook::new({
            let ended = ended.clone();
            move |info| {
                ended
                    .lock()
                    .unwrap()
                    .push((info.job, info.status, info.exit_code))
            }
        })),
        ..ShellOptions::default()
    })
    .unwrap();
    let slow = start(&sh, "/bin/sleep 30");
    let quick = start(&sh, "/bin/sleep 0.2; exit 4");
    assert_eq!(
        sh.wait_any(&[slow], Duration::from_millis(100), None)
            .unwrap(),
        None
    );
    assert_eq!(
        sh.wait_any(&[slow, quick], HANG, None).unwrap(),
        Some(quick)
    );
    assert!(wait_until(CUT, || ended.lock().unwrap().len() == 1));
    assert_eq!(
        ended.lock().unwrap()[0],
        (quick, JobStatus::Exited, Some(4))
    );
    sh.kill(slow).unwrap();
    assert!(wait_until(CUT, || ended.lock().unwrap().len() == 2));
    assert_eq!(ended.lock().unwrap()[1], (slow, JobStatus::Killed, None));
    assert!(matches!(
        sh.wait_any(&[77], HANG, None),
        Err(Error::NotFound(_))
    ));
    // A cancel ends the wait, not the job.
    let other = start(&sh, "/bin/sleep 30");
    let cancel = conch_core::CancelToken::new();
    let t = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            cancel.cancel();
        });
        assert_eq!(sh.wait_any(&[other], HANG, Some(&cancel)).unwrap(), None);
    });
    assert!(t.elapsed() < CUT, "{:?}", t.elapsed());
    assert_eq!(poll(&sh, other, Duration::ZERO).status, JobStatus::Running);
}

#[test]
fn a_wait_for_no_job_returns_at_once_whatever_the_timeout() {
    let sh = Arc::new(crate::clean_shell());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn({
        let sh = sh.clone();
        move || tx.send(sh.wait_any(&[], Duration::MAX, None))
    });
    let found = rx.recv_timeout(HANG).expect("a wait for no job returns");
    assert_eq!(found.unwrap(), None);
    sh.close();
    assert!(matches!(
        sh.wait_any(&[], Duration::ZERO, None),
        Err(Error::Closed(_))
    ));
}

#[test]
fn a_wait_too_long_for_the_clock_waits_for_the_end() {
    let sh = crate::clean_shell();
    let job = start(&sh, "/bin/sleep 0.2; exit 3");
    assert_eq!(sh.wait_any(&[job], Duration::MAX, None).unwrap(), Some(job));
    let next = start(&sh, "/bin/sleep 0.2; echo done");
    let p = poll(&sh, next, Duration::MAX);
    assert_eq!(
        (p.status, p.exit_code, p.output.as_str()),
        (JobStatus::Exited, Some(0), "done\n")
    );
}
