//! Stopping a command that runs a full-screen program without a terminal
//! (docs/behaviour.md, section 9, "Programs that need a terminal"). Vim
//! without one waits for keys that never come, until the run's timeout;
//! others draw screens into the output. The run's output shows it
//! (`output::fullscreen`: the alternate screen, an editor's warning); once
//! it does, the command is stopped when it is seen waiting for keys: the
//! output quiet for [`QUIET`], and a process of the command blocked reading
//! its stdin (`process::input_wait`). Vim's two seconds with its warning
//! are a sleep, not a read, so `vim -c wq file` still edits the file. A
//! program that said it quits for want of a terminal (nano) is stopped at
//! once. Where the processes cannot be looked at, a sign and
//! [`UNSURE_QUIET`] of silence are enough.
//!
//! The engines (the session's run loop, one-shot runs, jobs without a
//! terminal) call [`NoTerminal::look`] when [`NoTerminal::due`] says, so a
//! run that shows no sign costs nothing here; one that does costs a look
//! at its processes every [`LOOK_EVERY`].

use std::time::{Duration, Instant};

use super::input_wait::{self, Reading};
use super::tree::Pid;
use crate::output::fullscreen::{Sign, Signs};

/// How long the output must be quiet after a sign before the command's
/// processes are looked at.
pub(crate) const QUIET: Duration = Duration::from_millis(200);
/// The looks after that, while the command goes on.
const LOOK_EVERY: Duration = Duration::from_millis(100);
/// The quiet after a sign that stops a command whose processes cannot be
/// looked at (past Vim's two seconds with its warning).
pub(crate) const UNSURE_QUIET: Duration = Duration::from_secs(3);

/// The name a notice gives a program: a process name (the system keeps at
/// most 15 bytes of it) or a name a sign gave, held inline so that a stop
/// carries it as a plain value. Empty: not known.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Program {
    len: u8,
    name: [u8; Program::MAX],
}

impl Program {
    const MAX: usize = 15;

    /// `name`, cut to 15 bytes (at a character boundary), without the
    /// characters that would end or break the notice (`]`, controls).
    pub fn new(name: &str) -> Program {
        let mut program = Program {
            len: 0,
            name: [0; Program::MAX],
        };
        for c in name.chars().filter(|c| *c != ']' && !c.is_control()) {
            let mut buf = [0u8; 4];
            let bytes = c.encode_utf8(&mut buf).as_bytes();
            let at = program.len as usize;
            if at + bytes.len() > Program::MAX {
                break;
            }
            program.name[at..at + bytes.len()].copy_from_slice(bytes);
            program.len += bytes.len() as u8;
        }
        program
    }

    /// A program whose name is not known.
    pub fn unknown() -> Program {
        Program::new("")
    }

    /// The name, or `this program` when it is not known.
    pub fn as_str(&self) -> &str {
        match std::str::from_utf8(&self.name[..self.len as usize]) {
            Ok("") | Err(_) => "this program",
            Ok(name) => name,
        }
    }
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

/// The notice's words after the program's name.
const NEEDS: &str =
    " needs a terminal: stopped. Edit files with the edit tool, or start it as a job with a PTY";

/// The notice of a command stopped because `program` needs a terminal
/// (docs/behaviour.md, section 9).
pub fn notice(program: Program) -> String {
    format!("{}{NEEDS}", program.as_str())
}

/// Whether `line` (without its brackets) is such a notice.
pub fn is_notice(line: &str) -> bool {
    line.ends_with(NEEDS)
}

/// The looks of one command without a terminal.
#[derive(Debug, Default)]
pub(crate) struct NoTerminal {
    /// The next look, once one found nothing.
    next: Option<Instant>,
}

impl NoTerminal {
    /// When the next look is due: `None` while the output shows no sign.
    pub(crate) fn due(&self, signs: &Signs) -> Option<Instant> {
        let sign = signs.found()?;
        let last = signs.last_output()?;
        if let Sign::GaveUp(_) = sign {
            return Some(last);
        }
        let quiet_at = last + QUIET;
        Some(self.next.map_or(quiet_at, |next| next.max(quiet_at)))
    }

    /// Looks, if a look is due at `now`, whether the command must be
    /// stopped for want of a terminal; `processes` lists its processes.
    /// Returns the program to name in the notice.
    pub(crate) fn look(
        &mut self,
        now: Instant,
        signs: &Signs,
        processes: impl FnOnce() -> Vec<Pid>,
    ) -> Option<Program> {
        let due = self.due(signs)?;
        if now < due {
            return None;
        }
        let sign = signs.found()?;
        let named = || sign.program().map_or_else(Program::unknown, Program::new);
        if let Sign::GaveUp(_) = sign {
            return Some(named());
        }
        self.next = Some(now + LOOK_EVERY);
        let pids = processes();
        let mut unsure = false;
        for &pid in &pids {
            match input_wait::reading(pid, &mut |fd| fd == 0) {
                Reading::Yes => {
                    return Some(input_wait::comm(pid).map_or_else(named, |n| Program::new(&n)));
                }
                Reading::Unknown => unsure = true,
                Reading::No => {}
            }
        }
        let quiet = signs.last_output().map_or(Duration::ZERO, |t| now - t);
        if unsure && quiet >= UNSURE_QUIET {
            let first = pids.first().and_then(|&pid| input_wait::comm(pid));
            return Some(match sign.program() {
                Some(name) => Program::new(name),
                None => first.map_or_else(Program::unknown, |n| Program::new(&n)),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_name_is_kept_inline_and_cut_to_what_the_system_keeps() {
        assert_eq!(Program::new("vi").as_str(), "vi");
        assert_eq!(Program::unknown().as_str(), "this program");
        assert_eq!(Program::new("a]b\nc").as_str(), "abc");
        assert_eq!(
            Program::new("0123456789abcdefgh").as_str(),
            "0123456789abcde"
        );
        // Not cut inside a character.
        assert_eq!(Program::new("ééééééééé").as_str(), "ééééééé");
        assert_eq!(
            notice(Program::new("vi")),
            "vi needs a terminal: stopped. Edit files with the edit tool, or start it as a job with a PTY"
        );
        assert!(is_notice(&notice(Program::unknown())));
    }

    #[test]
    fn nothing_is_due_without_a_sign_and_a_quitter_is_stopped_at_once() {
        let mut looks = NoTerminal::default();
        let mut signs = Signs::default();
        signs.push(b"plain text\n");
        assert_eq!(looks.due(&signs), None);
        assert_eq!(
            looks.look(Instant::now(), &signs, || panic!("no look")),
            None
        );
        signs.push(b"\x1b[?1049h");
        let due = looks.due(&signs).unwrap();
        assert!(due > Instant::now());
        assert_eq!(
            looks.look(Instant::now(), &signs, || panic!("not yet")),
            None
        );
        signs.push(b"\nStandard input is not a terminal\n");
        assert_eq!(
            looks.look(Instant::now(), &signs, || panic!("no look needed")),
            Some(Program::new("nano"))
        );
    }
}
