//! Ctrl-C (SIGINT) and SIGTERM cancel the running command instead of
//! killing conch: the command runs in its own session, so the terminal's
//! signal reaches only conch, which then stops the command's whole process
//! tree and reports the abort (exit status 130).
//!
//! The handler only writes a byte to a pipe (async-signal-safe); a thread
//! reading the pipe cancels the token.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

use conch_core::CancelToken;

static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(_: libc::c_int) {
    let fd = WAKE_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        // SAFETY: write(2) is async-signal-safe; a lost byte only means an
        // earlier one is still unread.
        unsafe { libc::write(fd, b"!".as_ptr().cast(), 1) };
    }
}

/// Cancels `token` on SIGINT or SIGTERM, for the rest of the process.
pub fn cancel_on_interrupt(token: CancelToken) -> io::Result<()> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills `fds` with two new descriptors, which we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read_fd, write_fd] = fds;
    WAKE_FD.store(write_fd, Ordering::Relaxed);
    std::thread::Builder::new()
        .name("conch-interrupt".into())
        .spawn(move || {
            let mut byte = 0u8;
            loop {
                // SAFETY: reads one byte into `byte` from our own pipe.
                let n = unsafe { libc::read(read_fd, (&raw mut byte).cast(), 1) };
                if n == 1 {
                    token.cancel();
                } else if n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted
                {
                    return;
                }
            }
        })?;
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: installs a handler that only calls async-signal-safe code.
        unsafe { libc::signal(signal, on_signal as *const () as libc::sighandler_t) };
    }
    Ok(())
}
