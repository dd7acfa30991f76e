//! The panic boundary and the thread-local last error.
//!
//! Every `extern "C"` body runs inside [`status`], [`pointer`] or [`quiet`]:
//! a panic is caught there (it would abort the host otherwise) and reported
//! as `CONCH_ERR_PANIC`; a failure is recorded as the calling thread's last
//! error, and a success clears it. These are plain functions called from
//! hand-written extern fns, never macros that generate them, so cbindgen
//! sees every signature in the source.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use crate::status::{FfiError, FfiResult, conch_status};

thread_local! {
    /// The message of the last failed call on this thread (empty: none).
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// The message of the last failed conch call on this thread, or `""` after
/// a successful one.
pub(crate) fn last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

fn set_last_error(message: String) {
    // A message cannot hold NUL; cut it there rather than lose it.
    let message = match CString::new(message) {
        Ok(m) => m,
        Err(e) => {
            let cut = e.nul_position();
            let mut bytes = e.into_vec();
            bytes.truncate(cut);
            CString::new(bytes).unwrap_or_default()
        }
    };
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = message);
}

fn clear_last_error() {
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = CString::default());
}

fn record(function: &str, error: FfiError) -> conch_status {
    let message = if error.misuse {
        format!("{function}: {}", error.message)
    } else {
        error.message
    };
    set_last_error(message);
    error.status
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown panic")
}

fn catch<T>(function: &str, body: impl FnOnce() -> FfiResult<T>) -> FfiResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        Err(FfiError::internal(format!(
            "{function}: internal error (panic): {}",
            panic_message(payload.as_ref())
        )))
    })
}

/// Runs the body of an entry point that returns a status code.
pub(crate) fn status(function: &str, body: impl FnOnce() -> FfiResult<()>) -> c_int {
    clear_last_error();
    match catch(function, body) {
        Ok(()) => conch_status::CONCH_OK as c_int,
        Err(error) => record(function, error) as c_int,
    }
}

/// Runs the body of an entry point that returns a pointer (NULL on error).
pub(crate) fn pointer<T>(function: &str, body: impl FnOnce() -> FfiResult<*mut T>) -> *mut T {
    clear_last_error();
    match catch(function, body) {
        Ok(p) => p,
        Err(error) => {
            record(function, error);
            ptr::null_mut()
        }
    }
}

/// Runs the body of an entry point that cannot report anything (the `_free`
/// functions): a panic is still caught and left in the last error.
pub(crate) fn quiet(function: &str, body: impl FnOnce()) {
    if let Err(error) = catch(function, || {
        body();
        Ok(())
    }) {
        record(function, error);
    }
}

/// A required input string: not NULL, valid UTF-8.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn str_arg<'a>(p: *const c_char, name: &str) -> FfiResult<&'a str> {
    // SAFETY: the caller guarantees `p` is NULL or a valid C string.
    unsafe { opt_str_arg(p, name) }?.ok_or_else(|| FfiError::arg(format!("{name} is NULL")))
}

/// An optional input string: NULL means none; otherwise valid UTF-8.
///
/// # Safety
/// As [`str_arg`].
pub(crate) unsafe fn opt_str_arg<'a>(p: *const c_char, name: &str) -> FfiResult<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: `p` is not NULL and the caller guarantees it is NUL-terminated.
    let bytes = unsafe { CStr::from_ptr(p) };
    bytes
        .to_str()
        .map(Some)
        .map_err(|e| FfiError::arg(format!("{name} is not valid UTF-8 ({e})")))
}

/// A `(data, len)` byte buffer; `data` may be NULL only when `len` is 0.
///
/// # Safety
/// `data` is NULL or readable for `len` bytes that outlive `'a`.
pub(crate) unsafe fn bytes_arg<'a>(data: *const u8, len: usize, name: &str) -> FfiResult<&'a [u8]> {
    match (data.is_null(), len) {
        (true, 0) => Ok(&[]),
        (true, _) => Err(FfiError::arg(format!("{name} is NULL but len is not 0"))),
        // SAFETY: the caller guarantees `len` readable bytes at `data`.
        (false, _) => Ok(unsafe { std::slice::from_raw_parts(data, len) }),
    }
}

/// A NULL-terminated array of strings; a NULL array is `None`.
///
/// # Safety
/// `list` is NULL or points to an array of valid C strings ended by NULL.
pub(crate) unsafe fn opt_str_list<'a>(
    list: *const *const c_char,
    name: &str,
) -> FfiResult<Option<Vec<&'a str>>> {
    if list.is_null() {
        return Ok(None);
    }
    let mut items = Vec::new();
    for i in 0.. {
        // SAFETY: the array is NULL-terminated, so every index up to the
        // terminator is in bounds.
        let item = unsafe { *list.add(i) };
        if item.is_null() {
            break;
        }
        // SAFETY: each element before the terminator is a valid C string.
        items.push(unsafe { str_arg(item, &format!("{name}[{i}]")) }?);
    }
    Ok(Some(items))
}

/// A NULL-terminated `"KEY=VALUE"` array as pairs; NULL is empty. The name
/// and value themselves are checked by the core.
///
/// # Safety
/// As [`opt_str_list`].
pub(crate) unsafe fn env_list(
    list: *const *const c_char,
    name: &str,
) -> FfiResult<Vec<(String, String)>> {
    // SAFETY: forwarded from the caller.
    unsafe { pair_list(list, name, "KEY=VALUE") }
}

