//! PTY sessions with a virtual terminal.
//!
//! [`PtySession`] runs a command on a pseudo-terminal and keeps what it draws
//! on a virtual [`Screen`]; [`keys`] turns host key input (named keys, Kitty
//! keyboard sequences) into the bytes a legacy terminal sends.

pub mod keys;
mod result;
mod screen;
mod session;
mod spawn;
mod utf8;

pub use keys::{Key, KeyCode, Modifiers, normalize_input};
pub use result::PtyResult;
pub use screen::Screen;
pub(crate) use session::clamp_size;
pub use session::{
    DEFAULT_COLS, DEFAULT_ROWS, MAX_COLS, MAX_ROWS, MIN_COLS, MIN_ROWS, PtyOptions, PtySession,
};
pub(crate) use spawn::open_terminal;
