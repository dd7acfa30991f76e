//! Programs that need a terminal, run without one (docs/behaviour.md,
//! section 9, "Programs that need a terminal"): editors are stopped with a
//! notice instead of waiting for keys until the timeout, in the session,
//! one-shot and in a job without a terminal; what merely prints escape
//! sequences, or gets by without a terminal, is left alone; and a job on a
//! terminal says when it waits for input.
//!
//! Needs `vi` and `vim` (Vim), `nano`, `less` and `python3`
//! (`scripts/build.sh` installs them).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{HANG, TempDir, wait_until};
use conch_core::shell::{BashResult, ExecuteOptions, RunOptions, Shell, execute_shell};
use conch_core::{JobId, JobOptions, JobPoll, JobStatus, PollOptions};
use regex::Regex;

/// The timeout a waiting editor would run to.
const TIMEOUT: Duration = Duration::from_secs(300);
/// Well past the stop (Vim shows its warning for 2 s, the stop takes
/// under a second more), well before [`TIMEOUT`].
const EARLY: Duration = Duration::from_secs(10);

fn notice(program: &str) -> String {
    format!(
        "[{program} needs a terminal: stopped. Edit files with the edit tool, or start it as \
         a job with a PTY]\n"
    )
}

/// A file of this test's own, in a directory of its own (removed with it):
/// its path is the marker that finds the processes that opened it.
struct Notes {
    file: PathBuf,
    _dir: TempDir,
}

impl std::ops::Deref for Notes {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.file
    }
}

impl AsRef<Path> for Notes {
    fn as_ref(&self) -> &Path {
        &self.file
    }
}

fn notes(test: &str) -> Notes {
    let dir = TempDir::new(&format!("no-terminal-{test}"));
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "hello\n").unwrap();
    Notes { file, _dir: dir }
}

/// Live processes with an argument that mentions `marker`.
fn procs_naming(marker: &Path) -> Vec<i32> {
    let marker = marker.to_string_lossy().into_owned();
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me && crate::common::alive(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
        })
        .collect()
}

fn needs(program: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).exists()));
    assert!(
        found,
        "{program} is not installed (scripts/build.sh installs it)"
    );
}

fn run(sh: &Shell, command: &str) -> (BashResult, Duration) {
    let mut opts = RunOptions::new(command);
    opts.timeout = Some(TIMEOUT);
    let started = Instant::now();
    let r = sh.run(opts, |_| {}).unwrap();
    (r, started.elapsed())
}

/// A run stopped for `program`: early, with the notice, as conch's other
/// stops read, the session kept.
fn stopped_for(r: &BashResult, took: Duration, program: &str) {
    assert!(took < EARLY, "took {took:?}: {r:?}");
    assert!(
        r.output.starts_with(&notice(program)),
        "{program}: {:?}",
        r.output
    );
    assert!(r.cancelled && !r.timed_out, "{r:?}");
    assert_eq!(r.exit_code, None);
    assert!(!r.session_ended && !r.session_reset, "{r:?}");
}

