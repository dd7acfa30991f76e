//! A run that needs more than its command: the script the loop runs for
//! a per-run cwd or environment, a command kept in a file, or a command
//! that may set an `EXIT` trap of its own (see the module above).

use std::fmt::Write as _;
use std::path::Path;

use super::{COMMAND_FDS, ansi_c_quote, quote_path, single_quote};

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
            false => "for _ in 1; do [[ -z ${__conch_ab-} ]] && builtin unset -v __conch_n && ",
        });
        for (k, v) in self.env {
            let _ = write!(s, "{k}={} ", single_quote(v));
        }
        // With variables, plain `eval`, not `builtin eval`: the run's variables are a temporary environment of this
        // command, and `builtin eval` drops them after the first builtin
        // the command runs. Without, `builtin eval`: a user's function
        // named `eval` must not take the command.
        if self.env.is_empty() {
            s.push_str("builtin ");
        }
        // bash gives a builtin's temporary environment to the commands it
        // runs only for `eval` and `source`: with variables, the loop
        // builtin's run goes through an `eval`.
        s.push_str(match (builtin, self.env.is_empty()) {
            (true, true) => "conch_loop run ",
            (true, false) => "eval 'builtin conch_loop run' ",
            (false, _) => "eval \"$BASH_EXECUTION_STRING\" ",
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
