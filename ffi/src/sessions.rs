//! The process-wide cache of persistent shells behind `conch_tool_*`.

use std::ffi::{c_char, c_int};

use conch_core::registry;

use crate::boundary::{self, opt_str_arg};

/// Closes cached shells, killing what they still run: those of
/// `session_key`, or all of them when it is NULL. Tools share cached shells
/// (unless given their own `session_key`); a host calls
/// `conch_close_sessions(NULL)` at exit.
///
/// # Safety
/// `session_key` is NULL or a C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_close_sessions(session_key: *const c_char) -> c_int {
    boundary::status("conch_close_sessions", || {
        // SAFETY: the caller's guarantee.
        match unsafe { opt_str_arg(session_key, "session_key") }? {
            Some(key) => registry::close(key),
            None => registry::close_all(),
        }
        Ok(())
    })
}
