//! The text conch sends to its bash, and the status records bash sends back.
//!
//! bash's parser reads its input one byte at a time (so that a command may
//! change what follows it) and parses every line afresh. So a run is not a
//! line: bash spends its life in one loop, parsed once, that reads a
//! 10-byte header and the command in bulk (`read -N`, one `read(2)` each)
//! from descriptor [`PROTOCOL_FD`] and hands the command to `eval`. The
//! command travels as *data*, so an unbalanced quote or a stray heredoc in
//! it is bash's own syntax error (status 2) and cannot swallow the
//! protocol. The loop runs at top level, not in a function, so the command
//! runs in global scope as if typed. bash runs with `-c` [`BOOTSTRAP`]
//! (not reading commands from stdin: a redirection of stdin would then
//! move bash's own input), stdin `/dev/null`, the protocol on descriptor
//! 63 and the status descriptor on 62.
//!
//! A run is a header, a payload and a trailer ([`run`]). The header is
//! `LEN E K` with no spaces: the payload's length in bytes (8 digits),
//! `E` = `a` (ASCII: `read -N` counts characters, here bytes) or `b` (read
//! under `LC_ALL=C` so that it counts bytes), `K` = `p` (the payload is
//! the command) or `s` (a script, run as it is: one made by [`Script`],
//! for a per-run cwd or environment or a command kept in a file, or
//! [`switch_output`]). The trailer, 16 digits, is the run number and the
//! host's descriptor of bash's output pipe ([`exit_trap`] opens it by that
//! number); bash reads it *after* the command, when it reports the run.
//!
//! **Nothing of the protocol is in the command's shell.** bash has no
//! hidden variables or functions: whatever the loop keeps in one, the
//! command sees in `declare`, `set`, `compgen`. So while a command runs,
//! the session holds no variable and no function of its own: what a run
//! needs after its command travels in the pipe (the trailer), the loop's
//! own text is rebuilt from a literal when it is needed again (after a
//! `break` that left it), the session's constants are literals in its
//! `EXIT` trap, and whether a command is running is whether the status
//! descriptor is closed (it is, inside the command). The loop's working
//! variables (`__conch_*`) exist between two commands only, and are unset
//! before the next one starts. What stays visible are the session's four
//! traps (`EXIT`, `SIGINT` and the two unwind signals, `SIGRTMAX` and
//! `SIGRTMAX-1` on Linux, in `trap -p`): they
//! must be set while the command runs.
//!
//! A command's stdout and stderr are one pipe the host reads. bash keeps
//! it on [`OUTPUT_FD`] and gives it to each command's `eval`. The loop
//! runs inside a group whose stdout and stderr are `/dev/null`, so what
//! the session's own steps write (a user's `DEBUG` trap runs before them
//! too, and `set -x` traces them) reaches no command's output. (One that
//! fails under `extdebug` skips them: nothing here can run past it, and
//! the host ends such a run, `shell/session/watchdog.rs`.) bash's own
//! stdout and stderr, outside the group, are the output pipe too: a
//! command's `exit` unwinds every redirection up to them, and what bash
//! writes then (an `EXIT` trap the command set, `time`) is the command's
//! output. When a command leaves something
//! running in the background, the host gives bash a new pipe
//! ([`switch_output`]) before the next run, so what the job writes later
//! stays in the old pipe, never in a later run's output (see
//! `crate::jobs`). bash opens the new pipe as `/proc/<host pid>/fd/<n>`,
//! the host's read end (opened for writing, a pipe opens as a FIFO would).
//! A sandboxed bash may not look into the host's `/proc` entries: its
//! session's pipes are FIFOs in the sandbox's directory, named the same
//! way (`crate::process::io::named_pipe`).
//!
//! **None of the session's descriptors is open in the command.** Its
//! `eval` closes the output pipe's descriptor, the status descriptor and
//! the protocol's ([`COMMAND_FDS`]), so a command finds what `bash -c`
//! would give it, 0, 1 and 2, and what it opens itself (an `exec 3>file`
//! stays for the next commands, as in a terminal). On those numbers it can
//! neither write a status nor read the session's input (`cat <&63` is a
//! bad descriptor), nor end the session by closing one (`exec 63>&-`
//! closes nothing of the session's); its own `exec 63>file` lasts until
//! the command ends, as its `exec >file` does, and bash then puts the
//! session's back. The rc snapshot and a restored state run the same way
//! ([`QUIET_FDS`]). bash keeps what the redirections closed (and the
//! loop's group, its own stdout and stderr) as copies of its own, at 10
//! and above and close-on-exec: no program a command runs gets one, nor
//! anything that program starts. bash's own subshells hold them until they
//! run a program (bash has no way to keep a descriptor out of its
//! subshells), and a command that names one (`<&64`) reaches it. bash
//! cannot do without the protocol's through the command: it is a socket,
//! which cannot be opened again by path as the pipes are ([`exit_trap`]).
//! A signal that ends bash inside a command (`kill $$`) runs the session's
//! `EXIT` trap where the command stood, the protocol's descriptor closed:
//! the trap reports nothing and the process ends, as the signal meant. A
//! command that leaves bash unable to put one back (`ulimit -n 63`) ends
//! the session (`LOOP_TEMPLATE`).
//!
//! After the command, the loop (with stderr to `/dev/null`) reads the
//! trailer and writes `seq NUL status NUL dir NUL` to [`STATUS_FD`], dir
//! being [`WORKING_DIR`]; the
//! command had that descriptor closed, so no program it runs can forge a
//! status. The command runs inside a one-pass `for`, so its
//! `break` and `continue` stay its own; a `break 2` or `continue 2`
//! reaches the loop, which still reports the run (a `continue` at once, a
//! `break` after the loop, which then starts itself again).
//!
//! Builtins are called as `builtin …`, so a user's function named
//! `printf`, `read`, `cd` or `eval` changes nothing here; one named
//! `builtin` is taken away after the command that defines it
//! (`unhijack!`).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

