//! One job: its output as it arrives, its status, its processes, and the
//! waits of polls.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustix::process::Signal;

use super::table::JobEnds;
use super::{
    Control, FINISHED_KEPT_FOR, JobExitHook, JobId, JobInfo, JobPoll, JobStatus, PollOptions,
};
use crate::CancelToken;
use crate::command::follow;
use crate::output::fullscreen::Signs;
use crate::output::sink::{OutputSink, SinkOptions, notice_line};
use crate::process::no_terminal::{self, NoTerminal, Program};
use crate::process::tree::{self, Pid};
use crate::protocol::{self, StatusParser};
use crate::pty::Screen;
use crate::sync::{deadline_after, lock, passed, wait_until};

/// How long [`Job::kill`] waits for the output to close once the tree is
/// dead (a process outside the tree may still hold it).
const END_WAIT: Duration = Duration::from_secs(2);

/// How long a job on a terminal must have been quiet for a process blocked
/// reading the terminal to count as waiting for input.
const INPUT_QUIET: Duration = Duration::from_millis(100);

/// The processes of a job.
pub(crate) enum Processes {
    /// A bash conch runs the job in (see [`Control`]); its status record
    /// for run `seq` carries the command's exit status.
    Root { control: Control, seq: u64 },
    /// What a command left running in the session (`cmd &`): the session
    /// bash's children that appeared during that run, with their trees.
    Left { pids: Vec<Pid>, grace: Duration },
}

/// What a job is made of, besides its descriptors.
pub(crate) struct JobSpec {
    /// The command that started it.
    pub command: String,
    pub started: (SystemTime, Instant),
    pub processes: Processes,
    /// Its own deadline, from its start.
    pub timeout: Option<Duration>,
    /// Tail-only.
    pub sink: SinkOptions,
}

/// A job, shared by its session's table, the reader thread and polls.
pub(crate) struct Job {
    pub(crate) id: JobId,
    command: String,
    started: SystemTime,
    start: Instant,
    processes: Processes,
    /// When its own timeout kills it.
    pub(crate) deadline: Option<Instant>,
    state: Mutex<State>,
    /// Signalled on new output, on the end, and on a poll's cancel.
    changed: Condvar,
    job_ends: Arc<JobEnds>,
    on_exit: Option<JobExitHook>,
}

struct State {
    /// Tail-only: the last `max_bytes` of the output, the rest in the artifact.
    sink: OutputSink,
    status: JobStatus,
    /// When the job ended: its elapsed time stops there.
    ended: Option<Instant>,
    /// It is being killed: its end reads `killed` (or `timed_out`).
    stopped: Option<JobStatus>,
    exit_code: Option<i32>,
    records: StatusParser,
    /// Where the next poll without a cursor reads from.
    cursor: u64,
    /// A poll after the end read the output to its end.
    read_to_end: bool,
    /// When output last came.
    last_output: Option<Instant>,
    /// The raw output so far ends a line.
    ends_line: bool,
    /// What the output showed of a full-screen program, and the looks it
    /// calls for; `None` on a terminal, where such programs belong.
    signs: Option<(Signs, NoTerminal)>,
    /// On a terminal: the input modes the output set, which keys follow
    /// (an arrow is `ESC O A` once the program asked for application
    /// cursor keys, as a full-screen program does).
    modes: Option<Screen>,
    /// It is being stopped for want of a terminal: the program, whose
    /// notice ends the output.
    no_terminal: Option<Program>,
}

impl Job {
    /// A running job as `spec` describes it.
    pub(crate) fn new(
        id: JobId,
        spec: JobSpec,
        job_ends: Arc<JobEnds>,
        on_exit: Option<JobExitHook>,
    ) -> Job {
        let JobSpec {
            command,
            started,
            processes,
            timeout,
            sink,
        } = spec;
        debug_assert!(sink.head_bytes == 0 && sink.head_lines.is_none());
        let terminal =
            matches!(&processes, Processes::Root { control, .. } if control.is_terminal());
        Job {
            id,
            command,
            started: started.0,
            start: started.1,
            processes,
            deadline: timeout.map(|t| started.1 + t),
            state: Mutex::new(State {
                sink: OutputSink::new(sink),
                status: JobStatus::Running,
                ended: None,
                stopped: None,
                exit_code: None,
                records: StatusParser::default(),
                cursor: 0,
                read_to_end: false,
                last_output: None,
                ends_line: true,
                signs: (!terminal).then(Default::default),
                modes: terminal.then(Screen::modes_only),
                no_terminal: None,
            }),
            changed: Condvar::new(),
            job_ends,
            on_exit,
        }
    }

