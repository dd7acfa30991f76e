//! The virtual terminal a PTY run draws on, so a host can render what the
//! program shows (a prompt, a progress bar, a full-screen TUI) instead of the
//! raw byte stream, and so key input can follow the program's modes.
//!
//! Built on the `vt100` crate (0.18): a maintained, pure-Rust VT100/xterm
//! emulator on top of `vte` (the parser Alacritty uses), with no C
//! dependencies or event loop. It keeps the cell grid, the alternate screen,
//! scrollback with a fixed capacity, the cursor and the input modes we need
//! (application cursor keys), and it resizes. The alternatives were a full
//! emulator crate built for a GUI (`alacritty_terminal`: heavier, pulls a
//! config and event system) or our own parser on `vte` (more code to get
//! right). Terminal queries are answered here (cursor position, status,
//! primary device attributes) because programs block waiting for the reply a
//! real terminal gives.

use std::num::NonZeroU16;

/// Rows of scrollback kept above the screen. Bounded so memory stays small
/// (a row is 32 bytes per column: 1,000 rows of 400 columns is 12.8 MB at
/// most) whatever the program prints.
pub const SCROLLBACK_ROWS: usize = 1_000;

/// A terminal screen fed with a program's output.
pub struct Screen {
    parser: vt100::Parser<Replies>,
}

/// Collects the replies a real terminal would send back to the program.
#[derive(Default)]
struct Replies {
    pending: Vec<u8>,
}

impl vt100::Callbacks for Replies {
    fn unhandled_csi(
        &mut self,
        screen: &mut vt100::Screen,
        i1: Option<u8>,
        _i2: Option<u8>,
        params: &[&[u16]],
        c: char,
    ) {
        let first = params.first().and_then(|p| p.first()).copied().unwrap_or(0);
        match (i1, c, first) {
            // DSR 6: cursor position report, 1-based.
            (None, 'n', 6) => {
                let (row, col) = screen.cursor_position();
                self.pending.extend_from_slice(
                    format!("\x1b[{};{}R", u32::from(row) + 1, u32::from(col) + 1).as_bytes(),
                );
            }
            // DSR 5: status report, "OK".
            (None, 'n', 5) => self.pending.extend_from_slice(b"\x1b[0n"),
            // DA1: "VT100 with advanced video option", as xterm answers in
            // VT100 mode; what Kitty-protocol probes wait for.
            (None, 'c', 0) => self.pending.extend_from_slice(b"\x1b[?1;2c"),
            _ => {}
        }
    }
}

impl Screen {
    /// A blank screen of `cols` x `rows` (each at least 1).
    pub fn new(cols: u16, rows: u16) -> Self {
        Self::with_scrollback(cols, rows, SCROLLBACK_ROWS)
    }

    /// A screen kept only for the input modes the program sets
    /// ([`Screen::application_cursor`]), on a terminal whose picture no
    /// one reads (a job's): they do not depend on its size, so it is the
    /// smallest there is, without scrollback.
    pub(crate) fn modes_only() -> Self {
        Self::with_scrollback(1, 1, 0)
    }

    fn with_scrollback(cols: u16, rows: u16, scrollback: usize) -> Self {
        Screen {
            parser: vt100::Parser::new_with_callbacks(
                nonzero(rows),
                nonzero(cols),
                scrollback,
                Replies::default(),
            ),
        }
    }

    /// Applies program output (text with escape sequences) to the screen.
    pub fn process(&mut self, bytes: &[u8]) {
        self.parser.process(bytes);
    }

    /// Takes the replies owed to the program for the queries it made
    /// (cursor position, status, device attributes), to be written to it.
    pub fn take_replies(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.parser.callbacks_mut().pending)
    }

    /// Changes the size (each at least 1). Rows that no longer fit go to the
    /// scrollback; columns are cut or padded.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        self.parser.set_size(nonzero(rows), nonzero(cols));
    }

    /// `(cols, rows)`.
    pub fn size(&self) -> (u16, u16) {
        let (rows, cols) = self.parser.screen().size();
        (cols.get(), rows.get())
    }

    /// The visible screen as text: one line per row, trailing blanks of each
    /// row and blank rows at the bottom removed.
    pub fn text(&self) -> String {
        let screen = self.parser.screen();
        let (_, cols) = screen.size();
        let mut text = String::new();
        for row in screen.rows(0, cols.get()) {
            text.push_str(row.trim_end());
            text.push('\n');
        }
        let kept = text.trim_end_matches('\n').len();
        text.truncate(kept);
        text
    }

    /// The cursor as `(row, col)`, 0-based from the top left.
    pub fn cursor_position(&self) -> (u16, u16) {
        self.parser.screen().cursor_position()
    }

    /// Whether the program asked for application cursor keys (DECCKM,
    /// `ESC [ ? 1 h`): arrows must then be sent as `ESC O x`.
    pub fn application_cursor(&self) -> bool {
        self.parser.screen().application_cursor()
    }

    /// Whether the program switched to the alternate screen (full-screen
    /// programs such as editors and pagers do).
    pub fn alternate_screen(&self) -> bool {
        self.parser.screen().alternate_screen()
    }

    /// Rows currently held in the scrollback (at most [`SCROLLBACK_ROWS`]).
    pub fn scrollback_rows(&self) -> usize {
        self.parser.screen().scrollback_len()
    }
}

fn nonzero(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_text_by_cursor_moves() {
        let mut s = Screen::new(20, 5);
        s.process(b"\x1b[2J\x1b[Hhello\x1b[5;3Hworld");
        assert_eq!(s.text(), "hello\n\n\n\n  world");
        assert_eq!(s.cursor_position(), (4, 7));
    }

    #[test]
    fn tracks_application_cursor_mode() {
        let mut s = Screen::new(20, 5);
        assert!(!s.application_cursor());
        s.process(b"\x1b[?1h");
        assert!(s.application_cursor());
        s.process(b"\x1b[?1l");
        assert!(!s.application_cursor());
    }

    #[test]
    fn a_screen_for_modes_only_tracks_them_whatever_it_draws() {
        let mut s = Screen::modes_only();
        s.process(b"a long line that wraps\r\n\x1b[2J\x1b[?1049h\x1b[?1");
        s.process(b"h\x1b[10;40Hmore");
        assert!(s.application_cursor());
        assert_eq!((s.size(), s.scrollback_rows()), ((1, 1), 0));
        s.process(b"\x1bc");
        assert!(!s.application_cursor());
    }

    #[test]
    fn answers_queries() {
        let mut s = Screen::new(20, 5);
        s.process(b"ab\x1b[6n\x1b[5n\x1b[c");
        assert_eq!(s.take_replies(), b"\x1b[1;3R\x1b[0n\x1b[?1;2c");
        assert!(s.take_replies().is_empty());
    }

    #[test]
    fn scrollback_is_bounded_and_resize_keeps_the_cursor_row() {
        let mut s = Screen::new(20, 5);
        for i in 0..(SCROLLBACK_ROWS + 50) {
            s.process(format!("line {i}\r\n").as_bytes());
        }
        assert_eq!(s.scrollback_rows(), SCROLLBACK_ROWS);
        s.resize(30, 3);
        assert_eq!(s.size(), (30, 3));
        let last = format!("line {}", SCROLLBACK_ROWS + 49);
        assert!(s.text().contains(&last), "{:?}", s.text());
    }

    #[test]
    fn zero_sizes_do_not_panic() {
        let mut s = Screen::new(0, 0);
        s.process(b"x");
        s.resize(0, 0);
        assert_eq!(s.size(), (1, 1));
    }
}
