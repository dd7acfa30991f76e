//! The text conch sends to its bash, and the status records bash sends back.
//!
//! bash reads its commands (stdin, a socket) one byte at a time, so each run
//! is a single short line. The command itself travels as *data*: an ANSI-C
//! quoted string (`$'…'`) handed to `eval`, so an unbalanced quote or a
//! stray heredoc in it is bash's own syntax error (status 2) and cannot
//! swallow the protocol. Commands over [`INLINE_LIMIT`] bytes go through a
//! file instead (`$(< file)`), which bash reads in bulk.
//!
//! The command runs in a group with stdin from `/dev/null` and the status
//! descriptor closed, so neither it nor its children can read the protocol
//! or forge a status. After it, the function `__conch_done` (defined at
//! startup, called with stderr to `/dev/null`) writes
//! `seq NUL status NUL $PWD NUL` to [`STATUS_FD`], switches `xtrace` and
//! `verbose` off so the next protocol line is neither traced nor echoed, and
//! prepares `$__conch_on` to switch them back on inside the next `eval`: so
//! `set -x` traces only the user's commands. Keeping that work in a function
//! keeps the per-run line short (~70 bytes plus the command), which is most
//! of the cost of a run that does nothing.
//!
//! The `__conch_*` names live in the user's shell; redefining them breaks
//! the session the way redefining `PROMPT_COMMAND` would break a terminal.
//! Builtins are called as `builtin …`, so a user's function named `printf`,
//! `read`, `cd` or `eval` changes nothing here.

use std::fmt::Write as _;

/// The descriptor on which bash reports completed runs.
pub const STATUS_FD: i32 = 62;

/// Commands longer than this are passed through a file rather than inline.
pub const INLINE_LIMIT: usize = 64 * 1024;

/// Where the command text comes from.
pub enum CommandText<'a> {
    Inline(&'a str),
    /// A file holding the command (bash reads it with `$(< file)`).
    File(&'a str),
}

/// Everything one run line needs.
pub struct RunLine<'a> {
    pub seq: u64,
    pub command: CommandText<'a>,
    /// A directory to run in (already validated); the session cwd is restored after.
    pub cwd: Option<&'a str>,
    /// Variables set for this run only (names already validated).
    pub env: &'a [(String, String)],
}

impl RunLine<'_> {
    /// The complete line, newline-terminated.
    pub fn render(&self) -> String {
        let mut s = String::with_capacity(96 + self.command_len());
        // An empty line first: after some syntax errors inside `eval` (an
        // unterminated quote), bash does not treat the next token as a
        // reserved word; an empty line resets that.
        s.push('\n');
        let file = match self.command {
            CommandText::File(path) => Some(path),
            CommandText::Inline(_) => None,
        };
        if file.is_some() || self.cwd.is_some() {
            s.push_str("{ ");
            if let Some(path) = file {
                let _ = write!(s, "__conch_c=$(< {}); ", single_quote(path));
            }
            if let Some(dir) = self.cwd {
                let _ = write!(s, "__conch_d=$PWD; cd -- {}; ", single_quote(dir));
            }
            s.push_str("} 2>/dev/null && ");
        }
        s.push_str("{ ");
        for (k, v) in self.env {
            let _ = write!(s, "{k}={} ", single_quote(v));
        }
        // Plain `eval`, not `builtin eval`: the run's variables are a
        // temporary environment of this command, and `builtin eval` drops
        // them after the first builtin the command runs.
        s.push_str("eval \"$__conch_on\"");
        match self.command {
            CommandText::Inline(cmd) => s.push_str(&ansi_c_quote(cmd)),
            CommandText::File(_) => s.push_str("\"$__conch_c\""),
        }
        let _ = writeln!(
            s,
            "; }} </dev/null {STATUS_FD}>&-; {{ __conch_done {}; }} 2>/dev/null",
            self.seq
        );
        s
    }

    fn command_len(&self) -> usize {
        match self.command {
            CommandText::Inline(cmd) => cmd.len() + cmd.len() / 8,
            CommandText::File(path) => path.len(),
        }
    }
}

