//! Process containment shared by the shell and PTY engines.
