//! PTY sessions with a virtual terminal.
