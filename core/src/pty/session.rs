//! `PtySession`: one command at a time on a pseudo-terminal, for programs
//! that want a terminal (prompts, progress bars, full-screen tools).
//!
//! The command runs as `bash -c <command>` (the same bash as the engine) in
//! its own session with the PTY as controlling terminal, with the
//! non-interactive environment plus `TERM=xterm-256color`, the caller's env
//! on top. portable-pty opens and resizes the terminal; the child is started
//! without forking the host (see `spawn.rs`).
//!
//! [`PtySession::start`] blocks the calling thread and drives the run with
//! one `poll(2)` over the PTY master, a pidfd of the child and a waker: no
//! reader thread, no polling tick. Output is handled as it arrives: decoded
//! to text, applied to the virtual [`Screen`], handed raw (escapes intact) to
//! `on_chunk` on the calling thread, and pushed to an [`OutputSink`], which
//! sanitizes it (CR to LF, escapes stripped) for the model. `write`,
//! `write_key`, `resize`, `kill` and the screen accessors take `&self` and
//! work from any thread while `start` runs.
//!
//! Ending: when the child exits, the master is read until EOF, so nothing
//! the command printed is lost. A process that outlives the child and keeps
//! the terminal open (`set -m; sleep 30 & disown`) cannot hold the call: the
//! drain stops once the stream has been quiet for [`DRAIN_QUIET`] or
//! [`DRAIN_MAX`] after the exit, with one last read of what is there.
//! Timeout, `kill()` and the cancel token start the kill escalation
//! (SIGINT, grace, SIGTERM, grace, SIGKILL) over every process of the run:
//! the child, its descendants and every member of its session, re-collected
//! at each step; the call ends once they are gone.
//!
//! Bad input is an error of the call, worded as the shell engine words it:
//! a NUL in the command, a bad variable, a missing working directory
//! (`InvalidArgument`), a shell that is not there (`Spawn`). A failure of
//! the system once the input is good (`openpty`, the spawn itself) is not:
//! the sink receives `PTY error: <message>` and the result has no exit
//! code. A stopped run reads as a stopped shell run: no exit code, and the
//! output starts with `[Command timed out after N seconds]` or
//! `[Command cancelled]`.

use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{MasterPty, PtySize};
use rustix::io::Errno;
use rustix::process::Signal;
use schemars::JsonSchema;
use serde::Deserialize;

use super::keys::{Key, normalize_input};
use super::result::PtyResult;
use super::screen::Screen;
use super::spawn::{ChildSpec, open_terminal};
use super::utf8::Utf8Stream;
use crate::cancel::CancelToken;
use crate::cwd::start_dir;
use crate::output::{Mask, Masker, OutputSink, SinkOptions};
use crate::process::bash::find_bash;
use crate::process::child::Process;
use crate::process::env::{EnvPolicy, build_env, check_command};
use crate::process::io::{Read, Waker, exit_fd, poll, pollin, read, ready, set_nonblocking};
use crate::process::sandbox::{Sandbox, SessionSandbox};
use crate::process::stop::{Stop, Stopper};
use crate::process::supervised::status_code;
use crate::process::tree::{self, Escalation, EscalationStep, Pid};
use crate::sync::lock;
use crate::wire::{read, shape};
use crate::{Error, Result};

/// Default and bounds of the terminal width.
pub const DEFAULT_COLS: u16 = crate::defaults::PTY_COLS;
pub const MIN_COLS: u16 = 20;
pub const MAX_COLS: u16 = 400;
/// Default and bounds of the terminal height.
pub const DEFAULT_ROWS: u16 = crate::defaults::PTY_ROWS;
pub const MIN_ROWS: u16 = 5;
pub const MAX_ROWS: u16 = 200;

/// `(cols, rows)` within the bounds above: the size of every terminal
/// conch opens (a PTY run's, its resizes, a job's).
pub(crate) fn clamp_size(cols: u16, rows: u16) -> (u16, u16) {
    (
        cols.clamp(MIN_COLS, MAX_COLS),
        rows.clamp(MIN_ROWS, MAX_ROWS),
    )
}