mod quote;
mod script;
mod status;

pub use quote::{ansi_c_quote, quote_bytes, quote_path, single_quote};
pub use script::{CommandText, ExitCheck, Script};
pub use status::{StatusParser, StatusRecord};

/// The descriptor on which bash reports completed runs.
pub const STATUS_FD: i32 = 62;

/// Commands longer than this are passed through a file rather than inline.
pub const INLINE_LIMIT: usize = 64 * 1024;

/// Run numbers wrap at this (the trailer holds 8 digits).
pub const SEQ_MODULUS: u64 = 100_000_000;

/// What a payload holds.
#[derive(Clone, Copy)]
pub enum Kind {
    /// The user's command itself.
    Command,
    /// A [`Script`].
    Script,
}

/// The length of a run's header.
const HEADER_LEN: usize = 10;

/// The length of a run's trailer.
const TRAILER_LEN: usize = 16;

/// One run for the loop: the header, the payload and the trailer (see the
/// module doc). `out_fd` is the host's descriptor of bash's output pipe.
pub fn run(seq: u64, out_fd: i32, kind: Kind, payload: &str) -> Vec<u8> {
    let enc = if payload.is_ascii() { 'a' } else { 'b' };
    let kind = match kind {
        Kind::Command => 'p',
        Kind::Script => 's',
    };
    let mut message = String::with_capacity(HEADER_LEN + payload.len() + TRAILER_LEN);
    let _ = write!(message, "{:08}{enc}{kind}", payload.len());
    debug_assert_eq!(message.len(), HEADER_LEN);
    message.push_str(payload);
    push_trailer(&mut message, seq, out_fd);
    message.into_bytes()
}

/// What a spare that takes a bash's place reads first: run 0's trailer,
/// with the host's descriptor of its output pipe. It answers as a bash
/// that got through its start-up text does.
pub fn spare_start(out_fd: i32) -> Vec<u8> {
    let mut message = String::with_capacity(TRAILER_LEN);
    push_trailer(&mut message, 0, out_fd);
    message.into_bytes()
}

fn push_trailer(message: &mut String, seq: u64, out_fd: i32) {
    let _ = write!(message, "{:08}{:08}", seq % SEQ_MODULUS, out_fd);
}

/// The script that moves the output pipe on [`OUTPUT_FD`] to the pipe
/// whose read end is the host's descriptor `fd` (module doc); its status
/// says whether bash could open it. Then it leaves the loop, which makes
/// the new pipe bash's own stdout and stderr too and starts again
/// (`LOOP_TEMPLATE`). Plain `exec`: the redirections of `builtin exec`
/// are undone when it returns, as for any other builtin.
pub fn switch_output(pipes: &str, fd: i32) -> String {
    format!(
        "exec {OUTPUT_FD}>{} && builtin break",
        single_quote(&format!("{pipes}/{fd}"))
    )
}

/// The script that has a bash whose command was moved to the background
/// (it becomes the job's root) let go of the output and status pipes, then
/// wait until the host closes the protocol's descriptor: it closes them
/// and leaves the loop, which, finding no output pipe, sends its own
/// stdout and stderr to `/dev/null`, reads this run's trailer and waits
/// (`LOOP_TEMPLATE`).
///
/// The host sends it as the next run once the command's record came,
/// never while the command runs: what follows a record must be the
/// host's answer to it, as in the foreground. A command that ends with
/// `exit` leaves a fresh bash in its place, which reads a start-up text
/// and not a run (see [`released_startup`]).
pub const RELEASE: &str = "exec 60>&- 62>&-; builtin break";

