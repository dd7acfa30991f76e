//! Ctrl-C (SIGINT) and SIGTERM cancel the running command instead of
//! killing conch: the command runs in its own session, so the terminal's
//! signal reaches only conch, which then stops the command's whole process
//! tree and reports the abort (exit status 130).
//!
//! signal-hook's handler only writes to its own pipe (async-signal-safe); a
//! thread reading the signals cancels the token.

use std::io;

use conch_core::CancelToken;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// Cancels `token` on SIGINT or SIGTERM, for the rest of the process.
pub fn cancel_on_interrupt(token: CancelToken) -> io::Result<()> {
    let mut signals = Signals::new([SIGINT, SIGTERM])?;
    std::thread::Builder::new()
        .name("conch-interrupt".into())
        .spawn(move || {
            for _ in signals.forever() {
                token.cancel();
            }
        })?;
    Ok(())
}

/// SIGTERM, SIGHUP or SIGINT, the ways a client or a user stops a
/// server (`conch mcp`, `conch serve`).
pub async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = hup.recv() => {}
        _ = int.recv() => {}
    }
}