/// Defines `__conch_done` (see the module doc). `$?` is read first, before
/// anything else can change it. The function writes to descriptor 62:
const _: () = assert!(STATUS_FD == 62);
const DONE_FUNCTION: &str = "__conch_done() { __conch_s=$?; __conch_f=$-; builtin set +vx; \
     __conch_on=; \
     case $__conch_f in *x*) __conch_on='set -x'$'\\n';; esac; \
     case $__conch_f in *v*) __conch_on+='set -v'$'\\n';; esac; \
     [[ -z $__conch_d ]] || builtin cd -- \"$__conch_d\"; \
     builtin printf '%s\\0%s\\0%s\\0' \"${1-$__conch_q}\" \"$__conch_s\" \"$PWD\" >&62; \
     builtin unset __conch_c __conch_d __conch_s __conch_f; }";

/// The fixed text of a plain run, kept in a variable and `eval`ed at top
/// level (so the command runs in global scope, never in a function): it
/// reads a 16-byte header (seq, payload length) and the payload in bulk
/// with `read -N` (one `read(2)` each, where the parser reads a line one
/// byte at a time), then runs the payload. `RUN_BYTES` does the same for a
/// payload that is not ASCII, counting bytes (`LC_ALL=C`), not characters.
const RUN_SCRIPT: &str = "__conch_run='IFS= builtin read -r -N 16 __conch_h; __conch_q=${__conch_h:0:8}; \
     IFS= builtin read -r -N \"${__conch_h:8}\" __conch_c; { builtin eval \"$__conch_on$__conch_c\"; } </dev/null 62>&-; \
     { __conch_done; } 2>/dev/null'; \
     __conch_runb='IFS= builtin read -r -N 16 __conch_h; __conch_q=${__conch_h:0:8}; \
     LC_ALL=C IFS= builtin read -r -N \"${__conch_h:8}\" __conch_c; { builtin eval \"$__conch_on$__conch_c\"; } </dev/null 62>&-; \
     { __conch_done; } 2>/dev/null'";

/// A plain run (no per-run cwd or env, command inline): a 20-byte line,
/// then the header and the command as a payload read in bulk.
pub fn plain_run(seq: u64, command: &str) -> Vec<u8> {
    let var = if command.is_ascii() {
        "__conch_run"
    } else {
        "__conch_runb"
    };
    let mut out = Vec::with_capacity(48 + command.len());
    out.extend_from_slice(
        format!("\nbuiltin eval \"${var}\"\n{seq:08}{:08}", command.len()).as_bytes(),
    );
    out.extend_from_slice(command.as_bytes());
    out
}

/// The line run once after bash starts: source the snapshot (output
/// discarded), apply the env policy's unsets, define the protocol function,
/// and report ready as run 0.
pub fn startup_line(snapshot: Option<&str>, unset_script: &str) -> String {
    let mut s = String::from("{ ");
    if let Some(path) = snapshot {
        let _ = write!(
            s,
            "source {} </dev/null >/dev/null 2>&1; ",
            single_quote(path)
        );
    }
    if !unset_script.is_empty() {
        let _ = write!(s, "{unset_script}; ");
    }
    let _ = writeln!(
        s,
        "{DONE_FUNCTION}; {RUN_SCRIPT}; __conch_on=; builtin true; __conch_done 0; }} 2>/dev/null"
    );
    s
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
                cwd: "/tmp".into()
            })
        );
        p.push(b"2\x00/x\x00");
        assert_eq!(
            p.next_record(),
            Some(StatusRecord {
                seq: 4,
                status: 2,
                cwd: "/x".into()
            })
        );
        assert_eq!(p.next_record(), None);
    }
}
