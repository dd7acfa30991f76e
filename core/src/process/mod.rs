//! Process containment shared by the shell and PTY engines: the environment
//! a command gets, spawning contained children, driving a running command,
//! and finding/killing every process it started.

pub mod child;
pub mod drive;
pub mod env;
pub mod io;
pub mod spawner;
pub mod supervised;
pub mod tree;
pub mod watch;