/// After the child exits, the drain stops once no output came for this long
/// (output the child wrote before exiting is already readable by then)…
const DRAIN_QUIET: Duration = Duration::from_millis(50);
/// …or this long after the exit, whatever a leftover process keeps printing.
const DRAIN_MAX: Duration = Duration::from_millis(250);

/// Bytes read per `read(2)`; a PTY hands out at most a few KiB at a time.
const READ_SIZE: usize = 64 * 1024;
/// Bytes handled per wake-up before the deadline and the escalation are checked
/// again, so a flood cannot delay a timeout.
const READ_BUDGET: usize = 1024 * 1024;
/// While a stopped run's leftovers die, how often to look for them.
const LEFTOVER_RESCAN: Duration = Duration::from_millis(50);
/// Where pidfds are unavailable (kernel < 5.3), how often the child is checked.
const EXIT_CHECK_FALLBACK: Duration = Duration::from_millis(10);

const NOT_RUNNING: &str = "PTY session is not running";
const ALREADY_RUNNING: &str = "PTY session already running";

/// What to run on the terminal, and how. On the wire (see
/// [`crate::wire`]) the bound of the output is `max_bytes`; the cancel
/// token, the kill ladder and an artifact are set by the host only.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PtyOptions {
    /// Bash source, run as `bash -c <command>`.
    pub command: String,
    /// Working directory (`None`: the host's); relative to the host's cwd.
    pub cwd: Option<PathBuf>,
    /// Variables for this run, applied last (they win over the defaults).
    #[serde(deserialize_with = "read::env")]
    #[schemars(schema_with = "shape::env")]
    pub env: Vec<(String, String)>,
    /// Which values of `env` are replaced by `[masked: NAME]` in the
    /// chunks, the screen and the output (as
    /// [`crate::ShellOptions::mask`]); it sets the sink's `mask`.
    pub mask: Mask,
    /// Deadline, counted from the start of the command (`None`: no limit).
    #[serde(deserialize_with = "read::timeout")]
    #[schemars(schema_with = "shape::optional_seconds")]
    pub timeout: Option<Duration>,
    /// Terminal width, clamped to 20–400 (default 80).
    #[serde(deserialize_with = "read::cols")]
    #[schemars(schema_with = "shape::optional_count")]
    pub cols: u16,
    /// Terminal height, clamped to 5–200 (default 24).
    #[serde(deserialize_with = "read::rows")]
    #[schemars(schema_with = "shape::optional_count")]
    pub rows: u16,
    /// bash to run (`None`: `bash` from `PATH`).
    pub shell: Option<PathBuf>,
    /// Cancels the run from any thread, like [`PtySession::kill`].
    #[serde(skip)]
    pub cancel: Option<CancelToken>,
    /// Apply the non-interactive defaults (pagers, editors, prompts off).
    pub non_interactive_env: bool,
    /// Which host variables the command inherits.
    pub env_policy: EnvPolicy,
    /// Bound of the output kept for the model (on the wire `max_bytes`:
    /// bytes of sanitized output), and its artifact.
    #[serde(rename = "max_bytes", deserialize_with = "read::sink")]
    #[schemars(schema_with = "shape::positive", extend("default" = crate::defaults::MAX_BYTES))]
    pub sink: SinkOptions,
    /// The escalation on timeout and cancel.
    #[serde(skip)]
    pub kill_ladder: Escalation,
    /// The sandbox the command runs in (made for this run, removed after
    /// it); `None`: none (`true`: the strict default policy).
    #[serde(deserialize_with = "read::sandbox")]
    #[schemars(schema_with = "shape::sandbox")]
    pub sandbox: Option<Sandbox>,
}

