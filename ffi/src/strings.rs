//! Version, last error, strings conch hands out, and the sanitizer.

use std::ffi::c_char;

use conch_core::output::{Sanitizer, sanitize_text};

use crate::boundary::{self, bytes_arg, c_string, free_c_string, str_arg};

/// The version of conch, e.g. `"0.1.0"`.
///
/// Static: never free it.
#[unsafe(no_mangle)]
pub extern "C" fn conch_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The message of the last failed conch call on the calling thread, or `""`
/// when the last call succeeded. Never NULL.
///
/// Owned by conch; valid until the next conch call on this thread. Copy it
/// to keep it.
#[unsafe(no_mangle)]
pub extern "C" fn conch_last_error() -> *const c_char {
    boundary::last_error()
}

/// Frees a string returned by conch. NULL is a no-op.
///
/// # Safety
/// `s` is NULL or a `char *` returned by conch (never one that is part of a
/// struct conch returned, never freed twice).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_string_free(s: *mut c_char) {
    // SAFETY: the caller's guarantee.
    boundary::quiet("conch_string_free", || unsafe { free_c_string(s) });
}

/// Cleans terminal output for a model: removes escape sequences (colors,
/// cursor moves, titles) and control characters except `\n` and `\t`, turns
/// `\r\n` and a lone `\r` into `\n`.
///
/// Returns a new string (free with `conch_string_free`), or NULL on error
/// (`text` NULL or not valid UTF-8; use `conch_sanitize_bytes` for raw
/// bytes).
///
/// # Safety
/// `text` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_sanitize_text(text: *const c_char) -> *mut c_char {
    boundary::pointer("conch_sanitize_text", || {
        // SAFETY: the caller's guarantee.
        let text = unsafe { str_arg(text, "text") }?;
        c_string(sanitize_text(text))
    })
}

/// Like `conch_sanitize_text`, for raw output bytes: invalid UTF-8 becomes
/// U+FFFD, and NUL bytes are removed like other control characters.
///
/// `data` may be NULL only when `len` is 0. Returns a new string (free with
/// `conch_string_free`), or NULL on error.
///
/// # Safety
/// `data` is valid for reads of `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_sanitize_bytes(data: *const u8, len: usize) -> *mut c_char {
    boundary::pointer("conch_sanitize_bytes", || {
        // SAFETY: the caller's guarantee.
        let bytes = unsafe { bytes_arg(data, len, "data") }?;
        let mut out = String::with_capacity(bytes.len());
        let mut sanitizer = Sanitizer::new();
        sanitizer.push(bytes, &mut out);
        sanitizer.finish(&mut out);
        c_string(out)
    })
}
