//! The persistent shell: state, framing, death and respawn, per-run scope.

use std::time::{Duration, Instant};

use crate::common::{HANG, Seen, TempDir};
use conch_core::shell::{BashResult, RunOptions, Shell, ShellOptions, Snapshot};

/// A run of `sh` holding the session for 3 s, once it has started (the
/// run ahead of the queued ones whose cancel is tested here and in
/// `stepped`).
pub fn hold_for_3s(sh: &std::sync::Arc<Shell>) -> std::thread::JoinHandle<BashResult> {
    let holding = Seen::default();
    let holder = {
        let (sh, holding) = (sh.clone(), holding.clone());
        let cmd = "echo holding; /bin/sleep 3";
        std::thread::spawn(move || sh.run(RunOptions::new(cmd), |c| holding.push(c)).unwrap())
    };
    holding.wait_for("holding");
    holder
}

fn shell() -> Shell {
    crate::clean_shell()
}

fn run(sh: &Shell, cmd: &str) -> conch_core::shell::BashResult {
    sh.run(RunOptions::new(cmd), |_| {}).unwrap()
}

#[test]
fn state_persists_across_runs() {
    let sh = shell();
    let dir = tempdir();
    run(
        &sh,
        &format!(
            "cd {dir}; export A=1; B=2; f() {{ echo fn$1; }}; alias hi='echo alias'; shopt -s expand_aliases; set -o noclobber"
        ),
    );
    let r = run(
        &sh,
        "echo $PWD $A $B; f 3; hi; [[ -o noclobber ]] && echo nc",
    );
    assert_eq!(r.output, format!("{dir} 1 2\nfn3\nalias\nnc\n"));
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.working_dir.as_deref(), Some(&*dir));
}

#[test]
fn output_merges_stdout_and_stderr_and_streams_chunks() {
    let sh = shell();
    let mut chunks = String::new();
    let r = sh
        .run(RunOptions::new("echo out; echo err >&2; echo out2"), |c| {
            chunks.push_str(c)
        })
        .unwrap();
    assert_eq!(r.output, "out\nerr\nout2\n");
    assert_eq!(chunks, r.output);
}

#[test]
fn syntax_errors_are_bash_errors_and_the_session_lives() {
    let sh = shell();
    for bad in [
        "echo 'oops",
        "echo \"oops",
        "if true; then",
        "echo $((",
        "}",
        "case x in",
    ] {
        let r = run(&sh, bad);
        assert_eq!(r.exit_code, Some(2), "{bad:?} -> {r:?}");
        assert!(
            !r.output.contains("__conch"),
            "no protocol text: {:?}",
            r.output
        );
        let ok = run(&sh, "echo alive; if true; then echo reserved; fi");
        assert_eq!(ok.output, "alive\nreserved\n", "after {bad:?}");
    }
}

#[test]
fn an_unterminated_heredoc_behaves_as_in_bash() {
    let sh = shell();
    let r = run(&sh, "cat <<EOF\nbody");
    assert_eq!(r.exit_code, Some(0), "bash warns and runs it: {r:?}");
    assert!(r.output.ends_with("body\n"), "{:?}", r.output);
    assert_eq!(run(&sh, "echo next").output, "next\n");
}

#[test]
fn the_status_channel_cannot_be_forged() {
    let sh = shell();
    let r = run(&sh, "printf '1\\0000\\000/x\\000' >&62; echo after");
    assert!(r.output.ends_with("after\n"), "{r:?}");
    assert_ne!(r.working_dir.as_deref(), Some("/x"));
    let r = run(&sh, "echo next");
    assert_eq!(r.output, "next\n");
}

#[test]
fn xtrace_shows_only_the_users_commands() {
    let sh = shell();
    let r = run(&sh, "set -x; echo traced");
    assert!(r.output.contains("echo traced\ntraced\n"), "{:?}", r.output);
    let r = run(&sh, "echo again");
    assert!(
        r.output.contains("echo again"),
        "tracing continues: {:?}",
        r.output
    );
    assert!(!r.output.contains("__conch"), "{:?}", r.output);
    let r = run(&sh, "set +x");
    assert!(!r.output.contains("__conch"));
    assert_eq!(run(&sh, "echo quiet").output, "quiet\n");
}