/// A NULL-terminated array of strings split at their first `=` (`form`
/// names the two halves in the error, `NAME=IP`); NULL is empty.
///
/// # Safety
/// As [`opt_str_list`].
pub(crate) unsafe fn pair_list(
    list: *const *const c_char,
    name: &str,
    form: &str,
) -> FfiResult<Vec<(String, String)>> {
    // SAFETY: forwarded from the caller.
    let items = unsafe { opt_str_list(list, name) }?.unwrap_or_default();
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item.split_once('=') {
            Some((k, v)) => Ok((k.to_string(), v.to_string())),
            None => Err(FfiError::arg(format!(
                "{name}[{i}] is not of the form {form}: {item:?}"
            ))),
        })
        .collect()
}

/// An output parameter, checked before any work is done so that a NULL out
/// pointer never loses a result (or a process).
///
/// # Safety
/// `out` is NULL or valid for writes.
pub(crate) unsafe fn out_arg<'a, T>(out: *mut T, name: &str) -> FfiResult<&'a mut T> {
    // SAFETY: the caller guarantees `out` is NULL or valid for writes.
    unsafe { out.as_mut() }.ok_or_else(|| FfiError::arg(format!("{name} is NULL")))
}

/// A required handle or struct argument.
///
/// # Safety
/// `p` is NULL or points to a live `T`.
pub(crate) unsafe fn ref_arg<'a, T>(p: *const T, name: &str) -> FfiResult<&'a T> {
    // SAFETY: the caller guarantees `p` is NULL or valid.
    unsafe { p.as_ref() }.ok_or_else(|| FfiError::arg(format!("{name} is NULL")))
}

/// A string handed to C, freed with `conch_string_free`.
pub(crate) fn c_string(text: String) -> FfiResult<*mut c_char> {
    c_owned(text).map(CString::into_raw)
}

/// `text` as a C string, still owned by Rust (for strings that go into a
/// struct: nothing leaks if a later field fails).
pub(crate) fn c_owned(text: String) -> FfiResult<CString> {
    CString::new(text).map_err(|e| FfiError {
        status: conch_status::CONCH_ERR_IO,
        message: format!(
            "the text holds a NUL byte at {} and cannot be returned as a C string",
            e.nul_position()
        ),
        misuse: false,
    })
}

/// An optional string for a struct field: NULL when `None`.
pub(crate) fn opt_c_owned(text: Option<String>) -> FfiResult<Option<CString>> {
    text.map(c_owned).transpose()
}

/// Hands an owned optional string to C (NULL when `None`).
pub(crate) fn into_raw_or_null(text: Option<CString>) -> *const c_char {
    text.map_or(ptr::null(), |t| t.into_raw().cast_const())
}

/// Frees a string made by [`c_string`]; NULL is a no-op.
///
/// # Safety
/// `p` is NULL or came from [`c_string`] and was not freed before.
pub(crate) unsafe fn free_c_string(p: *const c_char) {
    if !p.is_null() {
        // SAFETY: `p` came from `CString::into_raw` (caller's guarantee).
        drop(unsafe { CString::from_raw(p.cast_mut()) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: `last_error` always returns a valid C string.
        unsafe { CStr::from_ptr(last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let code = status("conch_test", || panic!("boom"));
        assert_eq!(code, conch_status::CONCH_ERR_PANIC as c_int);
        assert_eq!(last(), "conch_test: internal error (panic): boom");
        let p: *mut u8 = pointer("conch_test", || panic!("{}", String::from("owned")));
        assert!(p.is_null());
        assert!(last().ends_with("owned"), "{}", last());
        quiet("conch_test_free", || panic!("in free"));
        assert!(last().ends_with("in free"));
    }

    #[test]
    fn success_clears_the_last_error_and_misuse_names_the_function() {
        let code = status("conch_f", || Err(FfiError::arg("x is NULL")));
        assert_eq!(code, conch_status::CONCH_ERR_INVALID_ARG as c_int);
        assert_eq!(last(), "conch_f: x is NULL");
        assert_eq!(status("conch_f", || Ok(())), 0);
        assert_eq!(last(), "");
        let core = status("conch_f", || {
            Err(conch_core::Error::NotFound("Artifact 3 not found".into()).into())
        });
        assert_eq!(core, conch_status::CONCH_ERR_NOT_FOUND as c_int);
        assert_eq!(last(), "Artifact 3 not found");
    }

    #[test]
    fn strings_are_checked() {
        // SAFETY: all pointers below are NULL or valid C strings/arrays.
        unsafe {
            assert!(str_arg(ptr::null(), "cmd").is_err());
            let bad = c"\xff\xfe";
            let e = str_arg(bad.as_ptr(), "cmd").unwrap_err();
            assert!(
                e.message.starts_with("cmd is not valid UTF-8"),
                "{}",
                e.message
            );
            let list = [c"A=1".as_ptr(), c"B==2".as_ptr(), ptr::null()];
            assert_eq!(
                env_list(list.as_ptr(), "env").unwrap(),
                vec![("A".into(), "1".into()), ("B".into(), "=2".into())]
            );
            let list = [c"A".as_ptr(), ptr::null()];
            assert!(env_list(list.as_ptr(), "env").is_err());
            assert!(env_list(ptr::null(), "env").unwrap().is_empty());
        }
        assert!(c_string("a\0b".into()).is_err());
    }
}