    /// Takes raw output (the reader thread).
    pub(crate) fn push(&self, bytes: &[u8]) {
        let mut state = lock(&self.state);
        if let Some((signs, _)) = &mut state.signs {
            signs.push(bytes);
        }
        if let Some(modes) = &mut state.modes {
            modes.process(bytes);
            // What the program asked of the terminal goes unanswered, as
            // it always has on a job's.
            modes.take_replies();
        }
        if let Some(&last) = bytes.last() {
            state.ends_line = last == b'\n';
            state.last_output = Some(Instant::now());
        }
        state.sink.push(bytes);
        state.sink.flush();
        drop(state);
        self.changed.notify_all();
    }

    /// Takes what the root wrote on its status pipe (the reader thread).
    /// The record of the command's run, or of its `exit` (which a
    /// session's bash moved to the background writes as in the
    /// foreground), carries its exit status, and the root is then told to
    /// let go ([`Control::release`]).
    pub(crate) fn push_status(&self, bytes: &[u8]) {
        let Processes::Root { control, seq } = &self.processes else {
            return;
        };
        let mut state = lock(&self.state);
        state.records.push(bytes);
        let mut ended = None;
        while let Some(record) = state.records.next_record() {
            if record.seq == *seq {
                ended = Some((record.status, false));
            } else if record.seq == protocol::exit_record_seq(*seq) {
                ended = Some((record.status, true));
            }
        }
        if let Some((status, exited)) = ended {
            state.exit_code.get_or_insert(status);
            drop(state);
            control.release(exited);
        }
    }

    /// The root ended with no record of the command's end: it ran the
    /// command itself, and was killed or `exec`'d the program that ended
    /// (the reader thread, once the root's status pipe closed and the root
    /// exited). Its own status is the command's.
    pub(crate) fn root_ended(&self) {
        let code = self.control().and_then(Control::root_exit_code);
        let mut state = lock(&self.state);
        if state.exit_code.is_none() {
            state.exit_code = code;
        }
    }

    /// Whether the command's exit status is known: its record came (or
    /// SIGINT cut its line, see [`Job::signal`]).
    pub(crate) fn reported(&self) -> bool {
        lock(&self.state).exit_code.is_some()
    }

    /// The output reached its end (and the root's status pipe too): the
    /// reader thread. What is left of the job is collected, and the exit
    /// hook called, on a thread of its own.
    pub(crate) fn end(self: &Arc<Self>) {
        let mut state = lock(&self.state);
        let notice = match state.no_terminal {
            Some(program) => Some(no_terminal::notice(program)),
            // Without a terminal, and not stopped: `less +F` printed the
            // file once.
            None => {
                (state.signs.is_some() && state.stopped.is_none() && follow::follows(&self.command))
                    .then(|| follow::NOTICE.to_string())
            }
        };
        if let Some(notice) = notice {
            let notice = format!("{}\n", notice_line(&notice));
            let notice = if state.ends_line {
                notice
            } else {
                format!("\n{notice}")
            };
            state.sink.push(notice.as_bytes());
        }
        state.sink.finish();
        state.sink.flush();
        state.status = state.stopped.unwrap_or(JobStatus::Exited);
        if state.status != JobStatus::Exited {
            state.exit_code = None;
        }
        state.ended = Some(Instant::now());
        drop(state);
        self.changed.notify_all();
        self.job_ends.job_ended();
        let job = self.clone();
        let spawned = std::thread::Builder::new()
            .name("conch-job-end".into())
            .spawn(move || job.after_end());
        if let Err(e) = spawned {
            // No thread: collect here (the reader waits, once).
            drop(e);
            self.after_end();
        }
    }

    fn after_end(&self) {
        if let Processes::Root { control, .. } = &self.processes {
            control.finish();
        }
        if let Some(hook) = &self.on_exit {
            hook.call(self.info());
        }
    }

    /// Whether the program on the job's terminal asked for application
    /// cursor keys (false without a terminal).
    pub(crate) fn application_cursor(&self) -> bool {
        lock(&self.state)
            .modes
            .as_ref()
            .is_some_and(Screen::application_cursor)
    }

    /// Whether the job still runs.
    pub(crate) fn is_running(&self) -> bool {
        lock(&self.state).status == JobStatus::Running
    }