#[test]
fn stdin_is_dev_null() {
    let sh = shell();
    let start = Instant::now();
    let r = run(
        &sh,
        "cat; read x; echo read=$?; python3 -c 'input()' 2>/dev/null; echo py=$?",
    );
    assert_eq!(r.output, "read=1\npy=1\n");
    // Reading a terminal or a pipe nobody writes would hang.
    assert!(start.elapsed() < HANG, "{:?}", start.elapsed());
}

#[test]
fn death_returns_status_and_respawns_in_the_last_cwd() {
    let sh = shell();
    let dir = tempdir();
    run(&sh, &format!("cd {dir}"));
    for (cmd, code) in [
        ("exit 3", 3),
        ("set -e; false", 1),
        ("exec /bin/true", 0),
        ("kill -9 $$", 137),
        // Nothing runs after `set -n`, the session's own steps included.
        ("set -n; exit 3", 0),
    ] {
        let r = run(&sh, cmd);
        assert_eq!(r.exit_code, Some(code), "{cmd}");
        assert!(!r.cancelled);
        let next = run(&sh, "pwd; [[ -o errexit ]] && echo still-e");
        assert_eq!(next.output, format!("{dir}\n"), "after {cmd}");
        assert!(next.session_reset, "after {cmd}");
        assert!(!run(&sh, "true").session_reset);
    }
}

#[test]
fn a_bash_that_ends_in_a_removed_directory_respawns_in_the_nearest_one_above() {
    let sh = shell();
    let dir = tempdir();
    // The session's directory removed by a command, then bash ended; a
    // `PWD` that names no directory is not where bash is (next test).
    for (setup, end, lands) in [
        (
            "mkdir -p a/b && cd a/b && rm -rf ../../a",
            "kill -9 $$",
            dir.to_string(),
        ),
        (
            "mkdir -p c/d && cd c/d && rm -rf ../d",
            "exit 4",
            format!("{dir}/c"),
        ),
        ("PWD=/no/such/place", "kill -9 $$", dir.to_string()),
    ] {
        run(&sh, &format!("cd {dir} && {setup}"));
        assert!(run(&sh, end).session_ended, "{setup}");
        let next = run(&sh, "pwd");
        assert!(next.session_reset, "{setup}: {next:?}");
        assert_eq!(next.output, format!("{lands}\n"), "{setup}");
        assert_eq!(next.working_dir.as_deref(), Some(lands.as_str()), "{setup}");
        assert_eq!(sh.cwd().to_str(), Some(lands.as_str()));
        assert!(!run(&sh, "true").session_reset);
    }
}

#[test]
fn a_pwd_a_command_sets_or_unsets_does_not_move_the_session() {
    let sh = shell();
    let tmp = tempdir();
    let dir = tmp.to_string();
    let sub = format!("{dir}/sub");
    std::fs::create_dir(&sub).unwrap();
    for set in [
        "PWD=/",
        "export PWD=/tmp",
        "unset PWD",
        "PWD=/no/such/place",
        "PWD=sub",
    ] {
        let r = run(&sh, &format!("cd {dir} && {set}"));
        // Where bash is, as its `pwd` says, not what `$PWD` says.
        assert_eq!(r.working_dir.as_deref(), Some(dir.as_str()), "{set}");
        assert_eq!(sh.cwd().to_str(), Some(dir.as_str()), "{set}");
        // A run's relative cwd is taken from there too.
        let mut opts = RunOptions::new("pwd");
        opts.cwd = Some("sub".into());
        assert_eq!(sh.run(opts, |_| {}).unwrap().output, format!("{sub}\n"));
        assert_eq!(run(&sh, "pwd").output, format!("{dir}\n"), "{set}");
    }
    // A `cd` moves it; the bash after an `exit` starts where bash was.
    let r = run(&sh, &format!("cd {sub} && PWD=/ && exit 3"));
    assert!(r.session_ended, "{r:?}");
    assert_eq!(r.working_dir.as_deref(), Some(sub.as_str()));
    let next = run(&sh, "pwd");
    assert!(next.session_reset);
    assert_eq!(next.output, format!("{sub}\n"));
}

