//! The persistent bash engine: [`Shell`] (a long-lived bash driven through a
//! small protocol), [`execute_shell`] (a fresh process per call), the rc
//! [`snapshot`], and the process-wide session [`registry`].

pub mod engine;
mod oneshot;
mod options;
mod queue;
pub mod reentry;
pub mod registry;
mod session;
pub mod snapshot;
mod state;

pub use crate::run_result::BashResult;
pub use engine::{Engine, EngineChoice};
pub use oneshot::{ExecuteOptions, execute_shell};
pub use options::{RunOptions, ShellOptions, Snapshot};
pub use queue::Place;
pub use session::{Run, Shell};
