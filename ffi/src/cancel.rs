//! `conch_cancel_token`: cancels a run from any thread, even before it
//! started (unlike `conch_shell_abort`, which stops the run in progress).

use std::ffi::c_int;

use conch_core::CancelToken;

use crate::boundary::{self, out_arg};
use crate::handle::{self, Castable, OwnershipBox};

/// A cancellation token (opaque). Create with `conch_cancel_token_new`, pass
/// it in `conch_run_options.cancel` / `conch_execute_options.cancel`, cancel
/// it from any thread, free it with `conch_cancel_token_free`.
///
/// Thread-safe: every function may be called from any thread. A run keeps
/// its own reference, so the token may be freed while a run uses it.
pub struct conch_cancel_token {
    _private: [u8; 0],
}

impl Castable for conch_cancel_token {
    type Ownership = OwnershipBox;
    type RustType = CancelToken;
}

/// A new token, not cancelled. Free with `conch_cancel_token_free`. NULL
/// only on an internal error.
#[unsafe(no_mangle)]
pub extern "C" fn conch_cancel_token_new() -> *mut conch_cancel_token {
    boundary::pointer("conch_cancel_token_new", || {
        Ok(handle::into_raw(CancelToken::new()))
    })
}

/// Cancels: a run using the token stops (its result says `cancelled`), and a
/// run started with it later returns cancelled at once. Idempotent.
///
/// # Safety
/// `token` is a live token; NULL is refused (`CONCH_ERR_INVALID_ARG`), never
/// a crash.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_cancel_token_cancel(token: *const conch_cancel_token) -> c_int {
    boundary::status("conch_cancel_token_cancel", || {
        // SAFETY: the caller's guarantee.
        unsafe { handle::to_ref(token, "token") }?.cancel();
        Ok(())
    })
}

/// Writes whether the token was cancelled to `*out`.
///
/// # Safety
/// `token` is NULL or a live token; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_cancel_token_is_cancelled(
    token: *const conch_cancel_token,
    out: *mut bool,
) -> c_int {
    boundary::status("conch_cancel_token_is_cancelled", || {
        // SAFETY: the caller's guarantee.
        let token = unsafe { handle::to_ref(token, "token") }?;
        // SAFETY: the caller's guarantee.
        let out = unsafe { out_arg(out, "out") }?;
        *out = token.is_cancelled();
        Ok(())
    })
}

/// Frees a token. NULL is a no-op.
///
/// # Safety
/// `token` is NULL or a token from `conch_cancel_token_new` not freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_cancel_token_free(token: *mut conch_cancel_token) {
    boundary::quiet("conch_cancel_token_free", || {
        // SAFETY: `token` is NULL or came from `conch_cancel_token_new`, not
        // freed before (caller's guarantee).
        unsafe { handle::free(token) }
    })
}