#[test]
fn a_directory_whose_name_is_not_utf8_is_the_session_s_byte_for_byte() {
    use std::os::unix::ffi::OsStrExt;
    let sh = shell();
    let base = tempdir();
    let dir = base.path().join(std::ffi::OsStr::from_bytes(b"d\xff'\xe9"));
    std::fs::create_dir(&dir).unwrap();
    let parent = dir.parent().unwrap().to_str().unwrap();
    run(&sh, &format!("cd {parent} && cd $'d\\xff\\'\\xe9'"));
    assert_eq!(sh.cwd(), dir);
    let here = "pwd | od -An -v -tx1 | tr -d ' \\n'";
    let hex: String = dir
        .as_os_str()
        .as_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let want = format!("{hex}0a");
    // A run somewhere else comes back to it; so does a new bash.
    let mut opts = RunOptions::new("pwd");
    opts.cwd = Some("/".into());
    assert_eq!(sh.run(opts, |_| {}).unwrap().output, "/\n");
    assert_eq!(run(&sh, here).output, want);
    assert!(run(&sh, "kill -9 $$").session_ended);
    let r = run(&sh, here);
    assert!(r.session_reset);
    assert_eq!(r.output, want);
    assert_eq!(sh.cwd(), dir);
}

#[test]
fn a_command_that_breaks_the_status_descriptor_ends_the_session_at_once() {
    let dir = tempdir();
    for cmd in ["ulimit -n 20", "ulimit -n 5", "ulimit -n 30"] {
        let sh = shell();
        run(&sh, &format!("cd {dir}"));
        // Far above the hang bound: a run that waited for its report
        // would end only at its timeout.
        let mut opts = RunOptions::new(cmd);
        opts.timeout = Some(Duration::from_secs(30));
        let start = Instant::now();
        let r = sh.run(opts, |_| {}).unwrap();
        assert!(start.elapsed() < HANG, "{cmd}: {:?}", start.elapsed());
        assert!(!r.timed_out, "{cmd}: {r:?}");
        let next = run(&sh, "pwd");
        // The loop builtin keeps its descriptors where a lower limit
        // leaves them working: the session goes on, under the limit. The
        // eval loop cannot put its own back: a fresh bash takes over.
        let builtin = crate::runs_builtin(&sh);
        assert_eq!(r.session_ended, !builtin, "{cmd}: {r:?}");
        assert_eq!(next.session_reset, !builtin, "after {cmd}");
        assert_eq!(next.output, format!("{dir}\n"), "after {cmd}");
        if builtin {
            assert_eq!(run(&sh, "ulimit -n").output, format!("{}\n", &cmd[10..]));
        }
    }
}

#[test]
fn run_env_and_cwd_are_scoped_to_the_run() {
    let sh = shell();
    let dir = tempdir();
    let mut opts = RunOptions::new("echo $ONLY $PWD; cd /");
    opts.env = vec![("ONLY".into(), "it's here".into())];
    opts.cwd = Some(dir.to_string().into());
    let before = sh.cwd();
    let r = sh.run(opts, |_| {}).unwrap();
    assert_eq!(r.output, format!("it's here {dir}\n"));
    assert_eq!(sh.cwd(), before);
    assert_eq!(run(&sh, "echo ${ONLY-unset}").output, "unset\n");
    let r = run(&sh, "bash -c 'echo ${ONLY-unset}'");
    assert_eq!(r.output, "unset\n");
    // The run's variables last through the whole command, builtins included.
    let mut opts = RunOptions::new("pwd >/dev/null; cd .; echo $ONLY");
    opts.env = vec![("ONLY".into(), "kept".into())];
    assert_eq!(sh.run(opts, |_| {}).unwrap().output, "kept\n");
    // Text that is not ASCII travels byte-exact in every part of a run.
    let odd = format!("{dir}/é ✓");
    std::fs::create_dir(&odd).unwrap();
    let mut opts = RunOptions::new("echo \"$ONLY\" 日本; pwd");
    opts.env = vec![("ONLY".into(), "ü\n\\x".into())];
    opts.cwd = Some(odd.clone().into());
    let r = sh.run(opts, |_| {}).unwrap();
    assert_eq!(r.output, format!("ü\n\\x 日本\n{odd}\n"));
}

