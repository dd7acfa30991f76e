//! A run that needs more than its command: the script the loop runs for
//! a per-run cwd or environment, a command kept in a file, or a command
//! that may set an `EXIT` trap of its own (see the module above).

use std::fmt::Write as _;
use std::path::Path;

use super::{COMMAND_FDS, OUTPUT_FD, ansi_c_quote, quote_path, single_quote};

/// Where the command text comes from.
pub enum CommandText<'a> {
    Inline(&'a str),
    /// A file holding the command (bash reads it with `$(< file)`).
    File(&'a str),
}

/// A run that needs more than the command: the script the loop `eval`s.
pub struct Script<'a> {
    pub command: CommandText<'a>,
    /// A directory to run in (already validated), and the session's
    /// directory, where bash goes back after the command.
    pub cwd: Option<(&'a Path, &'a Path)>,
    /// Variables set for this run only (names already validated).
    pub env: &'a [(String, String)],
    /// How the `EXIT` trap the command set runs at its end, before bash
    /// goes back to the session's directory.
    pub exit_trap: Option<ExitCheck<'a>>,
}

/// How a [`Script`] runs the `EXIT` trap its command set, when the command
/// ends, as `bash -c` runs a script's.
#[derive(Clone, Copy)]
pub enum ExitCheck<'a> {
    /// The eval loop's: the session's own `EXIT` trap ([`super::exit_trap`]) is
    /// put back after running the command's ([`exit_check`]); for a
    /// command that says `trap`.
    Eval(&'a str),
    /// The loop builtin's: it runs the command's trap itself (`conch_loop
    /// exit-trap`, no fork), after every command of a script.
    Builtin,
}

impl Script<'_> {
    /// The script text (a payload of kind `s`).
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(96 + self.command_len());
        // The command is `$BASH_EXECUTION_STRING`, as in `bash -c`.
        match self.command {
            CommandText::Inline(cmd) => {
                s.push_str("BASH_EXECUTION_STRING=");
                s.push_str(&ansi_c_quote(cmd));
                s.push_str("; ");
            }
            CommandText::File(path) => {
                let _ = write!(
                    s,
                    "{{ BASH_EXECUTION_STRING=$(< {}); }} 2>/dev/null && ",
                    single_quote(path)
                );
            }
        }
        if let Some((dir, _)) = self.cwd {
            let _ = write!(
                s,
                "{{ builtin cd -- {}; }} 2>/dev/null && ",
                quote_path(dir)
            );
        }
        // The loop builtin runs the command as `bash -c` input (`conch_loop
        // run`), then its `EXIT` trap; the eval loop `eval`s it in a
        // one-pass `for` (its `break` stays its own).
        let builtin = matches!(self.exit_trap, Some(ExitCheck::Builtin));
        s.push_str(match builtin {
            true => "[[ -z ${__conch_ab-} ]] && ",
            false => "for _ in 1; do [[ -z ${__conch_ab-} ]] && ",
        });
        let assign: String = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={} ", single_quote(v)))
            .collect();
        if !assign.is_empty() {
            s.push_str(&assign_check(&assign));
        }
        if !builtin {
            s.push_str("builtin unset -v __conch_n && ");
        }
        // The run's variables are a temporary environment of the command's
        // `eval`: bash gives a builtin's temporary environment to the
        // commands it runs only for `eval` and `source` (so the loop
        // builtin's run, too, goes through an `eval`; `builtin eval` would
        // drop them after the first builtin the command runs, `builtin
        // command eval` does not). `command` takes away what POSIX mode
        // makes of `eval`, a special builtin: variables that outlive it (a
        // secret left in the session, a `POSIXLY_CORRECT` that keeps POSIX
        // mode on), and a shell that exits when one cannot be set.
        // `builtin` in front: a user's function named `command` or `eval`
        // must not take the command.
        s.push_str(&assign);
        s.push_str(match (builtin, assign.is_empty()) {
            (true, true) => "builtin conch_loop run ",
            (true, false) => "builtin command eval 'builtin conch_loop run' ",
            (false, true) => "builtin eval \"$BASH_EXECUTION_STRING\" ",
            (false, false) => "builtin command eval \"$BASH_EXECUTION_STRING\" ",
        });
        s.push_str(COMMAND_FDS);
        match self.exit_trap {
            Some(ExitCheck::Eval(trap)) => {
                let _ = write!(s, "; done; {}", exit_check(trap));
            }
            Some(ExitCheck::Builtin) => {
                let _ = write!(s, "; builtin conch_loop exit-trap {COMMAND_FDS}");
            }
            None => s.push_str("; done"),
        }
        if let Some((_, home)) = self.cwd {
            // The command's status is kept for the loop's report
            // (`$__conch_s`, see `LOOP`); `|| builtin :`: a failed `cd`
            // must not end a `set -e` shell.
            let _ = write!(
                s,
                "; builtin : \"${{__conch_s=$?}}\"; builtin cd -- {} 2>/dev/null || builtin :",
                quote_path(home)
            );
        }
        s
    }

    fn command_len(&self) -> usize {
        match self.command {
            CommandText::Inline(cmd) => cmd.len() + cmd.len() / 8,
            CommandText::File(path) => path.len(),
        }
    }
}

