//! PTY sessions with a virtual terminal.
//!
//! [`keys`] turns host key input (named keys, Kitty keyboard sequences) into
//! the bytes a legacy terminal sends; [`screen`] is the virtual terminal the
//! program draws on.

pub mod keys;
pub mod screen;

pub use keys::{Key, KeyCode, Modifiers, normalize_input};
pub use screen::Screen;
