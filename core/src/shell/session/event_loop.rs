//! The event loop of one run: sending the command to bash, then one `poll`
//! over the output pipe, the status pipe, bash's pidfd and the cancel waker
//! until the run's status record arrives, bash dies, or a stop (timeout,
//! cancel, head limit) has brought the command down; and the waits for
//! bash's own records. It can stop at a deadline and go on later, so a run
//! can be driven in steps.

use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::Result;
use crate::cwd::utf8_path;
use crate::output::fullscreen::{Sign, Signs};
use crate::private_dir;
use crate::process::io::{Read, Waker, poll, pollin, read, ready, send_all};
use crate::process::no_terminal::{NoTerminal, Program};
use crate::process::pump::Pump;
use crate::process::stop::{Stop, Stopper};
use crate::process::tree::{self, EscalationStep, Pid};
use crate::process::watch::Watch;
use crate::protocol::{
    self, CommandText, ExitCheck, INLINE_LIMIT, Kind, SEQ_MODULUS, Script, StatusRecord,
};

use super::watchdog::{Hang, Watchdog};
use super::{Bash, STARTUP_TIMEOUT, STOP_POLL};
use crate::shell::engine::Engine;

/// How the event loop of one run ended.
pub(super) struct Ending {
    pub(super) record: Option<StatusRecord>,
    pub(super) exited: bool,
    /// The command ended its bash with `exit`, which started a fresh one
    /// in the same process (protocol's `EXIT_TRAP`).
    pub(super) replaced: bool,
    pub(super) stop: Option<Stop>,
    /// bash's children when the run started (background jobs of earlier runs).
    pub(super) baseline: Vec<Pid>,
    /// The command still ran at the run's `yield_after`.
    pub(super) yielded: bool,
}

/// One run as the loop receives it.
pub(super) struct Line<'a> {
    pub(super) command: &'a str,
    /// The run's directory and the session's.
    pub(super) cwd: Option<(&'a Path, &'a Path)>,
    pub(super) env: &'a [(String, String)],
    /// When the run returns if the command still runs (`yield_after`).
    pub(super) yield_at: Option<Instant>,
    /// The session's `pids` cgroup, when it has a process limit.
    pub(super) pids: Option<std::sync::Arc<crate::process::sandbox::PidsCgroup>>,
}

/// Where the event loop of one run is, between steps.
pub(super) struct LoopState {
    /// bash's children when the run started (background jobs of earlier runs).
    baseline: Vec<Pid>,
    yield_at: Option<Instant>,
    stopper: Stopper,
    /// The looks for a run that would hang until its timeout.
    watchdog: Watchdog,
    /// What the output showed of a full-screen program (the pump's while
    /// a step runs), and the looks it calls for.
    signs: Signs,
    no_terminal: NoTerminal,
    record: Option<StatusRecord>,
    exited: bool,
    replaced: bool,
    frozen: bool,
    resumed: bool,
    /// While the escalation is on its SIGINT step, who got it (see Interrupts).
    interrupts: Option<tree::Interrupts>,
    output_open: bool,
    status_open: bool,
    /// The file holding a long command, removed at the end.
    file: Option<PathBuf>,
}

impl LoopState {
    /// What the output showed of a full-screen program so far.
    pub(super) fn signs(&self) -> &Signs {
        &self.signs
    }
}

