//! PtySession on real pseudo-terminals: terminal identity and size, input
//! and keys, the virtual screen, timeouts and kills over the process tree,
//! start failures and control-call errors.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::{CUT, ESCALATION, HANG, Seen, alive, gone, number_after, wait_until};
use conch_core::CancelToken;
use conch_core::pty::{PtyOptions, PtyResult, PtySession};

/// Runs `opts` on `pty` in a scoped thread while `drive` interacts with it.
fn interact(
    pty: &PtySession,
    opts: PtyOptions,
    drive: impl FnOnce(&PtySession, &Seen),
) -> (PtyResult, String) {
    let seen = Seen::default();
    let result = thread::scope(|s| {
        let runner = {
            let seen = seen.clone();
            s.spawn(move || pty.start(opts, |c| seen.push(c)).expect("start"))
        };
        drive(pty, &seen);
        runner.join().expect("runner thread")
    });
    (result, seen.text())
}

fn run(opts: PtyOptions) -> (PtyResult, String) {
    let pty = PtySession::new();
    let mut raw = String::new();
    let result = pty.start(opts, |c| raw.push_str(c)).expect("start");
    (result, raw)
}

fn opts(command: &str) -> PtyOptions {
    PtyOptions {
        timeout: Some(Duration::from_secs(20)),
        ..PtyOptions::new(command)
    }
}

