//! Option fields shared by the shell and one-shot structs, translated to
//! core values. Zero / NULL always means the core's default; any other value,
//! text or number, is checked by the core's parser of that option, whose
//! error names the field, so C accepts and refuses what every face does.

use std::ffi::c_char;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use conch_core::BadValue;
use conch_core::artifact::ArtifactStore;
use conch_core::input::{
    TimeUnit, count_option, interval_option, max_bytes_option, parse_option, timeout_option,
};
use conch_core::output::DEFAULT_MAX_BYTES;
use conch_core::process::env::{EnvPolicy, Inherit};
use conch_core::shell::Snapshot;

use crate::artifact::conch_artifact_store;
use crate::boundary::{opt_str_arg, opt_str_list};
use crate::cancel::conch_cancel_token;
use crate::handle;
use crate::status::{FfiError, FfiResult};

/// An optional path argument.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn opt_path(p: *const c_char, name: &str) -> FfiResult<Option<PathBuf>> {
    // SAFETY: forwarded from the caller.
    Ok(unsafe { opt_str_arg(p, name) }?.map(PathBuf::from))
}

/// A core checker's refusal of a value C passed: the caller's misuse, so
/// the message is prefixed with the function's name.
fn refused(error: conch_core::Error) -> FfiError {
    FfiError::arg(error.to_string())
}

/// An integer as the core's checkers take it (`i64`): one past `i64::MAX`
/// is as far out of any range as `i64::MAX`.
fn number(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A `timeout_ms` field: `0` means no timeout; any other value is checked by
/// the core (`UINT64_MAX` is refused, never clamped or overflowed).
pub(crate) fn timeout(ms: u64, name: &str) -> FfiResult<Option<Duration>> {
    if ms == 0 {
        return Ok(None);
    }
    // `as f64` rounds only values far past the core's bound.
    timeout_option(name, ms as f64, TimeUnit::Milliseconds)
        .map(Some)
        .map_err(refused)
}

/// An interval in milliseconds (`update_interval_ms`, a poll's `wait_ms`):
/// `0` means the core's default (`None`); any other value is checked by the
/// core.
pub(crate) fn interval(ms: u64, name: &str) -> FfiResult<Option<Duration>> {
    if ms == 0 {
        return Ok(None);
    }
    interval_option(name, ms as f64, TimeUnit::Milliseconds)
        .map(Some)
        .map_err(refused)
}

/// A line count: `0` means no limit; any other value is checked by the core.
pub(crate) fn line_limit(lines: usize, name: &str) -> FfiResult<Option<usize>> {
    if lines == 0 {
        return Ok(None);
    }
    count_option(name, number(lines as u64))
        .map(Some)
        .map_err(refused)
}

/// `max_bytes`: `0` means the default (51200); any other value is checked
/// by the core.
pub(crate) fn max_bytes(bytes: usize, name: &str) -> FfiResult<usize> {
    if bytes == 0 {
        return Ok(DEFAULT_MAX_BYTES);
    }
    max_bytes_option(name, number(bytes as u64)).map_err(refused)
}

/// A `max_bytes` whose default belongs to someone else (a poll's: the
/// shell's): `0` is `None`; any other value is checked by the core.
pub(crate) fn opt_max_bytes(bytes: usize, name: &str) -> FfiResult<Option<usize>> {
    if bytes == 0 {
        return Ok(None);
    }
    max_bytes_option(name, number(bytes as u64))
        .map(Some)
        .map_err(refused)
}

/// An option given as text, parsed by the core; NULL is the core's default.
/// A value the option does not take is the caller's misuse.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn parsed<T: FromStr<Err = BadValue> + Default>(
    p: *const c_char,
    name: &str,
) -> FfiResult<T> {
    // SAFETY: forwarded from the caller.
    match unsafe { opt_str_arg(p, name) }? {
        None => Ok(T::default()),
        Some(text) => parse_option(name, text).map_err(|e| FfiError::arg(e.to_string())),
    }
}

/// `snapshot`: NULL or `"auto"`, `"none"`, or the path of a snapshot file.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn snapshot(p: *const c_char, name: &str) -> FfiResult<Snapshot> {
    // SAFETY: forwarded from the caller.
    unsafe { parsed(p, name) }
}

/// The env policy from `env_inherit` (NULL or `"all"`, `"core"`, `"none"`)
/// and `env_exclude` (NULL-terminated globs, NULL: none).
///
/// # Safety
/// `inherit` is NULL or a C string; `exclude` is NULL or a NULL-terminated
/// array of C strings.
pub(crate) unsafe fn env_policy(
    inherit: *const c_char,
    exclude: *const *const c_char,
    prefix: &str,
) -> FfiResult<EnvPolicy> {
    // SAFETY: forwarded from the caller.
    let inherit: Inherit = unsafe { parsed(inherit, &format!("{prefix}env_inherit")) }?;
    // SAFETY: forwarded from the caller.
    let exclude = unsafe { opt_str_list(exclude, &format!("{prefix}env_exclude")) }?
        .unwrap_or_default()
        .into_iter()
        .map(str::to_string)
        .collect();
    Ok(EnvPolicy { inherit, exclude })
}

/// The artifact store from `artifacts_dir` or `artifact_store` (at most one).
///
/// # Safety
/// `dir` is NULL or a C string; `store` is NULL or a live store.
pub(crate) unsafe fn artifacts(
    dir: *const c_char,
    store: *const conch_artifact_store,
    prefix: &str,
) -> FfiResult<Option<ArtifactStore>> {
    // SAFETY: forwarded from the caller.
    let dir = unsafe { opt_path(dir, &format!("{prefix}artifacts_dir")) }?;
    // SAFETY: forwarded from the caller.
    let store = unsafe { handle::opt_ref(store) };
    match (dir, store) {
        (Some(_), Some(_)) => Err(FfiError::arg(format!(
            "set {prefix}artifacts_dir or {prefix}artifact_store, not both"
        ))),
        (Some(dir), None) => Ok(Some(ArtifactStore::open(dir)?)),
        (None, Some(store)) => Ok(Some(store.clone())),
        (None, None) => Ok(None),
    }
}

/// The core token behind an optional `conch_cancel_token *`.
///
/// # Safety
/// `token` is NULL or a live token.
pub(crate) unsafe fn cancel(token: *const conch_cancel_token) -> Option<conch_core::CancelToken> {
    // SAFETY: forwarded from the caller.
    unsafe { handle::opt_ref(token) }.cloned()
}