impl Drop for LoopState {
    fn drop(&mut self) {
        if let Some(path) = self.file.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Sends one run to bash; [`run_loop_until`] runs its loop.
pub(super) fn send_line(bash: &mut Bash, line: Line<'_>, stopper: Stopper) -> Result<LoopState> {
    let Line {
        command,
        cwd,
        env,
        yield_at,
        pids,
    } = line;
    bash.seq = (bash.seq + 1) % SEQ_MODULUS;
    let file = if command.len() > INLINE_LIMIT {
        let name = format!("cmd-{}-{}.sh", std::process::id(), bash.pid());
        Some(private_dir::write_private(&name, command.as_bytes())?)
    } else {
        None
    };
    let text = match &file {
        Some(path) => CommandText::File(utf8_path(path)?),
        None => CommandText::Inline(command),
    };
    // The loop builtin runs a command's `EXIT` trap itself. With the eval
    // loop only a command that says `trap` can set one of its own (or call
    // what does); checking costs a fork (protocol::Script).
    let exit_trap = match bash.engine {
        Engine::Builtin => Some(ExitCheck::Builtin),
        Engine::Eval => command
            .contains("trap")
            .then_some(ExitCheck::Eval(&bash.exit_trap)),
    };
    let plain = matches!(exit_trap, None | Some(ExitCheck::Builtin));
    let message = match (&text, cwd, env.is_empty()) {
        (CommandText::Inline(cmd), None, true) if plain => bash.message(Kind::Command, cmd),
        _ => {
            let script = Script {
                command: text,
                cwd,
                env,
                exit_trap,
            }
            .render();
            bash.message(Kind::Script, &script)
        }
    };
    let baseline = baseline_of(bash);
    // bash dead before reading the line is reported like any death.
    let exited = send_all(&bash.input, &message).is_err();
    Ok(LoopState {
        baseline,
        yield_at,
        stopper,
        watchdog: Watchdog::new(pids),
        signs: Signs::default(),
        no_terminal: NoTerminal::default(),
        record: None,
        exited,
        replaced: false,
        frozen: false,
        resumed: false,
        interrupts: None,
        output_open: true,
        status_open: true,
        file,
    })
}

/// The event loop of one run, from where `lp` left it until the run ends
/// (`Some`) or `until` passes (`None`).
pub(super) fn run_loop_until(
    bash: &mut Bash,
    pump: &mut Pump<'_>,
    waker: &Waker,
    lp: &mut LoopState,
    until: Option<Instant>,
) -> Result<Option<Ending>> {
    let mut watch = Watch::new(
        bash.out.as_raw_fd(),
        bash.status.as_raw_fd(),
        bash.pidfd.as_raw_fd(),
        waker,
    )
    .resume(lp.output_open, lp.status_open);
    std::mem::swap(&mut pump.signs, &mut lp.signs);
    let ending = loop_turns(bash, pump, &mut watch, lp, until);
    std::mem::swap(&mut pump.signs, &mut lp.signs);
    lp.output_open = watch.output_open();
    lp.status_open = watch.status_open();
    ending
}

fn loop_turns(
    bash: &mut Bash,
    pump: &mut Pump<'_>,
    watch: &mut Watch<'_>,
    lp: &mut LoopState,
    until: Option<Instant>,
) -> Result<Option<Ending>> {
    while lp.record.is_none() && !lp.exited {
        // While stopping, look every few milliseconds whether the command's
        // processes are gone, rather than waiting out each grace period.
        let watching = lp.stopper.reason.is_none();
        let wake_at = match (lp.frozen, lp.stopper.wake_at()) {
            (true, Some(t)) => Some(t.min(Instant::now() + STOP_POLL)),
            (false, t) => [
                t,
                lp.yield_at,
                watching.then(|| lp.watchdog.wake_at()),
                watching.then(|| lp.no_terminal.due(&pump.signs)).flatten(),
            ]
            .into_iter()
            .flatten()
            .min(),
            (true, None) => None,
        };
        let wake_at = [wake_at, until].into_iter().flatten().min();
        let seen = watch.turn(pump, wake_at)?;
        lp.exited = seen.exited;
        bash.parser.push(seen.status);
        while let Some(rec) = bash.parser.next_record() {
            if rec.seq == bash.seq {
                lp.record = Some(rec);
            } else if rec.seq == protocol::exit_record_seq(bash.seq) {
                lp.replaced = true;
                lp.record = Some(rec);
            }
        }
        if lp.record.is_none()
            && !lp.exited
            && !lp.frozen
            && lp.yield_at.is_some_and(|t| Instant::now() >= t)
        {
            // Still running at `yield_after`: the caller moves it to a job.
            return Ok(Some(Ending {
                record: None,
                exited: false,
                replaced: false,
                stop: None,
                baseline: std::mem::take(&mut lp.baseline),
                yielded: true,
            }));
        }
        if lp.stopper.reason.is_none() && !lp.exited {
            // A full-screen program without a terminal: stopped as a
            // timeout stops it (docs/behaviour.md, section 9).
            let (pid, baseline) = (bash.pid(), &lp.baseline);
            let looked = lp
                .no_terminal
                .look(Instant::now(), &pump.signs, || targets(pid, baseline));
            if let Some(program) = looked {
                lp.stopper.stop(Stop::NoTerminal(program));
            }
        }
        let mut step = lp.stopper.check(Instant::now(), pump.sink.head_satisfied());
        if (lp.record.is_some() || lp.exited) && !lp.frozen {
            // The command has ended (a cancel from its last chunk's callback,
            // say): nothing is left to stop, and bash, back in its loop,
            // must not get the unwind signal meant for a command. (A bash
            // frozen already goes on below: it is let go once its command's
            // processes are gone.)
            break;
        }
        if lp.stopper.reason.is_none() {
            match lp
                .watchdog
                .look(Instant::now(), bash.pid(), bash.status.as_fd())
            {
                // bash stopped itself: nothing else would let it go on
                // (docs/behaviour.md, section 7).
                Some(Hang::Stopped) => tree::signal_all(&[bash.pid()], Signal::CONT),
                // Stopped as a timeout stops it: its processes are killed
                // and bash unwinds (docs/behaviour.md, section 16).
                Some(Hang::ProcessLimit(n)) => {
                    lp.stopper.stop(Stop::ProcessLimit(n));
                    step = lp.stopper.check(Instant::now(), false);
                }
                // bash skips its own steps and cannot be brought back: it is
                // killed with what the command left, and the run ends as
                // the session does (docs/behaviour.md, section 7).
                Some(Hang::Unreported) => {
                    lp.stopper.ended(Stop::Unreported);
                    tree::signal_all(&targets(bash.pid(), &lp.baseline), Signal::KILL);
                    tree::signal_all(&[bash.pid()], Signal::KILL);
                    continue;
                }
                None => {}
            }
        }
        let aborting = matches!(
            lp.stopper.reason,
            Some(Stop::Timeout | Stop::Cancel | Stop::ProcessLimit(_) | Stop::NoTerminal(_))
        );
        if aborting && !lp.frozen {
            // Freeze bash before touching its children: once the running
            // command dies, bash would go on with the rest of the command
            // line (`make; rm -rf build`). The unwind signal waits, pending,
            // until bash runs again; then bash abandons the rest of the
            // line and reports, its state intact (protocol::UNWIND_TRAP).
            tree::signal_all(&[bash.pid()], Signal::STOP);
            tree::signal_all(&[bash.pid()], protocol::unwind_signal(bash.seq));
            lp.frozen = true;
        }
        match step {
            Some(EscalationStep::Signal(sig)) => {
                let mut pids = targets(bash.pid(), &lp.baseline);
                // A closed status pipe with bash alive means `exec`: the
                // process is now the command itself.
                if !watch.status_open() && !lp.frozen {
                    pids.push(bash.pid());
                }
                if sig == Signal::INT {
                    lp.interrupts.get_or_insert_default().send(&pids);
                } else {
                    lp.interrupts = None;
                    tree::signal_to_end(&pids, sig);
                }
            }
            // Still on the SIGINT step: a process that missed it (bash
            // had not exec'd it yet, or started it before it could unwind)
            // gets it now.
            None if lp.frozen => {
                if let Some(sent) = &mut lp.interrupts {
                    sent.send(&targets(bash.pid(), &lp.baseline));
                }
            }
            // Every signal went unheeded (or bash itself is stuck in a
            // builtin loop): end it all.
            Some(EscalationStep::Exhausted) => {
                tree::signal_all(&targets(bash.pid(), &lp.baseline), Signal::KILL);
                tree::signal_all(&[bash.pid()], Signal::KILL);
            }
            None => {}
        }
        // Once what it ran is gone, bash goes on, to unwind and report. If
        // it cannot (stuck in a builtin that never reaches a trap), the
        // escalation runs out and it is killed above: the session ends.
        if lp.frozen && !lp.resumed && targets(bash.pid(), &lp.baseline).is_empty() {
            tree::signal_all(&[bash.pid()], Signal::CONT);
            lp.resumed = true;
        }
        if lp.record.is_none() && !lp.exited && until.is_some_and(|t| Instant::now() >= t) {
            // The caller's deadline: the run goes on at its next step.
            return Ok(None);
        }
    }
    watch.drain(pump)?;
    if let Some(Sign::GaveUp(name)) = pump.signs.found() {
        // It said so as it quit: the run reads as stopped for it.
        lp.stopper.ended(Stop::NoTerminal(Program::new(name)));
    }
    // With a record in hand the run completed even if bash exited right
    // after; the next run notices the death and starts afresh.
    let exited = lp.exited && lp.record.is_none();
    Ok(Some(Ending {
        record: lp.record.take(),
        exited,
        replaced: lp.replaced,
        stop: lp.stopper.reason,
        baseline: std::mem::take(&mut lp.baseline),
        yielded: false,
    }))
}

/// Runs a script of conch's (`Kind::Script`) as the next run of a bash that
/// runs nothing of the user's meanwhile, and waits for its record: the
/// session's state dump and the switch of its output pipe.
pub(super) fn run_script(
    bash: &mut Bash,
    script: &str,
) -> std::result::Result<StatusRecord, String> {
    bash.seq = (bash.seq + 1) % SEQ_MODULUS;
    send_all(&bash.input, &bash.message(Kind::Script, script)).map_err(|e| e.to_string())?;
    wait_record(bash, bash.seq, STARTUP_TIMEOUT)
}

/// Waits up to `limit` for the record of run `seq`, from a bash that runs
/// nothing of the user's meanwhile.
pub(super) fn wait_record(
    bash: &mut Bash,
    seq: u64,
    limit: Duration,
) -> std::result::Result<StatusRecord, String> {
    wait_record_until(bash, seq, (Instant::now() + limit, limit), None)
        .map(|record| record.expect("no deadline of the caller's"))
}

/// [`wait_record`] with its time limit as `(deadline, limit)`, returning
/// `None` if `until` passes first.
pub(super) fn wait_record_until(
    bash: &mut Bash,
    seq: u64,
    (deadline, limit): (Instant, Duration),
    until: Option<Instant>,
) -> std::result::Result<Option<StatusRecord>, String> {
    let stop_at = until.map_or(deadline, |until| until.min(deadline));
    let mut fds = [
        pollin(bash.status.as_raw_fd()),
        pollin(bash.pidfd.as_raw_fd()),
    ];
    let mut buf = [0u8; 512];
    loop {
        match poll(&mut fds, Some(stop_at)) {
            Ok(0) if Instant::now() >= deadline => {
                return Err(format!("no answer within {limit:?}"));
            }
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
        match read(fds[0].fd, &mut buf) {
            Ok(Read::Data(n)) => bash.parser.push(&buf[..n]),
            Ok(Read::Eof) => return Err("it exited".into()),
            Ok(Read::WouldBlock) if ready(&fds[1]) => return Err("it exited".into()),
            Ok(Read::WouldBlock) => {}
            Err(e) => return Err(e.to_string()),
        }
        while let Some(record) = bash.parser.next_record() {
            if record.seq == seq {
                return Ok(Some(record));
            }
        }
    }
}

/// The children bash had before the run: background jobs of earlier runs,
/// which a stop of this run must spare.
fn baseline_of(bash: &Bash) -> Vec<Pid> {
    bash.children.read()
}

/// bash's live children that were not there when the run started: what the
/// run left running (a `setsid` escape or a double fork too: bash is their
/// subreaper).
pub(super) fn new_children(bash: &Bash, baseline: &[Pid]) -> Vec<Pid> {
    let mut left = bash.children.read();
    left.retain(|p| !baseline.contains(p) && tree::is_alive(*p));
    left
}

/// Every live process below bash except the subtrees of `baseline`.
pub(super) fn targets(bash: Pid, baseline: &[Pid]) -> Vec<Pid> {
    tree::descendants_except(bash, baseline)
}