    /// Marks the job as being stopped, its end to read `why`; false when
    /// it had ended already (or is being stopped).
    fn mark_stopped(&self, why: JobStatus) -> bool {
        let mut state = lock(&self.state);
        if state.status != JobStatus::Running || state.stopped.is_some() {
            return false;
        }
        state.stopped = Some(why);
        true
    }

    /// The session is killing everything it runs: the job's end reads
    /// `killed` (the session kills the processes).
    pub(crate) fn mark_killed(&self) {
        self.mark_stopped(JobStatus::Killed);
    }

    /// Kills the job's whole tree with the kill escalation and waits (a
    /// bounded time) for its output to close. Blocks for up to the
    /// escalation's graces.
    pub(crate) fn kill(&self, why: JobStatus) {
        if !self.mark_stopped(why) && lock(&self.state).status != JobStatus::Running {
            return;
        }
        match &self.processes {
            Processes::Root { control, .. } => {
                control.kill();
                if !self.wait_end(END_WAIT) {
                    // A root that did not let go (a session's bash deaf
                    // to the unwind): killed outright.
                    control.reap();
                }
            }
            Processes::Left { pids, grace } => tree::escalate_blocking(|| tree_of(pids), *grace),
        }
        self.wait_end(END_WAIT);
    }

    /// Waits up to `limit` for the job to end; whether it did.
    fn wait_end(&self, limit: Duration) -> bool {
        let deadline = deadline_after(limit);
        let mut state = lock(&self.state);
        while state.status == JobStatus::Running {
            let now = Instant::now();
            if passed(deadline, now) {
                return false;
            }
            state = wait_until(&self.changed, state, deadline, now);
        }
        true
    }

    /// Sends `signal` to the job's processes.
    pub(crate) fn signal(&self, signal: Signal) {
        match &self.processes {
            // A command whose line SIGINT cuts ends as `( command )` does,
            // its bash dead of it: 128 + N, whatever bash then reports. Not
            // one that has ended already (its record came).
            Processes::Root { control, .. } => control.signal(signal, || {
                let exit_code = &mut lock(&self.state).exit_code;
                let runs = exit_code.is_none();
                exit_code.get_or_insert(128 + signal.as_raw());
                runs
            }),
            Processes::Left { pids, .. } => tree::signal_all(&tree_of(pids), signal),
        }
    }

    /// The job's control, when conch runs it (not for work a command left).
    pub(crate) fn control(&self) -> Option<&Control> {
        match &self.processes {
            Processes::Root { control, .. } => Some(control),
            Processes::Left { .. } => None,
        }
    }

    /// Waits as `opts` says, then reads (see [`PollOptions`]).
    pub(crate) fn poll(
        self: &Arc<Self>,
        opts: &PollOptions,
        default_max: usize,
        cancel: &CancelToken,
    ) -> JobPoll {
        let _wake = cancel.on_cancel({
            // Notified under the lock, where the waiter rechecks the token:
            // a cancel between its check and its wait is not lost.
            let job = self.clone();
            move || {
                let _state = lock(&job.state);
                job.changed.notify_all();
            }
        });
        let deadline = deadline_after(opts.wait);
        let max = opts.max_bytes.unwrap_or(default_max);
        let mut state = lock(&self.state);
        // Without a cursor, where the last poll stopped, read afresh after
        // each wait: of two concurrent polls, each byte goes to one.
        let mut from;
        loop {
            from = opts.cursor.unwrap_or(state.cursor);
            let now = Instant::now();
            let matched = opts.until.as_ref().is_some_and(|re| {
                let (_, mut text) = state.sink.read_from(from, usize::MAX);
                // With what the masker holds back, which this poll gives out.
                text.push_str(&state.sink.held());
                re.is_match(&text)
            });
            if state.status != JobStatus::Running
                || matched
                || passed(deadline, now)
                || cancel.is_cancelled()
            {
                break;
            }
            state = wait_until(&self.changed, state, deadline, now);
        }
        // The poll gives out all the output so far: what the masker held
        // back as the possible start of a secret too.
        if !state.sink.release_held().is_empty() {
            state.sink.flush();
        }
        let (cursor, output) = state.sink.read_from(from, max);
        let next_cursor = cursor + output.len() as u64;
        let total_bytes = state.sink.total_bytes();
        state.cursor = next_cursor;
        if state.status != JobStatus::Running && next_cursor >= total_bytes {
            state.read_to_end = true;
        }
        let quiet = state.last_output.is_none_or(|t| t.elapsed() >= INPUT_QUIET);
        let mut poll = JobPoll {
            job: self.id,
            status: state.status,
            exit_code: state
                .exit_code
                .filter(|_| state.status != JobStatus::Running),
            omitted_bytes: cursor.saturating_sub(from),
            cursor,
            next_cursor,
            total_bytes,
            artifact_id: state.sink.artifact_id().map(str::to_string),
            artifact_truncated: state.sink.artifact_capped(),
            elapsed: self.elapsed(&state),
            output,
            waiting_for_input: false,
        };
        let stopping = state.stopped.is_some();
        drop(state);
        // Looked at once the poll has its output, outside the lock: a few
        // reads of `/proc`, on a terminal only.
        poll.waiting_for_input = poll.status == JobStatus::Running
            && !stopping
            && quiet
            && self.control().is_some_and(Control::waits_for_input);
        poll
    }

