//! conch-ffi: the C ABI of conch (`libconch.so`, `libconch.a`,
//! `include/conch.h`).
//!
//! A binding only translates: C strings and structs in, core calls, owned C
//! values out. The conventions every function follows (checked by the C
//! tests in `tests/c/`):
//!
//! - Every fallible function returns a status code (`CONCH_OK` = 0, negative
//!   on error) or a pointer (NULL on error); the error text is then in
//!   `conch_last_error()`, which is per thread.
//! - Every pointer argument is required unless its documentation says it may
//!   be NULL; strings are NUL-terminated UTF-8. Output parameters are written
//!   only on success (and with the bash tool's outcomes `CONCH_ERR_BLOCKED`,
//!   `CONCH_ERR_TOOL`, `CONCH_ERR_ABORTED`, whose result the model reads).
//! - What conch returns is owned by the caller and freed with the matching
//!   `_free` function (`conch_string_free` for `char *`); every `_free`
//!   accepts NULL.
//! - No panic crosses the boundary: it becomes `CONCH_ERR_PANIC`.
//! - Chunk callbacks run on the thread that called the running function, in
//!   order, never concurrently, before that function returns.

// The types keep the names C sees (`conch_shell`, `CONCH_OK`): the public
// names of include/conch.h.
#![allow(non_camel_case_types)]

pub mod artifact;
mod backend;
mod boundary;
pub mod callback;
pub mod cancel;
pub mod command;
pub mod execute;
mod handle;
pub mod job_exit;
pub mod jobs;
mod options;
pub mod pty;
pub mod remote;
pub mod result;
pub mod sandbox;
pub mod sessions;
pub mod shell;
pub mod status;
pub mod strings;
pub mod tool;

pub use options::conch_env_policy;
pub use status::conch_status;