impl Default for PtyOptions {
    fn default() -> Self {
        PtyOptions {
            command: String::new(),
            cwd: None,
            env: Vec::new(),
            mask: Mask::default(),
            timeout: None,
            cols: DEFAULT_COLS,
            rows: DEFAULT_ROWS,
            shell: None,
            cancel: None,
            non_interactive_env: crate::defaults::NON_INTERACTIVE_ENV,
            env_policy: EnvPolicy::default(),
            sink: SinkOptions::default(),
            kill_ladder: Escalation::default(),
            sandbox: None,
        }
    }
}

impl PtyOptions {
    /// Default options for `command`.
    pub fn new(command: impl Into<String>) -> Self {
        PtyOptions {
            command: command.into(),
            ..PtyOptions::default()
        }
    }
}

/// A pseudo-terminal that runs one command at a time. `Send + Sync`: share
/// it (by reference or in an `Arc`) with the threads that feed it input.
pub struct PtySession {
    run: Mutex<Option<Arc<Control>>>,
    screen: Mutex<Screen>,
}

/// What other threads need to reach a running command.
struct Control {
    /// Kept for `resize`; also owns the master descriptor `fd`.
    master: Mutex<Box<dyn MasterPty + Send>>,
    fd: RawFd,
    /// Serializes writers, so two writes never interleave.
    write_lock: Mutex<()>,
    /// Cancelled by `kill()`, the caller's token and nothing else.
    stop: CancelToken,
    /// Wakes the run's `poll` (on `stop`).
    waker: Arc<Waker>,
    /// Readable once the run is over; unblocks writers waiting for room.
    ended: Waker,
}

impl Default for PtySession {
    fn default() -> Self {
        Self::new()
    }
}

impl PtySession {
    /// An idle session with a blank screen of the default size.
    pub fn new() -> Self {
        PtySession {
            run: Mutex::new(None),
            screen: Mutex::new(Screen::new(DEFAULT_COLS, DEFAULT_ROWS)),
        }
    }

    /// Runs `opts.command` on a new terminal and blocks until it ends (see
    /// the module doc). `on_chunk` gets the raw terminal text, in order, on
    /// this thread. Fails when a run is already in progress (`PTY session
    /// already running`) or the input is bad (see the module doc); a
    /// failure of the system is reported in the result as `PTY error: …`
    /// with no exit code.
    pub fn start(&self, opts: PtyOptions, mut on_chunk: impl FnMut(&str)) -> Result<PtyResult> {
        let masker = opts.mask.masker(&opts.env);
        let mut sink = OutputSink::new(SinkOptions {
            mask: masker.clone(),
            ..opts.sink.clone()
        });
        let (cols, rows) = clamp_size(opts.cols, opts.rows);
        let sandbox;
        let (spawn, ctl) = {
            let mut slot = lock(&self.run);
            if slot.is_some() {
                return Err(Error::InvalidArgument(ALREADY_RUNNING.into()));
            }
            let checked = check(&opts)?;
            sandbox = opts
                .sandbox
                .as_ref()
                .map(|policy| SessionSandbox::for_shell(policy, &checked.cwd, &checked.shell, &[]))
                .transpose()?;
            let prepared = match prepare(&opts, checked, cols, rows, sandbox.as_ref()) {
                Ok(p) => p,
                Err(message) => return Ok(PtyResult::start_failure(sink, &message)),
            };
            let ctl = Arc::new(prepared.control);
            *slot = Some(ctl.clone());
            (prepared.spawn, ctl)
        };
        *lock(&self.screen) = Screen::new(cols, rows);
        let mut active = Active {
            session: self,
            ctl: ctl.clone(),
            child: None,
        };
        let _wake = ctl.stop.on_cancel({
            let waker = ctl.waker.clone();
            move || waker.wake()
        });
        let _link = opts.cancel.as_ref().map(|token| {
            let stop = ctl.stop.clone();
            token.on_cancel(move || stop.cancel())
        });
        if ctl.stop.is_cancelled() {
            return Ok(PtyResult::new(
                sink.dump(None),
                None,
                Some(Stop::Cancel),
                None,
            ));
        }
        let child = match spawn.spawn() {
            Ok(child) => active.child.insert(child),
            Err(message) => return Ok(PtyResult::start_failure(sink, &message)),
        };
        let stopper = Stopper::new(opts.timeout, ctl.stop.clone(), opts.kill_ladder);
        let mut pty_loop = PtyLoop {
            ctl: &ctl,
            screen: &self.screen,
            sink: &mut sink,
            on_chunk: &mut on_chunk,
            decoder: Utf8Stream::default(),
            masker,
            text: String::new(),
            masked: String::new(),
            buf: vec![0; READ_SIZE],
        };
        let (status, stop) = pty_loop.run(child, stopper);
        pty_loop.finish();
        active.child = None;
        drop(active);
        let violations = sandbox
            .as_ref()
            .map(SessionSandbox::take_violations)
            .unwrap_or_default();
        drop(sandbox);
        Ok(PtyResult::new(sink.dump(None), status, stop, opts.timeout).with_violations(violations))
    }

