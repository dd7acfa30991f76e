//! The text conch sends to its bash, and the status records bash sends back.
//!
//! bash's parser reads its input one byte at a time (so that a command may
//! change what follows it) and parses every line afresh. So a run is not a
//! line: bash spends its life in one loop, parsed once, that reads an
//! 18-byte header and the command in bulk (`read -N`, one `read(2)` each)
//! from descriptor [`PROTOCOL_FD`] and hands the command to `eval`. The
//! command travels as *data*, so an unbalanced quote or a stray heredoc in
//! it is bash's own syntax error (status 2) and cannot swallow the
//! protocol. The loop runs at top level, not in a function, so the command
//! runs in global scope as if typed. bash runs with `-c` [`BOOTSTRAP`]
//! (not reading commands from stdin: a redirection of stdin would then
//! move bash's own input), stdin `/dev/null`, the protocol on descriptor
//! 63 and the status descriptor on 62.
//!
//! The header is `SEQ LEN E K` with no spaces: the run number and the
//! payload's length in bytes, 8 digits each, `E` = `a` (ASCII: `read -N`
//! counts characters, here bytes) or `b` (read under `LC_ALL=C` so that it
//! counts bytes), `K` = `p` (the payload is the command) or `s` (a script,
//! run as it is: one made by [`Script`], for a per-run cwd or environment
//! or a command kept in a file, or [`switch_output`]).
//!
//! A command's stdout and stderr are one pipe the host reads. bash keeps
//! it on [`OUTPUT_FD`] and gives it to each command's `eval`; its own
//! stdout and stderr are `/dev/null`, so what the session's own steps
//! write (a user's `DEBUG` trap runs before them too) reaches no command's
//! output. When a command leaves something running in the background, the host
//! gives bash a new pipe ([`switch_output`]) before the next run, so what
//! the job writes later stays in the old pipe, never in a later run's
//! output (see `crate::jobs`). bash opens the new pipe as
//! `/proc/<host pid>/fd/<n>`, the host's read end (opened for writing, a
//! pipe opens as a FIFO would). A sandboxed bash may not look into the
//! host's `/proc` entries: its session's pipes are FIFOs in the sandbox's
//! directory, named the same way (`crate::process::io::named_pipe`).
//!
//! The command runs with the status descriptor closed, so neither it nor
//! its children can forge a status. After it, the loop (with stderr to
//! `/dev/null`) writes `seq NUL status NUL $PWD NUL` to [`STATUS_FD`],
//! switches `xtrace` and `verbose` off so the loop itself is neither traced
//! nor echoed, and prepares `$__conch_on` to switch them back on inside the
//! next `eval`: `set -x` traces only the user's commands. The command runs
//! inside a one-pass `for`, so its `break` and `continue` stay its own; a
//! `break 2` or `continue 2` reaches the loop, which still reports the run
//! (a `continue` at once, a `break` after the loop, which then `eval`s
//! itself again).
//!
//! The `__conch_*` names live in the user's shell; redefining them breaks
//! the session the way redefining `PROMPT_COMMAND` would break a terminal.
//! Builtins are called as `builtin …`, so a user's function named `printf`,
//! `read`, `cd` or `eval` changes nothing here; one named `builtin` is
//! taken away after the command that defines it (`unhijack!`).

use std::fmt::Write as _;

/// The descriptor on which bash reports completed runs.
pub const STATUS_FD: i32 = 62;

/// Commands longer than this are passed through a file rather than inline.
pub const INLINE_LIMIT: usize = 64 * 1024;

/// Run numbers wrap at this (the header holds 8 digits).
pub const SEQ_MODULUS: u64 = 100_000_000;