/// The start-up text that answers the `exit` record of a command moved
/// to the background: the fresh bash the `EXIT` trap (or the loop
/// builtin) started in its place lets go of the output and status pipes
/// and waits until the host closes the protocol's descriptor, as
/// [`RELEASE`] has the loop do (the process stays the subreaper of what
/// the command left, until the job is over).
pub fn released_startup() -> Vec<u8> {
    let mut out = String::new();
    push_chunk(
        &mut out,
        "exec >/dev/null 2>&1 60>&- 62>&-; builtin read -r -N 1 -u 63 _; builtin exit 0",
    );
    out.into_bytes()
}

/// The descriptor where bash keeps the output pipe for its commands: the
/// loop's stdout and stderr are `/dev/null` (so that nothing the session
/// does between commands, a `DEBUG` trap's output included, reaches a
/// command's output), and each command is given the pipe as its stdout
/// and stderr ([`COMMAND_FDS`]).
pub const OUTPUT_FD: i32 = 60;

/// [`COMMAND_FDS`] as a literal, for the texts built with `concat!`.
macro_rules! command_fds {
    () => {
        ">&60 2>&60 60>&- 62>&- 63<&-"
    };
}

/// The redirections of a command's `eval`: the output pipe as stdout and
/// stderr, and none of the session's descriptors left open in it, the
/// pipe's, the status descriptor and the protocol's (module doc: the
/// command finds only 0, 1 and 2; it cannot forge a status or read the
/// session's input; the session knows a command is running: see
/// [`UNWIND_TRAP`]). bash undoes them when the `eval` returns: a
/// command's `exec >file` lasts until its end, and so does its `exec
/// 63>file` (bash puts the protocol's descriptor back), while an `exec
/// 3>file` stays, as in a terminal.
const COMMAND_FDS: &str = command_fds!();

/// The redirections of the user's text a start-up runs (the rc snapshot,
/// a restored state): nothing read, nothing written, and none of the
/// session's descriptors left open in it, as in a command
/// ([`COMMAND_FDS`]): what it starts in the background holds none.
const QUIET_FDS: &str = "</dev/null >/dev/null 2>&1 60>&- 61>&- 62>&- 63<&-";

/// The descriptor the loop reads runs from.
pub const PROTOCOL_FD: i32 = 63;

/// Where a bash that forks a spare gets the host's spare channel
/// (`crate::process::spare`).
pub const SPARE_FD: i32 = 61;

/// Reads a chunk of start-up text (its length in [`CHUNK_DIGITS`]
/// digits, then the text) and runs it.
macro_rules! run_chunk {
    () => {
        "LC_ALL=C IFS= builtin read -r -N 8 -u 63 __conch_c && \
         LC_ALL=C IFS= builtin read -r -N \"$__conch_c\" -u 63 __conch_c && builtin eval \"$__conch_c\""
    };
}

/// bash's `-c` script: run the start-up text's first chunk, then its
/// second, if the first returns (see [`startup`]). Both run at the same
/// depth of `eval`, on line 1: what a command sees of `$LINENO` and of
/// `set -x` does not depend on which chunk holds the loop.
pub const BOOTSTRAP: &str = concat!(run_chunk!(), "; ", run_chunk!());

/// The digits of a chunk's length (the `8` of [`BOOTSTRAP`]'s `read -N 8`).
const CHUNK_DIGITS: usize = 8;

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

/// The directory bash is in, as its `pwd` shows it: `${DIRSTACK[0]}` is
/// bash's own note of it (read without a system call), which a command's
/// `PWD=/elsewhere` or `unset PWD` does not change, where `$PWD` would
/// report that; `$PWD` after a command unset `DIRSTACK`.
macro_rules! working_dir {
    () => {
        "${DIRSTACK[0]:-${PWD-}}"
    };
}

/// [`working_dir!`], for the text made at run time ([`exit_trap`]).
const WORKING_DIR: &str = working_dir!();

/// Where [`LOOP_TEMPLATE`] holds its own text (quoted by [`loop_text`]).
const LOOP_MARK: &str = "@LOOP@";