/// Live processes whose session id is `sid`.
fn session_members(sid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 4 && f[3] == sid.to_string() && f[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

#[test]
fn tty_is_a_terminal_device() {
    let (r, raw) = run(opts("tty; test -t 0 && test -t 1 && echo both-ttys"));
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(r.summary.output.starts_with("/dev/pts/"), "{r:?}");
    assert!(r.summary.output.contains("both-ttys\n"));
    assert!(
        raw.contains("both-ttys\r\n"),
        "raw chunks keep the terminal's CRLF"
    );
}

#[test]
fn stty_size_follows_start_size_and_resize() {
    let pty = PtySession::new();
    let script = "stty size; read -r line; stty size; echo \"got $line\"";
    let o = PtyOptions {
        cols: 80,
        rows: 24,
        ..opts(script)
    };
    let (r, _) = interact(&pty, o, |pty, seen| {
        seen.wait_for("24 80");
        pty.resize(100, 30).unwrap();
        assert_eq!(pty.size(), (100, 30));
        pty.write(b"go\r").unwrap();
    });
    assert_eq!(r.exit_code, Some(0));
    assert!(r.summary.output.contains("24 80\n"), "{r:?}");
    assert!(r.summary.output.contains("30 100\n"), "{r:?}");
    assert!(r.summary.output.contains("got go\n"), "{r:?}");
}

#[test]
fn sizes_are_clamped() {
    let (r, _) = run(PtyOptions {
        cols: 5,
        rows: 1000,
        ..opts("stty size")
    });
    assert_eq!(r.summary.output, "200 20\n");
}

#[test]
fn prompt_gets_the_written_answer() {
    let pty = PtySession::new();
    let (r, _) = interact(&pty, opts("read -p 'name? ' n; echo hi $n"), |pty, seen| {
        seen.wait_for("name? ");
        pty.write(b"bob").unwrap();
        pty.write_key("enter").unwrap();
    });
    assert_eq!(r.exit_code, Some(0));
    assert!(r.summary.output.contains("hi bob\n"), "{r:?}");
}

fn read_three_keys(app_cursor: bool, send: impl FnOnce(&PtySession)) -> String {
    let mode = if app_cursor { "printf '\\e[?1h'; " } else { "" };
    let script = format!("{mode}stty -echo; echo ready; read -rsn3 k; printf '<%q>' \"$k\"");
    let pty = PtySession::new();
    let (r, _) = interact(&pty, opts(&script), |pty, seen| {
        seen.wait_for("ready");
        assert_eq!(pty.application_cursor(), app_cursor);
        send(pty);
    });
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    r.summary.output
}

#[test]
fn up_key_follows_application_cursor_mode() {
    let app = read_three_keys(true, |pty| pty.write_key("up").unwrap());
    assert!(app.contains("<$'\\EOA'>"), "{app:?}");
    let normal = read_three_keys(false, |pty| pty.write_key("up").unwrap());
    assert!(normal.contains("<$'\\E[A'>"), "{normal:?}");
    // A host's raw (Kitty-style) up arrow is re-encoded for the mode too.
    let written = read_three_keys(true, |pty| pty.write(b"\x1b[1;1:1A").unwrap());
    assert!(written.contains("<$'\\EOA'>"), "{written:?}");
}

#[test]
fn kitty_ctrl_c_interrupts_a_sleep() {
    let pty = PtySession::new();
    let (r, _) = interact(
        &pty,
        opts("echo started; exec /bin/sleep 100"),
        |pty, seen| {
            seen.wait_for("started");
            pty.write(b"\x1b[99;5u").unwrap();
        },
    );
    assert_eq!(r.exit_code, Some(130), "{r:?}");
    assert!(!r.cancelled && !r.timed_out);
}

#[test]
fn kitty_key_releases_are_dropped() {
    // A raw terminal hands the reader every byte as it comes: a release
    // passed on in any form (as is, or re-encoded as its key) would come
    // before the `x` and the `y`.
    let pty = PtySession::new();
    let (r, _) = interact(
        &pty,
        opts("stty raw -echo; echo ready; head -c 3 | od -An -tx1"),
        |pty, seen| {
            seen.wait_for("ready");
            for input in [
                &b"\x1b[99;5:3u"[..], // ctrl+c released
                b"\x1b[99;5u",        // ctrl+c pressed: 0x03
                b"\x1b[99;5:3u",
                b"\x1b[120u",     // x pressed
                b"\x1b[120;1:3u", // x released
                b"\x1b[1;1:3A",   // up released
                b"y",
            ] {
                pty.write(input).unwrap();
            }
        },
    );
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert_eq!(r.summary.output, "ready\n 03 78 79\n", "{r:?}");
}

#[test]
fn screen_text_places_words() {
    let pty = PtySession::new();
    let r = pty
        .start(opts("printf '\\e[2J\\e[Hhello\\e[5;3Hworld'"), |_| {})
        .unwrap();
    assert_eq!(r.exit_code, Some(0));
    let screen = pty.screen_text();
    let lines: Vec<&str> = screen.lines().collect();
    assert_eq!(lines.first(), Some(&"hello"), "{screen:?}");
    assert_eq!(lines.get(4), Some(&"  world"), "{screen:?}");
    assert_eq!(pty.cursor_position(), (4, 7));
    // The model's copy has the escapes stripped.
    assert_eq!(r.summary.output, "helloworld");
}

#[test]
fn terminal_queries_are_answered() {
    let (r, _) = run(opts(
        "stty -echo; printf '\\e[3;5H\\e[6n'; IFS= read -rsd R pos; echo; echo \"pos=${pos#*[}\"",
    ));
    assert_eq!(r.exit_code, Some(0));
    assert!(r.summary.output.contains("pos=3;5\n"), "{r:?}");
}

/// Runs `command` (which prints `ready` once it has printed the pids the
/// test needs) with a [`CUT`] timeout; `check` gets the output up to
/// `ready` while the command still runs.
fn cut_by_timeout(command: &str, check: impl FnOnce(&str)) -> PtyResult {
    let pty = PtySession::new();
    let started = Instant::now();
    let (r, _) = interact(
        &pty,
        PtyOptions {
            timeout: Some(CUT),
            ..PtyOptions::new(command)
        },
        |_, seen| {
            seen.wait_for("ready");
            check(&seen.text());
        },
    );
    // The commands would run for 1000 s if the timeout did not end them.
    let took = started.elapsed();
    assert!(took < CUT + ESCALATION + HANG, "{took:?}");
    // As a shell run reads: cancelled too, no exit code, the notice first.
    assert!(r.timed_out && r.cancelled && r.exit_code.is_none(), "{r:?}");
    let notice = format!("[Command timed out after {} seconds]\n", CUT.as_secs());
    assert!(r.summary.output.starts_with(&notice), "{r:?}");
    r
}

#[test]
fn timeout_kills_the_whole_tree() {
    let (mut bash, mut bg) = (0, 0);
    cut_by_timeout(
        "echo \"bash $$\"; /bin/sleep 1000 & echo \"bg $!\"; echo ready; /bin/sleep 1000",
        |text| {
            (bash, bg) = (number_after(text, "bash "), number_after(text, "bg "));
            assert!(alive(bash) && alive(bg), "{text:?}");
        },
    );
    assert!(gone(bg), "background sleep {bg} survived");
    assert!(
        wait_until(HANG, || session_members(bash).is_empty()),
        "session of {bash} not empty: {:?}",
        session_members(bash)
    );
}

#[test]
fn detached_job_holding_the_terminal_cannot_hang_a_timeout() {
    let mut bg = 0;
    cut_by_timeout(
        "set -m; /bin/sleep 1000 & disown; echo \"bg $!\"; echo ready; /bin/sleep 1000",
        |text| {
            bg = number_after(text, "bg ");
            assert!(alive(bg), "{text:?}");
        },
    );
    assert!(gone(bg), "detached sleep {bg} survived");
}

#[test]
fn detached_job_holding_the_terminal_cannot_hang_a_normal_exit() {
    let started = Instant::now();
    let (r, _) = run(opts(
        "set -m; /bin/sleep 1000 & disown; echo \"bg $!\"; echo done",
    ));
    let took = started.elapsed();
    let bg = number_after(&r.summary.output, "bg ");
    // A job left in the background is not killed when the command ends.
    let survived = alive(bg);
    // SAFETY: kill(2) has no memory effects.
    unsafe { libc::kill(bg, libc::SIGKILL) };
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(r.summary.output.ends_with("done\n"), "{r:?}");
    // Held until the job ends, the run would take 1000 s.
    assert!(took < HANG, "{took:?}");
    assert!(survived);
    assert!(gone(bg));
}

#[test]
fn kill_and_cancel_token_stop_the_run() {
    let pty = PtySession::new();
    let (r, _) = interact(&pty, opts("echo started; /bin/sleep 100"), |pty, seen| {
        seen.wait_for("started");
        pty.kill().unwrap();
    });
    assert!(r.cancelled && !r.timed_out, "{r:?}");
    assert_eq!(r.exit_code, None);
    assert!(
        r.summary.output.starts_with("[Command cancelled]\nstarted"),
        "{r:?}"
    );

    let token = CancelToken::new();
    let (r, _) = interact(
        &pty,
        PtyOptions {
            cancel: Some(token.clone()),
            ..opts("echo started; /bin/sleep 100")
        },
        |_, seen| {
            seen.wait_for("started");
            token.cancel();
        },
    );
    assert!(r.cancelled && !r.timed_out, "{r:?}");
}

#[test]
fn a_cancelled_token_never_starts_the_command() {
    let token = CancelToken::new();
    token.cancel();
    let (r, raw) = run(PtyOptions {
        cancel: Some(token),
        ..opts("echo should-not-run")
    });
    assert!(r.cancelled, "{r:?}");
    assert_eq!(r.exit_code, None);
    assert!(raw.is_empty());
}

#[test]
fn environment_layers() {
    let (r, _) = run(PtyOptions {
        env: vec![
            ("FOO".into(), "bar".into()),
            ("PAGER".into(), "less".into()),
        ],
        ..opts("echo \"$TERM|$PAGER|$GIT_EDITOR|$FOO|${NO_COLOR-unset}\"")
    });
    // NO_COLOR (a non-interactive default for pipes) is not set on a terminal.
    let no_color = std::env::var("NO_COLOR").unwrap_or_else(|_| "unset".into());
    assert_eq!(
        r.summary.output,
        format!("xterm-256color|less|true|bar|{no_color}\n")
    );
}

#[test]
fn cwd_is_used() {
    let dir = std::env::temp_dir();
    let (r, _) = run(PtyOptions {
        cwd: Some(dir.clone()),
        ..opts("pwd -P")
    });
    let expect = dir.canonicalize().unwrap();
    assert_eq!(r.summary.output.trim_end(), expect.to_str().unwrap());
}

#[test]
fn output_for_the_model_is_sanitized() {
    let (r, raw) = run(opts(
        "printf '\\e[31mred\\e[0m\\r\\nprogress 1\\rprogress 2\\n'",
    ));
    assert!(
        raw.contains("\x1b[31mred\x1b[0m"),
        "raw keeps escapes: {raw:?}"
    );
    // A redrawn line reads as the terminal shows it.
    assert_eq!(r.summary.output, "red\nprogress 2\n");
}

#[test]
fn bad_input_is_an_error_of_the_call_as_in_the_shell() {
    let pty = PtySession::new();
    let err = |opts: PtyOptions| pty.start(opts, |_| {}).unwrap_err();
    let e = err(PtyOptions {
        cwd: Some("/nonexistent/conch-dir".into()),
        ..opts("echo hi")
    });
    assert!(matches!(e, conch_core::Error::InvalidArgument(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "Working directory does not exist: /nonexistent/conch-dir"
    );
    let e = err(opts("echo a\0b"));
    assert_eq!(e.to_string(), "command contains a NUL byte");
    let e = err(PtyOptions {
        shell: Some("/nonexistent/bash".into()),
        ..opts("echo hi")
    });
    assert!(matches!(e, conch_core::Error::Spawn(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        "Shell not found or not executable: /nonexistent/bash"
    );
    let e = err(PtyOptions {
        env: vec![("BAD-NAME".into(), "x".into())],
        ..opts("echo hi")
    });
    assert!(matches!(e, conch_core::Error::InvalidArgument(_)), "{e:?}");
    // Nothing was left running: the session takes the next command.
    let (r, _) = run(opts("echo fine"));
    assert_eq!(
        (r.exit_code, r.summary.output.as_str()),
        (Some(0), "fine\n")
    );
}

#[test]
fn control_calls_need_a_running_command() {
    let pty = PtySession::new();
    let not_running = "PTY session is not running";
    assert_eq!(pty.write(b"x").unwrap_err().to_string(), not_running);
    assert_eq!(pty.write_key("enter").unwrap_err().to_string(), not_running);
    assert_eq!(pty.resize(80, 24).unwrap_err().to_string(), not_running);
    assert_eq!(pty.kill().unwrap_err().to_string(), not_running);
    assert!(
        pty.write_key("hyperdrive")
            .unwrap_err()
            .to_string()
            .starts_with("Unknown key \"hyperdrive\"")
    );
    assert!(!pty.is_running());
    let r = pty.start(opts("exit 3"), |_| {}).unwrap();
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(pty.write(b"x").unwrap_err().to_string(), not_running);
}

#[test]
fn second_concurrent_start_is_refused() {
    let pty = PtySession::new();
    let (r, _) = interact(&pty, opts("echo started; read -r x"), |pty, seen| {
        seen.wait_for("started");
        assert!(pty.is_running());
        let err = pty.start(opts("echo second"), |_| {}).unwrap_err();
        assert_eq!(err.to_string(), "PTY session already running");
        pty.write_key("enter").unwrap();
    });
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.summary.output.contains("second"));
}

/// Whether thread `tid` waits in `poll`, as a writer does while the
/// terminal's input buffer is full. Linux: it reads the thread's system
/// call.
#[cfg(target_os = "linux")]
fn waits_in_poll(tid: i32) -> bool {
    crate::common::blocked_in(tid)
        .is_some_and(|(nr, _)| nr == libc::SYS_poll || nr == libc::SYS_ppoll)
}

#[cfg(target_os = "linux")]
#[test]
fn writers_blocked_on_a_full_terminal_are_released_at_the_end() {
    let pty = PtySession::new();
    let (r, _) = interact(
        &pty,
        opts("stty raw -echo; echo started; exec /bin/sleep 100"),
        |pty, seen| {
            seen.wait_for("started");
            thread::scope(|s| {
                // Nobody reads (raw mode, so input is kept, not discarded):
                // the terminal's buffers fill and the write blocks.
                let (tid_tx, tid) = std::sync::mpsc::channel();
                let writer = s.spawn(move || {
                    tid_tx.send(crate::common::thread_id()).unwrap();
                    pty.write(&vec![b'a'; 1 << 20])
                });
                let tid = tid.recv().unwrap();
                assert!(
                    wait_until(HANG, || waits_in_poll(tid)),
                    "the write never blocked"
                );
                // Ending the run releases it.
                pty.kill().unwrap();
                let err = writer.join().unwrap().unwrap_err();
                assert_eq!(err.to_string(), "PTY session is not running");
            });
        },
    );
    assert!(r.cancelled && !r.timed_out, "{r:?}");
}

#[test]
fn session_is_shareable_across_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<PtySession>();
    let pty = Arc::new(PtySession::new());
    let remote = pty.clone();
    let runner = thread::spawn(move || remote.start(opts("exit 4"), |_| {}).unwrap());
    assert_eq!(runner.join().unwrap().exit_code, Some(4));
}

#[test]
fn secrets_of_the_env_are_masked_in_chunks_screen_and_output() {
    let pty = PtySession::new();
    let mut opts = opts(
        "printf '%s' \"${API_TOKEN:0:5}\"; sleep 0.05; printf '%s\\n' \"${API_TOKEN:5}\"; \
         printf '\\033[1m%s\\033[0m\\n' \"$API_TOKEN\"",
    );
    opts.env = vec![("API_TOKEN".into(), "tok_9f8e7d6c5b4a3210".into())];
    let mut raw = String::new();
    let r = pty.start(opts.clone(), |c| raw.push_str(c)).unwrap();
    assert_eq!(
        r.summary.output,
        "[masked: API_TOKEN]\n[masked: API_TOKEN]\n"
    );
    assert!(!raw.contains("tok_9f8e7d6c5b4a3210"), "{raw:?}");
    assert!(raw.contains("[masked: API_TOKEN]"), "{raw:?}");
    assert!(pty.screen_text().contains("[masked: API_TOKEN]"));
    assert!(!pty.screen_text().contains("tok_9f8e7d6c5b4a3210"));
    opts.mask = conch_core::Mask::Off;
    let (r, _) = run(opts);
    assert_eq!(
        r.summary.output,
        "tok_9f8e7d6c5b4a3210\ntok_9f8e7d6c5b4a3210\n"
    );
}
