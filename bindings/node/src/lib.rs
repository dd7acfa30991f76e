//! The Node face of conch (npm package `conch`): napi-rs bindings over
//! conch-core. Like every face, it translates types and threads only; the
//! core decides everything.
//!
//! Threads: a long call (`Shell.run`, `executeShell`, `executeBash`) runs on
//! a thread of its own ([`worker`]), so the event loop never blocks and a
//! command that runs for an hour does not hold one of libuv's four pool
//! threads. The core calls the chunk callback on that thread; [`stream`]
//! carries each chunk to the JS thread, in order, and the promise settles
//! only after the last one was delivered. `Shell.run` first waits a moment
//! for the command on the JS thread ([`quick`]): most commands end within
//! it and are answered without a trip through the event loop. So does a
//! `Shell.poll` that does not wait; one that waits runs on a thread of its
//! own.
//!
//! The modules are public so that the Rust items behind each JS export stay
//! reachable in every build (napi registers them in a static initializer).

pub mod artifact;
pub mod command;
pub mod errors;
pub mod execute;
pub mod job_calls;
pub mod jobs;
pub mod options;
pub mod pty;
pub mod quick;
pub mod remote;
pub mod remote_files;
pub mod remote_pty;
pub mod remote_tool;
pub mod result;
pub mod shell;
pub mod signal;
pub mod stream;
pub mod teardown;
pub mod tool;
pub mod worker;