    /// Sends input to the running command, as typed: Kitty keyboard
    /// sequences become legacy bytes and cursor keys follow the terminal's
    /// application-cursor mode (see [`normalize_input`]). Blocks while the
    /// terminal's input buffer is full, until the command reads or ends.
    pub fn write(&self, data: &[u8]) -> Result<()> {
        let ctl = self.control()?;
        let app_cursor = lock(&self.screen).application_cursor();
        ctl.write_all(&normalize_input(data, app_cursor))
    }

    /// Sends a named key (`enter`, `ctrl+c`, `up`, `f5`, … see [`Key::parse`]).
    pub fn write_key(&self, name: &str) -> Result<()> {
        let key = Key::parse(name)?;
        let ctl = self.control()?;
        let app_cursor = lock(&self.screen).application_cursor();
        ctl.write_all(&key.encode(app_cursor))
    }

    /// Resizes the terminal (clamped like the start size); the command gets
    /// SIGWINCH.
    pub fn resize(&self, cols: u16, rows: u16) -> Result<()> {
        let ctl = self.control()?;
        let (cols, rows) = clamp_size(cols, rows);
        lock(&self.screen).resize(cols, rows);
        let size = PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        };
        lock(&ctl.master).resize(size).map_err(|e| {
            Error::io(
                "cannot resize the PTY",
                std::io::Error::other(e.to_string()),
            )
        })
    }

    /// Stops the running command: the kill escalation over its processes; the
    /// result says `cancelled`. Returns at once.
    pub fn kill(&self) -> Result<()> {
        self.control()?.stop.cancel();
        Ok(())
    }

    /// Whether a command is running.
    pub fn is_running(&self) -> bool {
        lock(&self.run).is_some()
    }

    /// The visible screen as text (the last run's after it ended).
    pub fn screen_text(&self) -> String {
        lock(&self.screen).text()
    }

    /// The cursor as `(row, col)`, 0-based.
    pub fn cursor_position(&self) -> (u16, u16) {
        lock(&self.screen).cursor_position()
    }

    /// Whether the program asked for application cursor keys.
    pub fn application_cursor(&self) -> bool {
        lock(&self.screen).application_cursor()
    }

    /// `(cols, rows)` of the terminal.
    pub fn size(&self) -> (u16, u16) {
        lock(&self.screen).size()
    }

    fn control(&self) -> Result<Arc<Control>> {
        lock(&self.run)
            .clone()
            .ok_or_else(|| Error::InvalidArgument(NOT_RUNNING.into()))
    }
}