#[test]
fn nounset_and_xtrace_leave_per_run_scope_working() {
    let sh = shell();
    let home = sh.cwd();
    let dir = tempdir();
    run(&sh, "set -u");
    let scoped = |cmd: &str| {
        let mut opts = RunOptions::new(cmd);
        opts.cwd = Some(dir.to_string().into());
        opts.env = vec![("V".into(), "v".into())];
        sh.run(opts, |_| {}).unwrap()
    };
    let r = scoped("echo in $PWD $V; false");
    assert_eq!(r.output, format!("in {dir} v\n"));
    assert_eq!((r.exit_code, r.session_reset), (Some(1), false));
    assert_eq!(sh.cwd(), home);
    run(&sh, "set -x");
    let r = scoped("echo traced");
    assert!(r.output.contains("echo traced\ntraced\n"), "{:?}", r.output);
    assert!(!r.output.contains("__conch"), "{:?}", r.output);
    let r = run(&sh, "set +x; echo $PWD");
    assert!(
        r.output.ends_with(&format!("{}\n", home.display())),
        "{:?}",
        r.output
    );
    assert!(!r.output.contains("__conch"), "{:?}", r.output);
}

#[test]
fn functions_named_like_builtins_change_only_the_users_calls() {
    let sh = shell();
    let dir = tempdir();
    let names = [
        "read", "printf", "eval", "trap", "set", "unset", "command", "cd",
    ];
    let mut define = String::new();
    for name in names {
        define.push_str(&format!("{name}() {{ echo \"my {name}\"; }}; "));
    }
    run(&sh, &format!("{define}X=kept"));
    let r = run(&sh, "echo $X; read; set -x");
    assert_eq!(
        (r.output.as_str(), r.exit_code),
        ("kept\nmy read\nmy set\n", Some(0))
    );
    // A run with its own cwd goes through a script of the session's.
    let mut opts = RunOptions::new("pwd; false");
    opts.cwd = Some(dir.to_string().into());
    let r = sh.run(opts, |_| {}).unwrap();
    assert_eq!(
        (r.output.clone(), r.exit_code),
        (format!("{dir}\n"), Some(1))
    );
    let r = run(&sh, "builtin unset -f read; eval; echo $?");
    assert_eq!(r.output, "my eval\n0\n");
    assert!(!r.session_reset);
}

#[test]
fn an_exit_trap_runs_when_its_command_ends() {
    let sh = shell();
    let dir = tempdir();
    let file = format!("{dir}/tmp");
    let r = run(
        &sh,
        &format!(
            "X=kept; t={file}; touch $t; trap 'rm -f \"$t\"; echo \"removed $?\"' EXIT; echo hi; false"
        ),
    );
    assert_eq!(
        (r.output.as_str(), r.exit_code),
        ("hi\nremoved 0\n", Some(1))
    );
    assert!(!std::path::Path::new(&file).exists());
    // It ran once: the next command has none, and the session lives on.
    let r = run(&sh, "echo $X");
    assert_eq!((r.output.as_str(), r.session_reset), ("kept\n", false));
    // In a run with a cwd of its own, in that directory; `exit` in the
    // trap gives the status and ends the session, as `exit` would.
    let mut opts = RunOptions::new("trap 'echo \"in $PWD\"; exit 7' EXIT; echo body");
    opts.cwd = Some(dir.to_string().into());
    let r = sh.run(opts, |_| {}).unwrap();
    assert_eq!(r.output, format!("body\nin {dir}\n"));
    assert_eq!((r.exit_code, r.session_ended), (Some(7), true));
    let r = run(&sh, "echo next");
    assert_eq!((r.output.as_str(), r.session_reset), ("next\n", true));
}