/// The loop (see the module doc), with [`LOOP_MARK`] in place of its own
/// quoted text. Each turn first reports the run before it (at startup:
/// run 0): `$?` is read before anything else can change it (kept if a
/// script already left the command's status in `$__conch_s`), `unhijack!`
/// runs, an interrupt's `DEBUG` trap is taken away (see [`UNWIND_TRAP`]),
/// the trailer is read and `seq NUL status NUL dir NUL` goes to
/// descriptor 62 (so the host has its answer while bash tidies up); a
/// bash that cannot read the trailer or write the report (the command
/// closed bash's copy of descriptor 63 or 62, or `ulimit -n 63` kept bash
/// from putting it back after the `eval`) exits at once with the
/// command's status, its `EXIT` trap taken away first, so the run ends as
/// the session does instead of waiting for a report that cannot come
/// (the end of input, the host gone, ends it the same way). Then
/// the loop's working variables are unset and the next header is read.
/// The loop then reads the payload and runs it. A command is read into
/// `$BASH_EXECUTION_STRING` (what `bash -c` shows there) and `eval`ed
/// with the output ([`COMMAND_FDS`]) after `[[ -z ${__conch_ab-} ]] &&`,
/// which leaves `$?` 0 at its start, as in `bash -c`; a script is read
/// into `$__conch_c`, which its `eval` unsets first. `${name-}`
/// throughout: the user's `set -u` holds in the loop too.
///
/// The loop is a group with stdout and stderr `/dev/null` (module doc).
/// A `continue 2` in the command comes back to the report. A `break 2`
/// (or an interrupt's `break`, or [`switch_output`]) leaves the loop, and
/// the group: bash's own stdout and stderr become the output pipe (the
/// current one, after a switch), and the loop's text starts the loop
/// again. The text is kept in the loop as a quoted literal of itself with
/// the mark in place of the literal; it is rebuilt (`printf %q`,
/// fork-free) and `eval`ed outside any group, so that no group's saved
/// copy of an old pipe stays open. When the header read found the end of
/// input instead (`$__conch_h` set, empty; it is unset before every
/// command), bash exits, the session's `EXIT` trap taken away first: the
/// host is gone. When the output descriptor is closed ([`RELEASE`]), bash
/// lets go of the pipes and waits for the end of input. The loop is an `until`, not a `while`:
/// after `set -n` bash runs nothing and every command "returns" the last
/// status (0, from `set`), so an `until` ends and bash reaches the end of
/// its script and exits (the session ends, as after `exit`), where a
/// `while` would spin for ever. Every step of it runs on every command, so
/// it is as short as bash allows.
const LOOP_TEMPLATE: &str = concat!(
    "{ until builtin : \"${__conch_s=$?}\"; ",
    unhijack!(),
    "[[ -z ${__conch_int-} ]] || { builtin unset -v __conch_int; builtin trap - DEBUG; \
[[ -n ${__conch_ext-} ]] || builtin shopt -u extdebug; builtin unset -v __conch_ext; builtin unset -f __conch_ret; }; \
__conch_t=; builtin read -r -N 16 -u 63 __conch_t || { builtin trap - EXIT; builtin exit \"$__conch_s\"; }; builtin unset -v __conch_ab; __conch_n=${__conch_t:7:1}; \
{ builtin printf '%s\\0%s\\0%s\\0' \"${__conch_t:0:8}\" \"$__conch_s\" \"",
    working_dir!(),
    "\" >&62 || { builtin trap - EXIT; builtin exit \"$__conch_s\"; }; }; \
builtin unset -v __conch_s __conch_t __conch_b; \
__conch_h=; ! builtin read -r -N 10 -u 63 __conch_h; do \
case ${__conch_h:8} in \
ap) IFS= builtin read -r -N ${__conch_h:0:8} -u 63 BASH_EXECUTION_STRING; builtin unset -v __conch_h; \
for _ in 1; do [[ -z ${__conch_ab-} ]] && builtin unset -v __conch_n && builtin eval \"$BASH_EXECUTION_STRING\" ",
    command_fds!(),
    "; done;; \
bp) LC_ALL=C IFS= builtin read -r -N ${__conch_h:0:8} -u 63 BASH_EXECUTION_STRING; builtin unset -v __conch_h; \
for _ in 1; do [[ -z ${__conch_ab-} ]] && builtin unset -v __conch_n && builtin eval \"$BASH_EXECUTION_STRING\" ",
    command_fds!(),
    "; done;; \
as) IFS= builtin read -r -N ${__conch_h:0:8} -u 63 __conch_c; builtin unset -v __conch_h __conch_n; \
builtin eval \"builtin unset -v __conch_c; $__conch_c\";; \
*) LC_ALL=C IFS= builtin read -r -N ${__conch_h:0:8} -u 63 __conch_c; builtin unset -v __conch_h __conch_n; \
builtin eval \"builtin unset -v __conch_c; $__conch_c\";; \
esac; \
done; [[ ${__conch_h+set} ]] && builtin trap - EXIT && builtin exit 0; } >/dev/null 2>&1; \
if { builtin : >&60; } >/dev/null 2>&1; then exec >&60 2>&60; \
else exec >/dev/null 2>&1; builtin read -r -N 16 -u 63 _; builtin read -r -N 1 -u 63 _; \
builtin trap - EXIT; builtin exit 0; fi; \
{ __conch_l=@LOOP@; builtin printf -v __conch_q %q \"$__conch_l\"; \
__conch_l=${__conch_l/@LOOP@/\"$__conch_q\"}; builtin unset -v __conch_q; } >/dev/null 2>&1; \
builtin eval \"builtin unset -v __conch_l; $__conch_l\""
);

