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

/// The watchdog, as bash source ending in `&`: a subshell that waits for
/// the end of the lifeline on descriptor 61 (nothing is ever written
/// there), then freezes every process below the bash that started it
/// (`$$`) but itself, kills them all, and kills that bash. It holds none
/// of the session's descriptors (no output, no status, no protocol). The
/// bash that starts it closes its own copy of descriptor 61 afterwards.
pub const WATCHDOG: &str = "( b=$$ w=$BASHPID; while IFS= read -r -u 61 _; do :; done; \
p=(); t() { local k c; for k in /proc/$1/task/*; do c=(); \
read -r -a c < \"$k/children\"; for c in \"${c[@]}\"; do \
[[ $c == \"$w\" ]] && continue; kill -STOP \"$c\"; p+=(\"$c\"); t \"$c\"; done; done; }; \
kill -STOP \"$b\"; t \"$b\"; kill -KILL \"${p[@]}\" \"$b\" ) \
</dev/null >/dev/null 2>&1 62>&- 63>&- &";

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
