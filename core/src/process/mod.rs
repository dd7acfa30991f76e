//! Process containment shared by the shell and PTY engines: the environment
//! a command gets, spawning contained children, moving a running command's
//! output and stopping it, and finding/killing every process it started.

pub(crate) mod bash;
pub(crate) mod child;
pub mod env;
pub(crate) mod fork;
pub(crate) mod input_wait;
pub(crate) mod io;
pub mod lifeline;
pub(crate) mod no_terminal;
pub(crate) mod pump;
pub mod sandbox;
pub(crate) mod spare;
pub(crate) mod spawner;
pub(crate) mod stop;
pub(crate) mod supervised;
pub(crate) mod sys;
pub(crate) mod tree;
pub(crate) mod watch;

pub use io::{block_sigpipe, grow_pipe};
pub use spawner::find_on_path;
pub use tree::Escalation;