#[test]
fn loop_control_in_a_command_leaves_the_session_working() {
    let sh = shell();
    let r = run(&sh, "for i in 1 2 3; do echo $i; break; done; echo after");
    assert_eq!(r.output, "1\nafter\n");
    // `break` and `continue` outside any loop of the command's own end the
    // command line (bash itself would warn and go on), never the session.
    // With the loop builtin, as `bash -c`: a warning, and the rest runs.
    let builtin = crate::runs_builtin(&sh);
    for cmd in [
        "echo a; break; echo b",
        "echo a; break 5; echo b",
        "echo a; continue 3; echo b",
    ] {
        let r = run(&sh, &format!("X=kept; {cmd}"));
        let word = &cmd[8..cmd[8..].find([' ', ';']).unwrap() + 8];
        let expected = match builtin {
            true => format!(
                "a\nbash: line 1: {word}: only meaningful in a `for', `while', or `until' loop\nb\n"
            ),
            false => "a\n".to_string(),
        };
        assert_eq!(r.output, expected, "{cmd}");
        assert_eq!(r.exit_code, Some(0), "{cmd}");
        let r = run(&sh, "echo $X; false");
        assert_eq!(
            (r.output.as_str(), r.exit_code),
            ("kept\n", Some(1)),
            "after {cmd}"
        );
        assert!(!r.session_reset, "after {cmd}");
    }
}

#[test]
fn bad_input_is_a_clear_error_and_loses_nothing() {
    let sh = shell();
    let mut opts = RunOptions::new("true");
    opts.cwd = Some("/definitely/not/here".into());
    let e = sh.run(opts, |_| {}).unwrap_err().to_string();
    assert_eq!(e, "Working directory does not exist: /definitely/not/here");
    let mut opts = RunOptions::new("true");
    opts.cwd = Some("/etc/hostname".into());
    let e = sh.run(opts, |_| {}).unwrap_err().to_string();
    assert_eq!(e, "Working directory is not a directory: /etc/hostname");
    assert!(sh.run(RunOptions::new("echo a\0b"), |_| {}).is_err());
    let mut opts = RunOptions::new("true");
    opts.env = vec![("BAD-NAME".into(), "x".into())];
    assert!(sh.run(opts, |_| {}).is_err());
    assert_eq!(run(&sh, "echo fine").output, "fine\n");
    let e = Shell::new(ShellOptions {
        shell: Some("/no/such/bash".into()),
        ..ShellOptions::default()
    });
    assert!(e.is_err());
}