#[test]
fn editors_without_a_terminal_are_stopped_and_the_session_goes_on() {
    for program in ["vi", "vim", "nano"] {
        needs(program);
        let sh = crate::clean_shell();
        let file = notes(program);
        run(&sh, "X=kept; cd /tmp");
        let (r, took) = run(&sh, &format!("{program} {}; echo after", file.display()));
        stopped_for(&r, took, program);
        if program != "nano" {
            // The rest of the line is abandoned, as an interrupt does (nano
            // quits by itself at once: the line may go on before the stop).
            assert!(!r.output.contains("after"), "{:?}", r.output);
        }
        assert!(
            wait_until(HANG, || procs_naming(&file).is_empty()),
            "{program} left {:?}",
            procs_naming(&file)
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello\n");
        let (next, _) = run(&sh, "echo $X; pwd");
        assert_eq!(next.output, "kept\n/tmp\n");
        assert_eq!(next.exit_code, Some(0));
        assert!(!next.session_reset, "{next:?}");
    }
}

#[test]
fn a_quit_read_together_with_what_followed_is_still_seen() {
    // nano's last words and the next command's output in one read, as a
    // busy reader gets them: written here in one write.
    let sh = crate::clean_shell();
    let (r, took) = run(
        &sh,
        r"printf '\e[?2004lStandard input is not a terminal\nafter\n'",
    );
    stopped_for(&r, took, "nano");
    let (next, _) = run(&sh, "echo next");
    assert_eq!(next.output, "next\n");
}

#[test]
fn an_editor_with_a_terminal_type_is_stopped_too() {
    // With a real terminal type, Vim and nano switch to the alternate
    // screen (`ESC[?1049h`) as well.
    needs("vim");
    let sh = crate::clean_shell();
    let file = notes("xterm");
    for program in ["vim", "nano"] {
        let command = format!("TERM=xterm-256color {program} {}", file.display());
        let (r, took) = run(&sh, &command);
        stopped_for(&r, took, program);
        assert!(wait_until(HANG, || procs_naming(&file).is_empty()));
    }
}

/// What follows the file `less +F` printed without a terminal.
const LESS_NOTICE: &str = "[less needs a terminal to follow a file: it printed the file once and \
     exited. Follow a file with `tail -f` in a job, or start less as a job with a PTY]\n";

#[test]
fn less_asked_to_follow_without_a_terminal_prints_the_file_and_says_so() {
    // `less` whose output is not a terminal copies its input, as `cat`
    // does, `+F` or not: nothing waits for a terminal, nothing is stopped,
    // but a file it was asked to follow was printed only once.
    needs("less");
    let sh = crate::clean_shell();
    let file = notes("less");
    let (r, took) = run(&sh, &format!("less +F {}", file.display()));
    assert!(took < EARLY, "{took:?}");
    assert_eq!(r.output, format!("hello\n{LESS_NOTICE}"));
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.cancelled, "{r:?}");
    assert!(procs_naming(&file).is_empty());
    let (plain, _) = run(&sh, &format!("less {}", file.display()));
    assert_eq!(plain.output, "hello\n");

    let one_shot = execute_shell(
        ExecuteOptions {
            command: format!("cat {0} | less +F; less {0}", file.display()),
            timeout: Some(TIMEOUT),
            ..ExecuteOptions::default()
        },
        |_| {},
    )
    .unwrap();
    assert_eq!(one_shot.output, format!("hello\nhello\n{LESS_NOTICE}"));

    let job = sh
        .start(JobOptions::new(format!("less +F {}", file.display())))
        .unwrap();
    let started = Instant::now();
    let (output, last) = crate::poll_to_end(&sh, job, started + TIMEOUT);
    assert_eq!(last.status, JobStatus::Exited, "{last:?}");
    assert_eq!(output, format!("hello\n{LESS_NOTICE}"));
}