impl Control {
    /// The master's descriptor, borrowed for as long as `self` lives.
    fn master_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: `fd` belongs to `master`, which `self` owns and never
        // replaces: it stays open for `self`'s lifetime.
        unsafe { BorrowedFd::borrow_raw(self.fd) }
    }

    fn write_all(&self, mut data: &[u8]) -> Result<()> {
        let _serial = lock(&self.write_lock);
        while !data.is_empty() {
            match rustix::io::write(self.master_fd(), data) {
                Ok(n) => data = &data[n..],
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => {
                    let mut fds = [
                        libc::pollfd {
                            fd: self.fd,
                            events: libc::POLLOUT,
                            revents: 0,
                        },
                        pollin(self.ended.raw()),
                    ];
                    poll(&mut fds, None)?;
                    if ready(&fds[1]) {
                        return Err(Error::InvalidArgument(NOT_RUNNING.into()));
                    }
                }
                // EIO: nothing holds the terminal any more.
                Err(Errno::IO) => return Err(Error::InvalidArgument(NOT_RUNNING.into())),
                Err(e) => return Err(Error::io("cannot write to the PTY", e.into())),
            }
        }
        Ok(())
    }
}

/// Marks the session running; on drop (normal end or a panicking callback)
/// kills what is left of a child not yet reaped, frees the slot and releases
/// waiting writers.
struct Active<'a> {
    session: &'a PtySession,
    ctl: Arc<Control>,
    child: Option<Process>,
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            tree::signal_all(&run_targets(child.pid()), Signal::KILL);
            exit_code(child, false);
        }
        *lock(&self.session.run) = None;
        self.ctl.ended.wake();
    }
}

/// A terminal opened and a command ready to spawn on it.
struct Prepared {
    control: Control,
    spawn: Spawn,
}

/// The slave side and the command, until the spawn.
struct Spawn {
    slave: Box<dyn portable_pty::SlavePty + Send>,
    /// The slave's path, which the child opens.
    tty: PathBuf,
    child: ChildSpec,
}

impl Spawn {
    /// Starts the child; the parent's copy of the slave is closed, so the
    /// master sees EOF once the command's processes let go of the terminal.
    fn spawn(self) -> std::result::Result<Process, String> {
        let child = self
            .child
            .spawn(&self.tty)
            .map_err(|e| format!("cannot start {}: {e}", self.child.program.display()))?;
        drop(self.slave);
        Ok(child)
    }
}

/// What [`check`] found: where the command runs, and which bash runs it.
struct Checked {
    cwd: PathBuf,
    shell: PathBuf,
}

/// The input as the shell engine checks it, with its error texts.
fn check(opts: &PtyOptions) -> Result<Checked> {
    check_command(&opts.command, &opts.env)?;
    let cwd = start_dir(opts.cwd.as_deref())?;
    // As the shell engine finds it: a bare name on PATH, a relative path
    // against the host's cwd (not the run's).
    let shell = find_bash(opts.shell.as_deref())?;
    Ok(Checked { cwd, shell })
}

/// Opens the terminal for checked input; an `Err` is the text of the `PTY
/// error:` line.
fn prepare(
    opts: &PtyOptions,
    Checked { cwd, shell }: Checked,
    cols: u16,
    rows: u16,
    sandbox: Option<&SessionSandbox>,
) -> std::result::Result<Prepared, String> {
    let mut overrides = vec![("TERM".to_string(), "xterm-256color".to_string())];
    overrides.extend(opts.env.iter().cloned());
    let mut env = build_env(&opts.env_policy, opts.non_interactive_env, &overrides);
    // The non-interactive `NO_COLOR=1` is for captured pipes; a terminal
    // renders colors, so a PTY run keeps them unless the caller or the host
    // asked for none.
    let asked = opts.env.iter().any(|(name, _)| name == "NO_COLOR")
        || std::env::var_os("NO_COLOR").is_some();
    env.retain(|(k, _)| k != "NO_COLOR" || asked);
    if let Some(sandbox) = sandbox {
        sandbox.set_env(&mut env);
    }

    let (pair, fd, tty) = open_terminal(cols, rows)?;
    let waker = Waker::new().map_err(|e| e.to_string())?;
    let ended = Waker::new().map_err(|e| e.to_string())?;
    let control = Control {
        master: Mutex::new(pair.master),
        fd,
        write_lock: Mutex::new(()),
        stop: CancelToken::new(),
        waker: Arc::new(waker),
        ended,
    };
    set_nonblocking(control.master_fd()).map_err(|e| format!("cannot open a PTY: {e}"))?;
    Ok(Prepared {
        control,
        spawn: Spawn {
            tty,
            slave: pair.slave,
            child: ChildSpec {
                program: shell,
                command: opts.command.clone(),
                env,
                cwd,
                sandbox: sandbox.map(SessionSandbox::confinement),
            },
        },
    })
}