#[test]
fn a_shell_that_cannot_run_the_session_is_reported_by_the_first_run() {
    // A "shell" that starts, reads nothing and leaves after a moment: `new`
    // does not wait for the start-up, the run does.
    let dir = std::env::temp_dir().join(format!("conch-not-bash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("not-bash");
    std::fs::write(&fake, "#!/bin/sh\nexec /bin/sleep 0.3\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let sh = Shell::new(ShellOptions {
        shell: Some(fake.clone()),
        snapshot: Snapshot::None,
        ..ShellOptions::default()
    })
    .expect("the shell itself starts");
    for _ in 0..2 {
        let e = sh.run(RunOptions::new("echo hi"), |_| {}).unwrap_err();
        let expected = format!("{} did not start a session", fake.display());
        assert!(e.to_string().starts_with(&expected), "{e}");
        // How it ended, in words (never a Rust Debug string).
        assert!(e.to_string().ends_with("(it exited with code 0)"), "{e}");
    }
    assert_eq!(sh.background_jobs(), Vec::<u32>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_closed_shell_refuses_runs() {
    let sh = shell();
    sh.close();
    let e = sh.run(RunOptions::new("true"), |_| {}).unwrap_err();
    assert_eq!(e.to_string(), "shell is closed");
}

#[test]
fn a_one_mebibyte_command_works() {
    let sh = shell();
    let payload = "y".repeat(1 << 20);
    let r = run(&sh, &format!("x='{payload}'; echo ${{#x}}"));
    assert_eq!(r.output, "1048576\n");
    // Large commands keep the session state like small ones.
    assert_eq!(run(&sh, "echo ${#x}").output, "1048576\n");
}

#[test]
fn session_env_prefix_and_policy_apply() {
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        session_env: vec![
            ("SESSION_V".into(), "s".into()),
            ("MY_API_KEY".into(), "k".into()),
        ],
        prefix: Some("env X_PREFIXED=1".into()),
        env_policy: conch_core::process::env::EnvPolicy {
            exclude: vec!["*_KEY".into()],
            ..Default::default()
        },
        ..ShellOptions::default()
    })
    .unwrap();
    let r = run(
        &sh,
        "bash -c 'echo $SESSION_V ${MY_API_KEY-none} $X_PREFIXED $GIT_PAGER'",
    );
    assert_eq!(r.output, "s none 1 cat\n");
}

#[test]
fn snapshot_brings_aliases_functions_and_options_but_not_core_tool_names() {
    let home = tempdir();
    std::fs::write(
        format!("{home}/.bashrc"),
        "alias ll='echo ll-alias'\nalias grep='echo hijacked'\nmyfn() { echo from-rc; }\nls() { echo hijacked; }\nshopt -s extglob\nexport PATH=\"/opt/from-rc/bin:$PATH\"\necho noisy-rc\n",
    )
    .unwrap();
    let snap = conch_core::shell::snapshot::for_rc(
        std::path::Path::new("/bin/bash"),
        std::path::Path::new(&format!("{home}/.bashrc")),
    )
    .expect("snapshot made");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&snap).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let sh = Shell::new(ShellOptions {
        snapshot: Snapshot::Path(snap),
        ..ShellOptions::default()
    })
    .unwrap();
    let r = run(
        &sh,
        "ll; myfn; echo x | grep x; type -t ls; shopt -q extglob && echo extglob; echo $PATH",
    );
    let lines: Vec<&str> = r.output.lines().collect();
    assert_eq!(
        &lines[..4],
        ["ll-alias", "from-rc", "x", "file"],
        "{:?}",
        r.output
    );
    assert_eq!(lines[4], "extglob");
    assert!(lines[5].starts_with("/opt/from-rc/bin:"), "{}", lines[5]);
    assert!(!r.output.contains("noisy-rc"));
}

/// The order of queued runs, seen from each waiting thread's system call
/// (Linux's `/proc/self/task/<tid>/syscall`).
#[cfg(target_os = "linux")]
mod queue {
    use std::sync::Arc;
    use std::sync::mpsc::channel;
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    use super::{hold_for_3s, run, shell, tempdir};
    use crate::common::{self, HANG, Seen, wait_until};
    use conch_core::CancelToken;
    use conch_core::shell::{BashResult, RunOptions, Shell};

    /// Whether thread `tid` waits for its turn in a shell's queue: asleep in a
    /// futex wait with a timeout (the queue wakes every 20 ms to check the
    /// run's cancel token). Before it has its ticket, a caller can only block
    /// without a timeout (on a lock).
    fn waits_for_its_turn(tid: i32) -> bool {
        common::blocked_in(tid).is_some_and(|(nr, args)| nr == libc::SYS_futex && args[3] != 0)
    }

