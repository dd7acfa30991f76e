//! The persistent bash engine: [`Shell`] (a long-lived bash driven through a
//! small protocol), [`execute_shell`] (a fresh process per call), the rc
//! [`snapshot`], and the process-wide session [`registry`].

pub mod cwd;
pub mod oneshot;
pub mod options;
pub(crate) mod private_dir;
pub mod protocol;
mod queue;
pub mod reentry;
pub mod registry;
pub mod result;
pub mod session;
pub mod snapshot;
mod state;

pub use oneshot::{ExecuteOptions, execute_shell};
pub use options::{RunOptions, ShellOptions, Snapshot};
pub use queue::Place;
pub use result::BashResult;
pub use session::{Run, Shell};
