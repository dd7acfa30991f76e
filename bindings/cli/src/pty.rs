//! `conch pty`: runs a command on conch's pseudo-terminal for a human to
//! try the PTY path. The terminal passes through raw: the command's output
//! (escapes intact) goes to stdout, keystrokes go to the command, Ctrl-C
//! included (it reaches the command through the terminal, as it would in a
//! shell).

use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use conch_core::tool::clamp_timeout;
use conch_core::{CancelToken, PtyOptions, PtySession};
use rustix::termios::{OptionalActions, Termios, tcgetattr, tcgetwinsize, tcsetattr};

use crate::args::{self, HELP, command};
use crate::interrupt::cancel_on_interrupt;

/// Run COMMAND on a pseudo-terminal, passing this terminal through
#[derive(clap::Args)]
#[command(
    override_usage = "conch pty [--cols C] [--rows R] [--cwd DIR] [--timeout SECS] -- COMMAND",
    help_template = HELP,
    after_help = "Exit status: the command's; 124 on timeout."
)]
pub struct Args {
    /// terminal width (default: this terminal's, else 80)
    #[arg(long, value_name = "C", allow_hyphen_values = true)]
    cols: Option<f64>,
    /// terminal height (default: this terminal's, else 24)
    #[arg(long, value_name = "R", allow_hyphen_values = true)]
    rows: Option<f64>,
    /// directory to run in (relative to the current one)
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    cwd: Option<PathBuf>,
    /// deadline, clamped to 1..3600 (default: no limit)
    #[arg(long, value_name = "SECS", allow_hyphen_values = true)]
    timeout: Option<f64>,
    /// the command; several words are joined by spaces
    #[arg(value_name = "COMMAND", trailing_var_arg = true)]
    command: Vec<OsString>,
}

/// A terminal size for the core, which clamps it to its range: a count
/// past `u16` is as large as a size can be.
fn size(count: Option<usize>) -> Option<u16> {
    count.map(|n| u16::try_from(n).unwrap_or(u16::MAX))
}

pub fn main(p: Args) -> Result<i32, String> {
    let command = command(&p.command)?.ok_or("missing COMMAND (conch pty [options] -- COMMAND)")?;
    let cols = size(args::count("--cols", p.cols)?);
    let rows = size(args::count("--rows", p.rows)?);
    let timeout = args::timeout("--timeout", p.timeout)?;
    let (term_cols, term_rows) =
        terminal_size().unwrap_or((conch_core::pty::DEFAULT_COLS, conch_core::pty::DEFAULT_ROWS));
    let mut opts = PtyOptions::new(command);
    opts.cols = cols.unwrap_or(term_cols);
    opts.rows = rows.unwrap_or(term_rows);
    opts.cwd = p.cwd;
    opts.timeout = timeout.map(|secs| clamp_timeout(Some(secs)));
    let cancel = CancelToken::new();
    opts.cancel = Some(cancel.clone());

    let session = Arc::new(PtySession::new());
    let raw = RawMode::enter();
    if raw.is_none() {
        // Not a terminal: Ctrl-C reaches conch, not the command.
        cancel_on_interrupt(cancel).map_err(|e| format!("cannot watch for Ctrl-C: {e}"))?;
    }
    {
        let session = session.clone();
        std::thread::Builder::new()
            .name("conch-pty-input".into())
            .spawn(move || forward_input(&session))
            .map_err(|e| format!("cannot start the input thread: {e}"))?;
    }
    let mut stdout = std::io::stdout();
    let result = session.start(opts, |raw_text| {
        let _ = stdout
            .write_all(raw_text.as_bytes())
            .and_then(|()| stdout.flush());
    });
    drop(raw);
    let result = match result {
        Ok(result) => result,
        // Bad input the core refused (a missing --cwd): the command could
        // not start, as for `conch run`.
        Err(e) => {
            crate::eprint_line(&format!("conch pty: {e}"));
            return Ok(1);
        }
    };
    Ok(match result.exit_code {
        _ if result.timed_out => 124,
        _ if result.cancelled => 130,
        Some(code) => code,
        None => {
            // A start failure: the reason is in the model's text only.
            crate::eprint_text(&result.summary.output);
            1
        }
    })
}

/// Copies stdin to the command until stdin ends.
fn forward_input(session: &PtySession) {
    let mut stdin = std::io::stdin().lock();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stdin.read(&mut buf) {
        if n == 0 {
            return;
        }
        // Input while no command runs (before start, after exit) is dropped.
        let _ = session.write(&buf[..n]);
    }
}

/// This terminal's size, when stdout is one.
fn terminal_size() -> Option<(u16, u16)> {
    let size = tcgetwinsize(std::io::stdout()).ok()?;
    (size.ws_col > 0 && size.ws_row > 0).then_some((size.ws_col, size.ws_row))
}

/// stdin switched to raw mode while it lives, when stdin is a terminal.
struct RawMode(Termios);

impl RawMode {
    fn enter() -> Option<RawMode> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return None;
        }
        let saved = tcgetattr(&stdin).ok()?;
        let mut raw = saved.clone();
        raw.make_raw();
        tcsetattr(&stdin, OptionalActions::Now, &raw).ok()?;
        Some(RawMode(saved))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // Restores the settings saved by `enter`.
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &self.0);
    }
}