    #[test]
    fn concurrent_runs_queue_in_order() {
        let sh = Arc::new(shell());
        let dir = tempdir();
        let (go, order) = (format!("{dir}/go"), format!("{dir}/order"));
        // The first run holds the session until the test lets it go.
        let holding = Seen::default();
        let holder = {
            let (sh, holding) = (sh.clone(), holding.clone());
            let cmd = format!("echo holding; until [ -e {go} ]; do /bin/sleep 0.01; done");
            std::thread::spawn(move || sh.run(RunOptions::new(cmd), |c| holding.push(c)).unwrap())
        };
        holding.wait_for("holding");
        // Each run is submitted once the one before waits in the queue, so
        // they arrive in a known order; each notes when it runs.
        let queued: Vec<_> = (1..=4)
            .map(|i| {
                let sh = sh.clone();
                let (tid_tx, tid) = channel();
                let cmd = format!("echo {i} >> {order}; echo ran {i}");
                let caller = std::thread::spawn(move || {
                    tid_tx.send(common::thread_id()).unwrap();
                    sh.run(RunOptions::new(cmd), |_| {}).unwrap()
                });
                let tid = tid.recv().unwrap();
                assert!(
                    wait_until(HANG, || waits_for_its_turn(tid)),
                    "run {i} never waited for its turn"
                );
                (i, caller)
            })
            .collect();
        std::fs::write(&go, "").unwrap();
        assert_eq!(holder.join().unwrap().output, "holding\n");
        for (i, caller) in queued {
            assert_eq!(caller.join().unwrap().output, format!("ran {i}\n"));
        }
        assert_eq!(std::fs::read_to_string(&order).unwrap(), "1\n2\n3\n4\n");
    }

    /// Well under the 3 s the run ahead holds the session: a cancelled
    /// caller that waited for that run's end is caught, a slow machine is not.
    const PROMPTLY: Duration = Duration::from_secs(1);

    /// The result of a run cancelled before it started: the cancel notice
    /// and the session's cwd (`dir`), nothing run.
    fn assert_cancelled_before_start(r: &BashResult, dir: &str) {
        assert!(r.cancelled, "{r:?}");
        assert_eq!(r.output, "[Command cancelled]\n");
        assert_eq!(r.exit_code, None);
        assert_eq!(r.working_dir.as_deref(), Some(dir));
    }

    /// After the run ahead, the session goes on as if the cancelled call
    /// had never been made: its place was given up, its command never ran.
    fn assert_session_goes_on(sh: &Shell, holder: JoinHandle<BashResult>, dir: &str) {
        assert_eq!(holder.join().unwrap().output, "holding\n");
        let next = run(sh, "echo next; ls");
        assert_eq!(next.output, "next\n");
        assert_eq!(next.working_dir.as_deref(), Some(dir));
    }

    /// The cancelled caller leaves with its result while the run ahead
    /// still holds the session's state: leaving needs the queue, not the
    /// state.
    #[test]
    fn a_token_cancelled_before_the_call_returns_without_waiting_for_the_run_ahead() {
        let sh = Arc::new(shell());
        let dir = tempdir();
        run(&sh, &format!("cd {dir}"));
        let holder = hold_for_3s(&sh);
        let cancel = CancelToken::new();
        cancel.cancel();
        let mut opts = RunOptions::new("touch never");
        opts.cancel = Some(cancel);
        let called = Instant::now();
        let r = sh.run(opts, |_| {}).unwrap();
        let took = called.elapsed();
        assert!(
            took < PROMPTLY,
            "returned after {took:?}, with the run ahead"
        );
        assert_cancelled_before_start(&r, &dir);
        assert_session_goes_on(&sh, holder, &dir);
    }

