//! The variables given to a session, a run and a one-shot command: a
//! run's last for that run only, in POSIX mode too, and those that change
//! how bash starts (`BASH_ENV`, `SHELLOPTS`, `BASHOPTS`) never reach a
//! bash's start-up.

use std::time::Duration;

use crate::common::TempDir;
use conch_core::shell::{
    BashResult, ExecuteOptions, RunOptions, Shell, ShellOptions, Snapshot, execute_shell,
};
use conch_core::{PtyOptions, PtySession};

const TOKEN: &str = "supersecret-123456";

fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn run(sh: &Shell, cmd: &str) -> BashResult {
    sh.run(RunOptions::new(cmd), |_| {}).unwrap()
}

fn run_with(sh: &Shell, cmd: &str, env: &[(&str, &str)], cwd: Option<&str>) -> BashResult {
    let mut opts = RunOptions::new(cmd);
    opts.env = vars(env);
    opts.cwd = cwd.map(Into::into);
    sh.run(opts, |_| {}).unwrap()
}

/// POSIX mode keeps what is assigned in front of a special builtin (`eval`
/// is one): a run's variables must not stay in the session all the same,
/// nor go unmasked in the runs after it, whether the user turned POSIX
/// mode on or bash started in it, and whatever shape the run takes (its
/// own directory, a command that says `trap`).
#[test]
fn a_run_s_variables_are_gone_after_it_in_posix_mode() {
    let by_set = crate::clean_shell();
    run(&by_set, "set -o posix");
    let from_start = Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        session_env: vars(&[("POSIXLY_CORRECT", "1")]),
        ..ShellOptions::default()
    })
    .unwrap();
    let dir = TempDir::new("env");
    for sh in [&by_set, &from_start] {
        let home = sh.cwd();
        for (cmd, cwd) in [
            ("echo tok=$API_TOKEN", None),
            ("echo tok=$API_TOKEN", Some(dir.to_string())),
            ("trap 'echo bye' EXIT; echo tok=$API_TOKEN", None),
            ("export API_TOKEN; echo tok=$API_TOKEN", None),
        ] {
            let r = run_with(sh, cmd, &[("API_TOKEN", TOKEN)], cwd.as_deref());
            assert!(
                r.output.starts_with("tok=[masked: API_TOKEN]\n"),
                "{cmd}: {r:?}"
            );
            let r = run(
                sh,
                "echo ${API_TOKEN-unset}; printenv API_TOKEN; shopt -qo posix && echo posix",
            );
            assert_eq!(r.output, "unset\nposix\n", "after {cmd}");
            assert_eq!(sh.cwd(), home);
        }
    }
}

/// `POSIXLY_CORRECT` given to a run turns POSIX mode on for that run: the
/// session is as it was after it, its options included.
#[test]
fn posixly_correct_given_to_a_run_leaves_posix_mode_off_after_it() {
    let sh = crate::clean_shell();
    let options = "shopt -p; set +o";
    let before = run(&sh, options).output.clone();
    let r = run_with(
        &sh,
        "shopt -qo posix && echo on",
        &[("POSIXLY_CORRECT", "1")],
        None,
    );
    assert_eq!(r.output, "on\n");
    let r = run(
        &sh,
        "echo ${POSIXLY_CORRECT-unset}; shopt -qo posix || echo off",
    );
    assert_eq!(r.output, "unset\noff\n");
    assert_eq!(run(&sh, options).output, before);
}