/// The loop's text: [`LOOP_TEMPLATE`] with its first [`LOOP_MARK`] (the
/// value of `__conch_l`) replaced by the quoted template, so that the
/// loop can rebuild itself.
fn loop_text() -> String {
    LOOP_TEMPLATE.replacen(LOOP_MARK, &single_quote(LOOP_TEMPLATE), 1)
}

/// The signal that asks bash to abandon the command of run `seq` (see
/// [`UNWIND_TRAP`]): one of two no program sends by accident (on Linux
/// `RTMAX` for an even run and `RTMAX-1` for an odd one; see
/// [`crate::process::sys::unwind_signals`]), so that bash can tell one
/// meant for the run before from one meant for the run it is at.
pub fn unwind_signal(seq: u64) -> rustix::process::Signal {
    let signal = crate::process::sys::unwind_signals()[usize::from(seq % 2 == 1)];
    // SAFETY: a signal of this system that no C library reserves, in the
    // range `from_raw_unchecked` requires.
    unsafe { rustix::process::Signal::from_raw_unchecked(signal) }
}

/// How bash abandons an interrupted command, as a terminal's Ctrl-C does,
/// keeping every bit of its state. The host freezes bash, sends it
/// [`unwind_signal`], kills the command's processes and lets bash go on;
/// bash then runs this trap before its next command:
///
/// - before the command started (bash was still reading it, or reporting
///   the one before: the status descriptor is open, see [`COMMAND_FDS`]),
///   it only marks the run abandoned (`$__conch_ab`), and the loop skips
///   the command: a `break` there would leave the loop halfway through
///   reading the run, out of step with the host. Only if the signal is
///   meant for the next run: a cancel that came as the run before ended
///   (from its last chunk's callback, say) sends that run's signal late,
///   and it must not skip the next command. Each turn keeps the last digit
///   of the run it reported in `$__conch_n` (set before the report, so
///   that the next run, sent after the report, always finds it), and
///   unsets it as the last step before the command's `eval`: a signal of
///   the next run's parity ([`unwind_signal`]) marks it; one of the other
///   parity, or one that finds no `$__conch_n` while bash tidies up after
///   a command, is dropped; one that comes between that last step and the
///   `eval` (`$BASH_COMMAND` is one of the two) leaves the one-pass `for`,
///   so the command does not start. A command never gets a signal meant
///   for another: the host sends the next run only after this one's signal
///   was delivered, and bash runs a trap at its next step;
/// - at the top level of the command, `break 100000` leaves every loop,
///   the command's own and the one-pass `for` around it, and with them the
///   rest of the command line: the protocol loop is left too, and starts
///   itself again (`LOOP_TEMPLATE`), which reports the run;
/// - inside a function (or a sourced file), where `break` cannot reach the
///   caller's loops, it turns on `extdebug` and a `DEBUG` trap that skips
///   every command that is not the protocol's (`*__conch_*`): returning 2
///   from a `DEBUG` trap in a function makes bash return from it, and back
///   at the top level `! break` both skips the command (a `DEBUG` trap
///   that fails skips it) and leaves the loops. It defines `__conch_ret`
///   for that (a `DEBUG` trap's status is its last command's).
///
/// The loop's first step then restores `extdebug` as it was and removes
/// the `DEBUG` trap and `__conch_ret`. A `DEBUG` trap the user had set is
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
    "{ ",
    unhijack!(),
    "if { builtin : >&62; } 2>/dev/null; then \
if [[ ${__conch_n-} ]]; then (( (__conch_n + 1) % 2 == PARITY )) && __conch_ab=1; \
elif [[ $BASH_COMMAND == 'builtin unset -v __conch_n' || $BASH_COMMAND == *'eval \"$BASH_EXECUTION_STRING\"'* ]]; \
then builtin break; fi; \
elif [[ -z ${FUNCNAME-} ]]; then builtin break 100000 2>/dev/null; \
elif [[ -z ${__conch_int-} ]]; then __conch_int=1; \
__conch_ext=; builtin shopt -q extdebug && __conch_ext=1; builtin shopt -s extdebug; \
__conch_ret() { builtin return \"$1\"; }; \
builtin trap \"[[ -z \\${__conch_int-} || \\$BASH_COMMAND == *__conch_* ]] || \
{ if [[ \\${FUNCNAME-} ]]; then __conch_ret 2; else ! builtin break 100000 2>/dev/null; fi; }\" DEBUG; fi; \
} >/dev/null 2>&1"
);

