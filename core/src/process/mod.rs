//! Process containment shared by the shell and PTY engines: the environment
//! a command gets, and finding/killing every process it started.

pub mod env;
pub mod tree;
