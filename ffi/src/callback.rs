//! The chunk callback: how streamed output reaches C.

use std::ffi::{c_char, c_void};

/// Receives streamed output: `utf8` holds `len` bytes of sanitized UTF-8 text
/// followed by a NUL (not counted in `len`), so it can be printed with `%s`.
///
/// `utf8` is owned by conch and valid only during the call. The callback
/// runs on the thread that called the running function (`conch_shell_run`,
/// `conch_execute_shell`), in order, never concurrently, before that
/// function returns, so it needs no locking. `user` is the pointer given
/// with it, passed through untouched. It must return normally: conch catches
/// its own panics, but a C++ exception or a `longjmp` out of the callback
/// would cross Rust frames, which nothing can catch.
pub type conch_chunk_cb =
    Option<unsafe extern "C" fn(user: *mut c_void, utf8: *const c_char, len: usize)>;

/// Forwards core chunks to a C callback, NUL-terminating each in a buffer
/// reused across chunks.
pub(crate) struct ChunkForwarder {
    cb: conch_chunk_cb,
    user: *mut c_void,
    buf: Vec<u8>,
}

impl ChunkForwarder {
    pub(crate) fn new(cb: conch_chunk_cb, user: *mut c_void) -> Self {
        ChunkForwarder {
            cb,
            user,
            buf: Vec::new(),
        }
    }

    pub(crate) fn forward(&mut self, chunk: &str) {
        let Some(cb) = self.cb else { return };
        self.buf.clear();
        self.buf.extend_from_slice(chunk.as_bytes());
        self.buf.push(0);
        // SAFETY: the host promised a callable function; the buffer holds
        // `chunk.len()` bytes plus a NUL and lives across the call.
        unsafe { cb(self.user, self.buf.as_ptr().cast(), chunk.len()) }
    }
}