/// [`UNWIND_TRAP`] for the runs of one parity (0: even runs; 1: odd runs;
/// see [`unwind_signal`]).
fn unwind_trap(parity: u8) -> String {
    UNWIND_TRAP.replacen("PARITY", &parity.to_string(), 1)
}

/// The run number of a record sent by [`exit_trap`] for run N: N +
/// `SEQ_MODULUS` (a record no loop turn writes).
pub fn exit_record_seq(seq: u64) -> u64 {
    seq + SEQ_MODULUS
}

/// The session's constants that its `EXIT` trap holds.
pub struct ExitTrap<'a> {
    /// The directory where bash opens the host's pipe ends by number
    /// (module doc): `/proc/<host pid>/fd`, or a sandboxed session's FIFOs.
    pub pipes: &'a str,
    /// The host's descriptor of the status pipe.
    pub status_fd: i32,
    /// The shell the trap starts again, and its `$0`.
    pub shell: &'a str,
    pub name: &'a str,
}

/// When a command ends the session's bash with `exit` (or `set -e`), bash
/// runs this `EXIT` trap, which keeps the *process*: it reads the run's
/// trailer (waiting at most a second for it: a bash ended by a signal
/// between runs has none, and then just exits; one ended by a signal
/// inside a command, `kill $$`, runs it with the command's descriptors,
/// where the protocol's is closed, and exits too), reports the run (its
/// status and directory) with a record of [`exit_record_seq`], then
/// `exec`s a fresh bash with an empty environment in the same process, so
/// what the session started earlier (background jobs, their output pipes)
/// stays below it, and the host sends that bash a new start-up text (the
/// session's variables, the snapshot, the loop). Everything the old bash
/// held is gone (variables, functions, aliases, options), as after any
/// `exit`. The status pipe and bash's own output pipe are closed inside a
/// command, so the trap opens them again through the host's descriptors:
/// the status pipe's is a constant of the session, the output pipe's comes
/// in the trailer (it changes with [`switch_output`]). It does nothing in
/// a subshell; the loop takes it away before it exits at the end of its
/// input (the host is gone). A command's own `EXIT` trap replaces this
/// one; after a command that says `trap`, the run runs it and puts this
/// one back (`exit_check`, which knows this one by its first word); one
/// left set replaces this for good (the session's process then ends on
/// `exit`).
pub fn exit_trap(t: &ExitTrap<'_>) -> String {
    let status = single_quote(&format!("{}/{}", t.pipes, t.status_fd));
    let mut s = String::from(concat!(
        "{ __conch_s=$?; if [[ $BASHPID == $$ ]]; then ",
        unhijack!()
    ));
    let _ = write!(
        s,
        "__conch_t=; builtin read -r -t 1 -N 16 -u 63 __conch_t && {{ \
         builtin printf '1%s\\0%s\\0%s\\0' \"${{__conch_t:0:8}}\" \"$__conch_s\" \"{dir}\" 2>/dev/null >{status}; \
         builtin cd -- \"{dir}\" || builtin cd /; \
         builtin exec -c -a {name} {shell} --noprofile --norc -c {boot} 62>{status} \
         >{pipes}/\"$((10#${{__conch_t:8:8}}))\" 2>&1; }}; fi; }} >/dev/null 2>&1",
        name = single_quote(t.name),
        shell = single_quote(t.shell),
        boot = single_quote(BOOTSTRAP),
        pipes = single_quote(t.pipes),
        dir = WORKING_DIR,
    );
    s
}

/// What a start-up text sets up besides the loop.
pub struct Startup<'a> {
    /// The rc snapshot to source.
    pub snapshot: Option<&'a str>,
    /// The env policy's unsets.
    pub unset_script: &'a str,
    /// A state to run (see `shell::state`): the session's state for a
    /// bash that takes the place of one moved to the background.
    pub restore: Option<&'a str>,
    /// The session's `EXIT` trap ([`exit_trap`]).
    pub exit_trap: &'a str,
    /// The loop builtin to run, if bash loads it (`crate::shell::engine`);
    /// the eval loop otherwise.
    pub builtin: Option<LoopBuiltin<'a>>,
    /// The host's descriptor of bash's output pipe (the trailer of run 0).
    pub out_fd: i32,
    /// A directory to go to first: for a bash that took the place of one
    /// a command's `exit` ended in a directory since removed, the nearest
    /// one above it (where a new bash would start).
    pub enter: Option<&'a Path>,
    /// Variables to export first: the session's environment, for a bash
    /// that the `EXIT` trap started with none. Empty for a bash the host
    /// started (its environment is already set).
    pub exports: &'a [(OsString, OsString)],
}