    /// Takes over what the run that became this job saw of a full-screen
    /// program (a run moved to the background at its `yield_after`).
    pub(crate) fn carry_signs(&self, earlier: &Signs) {
        if let Some((signs, _)) = &mut lock(&self.state).signs {
            signs.carry_over(earlier);
        }
        super::reader::wake();
    }

    /// When the reader thread must look whether the job runs a
    /// full-screen program without a terminal (see
    /// [`crate::process::no_terminal`]): `None` while its output shows no
    /// sign of one.
    pub(crate) fn terminal_look_due(&self) -> Option<Instant> {
        let state = lock(&self.state);
        if state.status != JobStatus::Running || state.stopped.is_some() {
            return None;
        }
        let (signs, looks) = state.signs.as_ref()?;
        looks.due(signs)
    }

    /// Looks (the reader thread, when [`Job::terminal_look_due`] says)
    /// whether the job runs a full-screen program without a terminal, and
    /// if so kills it (on a thread of its own: the escalation takes its
    /// graces); its output then ends with the notice.
    pub(crate) fn look_for_terminal(self: &Arc<Self>, now: Instant) {
        let mut state = lock(&self.state);
        if state.status != JobStatus::Running || state.stopped.is_some() {
            return;
        }
        let Some((signs, looks)) = &mut state.signs else {
            return;
        };
        let Some(program) = looks.look(now, signs, || self.processes_now()) else {
            return;
        };
        state.no_terminal = Some(program);
        drop(state);
        let job = self.clone();
        let spawned = std::thread::Builder::new()
            .name("conch-job-stop".into())
            .spawn(move || job.kill(JobStatus::Killed));
        if spawned.is_err() {
            // No thread: the processes are signalled here, once.
            self.mark_stopped(JobStatus::Killed);
            tree::signal_all(&self.processes_now(), Signal::KILL);
        }
    }

    /// The job's processes now.
    fn processes_now(&self) -> Vec<Pid> {
        match &self.processes {
            Processes::Root { control, .. } => control.processes(),
            Processes::Left { pids, .. } => tree_of(pids),
        }
    }

    /// The job as a listing shows it.
    pub(crate) fn info(&self) -> JobInfo {
        let state = lock(&self.state);
        JobInfo {
            job: self.id,
            command: self.command.clone(),
            status: state.status,
            exit_code: state
                .exit_code
                .filter(|_| state.status != JobStatus::Running),
            started: self.started,
            elapsed: self.elapsed(&state),
            total_bytes: state.sink.total_bytes(),
            artifact_id: state.sink.artifact_id().map(str::to_string),
            artifact_truncated: state.sink.artifact_capped(),
        }
    }

    /// A finished job read to its end, long enough ago to be forgotten,
    /// with nothing of it left to collect.
    pub(crate) fn forgettable(&self, now: Instant) -> bool {
        let state = lock(&self.state);
        state.read_to_end
            && state.ended.is_some_and(|t| now - t >= FINISHED_KEPT_FOR)
            && self.control().is_none_or(Control::is_reaped)
    }

    fn elapsed(&self, state: &State) -> Duration {
        state.ended.unwrap_or_else(Instant::now) - self.start
    }
}

/// `pids` that still live, with everything below them.
fn tree_of(pids: &[Pid]) -> Vec<Pid> {
    let mut all = Vec::new();
    for &pid in pids.iter().filter(|&&p| tree::is_alive(p)) {
        all.push(pid);
        all.extend(tree::descendants(pid));
    }
    all
}
