//! `remote.files` and `shell.files`: the files of a `conch serve` (inside
//! the server's sandbox) or of one of its sessions (inside its sandbox,
//! relative paths from its cwd), through conch-remote's `RemoteFiles`:
//! this only translates arguments and results. Every call is a promise.

use std::sync::Arc;

use conch_core::CancelToken;
use conch_core::input::count_option;
use conch_remote::RemoteError;
use napi::bindgen_prelude::{Buffer, Either, Env, Object};
use napi_derive::napi;

use crate::errors::{Code, core_error, from_napi};
use crate::result::Js;
use crate::stream::Text;
use crate::worker;

/// The files of a `conch serve` (`remote.files`) or of a remote shell
/// (`shell.files`). One `read` returns, and one `write` takes, at most
/// 8 MiB.
#[napi]
pub struct RemoteFiles {
    files: Arc<conch_remote::RemoteFiles>,
}

impl RemoteFiles {
    pub(crate) fn new(files: conch_remote::RemoteFiles) -> Self {
        RemoteFiles {
            files: Arc::new(files),
        }
    }

    /// Runs `call` on a pooled thread; the promise of its result.
    fn spawn<'env, T: napi::bindgen_prelude::ToNapiValue + Send + 'static>(
        &self,
        env: &'env Env,
        call: impl FnOnce(&conch_remote::RemoteFiles) -> Result<T, RemoteError> + Send + 'static,
    ) -> napi::Result<Object<'env>, Code> {
        let files = self.files.clone();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| call(&files))
    }
}

/// The count `name` of `options` (a whole number >= 0), if given.
fn count(options: Option<&Object<'_>>, name: &str) -> napi::Result<Option<u64>, Code> {
    let Some(options) = options else {
        return Ok(None);
    };
    match options.get::<f64>(name).map_err(from_napi)? {
        Some(n) => Ok(Some(count_option(name, n).map_err(core_error)? as u64)),
        None => Ok(None),
    }
}

#[napi]
impl RemoteFiles {
    /// The bytes of the file at `path` from `offset`, `limit` of them
    /// (fewer at its end); no `limit`: the rest, refused (`InvalidArgument`)
    /// when more than 8 MiB remain. Rejects with `NotFound` for a missing
    /// path, `Io` for what the system (or the sandbox) refuses.
    #[napi(
        catch_unwind,
        ts_args_type = "path: string, options?: { offset?: number, limit?: number }",
        ts_return_type = "Promise<Buffer>"
    )]
    pub fn read<'env>(
        &self,
        env: &'env Env,
        path: String,
        options: Option<Object<'env>>,
    ) -> napi::Result<Object<'env>, Code> {
        let offset = count(options.as_ref(), "offset")?.unwrap_or(0);
        let limit = count(options.as_ref(), "limit")?;
        self.spawn(env, move |files| {
            files.read(&path, offset, limit).map(Buffer::from)
        })
    }

    /// Replaces the file at `path` with `data` (a string is written as
    /// UTF-8), atomically, its parent directories made. Its mode is
    /// `mode`, else the replaced file's, else `0o666` less the server's
    /// umask.
    #[napi(
        catch_unwind,
        ts_args_type = "path: string, data: Buffer | string, options?: { mode?: number }",
        ts_return_type = "Promise<void>"
    )]
    pub fn write<'env>(
        &self,
        env: &'env Env,
        path: String,
        data: Either<String, Buffer>,
        options: Option<Object<'env>>,
    ) -> napi::Result<Object<'env>, Code> {
        let bytes: Vec<u8> = match data {
            Either::A(text) => text.into_bytes(),
            Either::B(buffer) => buffer.to_vec(),
        };
        let mode = count(options.as_ref(), "mode")?.map(|m| u32::try_from(m).unwrap_or(u32::MAX));
        self.spawn(env, move |files| files.write(&path, &bytes, mode))
    }

    /// What `path` is: `{ name, type: 'file' | 'dir' | 'symlink' | 'other',
    /// size, mode, mtime }` (seconds since the epoch), and `target` for a
    /// symlink, which is never followed.
    #[napi(
        catch_unwind,
        ts_args_type = "path: string",
        ts_return_type = "Promise<{ name: string, type: 'file' | 'dir' | 'symlink' | 'other', size: number, mode: number, mtime: number, target?: string }>"
    )]
    pub fn stat<'env>(&self, env: &'env Env, path: String) -> napi::Result<Object<'env>, Code> {
        self.spawn(env, move |files| files.stat(&path).map(Js))
    }

    /// The entries of the directory `path`, sorted by name, each as `stat`
    /// tells it.
    #[napi(
        catch_unwind,
        ts_args_type = "path: string",
        ts_return_type = "Promise<Array<Awaited<ReturnType<RemoteFiles['stat']>>>>"
    )]
    pub fn list<'env>(&self, env: &'env Env, path: String) -> napi::Result<Object<'env>, Code> {
        self.spawn(env, move |files| files.list(&path).map(Js))
    }

    /// Removes a file, a symlink (not its target) or an empty directory;
    /// `recursive: true`: a directory's whole tree (symlinks in it
    /// removed, never followed).
    #[napi(
        catch_unwind,
        ts_args_type = "path: string, options?: { recursive?: boolean }",
        ts_return_type = "Promise<void>"
    )]
    pub fn remove<'env>(
        &self,
        env: &'env Env,
        path: String,
        options: Option<Object<'env>>,
    ) -> napi::Result<Object<'env>, Code> {
        let recursive = match &options {
            Some(options) => options
                .get::<bool>("recursive")
                .map_err(from_napi)?
                .unwrap_or(false),
            None => false,
        };
        self.spawn(env, move |files| files.remove(&path, recursive))
    }
}