/// The loop builtin a start-up text runs (`builtin/conch_loop.c`): its
/// file, and what a command's `exit` runs in bash's place, as the eval
/// loop's [`exit_trap`] does.
pub struct LoopBuiltin<'a> {
    pub so: &'a Path,
    /// The bash, and its `$0`.
    pub shell: &'a Path,
    pub name: String,
    /// The bash has the host's spare channel on [`SPARE_FD`]: the builtin
    /// forks a spare once it is ready; a bash that refuses the builtin
    /// closes it.
    pub spare: bool,
}

/// The start-up text [`BOOTSTRAP`] reads, with the trailer of run 0
/// behind: export the variables, source the snapshot (output discarded),
/// apply the env policy's unsets, and enter the loop (its first turn
/// reports run 0: ready). The loop builtin, when there is one and bash
/// loads it, is the loop, and never returns; otherwise the session's traps
/// are set and the eval loop runs. Run 0's status says which
/// (`crate::shell::engine`).
///
/// With a builtin the text is two chunks: the set-up, ending in the
/// builtin, and the eval loop, which the builtin skips unread and a bash
/// that refuses the builtin runs next. bash parses the whole of a line
/// before it runs any of it (the start-up text is one line), and `read -N`
/// takes the text a character at a time: kept out of the first chunk, the
/// eval loop costs a bash that runs the builtin neither (about a fifth of
/// a session's start-up CPU). A bash that
/// refuses the builtin parses the loop after the snapshot, with the
/// user's aliases and options, as it parses it again after a `break`.
/// Without a builtin the text is one chunk, the loop parsed before the
/// snapshot runs.
pub fn startup(start: &Startup<'_>) -> Vec<u8> {
    // The pipe waits on `OUTPUT_FD` for the commands (see
    // `LOOP_TEMPLATE`). Plain `exec`: nothing of the user's is defined
    // yet, and the redirections of `builtin exec` are undone when it
    // returns. The start-up's own steps write to `/dev/null` (an rc file
    // may set a `DEBUG` trap).
    let mut boot = format!("exec {OUTPUT_FD}>&1; {{ ");
    if let Some(dir) = start.enter {
        let _ = write!(boot, "builtin cd -- {}; ", quote_path(dir));
    }
    for (name, value) in start.exports {
        // A name bash cannot hold (`a-b`, `BASH_FUNC_f%%`) is left out.
        if let Some(name) = name.to_str().filter(|name| is_name(name)) {
            let _ = write!(
                boot,
                "builtin export {name}={}; ",
                quote_bytes(value.as_bytes())
            );
        }
    }
    let (snapshot, unset_script) = (start.snapshot, start.unset_script);
    if let Some(path) = snapshot {
        let _ = write!(boot, "builtin source {} {QUIET_FDS}; ", single_quote(path));
    }
    if !unset_script.is_empty() {
        let _ = write!(boot, "{unset_script}; ");
    }
    // `eval` runs its text a command at a time, as `source` runs a file:
    // a `shopt` of the state applies to the functions after it.
    if let Some(text) = start.restore {
        let _ = write!(boot, "builtin eval {} {QUIET_FDS}; ", single_quote(text));
    }
    let [even, odd] = crate::process::sys::unwind_signals();
    boot.push_str("builtin unset -v __conch_c; } >/dev/null 2>&1; ");
    let spare = start.builtin.as_ref().is_some_and(|b| b.spare);
    let eval_loop = format!(
        "{{ {}builtin unset -v __conch_c; builtin trap {} {even}; builtin trap {} {odd}; \
         builtin trap : INT; builtin trap {} EXIT; }} >/dev/null 2>&1; {}",
        if spare {
            format!("builtin exec {SPARE_FD}>&-; ")
        } else {
            String::new()
        },
        single_quote(&unwind_trap(0)),
        single_quote(&unwind_trap(1)),
        single_quote(start.exit_trap),
        loop_text(),
    );
    let mut out = String::with_capacity(boot.len() + eval_loop.len() + 64);
    match &start.builtin {
        None => {
            boot.push_str(&eval_loop);
            push_chunk(&mut out, &boot);
        }
        Some(builtin) => {
            let _ = write!(
                boot,
                "builtin enable -f {} conch_loop >/dev/null 2>&1 && builtin conch_loop {even} {odd} {} {} {} {} {}",
                single_quote(&builtin.so.to_string_lossy()),
                single_quote(&builtin.name),
                single_quote(&builtin.shell.to_string_lossy()),
                single_quote(BOOTSTRAP),
                CHUNK_DIGITS + eval_loop.len(),
                if builtin.spare {
                    SPARE_FD.to_string()
                } else {
                    "-".into()
                },
            );
            push_chunk(&mut out, &boot);
            push_chunk(&mut out, &eval_loop);
        }
    }
    push_trailer(&mut out, 0, start.out_fd);
    out.into_bytes()
}