/// A run's variable bash cannot set (a read-only one, bash's own or the
/// user's) fails the run with bash's error, the command not run, in POSIX
/// mode or not; the session and its state go on.
#[test]
fn a_run_variable_bash_cannot_set_fails_the_run_not_the_session() {
    let dir = TempDir::new("env");
    for mode in ["set +o posix", "set -o posix", "set -x"] {
        let sh = crate::clean_shell();
        run(&sh, &format!("X=keep; readonly MINE=1; {mode}"));
        let home = sh.cwd();
        for name in ["UID", "SHELLOPTS", "BASHOPTS", "MINE"] {
            for cwd in [None, Some(dir.to_string())] {
                let r = run_with(
                    &sh,
                    "echo ran",
                    &[("FIRST", "1"), (name, "5")],
                    cwd.as_deref(),
                );
                let what = format!("{mode}, {name}, {cwd:?}: {r:?}");
                // `bash: line 1: UID: …` (bash 4.4: `bash: UID: …`).
                let error = format!(": {name}: readonly variable\n");
                let one_line = r.output.lines().count() == 1;
                assert!(
                    r.output.starts_with("bash: ") && r.output.ends_with(&error) && one_line,
                    "{what}"
                );
                assert_eq!(r.exit_code, Some(1), "{what}");
                assert!(!r.session_ended && !r.session_reset, "{what}");
                assert_eq!(sh.cwd(), home, "{what}");
            }
        }
        run(&sh, "set +x");
        let r = run(&sh, "echo X=$X ${FIRST-unset}");
        assert_eq!(r.output, "X=keep unset\n", "{mode}");
    }
}

/// `BASH_ENV`, `SHELLOPTS` and `BASHOPTS` given to a session, a one-shot
/// command or a terminal run are dropped, as the host's are: bash would
/// source the file and turn the options on before conch's own start-up
/// (traced into the output with `xtrace`, never run with `noexec`).
#[test]
fn variables_that_change_how_bash_starts_never_reach_it() {
    let dir = TempDir::new("env");
    let rc = format!("{dir}/rc.sh");
    std::fs::write(&rc, "echo sourced\n").unwrap();
    let show = "echo ok ${BASH_ENV-unset}; shopt -qo xtrace || echo no-xtrace; \
                shopt -q xpg_echo || echo no-xpg_echo";
    let shown = "ok unset\nno-xtrace\nno-xpg_echo\n";
    for options in ["xtrace", "noexec"] {
        let start = [
            ("BASH_ENV", rc.as_str()),
            ("SHELLOPTS", options),
            ("BASHOPTS", "xpg_echo"),
        ];
        let sh = Shell::new(ShellOptions {
            snapshot: Snapshot::None,
            session_env: vars(&start),
            ..ShellOptions::default()
        })
        .unwrap();
        assert_eq!(run(&sh, show).output, shown, "{options}");
        // A command's `exit` puts a fresh bash in its place, which gets the
        // session's variables as its start-up text.
        assert!(run(&sh, "exit 3").session_ended);
        assert_eq!(run(&sh, show).output, shown, "{options}, after exit");

        let r = execute_shell(
            ExecuteOptions {
                command: show.into(),
                env: vars(&start),
                ..ExecuteOptions::default()
            },
            |_| {},
        )
        .unwrap();
        assert_eq!(r.output, shown, "{options}, one-shot");

        let r = PtySession::new()
            .start(
                PtyOptions {
                    env: vars(&start),
                    timeout: Some(Duration::from_secs(20)),
                    ..PtyOptions::new(show)
                },
                |_| {},
            )
            .unwrap();
        assert_eq!(
            r.summary.output.trim_end(),
            shown.trim_end(),
            "{options}, terminal"
        );
    }
}

/// `BASH_ENV` given to a run holds for that run's command, as in front of
/// a command in bash: a bash the command starts sources the file; the
/// session's bash, long started, does not, and the next run has none.
#[test]
fn a_run_s_bash_env_reaches_the_bashes_its_command_starts() {
    let sh = crate::clean_shell();
    let dir = TempDir::new("env");
    let rc = format!("{dir}/rc.sh");
    std::fs::write(&rc, "echo sourced\n").unwrap();
    let child = "bash -c 'echo child'";
    let r = run_with(&sh, child, &[("BASH_ENV", &rc)], None);
    assert_eq!(r.output, "sourced\nchild\n");
    assert_eq!(run(&sh, child).output, "child\n");
}
