//! Nothing a session started outlives the host.
//!
//! `PR_SET_PDEATHSIG` reaches only a direct child: kill the host, and bash
//! dies while what it started (background jobs, `setsid` and double-fork
//! escapes) goes on under init. So the host keeps the write end of one
//! pipe for its whole life, the *lifeline*, and never writes to it; each
//! session's bash gets the read end and hands it to a small watchdog it
//! starts below itself. When the host dies by any means (a crash, SIGKILL,
//! `process.exit()`), the kernel closes the write end, the watchdog reads
//! end-of-file, and it takes down every process below bash (frozen first,
//! so nothing forks meanwhile), then bash. Bash itself is only frozen by
//! the host's death (`Launch::freeze_on_host_death`), so its tree stays
//! intact, with bash as the subreaper of every orphan, until the watchdog
//! has walked it.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::OnceLock;

use super::io::pipe;
use crate::Result;

/// The descriptor a session's bash gets the read end on.
pub const LIFELINE_FD: RawFd = 61;

/// Both ends, close-on-exec, held until the process exits.
static LIFELINE: OnceLock<(OwnedFd, OwnedFd)> = OnceLock::new();

/// The read end of the host's lifeline, for a child's descriptor table.
pub fn read_end() -> Result<RawFd> {
    if let Some((read, _)) = LIFELINE.get() {
        return Ok(read.as_raw_fd());
    }
    let ends = pipe()?;
    // Another thread may have won the race: its pair is the one kept.
    Ok(LIFELINE.get_or_init(|| ends).0.as_raw_fd())
}
