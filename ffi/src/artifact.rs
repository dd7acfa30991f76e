//! `conch_artifact_store`: full outputs spilled to files, read back as
//! `artifact://<id>`.

use std::ffi::{c_char, c_int};

use conch_core::artifact::ArtifactStore;

use crate::boundary::{self, c_owned, c_string, out_arg, str_arg};
use crate::handle::{self, Castable, OwnershipBox};
use crate::status::FfiError;

/// A directory of artifacts (opaque). Thread-safe: ids are never handed out
/// twice, whichever thread allocates. Pass it as `artifact_store` in shell or
/// execute options so runs and the host share its id counter.
pub struct conch_artifact_store {
    _private: [u8; 0],
}

impl Castable for conch_artifact_store {
    type Ownership = OwnershipBox;
    type RustType = ArtifactStore;
}

/// A store over `dir` (created, mode 0700, at the first allocation). Returns
/// the handle (free it with `conch_artifact_store_free`), or NULL on error.
///
/// # Safety
/// `dir` is NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_artifact_store_new(dir: *const c_char) -> *mut conch_artifact_store {
    boundary::pointer("conch_artifact_store_new", || {
        // SAFETY: the caller's guarantee.
        let dir = unsafe { str_arg(dir, "dir") }?;
        if dir.is_empty() {
            return Err(FfiError::arg("dir is empty"));
        }
        Ok(handle::into_raw(ArtifactStore::new(dir)))
    })
}

/// Reserves the next id and its file `<dir>/<id>.<kind>.log`, created empty
/// (mode 0600) so that no other store or process takes the id. On `CONCH_OK`, `*id_out` is the id and, when `path_out`
/// is not NULL, `*path_out` the path (free both with `conch_string_free`).
///
/// # Safety
/// `store` is a live handle; `kind` a C string; `id_out` writable; `path_out`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_artifact_store_allocate(
    store: *const conch_artifact_store,
    kind: *const c_char,
    id_out: *mut *mut c_char,
    path_out: *mut *mut c_char,
) -> c_int {
    boundary::status("conch_artifact_store_allocate", || {
        // SAFETY (whole block): the caller's guarantees.
        let (store, kind, id_out, path_out) = unsafe {
            (
                handle::to_ref(store, "store")?,
                str_arg(kind, "kind")?,
                out_arg(id_out, "id_out")?,
                path_out.as_mut(),
            )
        };
        let artifact = store.allocate(kind)?;
        let id = c_owned(artifact.id)?;
        let path = match artifact.path.into_os_string().into_string() {
            Ok(path) => c_owned(path)?,
            Err(path) => {
                return Err(FfiError::arg(format!(
                    "the artifact path is not valid UTF-8: {}",
                    path.to_string_lossy()
                )));
            }
        };
        *id_out = id.into_raw();
        if let Some(path_out) = path_out {
            *path_out = path.into_raw();
        }
        Ok(())
    })
}

/// The whole text of `artifact://<id>`. On `CONCH_OK`, `*text_out` is the
/// text (free it with `conch_string_free`). Errors carry the texts every
/// face gives (`Artifact 3 not found. Available: 0, 1`, `No artifacts
/// directory found`, …) with `CONCH_ERR_NOT_FOUND` or
/// `CONCH_ERR_INVALID_ARG`.
///
/// # Safety
/// `store` is a live handle; `url` a C string; `text_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_artifact_store_resolve(
    store: *const conch_artifact_store,
    url: *const c_char,
    text_out: *mut *mut c_char,
) -> c_int {
    boundary::status("conch_artifact_store_resolve", || {
        // SAFETY (whole block): the caller's guarantees.
        let (store, url, text_out) = unsafe {
            (
                handle::to_ref(store, "store")?,
                str_arg(url, "url")?,
                out_arg(text_out, "text_out")?,
            )
        };
        *text_out = c_string(store.resolve(url)?)?;
        Ok(())
    })
}

/// Lines `[offset, offset + limit)` of an artifact (0-based, line ends kept;
/// a negative `limit` reads to the end). `id` is the bare id or its
/// `artifact://` URL. On `CONCH_OK`, `*text_out` is the text (free it with
/// `conch_string_free`).
///
/// # Safety
/// `store` is a live handle; `id` a C string; `text_out` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_artifact_store_read(
    store: *const conch_artifact_store,
    id: *const c_char,
    offset: usize,
    limit: i64,
    text_out: *mut *mut c_char,
) -> c_int {
    boundary::status("conch_artifact_store_read", || {
        // SAFETY (whole block): the caller's guarantees.
        let (store, id, text_out) = unsafe {
            (
                handle::to_ref(store, "store")?,
                str_arg(id, "id")?,
                out_arg(text_out, "text_out")?,
            )
        };
        let limit = usize::try_from(limit).ok();
        *text_out = c_string(store.read(id, offset, limit)?)?;
        Ok(())
    })
}

/// Frees the handle (the files stay). NULL is a no-op. Shells given this
/// store keep their own reference.
///
/// # Safety
/// `store` is NULL or a live handle, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_artifact_store_free(store: *mut conch_artifact_store) {
    boundary::quiet("conch_artifact_store_free", || {
        // SAFETY: `store` is NULL or came from `conch_artifact_store_new`,
        // not freed before (caller's guarantee).
        unsafe { handle::free(store) }
    })
}
