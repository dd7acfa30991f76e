//! A command that asks `less` to follow a file (`less +F log`), run without
//! a terminal (docs/behaviour.md, section 9, "Programs that need a
//! terminal"). `less` whose output is not a terminal copies its input as
//! `cat` does and exits 0: nothing waits, so nothing is stopped, but the
//! file was printed once, not followed, and a model reading the output
//! would take it for all there is. The output of such a run, or job, then
//! ends with a notice that says so ([`NOTICE`]).
//!
//! Only the command's text tells: `less` is gone before its processes could
//! be looked at, and its output is the file's. So this is a reading of the
//! command line (the interceptor's tokenizer and simple commands), after
//! one substring search that most commands fail.

use super::segment::simple_commands;
use super::tokenize::{TokenKind, tokenize};
use crate::output::sink::notice_line;
use crate::run_result::BashResult;

/// The program whose follow mode needs a terminal.
const PROGRAM: &str = "less";

/// Words that run the next word as the command.
const RUNNERS: [&str; 3] = ["command", "exec", "nohup"];

/// Ends the output of a run of `command` without a terminal with the
/// notice, if `command` has `less` follow a file and was not stopped.
pub(crate) fn add_notice(result: &mut BashResult, command: &str) {
    if !result.cancelled && follows(command) {
        result.add_trailer(&notice_line(NOTICE));
    }
}

/// What the output ends with (as `[NOTICE]`).
pub(crate) const NOTICE: &str = "less needs a terminal to follow a file: it printed the file \
     once and exited. Follow a file with `tail -f` in a job, or start less as a job with a PTY";

/// Whether a simple command of `command` runs `less` with a follow command
/// (`+F`, `++F`, `+GF`: `+` commands whose last is `F`).
pub(crate) fn follows(command: &str) -> bool {
    if !command.contains(PROGRAM) {
        return false;
    }
    let tokens = tokenize(command).tokens;
    simple_commands(command, &tokens).iter().any(|simple| {
        let mut target = false;
        let mut words = tokens
            .iter()
            .filter(|t| t.start >= simple.start && t.end <= simple.end)
            .filter_map(|t| {
                // A redirection's target is not an argument.
                let is_target = std::mem::replace(&mut target, false);
                match t.kind {
                    TokenKind::Redirect(_) => {
                        target = true;
                        None
                    }
                    TokenKind::Word if !is_target => Some(unquoted(t.text(command))),
                    _ => None,
                }
            })
            .skip_while(|w| RUNNERS.contains(&w.as_str()));
        let is_less = words
            .next()
            .is_some_and(|program| program.rsplit('/').next() == Some(PROGRAM));
        is_less && words.any(|arg| is_follow(&arg))
    })
}

/// `+F`, `++F`, `+GF`: one or two `+`, then letters ending with `F`.
fn is_follow(arg: &str) -> bool {
    let commands = arg
        .strip_prefix("++")
        .or_else(|| arg.strip_prefix('+'))
        .unwrap_or("");
    commands.ends_with('F') && commands.bytes().all(|b| b.is_ascii_alphabetic())
}

/// `word` without its quotes (`'+F'`, `"less"`).
fn unquoted(word: &str) -> String {
    word.chars().filter(|c| !matches!(c, '\'' | '"')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn less_asked_to_follow_is_found_wherever_it_runs() {
        for command in [
            "less +F notes.txt",
            "less ++F notes.txt",
            "less +GF notes.txt",
            "less -R '+F' notes.txt",
            "/usr/bin/less +F notes.txt",
            "cd /tmp && LESS=-R less +F notes.txt",
            "exec less +F notes.txt",
            "echo start; less +F a b",
            "make 2>&1 | less +F",
            "if true; then less +F log; fi",
        ] {
            assert!(follows(command), "{command}");
        }
    }

    #[test]
    fn other_uses_of_less_and_of_f_are_not() {
        for command in [
            "less notes.txt",
            "less -F notes.txt",
            "less +/Fail notes.txt",
            "less +G notes.txt",
            "less +100 notes.txt",
            "echo less +F",
            "tail -f notes.txt",
            "cat +F",
            "less notes.txt > +F",
            "lesser +F notes.txt",
            "git log # less +F",
        ] {
            assert!(!follows(command), "{command}");
        }
    }
}