/// A chunk of start-up text: its length, then the text.
fn push_chunk(out: &mut String, text: &str) {
    let _ = write!(out, "{:0width$}{text}", text.len(), width = CHUNK_DIGITS);
}

/// Whether bash can hold a variable of this name.
fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_header_payload_trailer_whatever_the_run_number() {
        let msg = run(123_456_789, 12, Kind::Command, "true");
        assert_eq!(msg, b"00000004aptrue2345678900000012");
        let msg = run(7, 5, Kind::Script, "é");
        assert_eq!(&msg[..HEADER_LEN], b"00000002bs");
        assert_eq!(&msg[HEADER_LEN..HEADER_LEN + 2], "é".as_bytes());
        assert_eq!(&msg[HEADER_LEN + 2..], b"0000000700000005");
    }

    /// The start-up text with a builtin is two chunks and run 0's trailer;
    /// what the builtin is told to skip is exactly the second chunk, the
    /// eval loop, which the first does not hold. Without one, one chunk.
    #[test]
    fn a_start_up_with_the_builtin_keeps_the_eval_loop_in_a_chunk_it_skips() {
        fn chunk(text: &str) -> (&str, &str) {
            let len: usize = text[..CHUNK_DIGITS].parse().unwrap();
            text[CHUNK_DIGITS..].split_at(len)
        }
        let so = Path::new("/lib/conch-loop.so");
        let shell = Path::new("/bin/bash");
        let mut start = Startup {
            snapshot: None,
            unset_script: "",
            restore: None,
            exit_trap: "builtin :",
            builtin: Some(LoopBuiltin {
                so,
                shell,
                name: "bash".into(),
                spare: false,
            }),
            out_fd: 9,
            enter: None,
            exports: &[],
        };
        let text = String::from_utf8(startup(&start)).unwrap();
        let (first, rest) = chunk(&text);
        let mut words = first.rsplit(' ');
        let spare = words.next().unwrap();
        let skip: usize = words.next().unwrap().parse().unwrap();
        let (second, trailer) = chunk(rest);
        assert_eq!((skip, spare), (CHUNK_DIGITS + second.len(), "-"));
        assert_eq!(trailer, "0000000000000009");
        assert!(second.contains(&loop_text()) && !first.contains("until"));
        assert!(!second.contains("61>&-"));

        // With a spare channel, the builtin is told where it is, and a bash
        // that refuses the builtin closes it before its eval loop.
        start.builtin.as_mut().unwrap().spare = true;
        let text = String::from_utf8(startup(&start)).unwrap();
        let (first, rest) = chunk(&text);
        let (second, _) = chunk(rest);
        let mut words = first.rsplit(' ');
        assert_eq!(words.next(), Some("61"));
        let skip: usize = words.next().unwrap().parse().unwrap();
        assert_eq!(skip, CHUNK_DIGITS + second.len());
        assert!(second.starts_with("{ builtin exec 61>&-; "));

        start.builtin = None;
        let text = String::from_utf8(startup(&start)).unwrap();
        let (only, trailer) = chunk(&text);
        assert!(only.contains(&loop_text()) && !only.contains("conch_loop"));
        assert_eq!(trailer, "0000000000000009");
    }

    /// The loop rebuilds its own text (what it `eval`s after a `break`
    /// left it): the same template, and the same text again from that.
    #[test]
    fn the_loop_rebuilds_itself() {
        const EVAL: &str = "; builtin eval \"builtin unset -v __conch_l";
        // The rebuilding steps of a loop text, printing what they build.
        fn rebuild(text: &str) -> String {
            let steps = &text[text.find("{ __conch_l=").unwrap()..text.rfind(EVAL).unwrap()];
            let out = std::process::Command::new("bash")
                .args(["--noprofile", "--norc", "-c"])
                .arg(format!("{steps}; builtin printf %s \"$__conch_l\""))
                .output()
                .unwrap();
            String::from_utf8(out.stdout).unwrap()
        }
        let first = rebuild(&loop_text());
        assert!(first.starts_with("{ until ") && first.ends_with("$__conch_l\""));
        assert_eq!(rebuild(&first), first);
        // The literal in it is the template (`printf %q` quotes it its way).
        let literal = &first[first.find("__conch_l=").unwrap() + 10
            ..first.rfind("; builtin printf -v __conch_q").unwrap()];
        assert_eq!(first.replacen(literal, LOOP_MARK, 1), LOOP_TEMPLATE);
    }
}
