//! `RemotePty` and `RemoteArtifactStore`: a terminal on a `conch serve`,
//! with the calls of a local `PtySession` (`start` with its options,
//! `signal` and `onChunk`, the same `PtyResult` and error codes), and a
//! remote session's artifact store, with the reads of a local
//! `ArtifactStore`. Every call that asks the server resolves a promise.

use std::sync::Arc;

use conch_core::CancelToken;
use conch_core::pty::PtyResult;
use conch_core::sync::Slot;
use conch_remote::{RemoteArtifacts, RemoteError};
use napi::bindgen_prelude::{Buffer, Either, Env, Object};
use napi_derive::napi;

use crate::errors::{Code, JsResult};
use crate::options;
use crate::pty::{CursorPosition, cells};
use crate::quick::{Streamed, StreamedSteps, streamed_call};
use crate::remote::steps;
use crate::result::Js;
use crate::stream::Text;
use crate::worker;

/// A terminal on a `conch serve` (from `Remote.pty()`), with
/// `PtySession`'s calls.
#[napi]
pub struct RemotePty {
    /// `None` once closed.
    pty: Slot<conch_remote::RemotePty>,
}

impl RemotePty {
    pub fn new(pty: conch_remote::RemotePty) -> Self {
        RemotePty {
            pty: Slot::new(pty),
        }
    }

    fn open(&self) -> Result<Arc<conch_remote::RemotePty>, RemoteError> {
        self.pty
            .get()
            .ok_or(RemoteError::Core(conch_core::Error::Closed("pty session")))
    }

    /// The promise of `call` on the open session, made off the JS thread.
    fn ask<'env, T>(
        &self,
        env: &'env Env,
        call: impl FnOnce(&conch_remote::RemotePty) -> Result<T, RemoteError> + Send + 'static,
    ) -> napi::Result<Object<'env>, Code>
    where
        T: napi::bindgen_prelude::ToNapiValue + Send + 'static,
    {
        let pty = self.open();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| call(&*pty?))
    }
}

impl Streamed for RemotePty {
    /// The options as sent: the server reads them.
    type Options = serde_json::Map<String, serde_json::Value>;
    type Value = Js<PtyResult>;
    type Error = RemoteError;

    fn read(_: &Env, options: &Object<'_>) -> JsResult<Self::Options> {
        options::to_send(Some(options), &["signal"])
    }

    fn begin(&self, sent: Self::Options, cancel: &CancelToken) -> StreamedSteps<Self> {
        let started = self
            .open()
            .and_then(|pty| pty.start_run(sent, Some(cancel.clone())));
        Ok(steps(started))
    }
}

streamed_call! {
    #[doc = " Runs a command on a new terminal on the server, as"]
    #[doc = " `PtySession.start` does (the same options, read there, `signal`,"]
    #[doc = " `onChunk` and `PtyResult`)."]
    impl RemotePty {
        fn start("options: PtyStartOptions & { signal?: AbortSignal }, onChunk?: (chunk: string) => void") -> "Promise<PtyResult>";
    }
}

#[napi]
impl RemotePty {
    /// Types into the running command, as `PtySession.write` (the data
    /// crosses the wire as UTF-8 text).
    #[napi(
        catch_unwind,
        ts_args_type = "data: string | Buffer",
        ts_return_type = "Promise<void>"
    )]
    pub fn write<'env>(
        &self,
        env: &'env Env,
        data: Either<String, Buffer>,
    ) -> napi::Result<Object<'env>, Code> {
        let bytes = match data {
            Either::A(text) => text.into_bytes(),
            Either::B(buffer) => buffer.to_vec(),
        };
        self.ask(env, move |pty| pty.write(&bytes))
    }

    /// Sends a named key: `enter`, `ctrl+c`, `up`, `f5`, `shift+tab`…
    #[napi(
        catch_unwind,
        ts_args_type = "key: string",
        ts_return_type = "Promise<void>"
    )]
    pub fn write_key<'env>(&self, env: &'env Env, key: String) -> napi::Result<Object<'env>, Code> {
        self.ask(env, move |pty| pty.write_key(&key))
    }

    /// Resizes the terminal (the command gets SIGWINCH), as
    /// `PtySession.resize`.
    #[napi(
        catch_unwind,
        ts_args_type = "cols: number, rows: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn resize<'env>(
        &self,
        env: &'env Env,
        cols: f64,
        rows: f64,
    ) -> napi::Result<Object<'env>, Code> {
        let cols = cells("cols", Some(cols), 0)?;
        let rows = cells("rows", Some(rows), 0)?;
        self.ask(env, move |pty| pty.resize(cols, rows))
    }

    /// Stops the running command (its result says `cancelled`).
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn kill<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        self.ask(env, conch_remote::RemotePty::kill)
    }

    /// The visible screen as text (the last command's after it ended).
    #[napi(catch_unwind, ts_return_type = "Promise<string>")]
    pub fn screen_text<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        self.ask(env, conch_remote::RemotePty::screen_text)
    }

    /// Whether a command is running.
    #[napi(catch_unwind, ts_return_type = "Promise<boolean>")]
    pub fn is_running<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        self.ask(env, conch_remote::RemotePty::is_running)
    }

    /// Where the cursor is on the screen.
    #[napi(catch_unwind, ts_return_type = "Promise<CursorPosition>")]
    pub fn cursor_position<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        self.ask(env, |pty| {
            let (row, col) = pty.cursor_position()?;
            Ok(CursorPosition {
                row: row.into(),
                col: col.into(),
            })
        })
    }

    /// Closes the session on the server: a running command is killed.
    /// Idempotent.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>, Code> {
        let pty = self.pty.take();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            pty.map_or(Ok(()), |pty| pty.close())
        })
    }
}

/// The artifact store of a session on a `conch serve`
/// (`RemoteShell.artifacts`): `read` and `resolve` as `ArtifactStore`'s,
/// answered by the server, which holds the files.
#[napi]
pub struct RemoteArtifactStore {
    inner: Arc<RemoteArtifacts>,
}

impl From<RemoteArtifacts> for RemoteArtifactStore {
    fn from(inner: RemoteArtifacts) -> Self {
        RemoteArtifactStore {
            inner: Arc::new(inner),
        }
    }
}

#[napi]
impl RemoteArtifactStore {
    /// The whole text of `artifact://<id>`.
    #[napi(catch_unwind, ts_return_type = "Promise<string>")]
    pub fn resolve<'env>(&self, env: &'env Env, url: String) -> napi::Result<Object<'env>, Code> {
        let store = self.inner.clone();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            store.resolve(&url)
        })
    }

    /// Lines `[offset, offset + limit)` of an artifact (0-based, line ends
    /// kept; no limit: to the end). `id` is the id or its `artifact://` URL.
    #[napi(catch_unwind, ts_return_type = "Promise<string>")]
    pub fn read<'env>(
        &self,
        env: &'env Env,
        id: String,
        offset: Option<f64>,
        limit: Option<f64>,
    ) -> napi::Result<Object<'env>, Code> {
        let offset = options::lines("offset", offset)?.unwrap_or(0);
        let limit = options::lines("limit", limit)?;
        let store = self.inner.clone();
        worker::spawn::<Text, _, _, _>(env, None, None, CancelToken::new(), move |_| {
            store.read(&id, offset, limit)
        })
    }
}
