//! One run of a [`Shell`]: its place in the queue, its start (the turn, the
//! session's state, a ready bash), the command sent, and what follows its
//! end (the session's cwd, a replaced or dead bash, what the command left
//! running, the result). [`Run`] is that state machine, driven a step at a
//! time by a face or to its end at once by [`Shell::run`]; its event loop
//! is in `event_loop.rs`.

use std::ops::Deref;
use std::os::fd::{AsRawFd, OwnedFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime};

use crate::cancel::CancelGuard;
use crate::command::follow;
use crate::cwd::resolve_dir;
use crate::jobs::Slot;
use crate::output::sink::{OutputSink, SinkOptions};
use crate::process::env::check_command;
use crate::process::io::{named_pipe, output_pipe};
use crate::process::pump::Pump;
use crate::process::pump::{DRAIN_BUDGET, read_error};
use crate::process::stop::Stopper;
use crate::process::supervised::status_code;
use crate::process::tree;
use crate::protocol;
use crate::run_result::{BashResult, Outcome, conclude};
use crate::shell::options::RunOptions;
use crate::shell::queue::{Place, Turn, Waited};
use crate::shell::reentry::BusyKey;
use crate::sync::lock;
use crate::{CancelToken, Error, Result};

use super::event_loop::{
    Ending, Line, LoopState, new_children, run_loop_until, run_script, send_line, targets,
};
use super::state_guard::StateGuard;
use super::{Bash, Shell, reap};

impl Shell {
    /// Runs one command, streaming sanitized output to `on_chunk` on this
    /// thread. Timeout and cancellation are results, not errors; errors are
    /// bad input, a closed shell, or a bash that cannot be started.
    /// Concurrent runs take their turns in the order they called `run`.
    pub fn run(&self, opts: RunOptions, on_chunk: impl FnMut(&str)) -> Result<BashResult> {
        self.run_in_place(self.reserve()?, opts, on_chunk)
    }

    /// Takes the next place in this shell's run queue, for a run made later
    /// with [`Shell::run_in_place`], possibly on another thread. A host that
    /// hands runs to worker threads takes the place where the call was made,
    /// so runs keep the order of the calls whichever worker starts first. A
    /// place dropped unused is given up.
    ///
    /// Fails when this thread is inside a callback of a run of this shell
    /// (see [`Shell::busy_key`]): that place would never be served.
    pub fn reserve(&self) -> Result<Place> {
        self.busy.check("a run was started", "shell")?;
        Ok(self.queue.place())
    }

    /// The mark of the threads waiting for a run of this shell. A face that
    /// calls a run's callbacks on a thread other than the one running it
    /// holds [`BusyKey::enter`] there while it does, so that a callback
    /// which starts a run on this shell, or closes it, does not wait for
    /// itself.
    pub fn busy_key(&self) -> &BusyKey {
        &self.busy
    }

    /// [`Shell::run`] at a place taken earlier with [`Shell::reserve`]
    /// (on this shell: a place of another shell is refused).
    pub fn run_in_place(
        &self,
        place: Place,
        opts: RunOptions,
        mut on_chunk: impl FnMut(&str),
    ) -> Result<BashResult> {
        let mut run = Run::new(self, place, opts);
        match run.drive(None, &mut on_chunk) {
            Poll::Ready(result) => result,
            Poll::Pending => unreachable!("a run driven without a deadline ends"),
        }
    }

