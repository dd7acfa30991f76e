//! `PtySession`: one command at a time on a pseudo-terminal, with a virtual
//! screen a host can render.

use std::sync::Arc;

use conch_core::CancelToken;
use conch_core::pty::{PtyOptions, PtySession as CorePty};
use napi::bindgen_prelude::{Buffer, Either, Env, Object};
use napi_derive::napi;

use crate::errors::{Code, core_error, from_napi};
use crate::options;
use crate::result::Js;
use crate::signal::Signal;
use crate::stream::{ChunkFn, JsBlocked};
use crate::teardown;
use crate::worker;

/// The cursor, 0-based.
#[napi(object, object_from_js = false)]
pub struct CursorPosition {
    pub row: u32,
    pub col: u32,
}

/// A terminal size in cells, clamped to what the terminal accepts.
pub fn cells(name: &str, value: Option<f64>, default: u16) -> napi::Result<u16, Code> {
    let n = options::lines(name, value)?;
    Ok(n.map_or(default, |n| n.min(u16::MAX as usize) as u16))
}

/// A pseudo-terminal that runs one command at a time. `write`, `resize` and
/// `kill` reach the running command; the screen stays readable after it ends.
#[napi]
pub struct PtySession {
    inner: Arc<CorePty>,
}

#[napi]
impl PtySession {
    /// An idle session with a blank 80x24 screen.
    #[napi(constructor, catch_unwind)]
    pub fn new(env: Env) -> napi::Result<Self, Code> {
        let inner = Arc::new(CorePty::new());
        teardown::close_with_env(&env, &inner).map_err(from_napi)?;
        Ok(PtySession { inner })
    }

    /// Runs a command on a new terminal. `onChunk` receives the raw terminal
    /// text (escapes intact), in order, before the promise settles. Rejects
    /// with `InvalidArgument` while another command runs.
    #[napi(
        catch_unwind,
        ts_args_type = "options: PtyStartOptions & { signal?: AbortSignal }, onChunk?: (chunk: string) => void",
        ts_return_type = "Promise<PtyResult>"
    )]
    pub fn start<'env>(
        &self,
        env: &'env Env,
        options: Object<'env>,
        on_chunk: Option<ChunkFn>,
    ) -> napi::Result<Object<'env>, Code> {
        let mut opts: PtyOptions = options::read(env, Some(&options), &["signal"])?;
        let signal: Option<Signal> = options.get("signal").map_err(from_napi)?;
        let cancel = CancelToken::new();
        opts.cancel = Some(cancel.clone());
        let pty = self.inner.clone();
        worker::spawn(env, signal, on_chunk, cancel, move |chunks| {
            pty.start(opts, |c: &str| chunks.send(c))
                .map(Js)
                .map_err(core_error)
        })
    }

    /// Types into the running command (a string is sent as UTF-8). Kitty
    /// keyboard sequences become legacy bytes; cursor keys follow the
    /// terminal's mode. Throws when nothing runs: the command starts on a
    /// worker thread after `start()` returns, so write from `onChunk` (the
    /// program printed its prompt) or once `isRunning()` is true.
    #[napi(catch_unwind)]
    pub fn write(&self, data: Either<String, Buffer>) -> napi::Result<(), Code> {
        let bytes: &[u8] = match &data {
            Either::A(text) => text.as_bytes(),
            Either::B(buffer) => buffer,
        };
        // Waits only while the terminal's input buffer is full; the run keeps
        // reading output meanwhile (see `JsBlocked`).
        let _blocked = JsBlocked::enter();
        self.inner.write(bytes).map_err(core_error)
    }

    /// Sends a named key: `enter`, `ctrl+c`, `up`, `f5`, `shift+tab`…
    #[napi(catch_unwind)]
    pub fn write_key(&self, key: String) -> napi::Result<(), Code> {
        let _blocked = JsBlocked::enter();
        self.inner.write_key(&key).map_err(core_error)
    }

    /// Resizes the terminal (the command gets SIGWINCH); sizes are clamped
    /// to what the terminal accepts, as at `start`.
    #[napi(catch_unwind)]
    pub fn resize(&self, cols: f64, rows: f64) -> napi::Result<(), Code> {
        let cols = cells("cols", Some(cols), 0)?;
        let rows = cells("rows", Some(rows), 0)?;
        self.inner.resize(cols, rows).map_err(core_error)
    }

    /// Stops the running command (the result says `cancelled`).
    #[napi(catch_unwind)]
    pub fn kill(&self) -> napi::Result<(), Code> {
        self.inner.kill().map_err(core_error)
    }

    /// Whether a command is running.
    #[napi(catch_unwind)]
    pub fn is_running(&self) -> bool {
        self.inner.is_running()
    }

    /// The visible screen as text (the last command's after it ended).
    #[napi(catch_unwind)]
    pub fn screen_text(&self) -> String {
        self.inner.screen_text()
    }

    /// Where the cursor is on the screen.
    #[napi(catch_unwind)]
    pub fn cursor_position(&self) -> CursorPosition {
        let (row, col) = self.inner.cursor_position();
        CursorPosition {
            row: row.into(),
            col: col.into(),
        }
    }
}