#[test]
fn an_editor_that_does_not_wait_for_keys_is_left_to_finish() {
    // `vim -c … -c wq` shows its warnings for two seconds (asleep, not
    // reading), then edits the file and quits.
    needs("vim");
    let sh = crate::clean_shell();
    let file = notes("vim-c");
    let command = format!("vim -c 'normal Aworld' -c wq {}", file.display());
    let (r, _) = run(&sh, &command);
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(!r.cancelled, "{r:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "helloworld\n");
}

#[test]
fn escape_sequences_without_the_alternate_screen_are_output_like_any_other() {
    let sh = crate::clean_shell();
    // Colors, a hidden cursor, bracketed paste, application keys; the
    // alternate screen left, and a near miss (mode 10490).
    let (r, _) = run(
        &sh,
        "printf '\\e[31mred\\e[0m \\e[?25l\\e[?2004h\\e[?1h\\e[?1049l\\e[?10490h\\n'; sleep 1; echo done",
    );
    assert_eq!(r.output, "red \ndone\n");
    assert_eq!(r.exit_code, Some(0));
    // The alternate screen from a program that does not then read its
    // input (it sleeps, and ends by itself).
    let (r, _) = run(
        &sh,
        "printf '\\e[?1049hscreen'; sleep 1; printf '\\e[?1049l'; echo done",
    );
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(r.output.ends_with("done\n"), "{:?}", r.output);
}

#[test]
fn a_one_shot_editor_is_stopped_with_its_tree() {
    needs("vi");
    let file = notes("oneshot");
    let started = Instant::now();
    let r = execute_shell(
        ExecuteOptions {
            command: format!("vi {}", file.display()),
            timeout: Some(TIMEOUT),
            ..ExecuteOptions::default()
        },
        |_| {},
    )
    .unwrap();
    stopped_for(&r, started.elapsed(), "vi");
    assert!(procs_naming(&file).is_empty(), "{:?}", procs_naming(&file));
}

fn poll(sh: &Shell, job: JobId, wait: Duration, until: Option<&str>) -> JobPoll {
    let opts = PollOptions {
        wait,
        until: until.map(|u| Regex::new(u).unwrap()),
        ..PollOptions::default()
    };
    sh.poll(job, &opts, None).unwrap()
}

#[test]
fn a_job_without_a_terminal_running_an_editor_is_killed_with_the_notice() {
    needs("vi");
    let sh = crate::clean_shell();
    let file = notes("job");
    let job = sh
        .start(JobOptions {
            stdin: true,
            ..JobOptions::new(format!("vi {}", file.display()))
        })
        .unwrap();
    let started = Instant::now();
    let (output, last) = crate::poll_to_end(&sh, job, started + TIMEOUT);
    assert!(started.elapsed() < EARLY, "{:?}", started.elapsed());
    assert_eq!(last.status, JobStatus::Killed, "{last:?}");
    assert!(!last.waiting_for_input);
    assert!(output.ends_with(&notice("vi")), "{output:?}");
    assert!(procs_naming(&file).is_empty(), "{:?}", procs_naming(&file));
}

#[test]
fn a_job_on_a_terminal_says_when_it_waits_for_input() {
    needs("python3");
    let sh = crate::clean_shell();
    let job = sh
        .start(JobOptions {
            pty: Some((80, 24)),
            ..JobOptions::new("python3 -q")
        })
        .unwrap();
    // Polls (up to HANG) until one says the job waits; what they read.
    let waits = |sh: &Shell| {
        let mut seen = String::new();
        let waiting = wait_until(HANG, || {
            let p = poll(sh, job, Duration::from_millis(100), None);
            seen.push_str(&p.output);
            p.waiting_for_input
        });
        (waiting, seen)
    };
    let (waiting, seen) = waits(&sh);
    assert!(waiting, "{seen:?}");
    assert!(seen.contains(">>> "), "{seen:?}");
    sh.write(job, b"print(1+1)\n").unwrap();
    let answer = poll(&sh, job, HANG, Some("\n2\n"));
    assert!(answer.output.contains("\n2\n"), "{answer:?}");
    let (waiting, seen) = waits(&sh);
    assert!(waiting, "{seen:?}");
    // Busy, it does not wait.
    sh.write(job, b"import time; time.sleep(30)\n").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let busy = poll(&sh, job, Duration::from_millis(300), None);
    assert!(!busy.waiting_for_input, "{busy:?}");
    let killed = sh.kill(job).unwrap();
    assert_eq!(killed.status, JobStatus::Killed);
    assert!(!killed.waiting_for_input);
}

#[test]
fn a_job_without_a_terminal_never_says_it_waits() {
    let sh = crate::clean_shell();
    // `cat` blocked reading its stdin pipe: the job takes input, but
    // nothing on it needs a terminal, and it is not stopped.
    let job = sh
        .start(JobOptions {
            stdin: true,
            ..JobOptions::new("cat")
        })
        .unwrap();
    sh.write(job, b"x\n").unwrap();
    let p = poll(&sh, job, HANG, Some("x"));
    assert_eq!(p.output, "x\n");
    std::thread::sleep(Duration::from_millis(500));
    let p = poll(&sh, job, Duration::ZERO, None);
    assert_eq!(p.status, JobStatus::Running);
    assert!(!p.waiting_for_input, "{p:?}");
    sh.close_stdin(job).unwrap();
    let p = poll(&sh, job, HANG, None);
    assert_eq!(p.status, JobStatus::Exited);
}

#[test]
fn an_editor_moved_to_the_background_is_still_stopped() {
    // At `yield_after` Vim shows its warning (the run saw it); the job it
    // goes on as stops it once it waits for keys.
    needs("vi");
    let sh = crate::clean_shell();
    let file = notes("yield");
    let mut opts = RunOptions::new(format!("vi {}", file.display()));
    opts.timeout = Some(TIMEOUT);
    opts.yield_after = Some(Duration::from_millis(500));
    let started = Instant::now();
    let r = sh.run(opts, |_| {}).unwrap();
    let job = r.backgrounded.expect("moved to the background");
    let (rest, last) = crate::poll_to_end(&sh, job, started + TIMEOUT);
    let output = r.output.clone() + &rest;
    assert!(started.elapsed() < EARLY, "{:?}", started.elapsed());
    assert_eq!(last.status, JobStatus::Killed, "{last:?}");
    assert!(output.ends_with(&notice("vi")), "{output:?}");
    assert!(procs_naming(&file).is_empty(), "{:?}", procs_naming(&file));
    assert_eq!(
        sh.run(RunOptions::new("echo ok"), |_| {}).unwrap().output,
        "ok\n"
    );
}