    /// The token fires once the caller waits in the queue: it leaves
    /// within the queue's 20 ms check, its result as above.
    #[test]
    fn a_token_cancelled_while_waiting_returns_without_waiting_for_the_run_ahead() {
        let sh = Arc::new(shell());
        let dir = tempdir();
        run(&sh, &format!("cd {dir}"));
        let holder = hold_for_3s(&sh);
        let cancel = CancelToken::new();
        let (tid_tx, tid) = channel();
        let (done_tx, done) = channel();
        let waiter = {
            let (sh, cancel) = (sh.clone(), cancel.clone());
            std::thread::spawn(move || {
                tid_tx.send(common::thread_id()).unwrap();
                let mut opts = RunOptions::new("touch never");
                opts.cancel = Some(cancel);
                let r = sh.run(opts, |_| {}).unwrap();
                done_tx.send(Instant::now()).unwrap();
                r
            })
        };
        let tid = tid.recv().unwrap();
        assert!(
            wait_until(HANG, || waits_for_its_turn(tid)),
            "the run never waited for its turn"
        );
        let cancelled = Instant::now();
        cancel.cancel();
        let returned = done.recv_timeout(HANG).expect("the cancelled run hung");
        let took = returned - cancelled;
        assert!(
            took < PROMPTLY,
            "returned after {took:?}, with the run ahead"
        );
        assert_cancelled_before_start(&waiter.join().unwrap(), &dir);
        assert_session_goes_on(&sh, holder, &dir);
    }
}

#[test]
fn invalid_utf8_and_split_characters_come_out_valid() {
    let sh = shell();
    let r = run(
        &sh,
        r"printf 'a\xff\xfeb\n'; printf '\xe2\x82'; /bin/sleep 0.05; printf '\xac\n'",
    );
    assert_eq!(r.output, "a\u{fffd}\u{fffd}b\n€\n");
}

#[test]
fn head_lines_stop_the_command_early_with_heads_status() {
    let sh = shell();
    let start = Instant::now();
    let mut opts = RunOptions::new("yes");
    opts.head_lines = Some(5);
    let r = sh.run(opts, |_| {}).unwrap();
    assert_eq!(r.output, "y\ny\ny\ny\ny\n");
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.cancelled);
    // `yes` never ends by itself.
    assert!(start.elapsed() < HANG, "{:?}", start.elapsed());
    let mut opts = RunOptions::new("seq 1 1000000");
    opts.head_lines = Some(3);
    assert_eq!(sh.run(opts, |_| {}).unwrap().output, "1\n2\n3\n");
    let mut opts = RunOptions::new("seq 1 10");
    opts.tail_lines = Some(2);
    assert_eq!(sh.run(opts, |_| {}).unwrap().output, "9\n10\n");
}

fn tempdir() -> TempDir {
    TempDir::new("session")
}

#[test]
fn a_slow_rc_gives_no_snapshot_within_the_capture_timeout() {
    let home = tempdir();
    let rc = format!("{home}/.bashrc");
    std::fs::write(&rc, "alias x=y\n/bin/sleep 30\n").unwrap();
    let start = Instant::now();
    let snap = conch_core::shell::snapshot::for_rc(
        std::path::Path::new("/bin/bash"),
        std::path::Path::new(&rc),
    );
    assert!(snap.is_none());
    // The capture gives up after 2 s; waiting for the rc would take 30 s.
    assert!(
        start.elapsed() < Duration::from_secs(2) + HANG,
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn odd_commands_travel_intact() {
    let sh = shell();
    assert_eq!(run(&sh, "").exit_code, Some(0));
    assert_eq!(run(&sh, "   ").exit_code, Some(0));
    assert_eq!(run(&sh, "echo 'héllo ✓ 日本'").output, "héllo ✓ 日本\n");
    assert_eq!(run(&sh, "printf '%s\\n' a\\\nb").output, "ab\n");
    assert_eq!(run(&sh, "echo one\n\necho two\n").output, "one\ntwo\n");
    // Functions named like the builtins conch itself uses do not break it.
    run(
        &sh,
        "read() { echo shadowed; }; printf() { echo shadowed; }",
    );
    assert_eq!(run(&sh, "echo still-fine").output, "still-fine\n");
    assert_eq!(run(&sh, "unset -f read printf; echo x").output, "x\n");
}