/// The check in front of a run given variables (`assign`: `NAME='value'
/// …`) that bash can set them all. When it cannot (a read-only one, as
/// `UID` or `SHELLOPTS`), bash's own error (`UID: readonly variable`) is
/// the run's output and 1 its status, the command not run and the session
/// kept, in POSIX mode or not. In front of a command, bash fails such an
/// assignment by abandoning the whole line it is on, and only in POSIX
/// mode from bash 5.2 on (here the line is the `builtin eval`'s, not the
/// script's, which goes back to the run's directory after it); otherwise
/// it goes on without the variable. So the check sets the variables once
/// more, with `declare`, inside the scope of their own assignment: that
/// fails, in any mode and any bash, for a variable the assignment could
/// not set, and what it sets goes with the scope. The error is bash's too:
/// a subshell sets them again with its stderr on the output pipe, `set -x`
/// off first, so that nothing of this is traced there.
fn assign_check(assign: &str) -> String {
    let declare = format!("builtin declare {assign}");
    let check = format!("{assign}builtin command eval {}", single_quote(&declare));
    format!(
        "{{ builtin eval {} || {{ (builtin set +x; {{ {assign}builtin :; }} 2>&{OUTPUT_FD}); builtin false; }}; }} && ",
        single_quote(&check)
    )
}

/// The `EXIT` trap of a command, run when the command ends, as `bash -c`
/// runs a script's: after a command that may have set one, this reads the
/// `EXIT` trap (`trap -p` in a command substitution shows the shell's
/// traps). When it is not the session's own (`trap` of [`super::exit_trap`],
/// which starts `{ __conch_s=`), it puts the session's back and, if there
/// was one, runs the command's with the command's status in `$?` (a
/// subshell's `exit` sets it) and its output in the command's (given
/// [`COMMAND_FDS`] as the command is; the rest of the check writes to
/// bash's own `/dev/null`, so `set -x` traces only the trap's own commands
/// and a `DEBUG` trap adds nothing); an `exit` in it ends the session as
/// an `exit` in the command would. The status stays the command's: it is
/// left in `$__conch_s`, which the loop reports. It costs a fork, so the
/// host adds it only to commands whose text says `trap`. `&& [[ 1 ]]`: a
/// failing command that is not the last of an `&&` list does not end a
/// `set -e` shell.
fn exit_check(trap: &str) -> String {
    format!(
        "{{ __conch_s=$?; __conch_t=$(builtin trap -p EXIT); [[ $__conch_t == \"trap -- '{{ __conch_s=\"* ]] || \
         {{ builtin trap -- {} EXIT; [[ -z $__conch_t ]] || {{ __conch_t=${{__conch_t#trap -- }}; \
         builtin eval \"__conch_t=${{__conch_t% EXIT}}\"; (builtin exit \"$__conch_s\") && [[ 1 ]]; \
         builtin eval \"$__conch_t\" {COMMAND_FDS}; }}; }}; builtin unset -v __conch_t; }}",
        single_quote(trap)
    )
}
