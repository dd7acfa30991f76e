//! Process containment shared by the shell and PTY engines: the environment
//! a command gets, spawning contained children, moving a running command's
//! output and stopping it, and finding/killing every process it started.

pub mod child;
pub mod env;
pub mod io;
pub mod lifeline;
pub mod pump;
pub mod sandbox;
pub mod spawner;
pub mod stop;
pub mod supervised;
pub mod tree;
pub mod watch;