/// One run's event loop state.
struct PtyLoop<'a, F: FnMut(&str)> {
    ctl: &'a Control,
    screen: &'a Mutex<Screen>,
    sink: &'a mut OutputSink,
    on_chunk: &'a mut F,
    decoder: Utf8Stream,
    /// Masks the decoded text (before the screen, the chunks and the sink,
    /// which masks the sanitized text once more), when `env` has secrets.
    masker: Option<Masker>,
    /// Decoded text of the current read, reused.
    text: String,
    /// The masked text of the current read, reused.
    masked: String,
    buf: Vec<u8>,
}

impl<F: FnMut(&str)> PtyLoop<'_, F> {
    /// Runs until the child is reaped and its output drained (or the escalation
    /// gave up); returns the exit code and why it was stopped, if it was.
    fn run(&mut self, child: &mut Process, mut stopper: Stopper) -> (Option<i32>, Option<Stop>) {
        let pid = child.pid();
        let pidfd = exit_fd(pid).ok();
        let mut status: Option<Option<i32>> = None;
        let mut exited_at = Instant::now();
        let mut last_data = Instant::now();
        let mut eof = false;
        // Stopping after the child is gone: whether processes of the run
        // remain, and when to look again.
        let mut leftovers = false;
        let mut rescan_at = Instant::now();
        loop {
            let now = Instant::now();
            match stopper.check(now, false) {
                Some(EscalationStep::Signal(sig)) => {
                    let targets = run_targets(pid);
                    leftovers = !targets.is_empty();
                    rescan_at = now + LEFTOVER_RESCAN;
                    tree::signal_all(&targets, sig);
                }
                Some(EscalationStep::Exhausted) => break,
                None => {}
            }
            let stopping_with_leftovers = stopper.reason.is_some() && leftovers;
            if status.is_some() && stopping_with_leftovers && now >= rescan_at {
                leftovers = !run_targets(pid).is_empty();
                rescan_at = now + LEFTOVER_RESCAN;
            }
            let drain_until = (last_data.max(exited_at) + DRAIN_QUIET).min(exited_at + DRAIN_MAX);
            let drained = status.is_some() && (eof || now >= drain_until);
            if drained && !(stopper.reason.is_some() && leftovers) {
                if !eof {
                    // A last read: the quiet time is counted on the wall
                    // clock, and this thread may have run late since the
                    // exit was seen (a loaded machine), so the poll that
                    // saw the exit may have been the last look at the
                    // terminal. A read takes the terminal's pending input
                    // first, so nothing the child wrote is left behind.
                    self.read_available();
                }
                break;
            }

            let mut wake_at = stopper.wake_at();
            let mut wake_by = |t: Instant| wake_at = Some(wake_at.map_or(t, |w| w.min(t)));
            if status.is_some() && !drained {
                wake_by(drain_until);
            }
            if status.is_some() && stopper.reason.is_some() && leftovers {
                wake_by(rescan_at);
            }
            if pidfd.is_none() && status.is_none() {
                wake_by(now + EXIT_CHECK_FALLBACK);
            }
            let mut fds = Vec::with_capacity(3);
            fds.push(pollin(self.ctl.waker.raw()));
            let master_slot = (!eof).then(|| {
                fds.push(pollin(self.ctl.fd));
                fds.len() - 1
            });
            let pidfd_slot = match (&pidfd, status) {
                (Some(fd), None) => {
                    fds.push(pollin(fd.as_raw_fd()));
                    Some(fds.len() - 1)
                }
                _ => None,
            };
            if poll(&mut fds, wake_at).is_err() {
                // poll only fails on resource exhaustion; treat it as the end.
                break;
            }
            if ready(&fds[0]) {
                self.ctl.waker.reset();
            }
            if let Some(i) = master_slot
                && ready(&fds[i])
            {
                eof = self.read_available();
                last_data = Instant::now();
            }
            let check_exit = match pidfd_slot {
                Some(i) => ready(&fds[i]),
                None => status.is_none(),
            };
            if check_exit && let Some(code) = exit_code(child, true) {
                status = Some(code);
                exited_at = Instant::now();
                if stopper.reason.is_some() {
                    leftovers = !run_targets(pid).is_empty();
                    rescan_at = exited_at + LEFTOVER_RESCAN;
                }
            }
        }
        let code = match status {
            Some(code) => code,
            None => {
                tree::signal_all(&run_targets(pid), Signal::KILL);
                exit_code(child, false).flatten()
            }
        };
        (code, stopper.reason)
    }

    /// Reads what the master has, up to [`READ_BUDGET`]; true at EOF.
    fn read_available(&mut self) -> bool {
        let mut taken = 0;
        while taken < READ_BUDGET {
            match read(self.ctl.fd, &mut self.buf) {
                Ok(Read::Data(n)) => {
                    taken += n;
                    let mut text = std::mem::take(&mut self.text);
                    text.clear();
                    self.decoder.push(&self.buf[..n], &mut text);
                    self.emit_masked(&text, false);
                    self.text = text;
                }
                Ok(Read::WouldBlock) => return false,
                // EIO is how a PTY master says every slave is closed.
                Ok(Read::Eof) | Err(_) => return true,
            }
        }
        false
    }

    /// Flushes an incomplete character at the end of the stream.
    fn finish(&mut self) {
        let mut text = String::new();
        self.decoder.finish(&mut text);
        self.emit_masked(&text, true);
    }

    /// Emits decoded text, through the masker when there is one (`end`:
    /// the end of the stream, which lets go what it held).
    fn emit_masked(&mut self, text: &str, end: bool) {
        let Some(masker) = &mut self.masker else {
            self.emit(text);
            return;
        };
        let mut masked = std::mem::take(&mut self.masked);
        masked.clear();
        masker.push(text, &mut masked);
        if end {
            masker.finish(&mut masked);
        }
        self.emit(&masked);
        self.masked = masked;
    }

    fn emit(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let replies = {
            let mut screen = lock(self.screen);
            screen.process(text.as_bytes());
            screen.take_replies()
        };
        if !replies.is_empty() {
            // Best effort and never blocking: a terminal query's answer.
            let _ = rustix::io::write(self.ctl.master_fd(), &replies);
        }
        (self.on_chunk)(text);
        self.sink.push_text(text);
    }
}

/// Every live process of a run: the child, its descendants and the members
/// of its session (orphans keep the session id when re-parented).
fn run_targets(pid: Pid) -> Vec<Pid> {
    let mut targets = tree::session_members(pid);
    for p in std::iter::once(pid).chain(tree::descendants(pid)) {
        if !targets.contains(&p) && tree::is_alive(p) {
            targets.push(p);
        }
    }
    targets
}

/// Reaps the child: `None` while it runs (with `nohang`), else its exit code
/// (`128 + signal` for a signal), `Some(None)` if it cannot be known.
fn exit_code(child: &mut Process, nohang: bool) -> Option<Option<i32>> {
    let reaped = if nohang {
        child.try_wait()
    } else {
        child.wait().map(Some)
    };
    match reaped {
        Ok(status) => status.map(status_code),
        // ECHILD: already reaped elsewhere (a host ignoring SIGCHLD).
        Err(_) => Some(None),
    }
}
