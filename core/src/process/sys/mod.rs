//! The operating system under the process layer: what Linux does one way
//! and macOS and the BSDs another, behind one surface, so the engines above
//! (spawner, poll loops, containment) are written once.
//!
//! | need | Linux | macOS, FreeBSD |
//! |---|---|---|
//! | start a child without copying the host | `clone(CLONE_VM \| CLONE_VFORK)` | `fork` |
//! | see a child exit in `poll` | pidfd | a pipe closed by a kqueue thread (`NOTE_EXIT`) |
//! | wake a `poll` | eventfd | a self-pipe |
//! | no SIGPIPE on a socket write | `MSG_NOSIGNAL` | `SO_NOSIGPIPE` (macOS), `MSG_NOSIGNAL` |
//! | die with the host | `PR_SET_PDEATHSIG` | the host's guard ([`super::lifeline`]) |
//! | keep orphans findable | child subreaper | session and process group |
//! | inherited descriptors close on exec | `close_range(CLOSE_RANGE_CLOEXEC)` | `fcntl` over the table |
//!
//! The functions marked "in the child" run between the fork (or clone)
//! and `execve`: system calls only, no allocation, no lock, no panic.

#[cfg(not(target_os = "linux"))]
mod bsd;
#[cfg(target_os = "linux")]
mod linux;

#[cfg(not(target_os = "linux"))]
pub use bsd::*;
#[cfg(target_os = "linux")]
pub use linux::*;