    /// Drives `stage` on this thread until the run ends or `until` passes.
    fn step(
        &self,
        stage: &mut Stage,
        until: Option<Instant>,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Poll<Result<BashResult>> {
        if matches!(stage, Stage::Queued { .. }) {
            let Stage::Queued { place, opts } = std::mem::replace(stage, Stage::Ended) else {
                unreachable!("queued")
            };
            match self.start_run(place, opts, until) {
                Err(e) => return Poll::Ready(Err(e)),
                Ok(StartOutcome::Later(place, opts)) => {
                    *stage = Stage::Queued { place, opts };
                    return Poll::Pending;
                }
                Ok(StartOutcome::Ended(result)) => return Poll::Ready(Ok(result)),
                Ok(StartOutcome::Started(started)) => *stage = Stage::Started(started),
            }
        }
        let Stage::Started(run) = stage else {
            return Poll::Ready(Err(Error::InvalidArgument(
                "this run has ended already".into(),
            )));
        };
        match self.go_on(run, until, on_chunk) {
            Ok(None) => Poll::Pending,
            Ok(Some(ending)) => {
                let Stage::Started(run) = std::mem::replace(stage, Stage::Ended) else {
                    unreachable!("started")
                };
                Poll::Ready(self.finish(*run, ending, on_chunk))
            }
            Err(e) => {
                *lock(&self.current) = None;
                // A bash left in the middle of a command is killed as the
                // run drops (see `StateGuard`).
                *stage = Stage::Ended;
                Poll::Ready(Err(e))
            }
        }
    }

    /// Waits for the turn (up to `until`) and takes the session; a run
    /// cancelled first ends without it.
    fn start_run(
        &self,
        place: Place,
        opts: Box<RunOptions>,
        until: Option<Instant>,
    ) -> Result<StartOutcome> {
        self.check_place(&place)?;
        self.check_open()?;
        check_command(&opts.command, &opts.env)?;
        let cancel = opts.cancel.clone().unwrap_or_default();
        let turn = match place.wait_until(&cancel, until) {
            Waited::Later(place) => return Ok(StartOutcome::Later(place, opts)),
            Waited::Cancelled => None,
            Waited::Turn(turn) => Some(turn),
        };
        let started = (SystemTime::now(), Instant::now());
        self.check_open()?;
        let artifact = opts.artifact.clone().or_else(|| {
            self.config
                .artifacts
                .as_ref()
                .map(|store| store.slot("bash"))
        });
        let sink = OutputSink::new(SinkOptions {
            max_bytes: self.config.max_bytes,
            head_lines: opts.head_lines,
            artifact,
            mask: self.masker(&opts.env),
            carriage_return: self.config.carriage_return,
            ..SinkOptions::default()
        });
        let Some(turn) = turn.filter(|_| !cancel.is_cancelled()) else {
            // Cancelled while it waited, or as its turn came: it ends without
            // taking the session's state, which the run ahead may hold for as
            // long as its command lasts. It ran nothing, in no directory (its
            // `cwd` is not resolved); its result reports the session's cwd,
            // readable apart from the state.
            let session_cwd = Some(self.cwd().to_string_lossy().into_owned());
            return Ok(StartOutcome::Ended(BashResult::cancelled_before_start(
                sink.dump(None),
                session_cwd,
            )));
        };
        let mut state = self.state.take();
        // Resolved once the state is held: a reset (which holds it without a
        // turn) has then moved the session's cwd, if one was under way.
        let run_cwd = match &opts.cwd {
            Some(dir) => Some(resolve_dir(&self.cwd(), dir)?),
            None => None,
        };
        self.prepare_bash(&mut state)?;
        Ok(StartOutcome::Started(Box::new(Started {
            opts: *opts,
            state,
            run_cwd,
            started,
            pump: Some(Pump::new(sink, &mut |_: &str| {}).into_parts()),
            sent: None,
            _turn: turn,
        })))
    }

    /// Waits (up to `until`) for bash to be ready, sends the command, and
    /// drives it; `None` if it still runs at `until`.
    fn go_on(
        &self,
        run: &mut Started,
        until: Option<Instant>,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Result<Option<Ending>> {
        if run.sent.is_none() {
            if !self.ready_until(&mut run.state, until)? {
                return Ok(None);
            }
            run.sent = Some(self.send(run)?);
            run.state.mid_command = true;
        }
        let sent = run.sent.as_mut().expect("sent above");
        let mut pump = Pump::from_parts(run.pump.take().expect("the run's sink"), on_chunk);
        let bash = run.state.bash.as_mut().expect("bash present");
        let ending = run_loop_until(bash, &mut pump, &self.waker, &mut sent.loop_state, until);
        run.pump = Some(pump.into_parts());
        ending
    }

    /// Sends the command of `run` to its ready bash.
    fn send(&self, run: &mut Started) -> Result<Sent> {
        let state = &mut *run.state;
        let opts = &run.opts;
        let reset = std::mem::take(&mut state.reset_pending);
        // The state to go on with if the command is moved to the
        // background, taken before it runs, and the room for its job, kept
        // until the run ends (see `Slot`).
        let standby = match opts.yield_after.map(|after| (after, self.jobs.reserve())) {
            Some((after, Ok(slot))) => {
                let bash = state.bash.as_mut().expect("bash started above");
                Some((after, self.dump_state(bash)?, slot))
            }
            // Without room it stays in the foreground.
            Some((_, Err(_))) | None => None,
        };

        let run_token = CancelToken::new();
        let cancel = opts.cancel.clone().unwrap_or_default();
        let link = cancel.on_cancel({
            let t = run_token.clone();
            move || t.cancel()
        });
        *lock(&self.current) = Some(run_token.clone());
        if self.closed.load(Ordering::SeqCst) {
            // `close` ran between the check above and now: its abort found
            // no run to cancel, so this run cancels itself.
            run_token.cancel();
        }
        let waker = self.waker.clone();
        waker.reset();
        let wake = run_token.on_cancel({
            let w = waker.clone();
            move || w.wake()
        });

        let command = self.prefixed(&opts.command);
        let home = self.cwd();
        let cwd_text = run.run_cwd.as_deref().map(|dir| (dir, home.as_path()));
        let bash = state.bash.as_mut().expect("bash started above");
        let loop_state = send_line(
            bash,
            Line {
                command: &command,
                cwd: cwd_text,
                env: &opts.env,
                yield_at: standby.as_ref().map(|(after, ..)| run.started.1 + *after),
                pids: self.config.pids.clone(),
            },
            Stopper::new(opts.timeout, run_token.clone(), self.config.escalation),
        )?;
        Ok(Sent {
            reset,
            run_token,
            standby,
            _links: [link, wake],
            loop_state,
        })
    }

    /// What follows the end of the command: the session's cwd, a bash
    /// replaced or gone, what the command left running, the result.
    fn finish(
        &self,
        run: Started,
        ending: Ending,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Result<BashResult> {
        *lock(&self.current) = None;
        let Started {
            opts,
            mut state,
            started,
            pump,
            sent,
            _turn,
            ..
        } = run;
        state.mid_command = false;
        let Sent {
            reset,
            standby,
            loop_state,
            ..
        } = sent.expect("a command that ended was sent");
        let mut pump = Pump::from_parts(pump.expect("the run's sink"), on_chunk);
        if ending.yielded
            && let Some((after, dump, slot)) = standby
        {
            let job = self.background(&mut state, &opts, started, &dump, ending.baseline, slot)?;
            if let Ok(job) = self.jobs.get(job) {
                // What the run saw of a full-screen program goes on with it.
                job.carry_signs(loop_state.signs());
            }
            let outcome = Outcome {
                exit_code: None,
                stop: None,
                working_dir: Some(self.cwd().to_string_lossy().into_owned()),
                session_reset: reset,
                session_ended: false,
                backgrounded: Some((job, after)),
                violations: self.take_violations(),
            };
            drop(state);
            return Ok(conclude(pump, outcome, opts.timeout, (None, None)));
        }

        let mut exit_code = ending.record.as_ref().map(|r| r.status);
        if let Some(rec) = ending.record {
            *lock(&self.cwd) = rec.cwd;
        }
        if ending.replaced {
            let bash = state.bash.as_mut().expect("bash present");
            if self.restart(bash).is_err() {
                // It cannot take the new start-up: the next run starts afresh.
                self.discard_dead_bash(&mut state);
            }
        } else if ending.exited {
            self.jobs.mark_all_killed();
            let status = reap(state.bash.take().expect("bash present"));
            exit_code = exit_code.or_else(|| status.and_then(status_code));
        } else if ending.stop.is_some() {
            // What the command started and left behind dies with it.
            let bash = state.bash.as_ref().expect("bash present");
            let left = targets(bash.pid(), &ending.baseline);
            tree::terminate(&left, self.config.escalation.grace);
        }
        if let Some(bash) = state.bash.as_mut().filter(|b| !b.replaced) {
            let left = new_children(bash, &ending.baseline);
            if !left.is_empty()
                && let Some(old) = switch_output(bash, &mut pump)?
            {
                self.leftovers_to_job(old, left, &opts, started);
            }
        }
        let outcome = Outcome {
            exit_code,
            stop: ending.stop,
            working_dir: Some(self.cwd().to_string_lossy().into_owned()),
            session_reset: reset,
            session_ended: ending.exited || ending.replaced,
            backgrounded: None,
            violations: self.take_violations(),
        };
        drop(state);
        let lines = (opts.head_lines, opts.tail_lines);
        let mut result = conclude(pump, outcome, opts.timeout, lines);
        follow::add_notice(&mut result, &opts.command);
        Ok(result)
    }
}

/// Gives bash a new output pipe, for a run that left something running
/// (`protocol::switch_output`): what it left keeps the old pipe. Drains
/// the old pipe into `pump` (what arrived before the switch is the run's
/// output) and returns it when something still holds it, to become a job;
/// `None` when nothing does, or when bash could not take the new pipe (it
/// then keeps the old one).
fn switch_output(bash: &mut Bash, pump: &mut Pump<'_>) -> Result<Option<OwnedFd>> {
    let (read_end, write_end) = match &bash.fifos {
        Some(dir) => named_pipe(dir)?,
        None => output_pipe()?,
    };
    // bash opens the read end for writing: ours is not needed.
    drop(write_end);
    let script = protocol::switch_output(&bash.pipes(), read_end.as_raw_fd());
    let switched = run_script(bash, &script).is_ok_and(|r| r.status == 0);
    if !switched {
        return Ok(None);
    }
    let old = std::mem::replace(&mut bash.out, read_end);
    let ended = pump
        .read_available(old.as_raw_fd(), DRAIN_BUDGET)
        .map_err(read_error)?;
    Ok((!ended).then_some(old))
}

/// One run of a [`Shell`], driven a step at a time, on one thread or on
/// several in turn: drive it until a deadline on one thread and, if it has
/// not ended by then, hand it over to another that drives it on to its
/// end. It is `Send` when `S` is (`&Shell`, `Arc<Shell>`: how the run
/// holds its shell). [`Shell::run`] is a run driven to its end at once.
///
/// Each [`Run::drive`] delivers the output it reads to its own callback,
/// on the thread driving, so chunks keep their order across hand-overs.
/// While a run waits for its turn, for its bash's start-up and for its
/// command, the driving thread sleeps (never spinning) until something
/// happens or the deadline passes. The steps that are the session's own
/// (a state dump for `yield_after`, putting away what the command left
/// running, moving a yielded command to a job) are not split.
///
/// Dropping a run whose command was sent and has not ended cancels the
/// command and waits for it to stop; dropping one still waiting for its
/// turn gives up its place.
pub struct Run<S: Deref<Target = Shell>> {
    shell: S,
    stage: Stage,
}

enum Stage {
    /// Waiting for the turn at `place`.
    Queued {
        place: Place,
        opts: Box<RunOptions>,
    },
    /// Holding the turn and the session.
    Started(Box<Started>),
    Ended,
}

/// How a run's first step ended.
enum StartOutcome {
    Later(Place, Box<RunOptions>),
    Ended(BashResult),
    Started(Box<Started>),
}

/// A run holding its turn and the session's state.
struct Started {
    opts: RunOptions,
    state: StateGuard,
    run_cwd: Option<PathBuf>,
    started: (SystemTime, Instant),
    /// The sink and read buffer (a pump without its callback).
    pump: Option<(OutputSink, Vec<u8>)>,
    /// Once bash is ready and has the command.
    sent: Option<Sent>,
    /// Dropped last: the next run's turn comes once the state is back.
    _turn: Turn,
}

/// A run whose command bash has.
struct Sent {
    reset: bool,
    standby: Option<(Duration, Vec<u8>, Slot)>,
    run_token: CancelToken,
    /// The caller's cancel to the run's token, the run's token to the waker.
    _links: [CancelGuard; 2],
    loop_state: LoopState,
}

impl<S: Deref<Target = Shell>> Run<S> {
    /// A run of `opts` at `place` (taken with [`Shell::reserve`] on
    /// `shell`). Nothing happens until it is driven.
    pub fn new(shell: S, place: Place, opts: RunOptions) -> Self {
        Run {
            shell,
            stage: Stage::Queued {
                place,
                opts: Box::new(opts),
            },
        }
    }

    /// Drives the run on this thread until it ends (`Poll::Ready`, with
    /// what [`Shell::run_in_place`] returns) or `until` passes
    /// (`Poll::Pending`; `None`: no limit). Output read meanwhile goes to
    /// `on_chunk`, on this thread, as [`Shell::run`] gives it. A run that
    /// ended answers a further call with an error.
    pub fn drive(
        &mut self,
        until: Option<Instant>,
        on_chunk: &mut dyn FnMut(&str),
    ) -> Poll<Result<BashResult>> {
        let shell = &*self.shell;
        let busy = shell.busy.enter();
        let polled = shell.step(&mut self.stage, until, on_chunk);
        drop(busy);
        if polled.is_ready() && shell.closed.load(Ordering::SeqCst) && !shell.busy.is_entered() {
            // Closed from a callback of this run, which could not wait for
            // the run to end: the session ends now.
            shell.end_session();
        }
        polled
    }
}

impl<S: Deref<Target = Shell>> Drop for Run<S> {
    fn drop(&mut self) {
        let Stage::Started(run) = &self.stage else {
            return;
        };
        let Some(sent) = &run.sent else {
            return;
        };
        sent.run_token.cancel();
        let shell = &*self.shell;
        let stage = &mut self.stage;
        // A panic here leaves the run as it was: its state guard then kills the
        // bash it was using.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            while shell.step(stage, None, &mut |_| {}).is_pending() {}
        }));
    }
}