/// Where the command text comes from.
pub enum CommandText<'a> {
    Inline(&'a str),
    /// A file holding the command (bash reads it with `$(< file)`).
    File(&'a str),
}

/// A run that needs more than the command: the script the loop `eval`s.
pub struct Script<'a> {
    pub command: CommandText<'a>,
    /// A directory to run in (already validated); the session cwd is restored after.
    pub cwd: Option<&'a str>,
    /// Variables set for this run only (names already validated).
    pub env: &'a [(String, String)],
    /// Whether to run, at the end of the command, an `EXIT` trap it set
    /// (`exit_check`): for a command that says `trap`.
    pub exit_trap: bool,
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
        if let Some(dir) = self.cwd {
            let _ = write!(
                s,
                "{{ __conch_d=$PWD; builtin cd -- {}; }} 2>/dev/null && ",
                single_quote(dir)
            );
        }
        s.push_str("for _ in 1; do __conch_run=1; [[ -z $__conch_ab ]] && ");
        for (k, v) in self.env {
            let _ = write!(s, "{k}={} ", single_quote(v));
        }
        // With variables, plain `eval`, not `builtin eval`: the run's
        // variables are a temporary environment of this command, and
        // `builtin eval` drops them after the first builtin the command
        // runs. Without, `builtin eval`: a user's function named `eval`
        // must not take the command.
        if self.env.is_empty() {
            s.push_str("builtin ");
        }
        s.push_str("eval \"$__conch_on$BASH_EXECUTION_STRING\" ");
        s.push_str(COMMAND_FDS);
        s.push_str("; done");
        if self.exit_trap {
            let _ = write!(s, "; {}", exit_check());
        }
        if self.cwd.is_some() || matches!(self.command, CommandText::File(_)) {
            // Silent, `DEBUG` trap included (bash's own output is
            // `/dev/null`). `&& [[ 1 ]]`: see `exit_check`.
            s.push_str("; __conch_end $? && [[ 1 ]]");
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
/// traps). When it is not the session's own ([`EXIT_TRAP`], which holds
/// `__conch_h`), it puts the session's back and, if there was one, runs the
/// command's with the command's status in `$?` and its output in the
/// command's (given [`COMMAND_FDS`] as the command is; the rest of the
/// check writes to bash's own `/dev/null`, so `set -x` traces only the
/// trap's own commands and a `DEBUG` trap adds nothing); an `exit` in it
/// ends the session as an
/// `exit` in the command would. The status stays the command's. It costs a
/// fork, so the host adds it only to commands whose text says `trap`. The
/// status is set with `__conch_ret … && [[ 1 ]]`, so that the check itself
/// never ends a `set -e` shell: a failing command that is not the last of
/// an `&&` list does not.
fn exit_check() -> String {
    format!(
        "{{ __conch_s=$?; __conch_t=$(builtin trap -p EXIT); [[ $__conch_t == *__conch_h* ]] || \
         {{ builtin trap -- {} EXIT; [[ -z $__conch_t ]] || {{ __conch_t=${{__conch_t#trap -- }}; \
         builtin eval \"__conch_t=${{__conch_t% EXIT}}\"; __conch_ret $__conch_s && [[ 1 ]]; \
         builtin eval \"$__conch_t\" {COMMAND_FDS}; }}; }}; builtin unset -v __conch_t; __conch_ret $__conch_s && [[ 1 ]]; }}",
        single_quote(EXIT_TRAP)
    )
}

/// What a payload holds.
#[derive(Clone, Copy)]
pub enum Kind {
    /// The user's command itself.
    Command,
    /// A [`Script`].
    Script,
}

/// The length of a run's header.
const HEADER_LEN: usize = 18;

/// One run for the loop: the header and the payload.
pub fn run(seq: u64, kind: Kind, payload: &str) -> Vec<u8> {
    let enc = if payload.is_ascii() { 'a' } else { 'b' };
    let kind = match kind {
        Kind::Command => 'p',
        Kind::Script => 's',
    };
    let mut message = String::with_capacity(HEADER_LEN + payload.len());
    let _ = write!(
        message,
        "{:08}{:08}{enc}{kind}",
        seq % SEQ_MODULUS,
        payload.len()
    );
    debug_assert_eq!(message.len(), HEADER_LEN);
    message.push_str(payload);
    message.into_bytes()
}

/// The script that moves bash's stdout and stderr to the pipe whose read
/// end is the host's descriptor `fd` (module doc); its status says whether
/// bash could open it. Plain `exec`: the redirections of `builtin exec`
/// are undone when it returns, as for any other builtin.
pub fn switch_output(fd: i32) -> String {
    format!("exec {OUTPUT_FD}>\"$__conch_o/{fd}\" && __conch_oo={fd}")
}

/// The descriptor where bash keeps the output pipe: its own stdout and
/// stderr are `/dev/null` (so that nothing the session does between
/// commands, a `DEBUG` trap's output included, reaches a command's
/// output), and each command is given the pipe as its stdout and stderr
/// ([`COMMAND_FDS`]).
pub const OUTPUT_FD: i32 = 60;

/// [`COMMAND_FDS`] as a literal, for the texts built with `concat!`.
macro_rules! command_fds {
    () => {
        ">&60 2>&60 60>&- 62>&-"
    };
}

/// The redirections of a command's `eval`: the output pipe as stdout and
/// stderr, and neither the pipe's descriptor nor the status descriptor
/// left open in it (so it cannot forge a status). bash undoes them when
/// the `eval` returns: an `exec >file` in a command lasts until its end.
const COMMAND_FDS: &str = command_fds!();

/// The descriptor the loop reads runs from.
pub const PROTOCOL_FD: i32 = 63;

/// bash's `-c` script: read the length of the startup text (8 digits),
/// the text, and run it; it ends in the loop.
pub const BOOTSTRAP: &str = "LC_ALL=C IFS= builtin read -r -N 8 -u 63 __conch_c && \
     LC_ALL=C IFS= builtin read -r -N \"$__conch_c\" -u 63 __conch_c && builtin eval \"$__conch_c\"";

const _: () = assert!(STATUS_FD == 62 && PROTOCOL_FD == 63);

/// Takes away a function named `builtin`, which would take every
/// `builtin …` of the session's (outside POSIX mode bash reaches no
/// builtin past it, and `read` and `printf` are not special builtins that
/// POSIX mode finds before functions). `printf -v` through `builtin` sets
/// `$__conch_b` only when `builtin` is bash's; otherwise `unset -f builtin`
/// runs in POSIX mode, where `unset`, a special builtin, is found before a
/// function of that name. When the shell is not in POSIX mode already,
/// `POSIXLY_CORRECT=1` in front of `unset` switches it on (and, in front of
/// a special builtin, stays), `unset -v POSIXLY_CORRECT` switches it off
/// again, and the options POSIX mode changes on the way are put back as
/// `$BASHOPTS` had them. The user's function is lost: it lasts until the
/// end of the command that defines it.
macro_rules! unhijack {
    () => {
        "__conch_b=; builtin printf -v __conch_b 1; [[ $__conch_b ]] || { if [[ -o posix ]]; \
then unset -f builtin; else __conch_b=:$BASHOPTS:; POSIXLY_CORRECT=1 unset -f builtin; \
unset -v POSIXLY_CORRECT; \
builtin shopt -u expand_aliases inherit_errexit shift_verbose sourcepath interactive_comments; \
[[ $__conch_b == *:expand_aliases:* ]] && builtin shopt -s expand_aliases; \
[[ $__conch_b == *:inherit_errexit:* ]] && builtin shopt -s inherit_errexit; \
[[ $__conch_b == *:shift_verbose:* ]] && builtin shopt -s shift_verbose; \
[[ $__conch_b == *:sourcepath:* ]] && builtin shopt -s sourcepath; \
[[ $__conch_b == *:interactive_comments:* ]] && builtin shopt -s interactive_comments; fi; }; "
    };
}

/// The loop (see the module doc), kept in `$__conch_loop`. Each turn first
/// reports the run before it (at startup: run 0), reading `$?` before
/// anything else can change it (after `unhijack!`): `seq NUL status NUL
/// $PWD NUL` goes to descriptor 62 (so the host has its answer while bash
/// tidies up), then `xtrace`/`verbose` are switched off and remembered in
/// `$__conch_on`, and the next header is read. Then it reads the payload
/// and runs it. bash's own stdout and stderr are `/dev/null` (the output
/// pipe waits on [`OUTPUT_FD`]): none of the loop's steps is traced, and a
/// `DEBUG` trap the command set, which bash runs before each of these steps
/// too, writes nothing into any command's output. A command is read into
/// `$BASH_EXECUTION_STRING` (what `bash -c` shows there) and `eval`ed with
/// the output ([`COMMAND_FDS`]) after `[[ -z $__conch_ab ]] &&`, which
/// leaves `$?` 0 at its start, as in `bash -c`; a script is read into
/// `$__conch_c`, which its `eval` unsets first. A `continue 2` in the
/// command comes back to the report; a `break 2` leaves the loop, which
/// `eval`s itself again (and so reports), unless the header read found the
/// end of input: then bash exits. The loop is an `until`, not a `while`:
/// after `set -n` bash runs nothing and every command "returns" the last
/// status (0, from `set`), so an `until` ends and bash reaches the end of
/// its script and exits (the session ends, as after `exit`), where a
/// `while` would spin for ever. Every line of it runs on every command, so
/// it is as short as bash allows.
const LOOP: &str = concat!(
    "until { __conch_s=$?; ",
    unhijack!(),
    "__conch_run=${__conch_h:0:8} __conch_ab=; [[ -z $__conch_int ]] || __conch_restore; \
builtin printf '%s\\0%s\\0%s\\0' \"${__conch_h:0:8}\" \"$__conch_s\" \"$PWD\" >&62; \
case $- in *[xv]*) __conch_f=$-; builtin set +vx; __conch_on=; \
case $__conch_f in *x*) __conch_on='set -x'$'\\n';; esac; \
case $__conch_f in *v*) __conch_on+='set -v'$'\\n';; esac;; \
*) __conch_on=;; esac; ! builtin read -r -N 18 -u 63 __conch_h; }; do \
case ${__conch_h:16} in \
ap) IFS= builtin read -r -N ${__conch_h:8:8} -u 63 BASH_EXECUTION_STRING; \
for _ in 1; do __conch_run=1; [[ -z $__conch_ab ]] && builtin eval \"$__conch_on$BASH_EXECUTION_STRING\" ",
    command_fds!(),
    "; done;; \
bp) LC_ALL=C IFS= builtin read -r -N ${__conch_h:8:8} -u 63 BASH_EXECUTION_STRING; \
for _ in 1; do __conch_run=1; [[ -z $__conch_ab ]] && builtin eval \"$__conch_on$BASH_EXECUTION_STRING\" ",
    command_fds!(),
    "; done;; \
as) IFS= builtin read -r -N ${__conch_h:8:8} -u 63 __conch_c; builtin eval \"builtin unset -v __conch_c; $__conch_c\";; \
*) LC_ALL=C IFS= builtin read -r -N ${__conch_h:8:8} -u 63 __conch_c; builtin eval \"builtin unset -v __conch_c; $__conch_c\";; \
esac; \
done; \
{ [[ -n $__conch_h ]] || builtin exit 0; } 2>/dev/null; builtin eval \"$__conch_loop\""
);

/// The signal that asks bash to abandon the command of run `seq` (see
/// [`UNWIND_TRAP`]): one no program sends by accident, `RTMAX` for an
/// even run and `RTMAX-1` for an odd one, so that bash can tell one meant
/// for the run before from one meant for the run it is at.
pub fn unwind_signal(seq: u64) -> rustix::process::Signal {
    let odd = i32::from(seq % 2 == 1);
    // SAFETY: SIGRTMAX and the one below it are the C library's own last
    // real-time signals, in the range `from_raw_unchecked` requires.
    unsafe { rustix::process::Signal::from_raw_unchecked(libc::SIGRTMAX() - odd) }
}

/// How bash abandons an interrupted command, as a terminal's Ctrl-C does,
/// keeping every bit of its state. The host freezes bash, sends it
/// [`unwind_signal`], kills the command's processes and lets bash go on;
/// bash then runs this trap before its next command:
///
/// - first, whether it is meant for the run bash is at: the one whose
///   header it holds (`$__conch_h`), or the next one while it still holds
///   the header of the run it last reported (each turn sets `$__conch_run`
///   to that run's number, and the loop sets it to 1 as it starts the
///   command). A signal of the other parity ([`unwind_signal`]) was meant
///   for the run before, which has ended (a cancel from its last chunk's
///   callback, say): it is dropped, so that it cannot skip or stop the
///   next command (`!` and `&&`: no step of it fails under `set -e`);
/// - before the command started (bash was still reading it), it only
///   marks the run abandoned (`$__conch_ab`), and the loop skips the
///   command: a `break` there would leave the loop halfway through
///   reading the run, out of step with the host;
/// - at the top level of the command, `break 100000` leaves every loop,
///   the command's own and the one-pass `for` around it, and with them the
///   rest of the command line: the protocol loop is left too, and `eval`s
///   itself again (module doc), which reports the run;
/// - inside a function (or a sourced file), where `break` cannot reach the
///   caller's loops, it turns on `extdebug` and a `DEBUG` trap that skips
///   every command that is not the protocol's (`*__conch_*`): returning 2
///   from a `DEBUG` trap in a function makes bash return from it, and back
///   at the top level `! break` both skips the command (a `DEBUG` trap
///   that fails skips it) and leaves the loops.
///
/// The loop's first step then restores `extdebug` as it was and removes
/// the `DEBUG` trap (`__conch_restore`). A `DEBUG` trap the user had set is
/// lost when an interrupt reaches into a function: bash hides it from
/// every other trap, so it cannot be read to be put back. Nothing of this
/// runs when no run is interrupted.
///
/// The session also traps SIGINT with `:`: a non-interactive bash without
/// an INT trap kills itself when a command substitution's child dies of
/// SIGINT (`x=$(sleep 30)` interrupted), which would end the session. The
/// trap, like every caught signal, is reset to the default in subshells
/// and commands, so what runs still dies of SIGINT.
const UNWIND_TRAP: &str = concat!(
    unhijack!(),
    "! [[ ${__conch_h:0:8} != \"$__conch_run\" ]]; (( (${__conch_h:7:1} + PARITY + $?) % 2 )) && \
if [[ $__conch_run != 1 ]]; then __conch_ab=1; \
elif [[ -z ${FUNCNAME-} ]]; then builtin break 100000 2>/dev/null; \
elif [[ -z $__conch_int ]]; then __conch_int=1; \
__conch_ext=; builtin shopt -q extdebug && __conch_ext=1; builtin shopt -s extdebug; \
builtin trap \"[[ -z \\$__conch_int || \\$BASH_COMMAND == *__conch_* ]] || \
{ if [[ \\${FUNCNAME-} ]]; then __conch_ret 2; else ! builtin break 100000 2>/dev/null; fi; }\" DEBUG; fi"
);

/// [`UNWIND_TRAP`] for the runs of one parity (0: even runs, `RTMAX`; 1:
/// odd runs, `RTMAX-1`).
fn unwind_trap(parity: u8) -> String {
    UNWIND_TRAP.replacen("PARITY", &parity.to_string(), 1)
}

/// The helpers of [`UNWIND_TRAP`]: a function that returns its argument
/// (a `DEBUG` trap's status is its last command's), and the restore.
const UNWIND_FUNCTIONS: &str = "__conch_ret() { return $1; }; \
__conch_restore() { __conch_int=; builtin trap - DEBUG; \
[[ -n $__conch_ext ]] || builtin shopt -u extdebug; }";

/// The functions the protocol defines ([`UNWIND_FUNCTIONS`],
/// [`END_FUNCTION`]), for a bash given the session's state without the
/// protocol (a job) to drop.
pub const FUNCTION_NAMES: &str = "__conch_ret __conch_restore __conch_end";

/// Ends a [`Script`] that changed directory or read a file: back to the
/// session's directory, the command's text dropped, the command's status
/// kept (it is the loop's `$?`).
const END_FUNCTION: &str = "__conch_end() { local s=$1; \
[[ -z ${__conch_d-} ]] || builtin cd -- \"$__conch_d\"; builtin unset -v __conch_d; return \"$s\"; }";

/// The run number of a record sent by [`EXIT_TRAP`] for run N: N +
/// `SEQ_MODULUS` (a record no loop turn writes).
pub fn exit_record_seq(seq: u64) -> u64 {
    seq + SEQ_MODULUS
}

/// When a command ends the session's bash with `exit` (or `set -e`), bash
/// runs this `EXIT` trap, which keeps the *process*: it reports the run
/// (its status and directory) with a record of [`exit_record_seq`], then
/// `exec`s a fresh bash with an empty environment in the same process, so
/// what the session started earlier (background jobs, their output pipes)
/// stays below it, and the host sends that bash a new start-up text (the
/// session's variables, the snapshot, the loop). Everything the old bash
/// held is gone (variables, functions, aliases, options), as after any
/// `exit`. The status pipe and bash's own output pipe are closed inside a
/// command, so the trap opens them again through the host's descriptors
/// (`$__conch_o/$__conch_so`, `$__conch_o/$__conch_oo`). It does nothing
/// in a subshell, nor when the loop itself ends (no run: the host is
/// gone). A command's own `EXIT` trap replaces this one; after a command
/// that says `trap`, the loop runs it and puts this one back (`exit_check`);
/// one left set replaces this for good (the session's process then ends
/// on `exit`).
const EXIT_TRAP: &str = concat!(
    "__conch_s=$?; if [[ -n $__conch_h && $BASHPID == $$ ]]; then ",
    unhijack!(),
    "builtin printf '1%s\\0%s\\0%s\\0' \"${__conch_h:0:8}\" \"$__conch_s\" \"$PWD\" 2>/dev/null \
>\"$__conch_o/$__conch_so\"; \
builtin exec -c -a \"$__conch_a0\" \"$__conch_sh\" --noprofile --norc -c \"$__conch_boot\" 62>\"$__conch_o/$__conch_so\" \
>\"$__conch_o/$__conch_oo\" 2>&1; fi"
);

/// What a start-up text sets up besides the loop.
pub struct Startup<'a> {
    /// The rc snapshot to source.
    pub snapshot: Option<&'a str>,
    /// The env policy's unsets.
    pub unset_script: &'a str,
    /// A state file to source (see `shell::state`): the session's state
    /// for a bash that takes the place of one moved to the background.
    pub restore: Option<&'a str>,
    /// The directory where bash opens the host's pipe ends by number
    /// (module doc): `/proc/<host pid>/fd`, or a sandboxed session's FIFOs.
    pub pipes: &'a str,
    /// The host's descriptors of the status pipe and of bash's own output
    /// pipe, for [`EXIT_TRAP`].
    pub status_fd: i32,
    pub out_fd: i32,
    /// The shell [`EXIT_TRAP`] starts again, and its `$0`.
    pub shell: &'a str,
    pub name: &'a str,
    /// Variables to export first: the session's environment, for a bash
    /// that [`EXIT_TRAP`] started with none. Empty for a bash the host
    /// started (its environment is already set).
    pub exports: &'a [(String, String)],
}

/// The startup text [`BOOTSTRAP`] reads, with its length in front: export
/// the variables, source the snapshot (output discarded), apply the env
/// policy's unsets, define the loop and enter it (its first turn reports
/// run 0: ready).
pub fn startup(start: &Startup<'_>) -> Vec<u8> {
    // bash's own output goes to `/dev/null`, the pipe waits on
    // `OUTPUT_FD` (see `LOOP`). Plain `exec`: nothing of the user's is
    // defined yet, and the redirections of `builtin exec` are undone when
    // it returns.
    let mut boot = format!("exec {OUTPUT_FD}>&1 >/dev/null 2>&1; {{ ");
    for (name, value) in start.exports {
        // A name bash cannot hold (`a-b`, `BASH_FUNC_f%%`) is left out.
        if is_name(name) {
            let _ = write!(boot, "builtin export {name}={}; ", single_quote(value));
        }
    }
    let (snapshot, unset_script) = (start.snapshot, start.unset_script);
    if let Some(path) = snapshot {
        let _ = write!(
            boot,
            "builtin source {} </dev/null >/dev/null 2>&1; ",
            single_quote(path)
        );
    }
    if !unset_script.is_empty() {
        let _ = write!(boot, "{unset_script}; ");
    }
    if let Some(path) = start.restore {
        let _ = write!(
            boot,
            "builtin source {} </dev/null >/dev/null 2>&1; ",
            single_quote(path)
        );
    }
    let _ = write!(
        boot,
        "{END_FUNCTION}; {UNWIND_FUNCTIONS}; builtin trap {} RTMAX; builtin trap {} RTMAX-1; builtin trap : INT; \
         builtin trap {} EXIT; __conch_loop={}; __conch_on= __conch_h=00000000 __conch_int= \
         __conch_o={} __conch_so={} __conch_oo={} __conch_sh={} __conch_a0={} __conch_boot={}; builtin unset -v __conch_c; }} 2>/dev/null; \
         builtin eval \"$__conch_loop\"",
        single_quote(&unwind_trap(0)),
        single_quote(&unwind_trap(1)),
        single_quote(EXIT_TRAP),
        single_quote(LOOP),
        single_quote(start.pipes),
        start.status_fd,
        start.out_fd,
        single_quote(start.shell),
        single_quote(start.name),
        single_quote(BOOTSTRAP),
    );
    let mut out = format!("{:08}", boot.len()).into_bytes();
    out.extend_from_slice(boot.as_bytes());
    out
}

/// Whether bash can hold a variable of this name.
fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `'…'` quoting for bash: safe for any text without NUL.
pub fn single_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// `$'…'` quoting that keeps the line free of raw newlines and controls, so
/// the protocol stays one line whatever the command holds.
pub fn ansi_c_quote(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 8);
    s.push_str("$'");
    for c in text.chars() {
        match c {
            '\\' => s.push_str(r"\\"),
            '\'' => s.push_str(r"\'"),
            '\n' => s.push_str(r"\n"),
            '\t' => s.push_str(r"\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(s, "\\x{:02x}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('\'');
    s
}

/// One completed run as reported by bash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusRecord {
    pub seq: u64,
    pub status: i32,
    pub cwd: String,
}

/// Accumulates bytes from the status descriptor into records.
#[derive(Default)]
pub struct StatusParser {
    buf: Vec<u8>,
}

impl StatusParser {
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The bytes of a record not complete yet, for another parser to go on.
    pub fn into_pending(self) -> Vec<u8> {
        self.buf
    }

    /// The next complete record, if one has arrived.
    pub fn next_record(&mut self) -> Option<StatusRecord> {
        let mut fields = self.buf.split(|&b| b == 0);
        let (seq, status, cwd) = (fields.next()?, fields.next()?, fields.next()?);
        // A record is complete only when its third field is terminated.
        fields.next()?;
        let used = seq.len() + status.len() + cwd.len() + 3;
        let rec = StatusRecord {
            seq: std::str::from_utf8(seq).ok()?.parse().ok()?,
            status: std::str::from_utf8(status).ok()?.parse().unwrap_or(1),
            cwd: String::from_utf8_lossy(cwd).into_owned(),
        };
        self.buf.drain(..used);
        Some(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_round_trips_through_bash() {
        let text = "a'b\"c\\d\n\te$f`g` \u{1}é";
        let out = std::process::Command::new("bash")
            .args([
                "-c",
                &format!(
                    "printf %s {}; printf '|'; printf %s {}",
                    single_quote(text),
                    ansi_c_quote(text)
                ),
            ])
            .output()
            .unwrap();
        let expected = format!("{text}|{text}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
    }

    #[test]
    fn headers_are_18_bytes_whatever_the_run_number() {
        let msg = run(123_456_789, Kind::Command, "true");
        assert_eq!(&msg[..HEADER_LEN], b"2345678900000004ap");
        let msg = run(7, Kind::Script, "é");
        assert_eq!(&msg[..HEADER_LEN], b"0000000700000002bs");
        assert_eq!(&msg[HEADER_LEN..], "é".as_bytes());
    }

    #[test]
    fn status_records_parse_across_pushes() {
        let mut p = StatusParser::default();
        p.push(b"3\x000\x00/tm");
        assert_eq!(p.next_record(), None);
        p.push(b"p\x004\x00");
        assert_eq!(
            p.next_record(),
            Some(StatusRecord {
                seq: 3,
                status: 0,
                cwd: "/tmp".into(),
            })
        );
        p.push(b"2\x00/x\x00");
        assert_eq!(
            p.next_record(),
            Some(StatusRecord {
                seq: 4,
                status: 2,
                cwd: "/x".into(),
            })
        );

        assert_eq!(p.next_record(), None);
    }
}
