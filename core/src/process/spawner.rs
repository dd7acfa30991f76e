//! Starting contained children: from one long-lived thread, without copying
//! the host.
//!
//! `PR_SET_PDEATHSIG` fires when the *thread* that started the child exits,
//! not the process. Hosts call conch from short-lived threads (a Python
//! `threading.Thread`, a worker pool), and a shell started there would be
//! killed when that thread ends. So every contained child is started by one
//! process-global thread that lives as long as the host.
//!
//! On Linux the child is started the way `posix_spawn` starts one: `clone`
//! with `CLONE_VM | CLONE_VFORK`, on a stack of its own, so nothing of the
//! host is copied (macOS and the BSDs `fork`: see [`super::sys`]). A `fork` of a Node or Python host copies its page tables, and the
//! child's `execve` tears them down again: a cost that grows with the host's
//! memory (a millisecond or more per shell for a typical agent host), paid
//! on the thread that waits for it. (`posix_spawn`
//! itself cannot set `PR_SET_PDEATHSIG` or make a subreaper.)
//!
//! Until `execve` the child shares the host's memory: the spawner thread is
//! suspended, the host's other threads are not. So the child only makes
//! system calls on data prepared before the clone (no allocation, no lock,
//! no panic), and every signal is reset to its default before the child
//! unblocks signals, so no handler of the host runs in it.
//!
//! This module stays on raw `libc`, unlike the rest of the engines (which
//! use rustix's safe wrappers): rustix has no `clone` onto a caller-given
//! stack, its `execve` and `sigaction` live only in its `runtime` module
//! (meant for libc-less runtimes), and the code between the clone and
//! `execve` must be nothing but plain system calls on data prepared
//! before, with no owned descriptor to drop (rustix's `dup2` and
//! `fcntl_dupfd_cloexec` deal in `OwnedFd`s).

use std::ffi::{CString, OsString};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};

use libc::{c_char, c_int, c_void};

use super::child::Process;
use super::sandbox::{Confinement, Entry};
use super::sys::{self, Inherited, Starter};

/// What to start. The environment is given whole: nothing is inherited.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// A path, or a name looked up on `PATH`.
    pub program: PathBuf,
    /// The program's `argv[0]` (what a shell shows as `$0`), when not
    /// `program` as given.
    pub arg0: Option<OsString>,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub cwd: Option<PathBuf>,
    /// `(ours, theirs)`: our descriptor `ours` becomes the child's `theirs`
    /// (stdin, stdout, stderr, any other below [`HIGH_FD`]). Every other
    /// descriptor from 3 up is closed on exec.
    pub fds: Vec<(RawFd, RawFd)>,
    /// Make the child a child subreaper, so double-forked orphans come back to it.
    pub subreaper: bool,
    /// What the host's death does to the child.
    pub on_host_death: HostDeath,
    /// Make stdin (a PTY's slave) the controlling terminal of the child's
    /// new session, so ctrl+c and SIGWINCH reach it.
    pub controlling_terminal: bool,
    /// The sandbox the child enters before `execve`; `None`: none.
    pub sandbox: Option<Arc<Confinement>>,
}

/// What the host's death does to a child (`PR_SET_PDEATHSIG`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HostDeath {
    /// It is killed.
    #[default]
    Kill,
    /// It is frozen (SIGSTOP) and its whole tree taken down by the host's
    /// guard (see [`super::lifeline`]), which is told of it at once:
    /// killed outright, it would leave its orphans to init, out of reach.
    Freeze,
    /// Nothing: the guard itself.
    Outlive,
}

type Job = (Launch, Sender<io::Result<Process>>);

/// The spawner thread's queue, and the process it was started in. A host
/// that forks (Python's `multiprocessing`, a pre-forking server) has no
/// such thread in the child, only the parent's queue, which nobody reads:
/// the child starts a spawner of its own at its first start.
static SPAWNER: Mutex<Option<(u32, Sender<Job>)>> = Mutex::new(None);

/// This process's spawner thread: started on first use, and again in a
/// forked child.
fn spawner() -> io::Result<Sender<Job>> {
    let mut spawner = crate::sync::lock(&SPAWNER);
    let here = super::fork::current();
    if let Some((started_in, tx)) = spawner.as_ref()
        && *started_in == here
    {
        return Ok(tx.clone());
    }
    let (tx, rx) = channel::<Job>();
    std::thread::Builder::new()
        .name("conch-spawner".into())
        .spawn(move || {
            let starter = Starter::new();
            for (launch, reply) in rx {
                let started = match &starter {
                    Ok(starter) => start(&launch, starter),
                    Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
                };
                let _ = reply.send(started);
            }
        })?;
    *spawner = Some((here, tx.clone()));
    Ok(tx)
}

/// Above every descriptor a contained child is given.
const HIGH_FD: RawFd = 64;

/// Starts `launch` in a new session, killed if the host dies, with default
/// signal dispositions and an empty mask (a host that ignores SIGINT or
/// SIGPIPE must not pass that on to the commands), and only the descriptors
/// of `launch.fds` besides stdin, stdout and stderr. Errors come from the
/// child's set-up or its `execve`.
pub fn spawn(launch: Launch) -> io::Result<Process> {
    if let Some(&(_, theirs)) = launch.fds.iter().find(|(_, theirs)| *theirs >= HIGH_FD) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("descriptor {theirs} is not below {HIGH_FD}"),
        ));
    }
    // Where the kernel has no parent-death signal, the guard takes down
    // every tree that must not outlive the host.
    let guarded = match launch.on_host_death {
        HostDeath::Freeze => true,
        HostDeath::Kill => !sys::HOST_DEATH_SIGNAL,
        HostDeath::Outlive => false,
    };
    let (tx, rx) = channel();
    spawner()?
        .send((launch, tx))
        .map_err(|_| io::Error::other("conch spawner thread is gone"))?;
    let child = rx
        .recv()
        .map_err(|_| io::Error::other("conch spawner thread is gone"))??;
    if guarded {
        super::lifeline::guard(child.pid());
        return Ok(child.into_guarded());
    }
    Ok(child)
}

/// Finds an executable on `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_else(|| vec!["/usr/bin".into(), "/bin".into()])
        .into_iter()
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

/// Whether `path` is a file (after symlinks) with an execute bit set.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where the child failed, reported with its errno.
#[derive(Clone, Copy)]
enum Stage {
    Setsid = 1,
    Descriptors,
    Terminal,
    Cwd,
    Namespaces,
    Sandbox,
    Exec,
}

impl Stage {
    /// What failed at the stage reported as `code`, for the error message;
    /// `None` for `execve`, whose error speaks for itself.
    fn what(code: i32, launch: &Launch) -> Option<String> {
        const SETSID: i32 = Stage::Setsid as i32;
        const DESCRIPTORS: i32 = Stage::Descriptors as i32;
        const TERMINAL: i32 = Stage::Terminal as i32;
        const CWD: i32 = Stage::Cwd as i32;
        const NAMESPACES: i32 = Stage::Namespaces as i32;
        const SANDBOX: i32 = Stage::Sandbox as i32;
        Some(match code {
            SETSID => "cannot start a session".into(),
            DESCRIPTORS => "cannot place its descriptors".into(),
            TERMINAL => "cannot take its terminal".into(),
            CWD => match &launch.cwd {
                Some(dir) => format!("cannot enter {}", dir.display()),
                None => "cannot enter its directory".into(),
            },
            NAMESPACES => "cannot set up its sandbox's namespaces".into(),
            SANDBOX => "cannot enter its sandbox".into(),
            _ => return None,
        })
    }
}

/// Starts the child (spawner thread) and waits until it has called
/// `execve`, or failed.
fn start(launch: &Launch, starter: &Starter) -> io::Result<Process> {
    // Both ends close-on-exec: the child's closes when it execs.
    let (report_r, report_w) = std::io::pipe()?;
    let mut plan = Plan::new(launch, report_w.as_raw_fd())?;
    // SAFETY: `plan` outlives the child's use of it: with CLONE_VFORK the
    // clone returns once the child has exec'd or exited; a forked child
    // has a copy of it.
    let pid = unsafe { start_child(&mut plan, starter)? };
    drop(report_w);
    let mut process = Process::new(pid);
    let mut report = [0u8; 8];
    let n = loop {
        match (&report_r).read(&mut report) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            read => break read.unwrap_or(0),
        }
    };
    if n == 0 {
        // End of file: the report pipe closed on exec.
        return Ok(process);
    }
    let _ = process.wait();
    let stage = i32::from_ne_bytes(report[..4].try_into().expect("4 bytes"));
    let errno = i32::from_ne_bytes(report[4..].try_into().expect("4 bytes"));
    let err = io::Error::from_raw_os_error(errno);
    match Stage::what(stage, launch) {
        Some(what) => Err(io::Error::new(err.kind(), format!("{what}: {err}"))),
        None => Err(err),
    }
}

/// Everything the child reads, as C data made before the clone.
struct Plan {
    program: CString,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
    cwd: Option<CString>,
    fds: Vec<(RawFd, RawFd)>,
    /// Where the child first copies each of `fds` (filled in by the child).
    high: Vec<RawFd>,
    subreaper: bool,
    death_signal: c_int,
    controlling_terminal: bool,
    sandbox: Option<Arc<Confinement>>,
    /// What the child needs of its own to enter `sandbox`.
    entry: Option<Entry>,
    /// The write end of the pipe a failure is reported on.
    report: RawFd,
    /// The host's descriptors, where the child needs a list of them.
    inherited: Inherited,
    /// What `argv` and `envp` point into.
    _strings: Vec<CString>,
}

impl Plan {
    fn new(launch: &Launch, report: RawFd) -> io::Result<Plan> {
        let c = |bytes: &[u8]| {
            CString::new(bytes).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in an argument")
            })
        };
        let program = if launch.program.as_os_str().as_bytes().contains(&b'/') {
            launch.program.clone()
        } else {
            let name = launch.program.to_string_lossy();
            find_on_path(&name).ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("{name} not found on PATH"))
            })?
        };
        let mut strings = Vec::with_capacity(1 + launch.args.len() + launch.env.len());
        // A sandbox applied by a program the command runs under (macOS's
        // Seatbelt) comes first; that program execs the command by path,
        // so a given `arg0` does not reach it.
        let wrapper = launch.sandbox.as_deref().and_then(Confinement::wrapper);
        let program = match wrapper {
            Some((wrapper, before)) => {
                strings.push(c(wrapper.as_os_str().as_bytes())?);
                for arg in before {
                    strings.push(c(arg.as_bytes())?);
                }
                strings.push(c(program.as_os_str().as_bytes())?);
                wrapper.to_path_buf()
            }
            None => {
                let arg0 = launch.arg0.as_deref().unwrap_or(launch.program.as_os_str());
                strings.push(c(arg0.as_bytes())?);
                program
            }
        };
        for arg in &launch.args {
            strings.push(c(arg.as_bytes())?);
        }
        for (key, value) in &launch.env {
            let mut pair = key.as_bytes().to_vec();
            pair.push(b'=');
            pair.extend_from_slice(value.as_bytes());
            strings.push(c(&pair)?);
        }
        let pointers = |range: &[CString]| {
            range
                .iter()
                .map(|s| s.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        let argc = strings.len() - launch.env.len();
        Ok(Plan {
            program: c(program.as_os_str().as_bytes())?,
            argv: pointers(&strings[..argc]),
            envp: pointers(&strings[argc..]),
            cwd: launch
                .cwd
                .as_deref()
                .map(|d| c(d.as_os_str().as_bytes()))
                .transpose()?,
            fds: launch.fds.clone(),
            high: vec![-1; launch.fds.len()],
            subreaper: launch.subreaper,
            death_signal: match launch.on_host_death {
                HostDeath::Kill => libc::SIGKILL,
                HostDeath::Freeze => libc::SIGSTOP,
                HostDeath::Outlive => 0,
            },
            controlling_terminal: launch.controlling_terminal,
            sandbox: launch.sandbox.clone(),
            entry: launch.sandbox.as_ref().map(|s| s.entry()).transpose()?,
            report,
            inherited: Inherited::list(),
            _strings: strings,
        })
    }
}

/// Starts the child with every signal blocked (none may reach a handler of
/// the host while it shares the host's memory); returns its pid.
///
/// # Safety
/// `plan` must stay valid until this returns.
unsafe fn start_child(plan: &mut Plan, starter: &Starter) -> io::Result<libc::pid_t> {
    // SAFETY: plain signal-mask calls on local sets; the child runs
    // `child_main` with `plan`, valid (see above).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let namespaces = plan.sandbox.as_ref().map_or(0, |s| s.clone_flags());
        let pid = starter.start(child_main, (plan as *mut Plan).cast(), namespaces);
        let err = io::Error::last_os_error();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        if pid < 0 { Err(err) } else { Ok(pid) }
    }
}

/// The child, until `execve`. Reports a failure as `[stage, errno]`.
extern "C" fn child_main(plan: *mut c_void) -> c_int {
    // SAFETY: `plan` is the spawner's Plan (or a forked copy), valid until
    // execve or _exit; only system calls follow.
    unsafe {
        let plan = &mut *plan.cast::<Plan>();
        let (stage, errno) = contain_and_exec(plan);
        let report = [stage as i32, errno];
        libc::write(plan.report, report.as_ptr().cast(), 8);
        libc::_exit(127)
    }
}

/// # Safety
/// In the child only.
unsafe fn contain_and_exec(plan: &mut Plan) -> (Stage, c_int) {
    // SAFETY: system calls on the child's own state and on `plan`'s data.
    unsafe {
        let errno = sys::errno;
        // The report pipe goes above every descriptor the child is given
        // first, so no dup2 below can replace it.
        let report = libc::fcntl(plan.report, libc::F_DUPFD_CLOEXEC, HIGH_FD);
        if report < 0 {
            return (Stage::Descriptors, errno());
        }
        plan.report = report;
        // Whatever else the child inherited closes on exec.
        sys::close_inherited_on_exec(&plan.inherited);
        if libc::setsid() < 0 {
            return (Stage::Setsid, errno());
        }
        if let Some(sandbox) = &plan.sandbox
            && let Err(errno) = sandbox.enter_network()
        {
            return (Stage::Namespaces, errno);
        }
        sys::on_host_death(plan.death_signal);
        if host_gone(plan.report) {
            // The host died between the start and the line above.
            libc::_exit(1);
        }
        if plan.subreaper {
            sys::become_subreaper();
        }
        reset_signals();
        // So are the sandbox's own descriptors, used after the placement.
        if let (Some(sandbox), Some(entry)) = (&plan.sandbox, &mut plan.entry)
            && let Err(errno) = sandbox.lift(entry, HIGH_FD)
        {
            return (Stage::Descriptors, errno);
        }
        // Each source is first copied above every target (close-on-exec),
        // so no dup2 can overwrite a source still to be placed.
        for (slot, &(ours, _)) in plan.high.iter_mut().zip(&plan.fds) {
            *slot = libc::fcntl(ours, libc::F_DUPFD_CLOEXEC, HIGH_FD);
            if *slot < 0 {
                return (Stage::Descriptors, errno());
            }
        }
        for (&high, &(_, theirs)) in plan.high.iter().zip(&plan.fds) {
            if libc::dup2(high, theirs) < 0 {
                return (Stage::Descriptors, errno());
            }
        }
        if plan.controlling_terminal && sys::take_terminal() < 0 {
            return (Stage::Terminal, errno());
        }
        if let (Some(sandbox), Some(entry)) = (&plan.sandbox, &mut plan.entry)
            && let Err(errno) = sandbox.enter_namespaces(entry)
        {
            return (Stage::Namespaces, errno);
        }
        if let Some(dir) = &plan.cwd
            && libc::chdir(dir.as_ptr()) < 0
        {
            return (Stage::Cwd, errno());
        }
        if let (Some(sandbox), Some(entry)) = (&plan.sandbox, &plan.entry)
            && let Err(errno) = sandbox.enter(entry)
        {
            return (Stage::Sandbox, errno);
        }
        libc::execve(
            plan.program.as_ptr(),
            plan.argv.as_ptr(),
            plan.envp.as_ptr(),
        );
        (Stage::Exec, errno())
    }
}

/// Whether the host is gone: the read end of the report pipe, which the
/// spawner holds until the child execs, is closed. (`getppid` cannot tell:
/// in a PID namespace of its own, the child's parent is 0 either way.)
///
/// # Safety
/// In the child only.
unsafe fn host_gone(report: RawFd) -> bool {
    let mut poll = libc::pollfd {
        fd: report,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: a poll of one descriptor, not waiting.
    unsafe { libc::poll(&mut poll, 1, 0) == 1 && poll.revents & libc::POLLERR != 0 }
}

/// Every signal back to its default (a host that ignores SIGINT or SIGPIPE
/// must not pass that on, and no handler of the host may run in the
/// child), then the mask emptied. glibc keeps its two internal signals to
/// itself: those stay as they are.
///
/// # Safety
/// In the child only.
unsafe fn reset_signals() {
    // SAFETY: sigaction and sigprocmask on the child's own dispositions
    // (no CLONE_SIGHAND: they are a copy of the host's). A number that is
    // no signal here is refused, and skipped.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for sig in 1..=sys::last_signal() {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::sigaction(sig, &default, std::ptr::null_mut());
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
}

/// `/dev/null`, for a child's stdin or output.
pub fn dev_null() -> io::Result<OwnedFd> {
    Ok(std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(Path::new("/dev/null"))?
        .into())
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    /// Runs `launch` with stdout and stderr on a pipe; returns the output.
    fn output(mut launch: Launch) -> String {
        let (reader, writer) = std::io::pipe().unwrap();
        let writer = OwnedFd::from(writer);
        launch
            .fds
            .extend([(writer.as_raw_fd(), 1), (writer.as_raw_fd(), 2)]);
        let mut child = spawn(launch).unwrap();
        drop(writer);
        let mut text = String::new();
        std::io::BufReader::new(reader)
            .read_to_string(&mut text)
            .unwrap();
        assert!(child.wait().unwrap().success(), "{text}");
        text
    }

    #[test]
    fn the_child_gets_its_program_args_env_cwd_and_descriptors() {
        let text = output(Launch {
            program: "bash".into(),
            args: ["-c", "echo \"$0 $1 $FOO $PWD\"; echo err >&2", "a b", "c"]
                .map(OsString::from)
                .into(),
            env: vec![("FOO".into(), "foo".into())],
            cwd: Some("/tmp".into()),
            ..Launch::default()
        });
        assert_eq!(text, "a b c foo /tmp\nerr\n");
    }

    /// A `SigXxx:` mask of /proc/PID/status.
    fn mask(status: &str, name: &str) -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap()
    }

    #[test]
    fn signals_come_back_to_their_defaults_and_unblocked() {
        // The test process ignores SIGPIPE (as Rust programs do) and, from
        // here, SIGINT; the child is cloned with every signal blocked.
        // SAFETY: process-wide SIGINT ignored (no test sends it).
        unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
        let bit = |sig: c_int| 1u64 << (sig - 1);
        let host = std::fs::read_to_string("/proc/self/status").unwrap();
        assert_ne!(mask(&host, "SigIgn:") & bit(libc::SIGPIPE), 0);
        let child = output(Launch {
            program: "/bin/cat".into(),
            args: vec!["/proc/self/status".into()],
            ..Launch::default()
        });
        assert_eq!(mask(&child, "SigBlk:"), 0);
        // All but glibc's internal signals, which the test process may ignore.
        let internal = bit(32) | bit(33);
        assert_eq!(mask(&child, "SigIgn:") & !internal, 0);
    }

    #[test]
    fn only_the_given_descriptors_reach_the_child() {
        // A descriptor of the host without close-on-exec, as `openpty`
        // leaves one for a moment.
        let (reader, _writer) = std::io::pipe().unwrap();
        // SAFETY: dup2 onto a number the test owns from here on.
        let leaked = unsafe { libc::dup2(reader.as_raw_fd(), 200) };
        assert_eq!(leaked, 200);
        let text = output(Launch {
            program: "/bin/ls".into(),
            args: vec!["/proc/self/fd".into()],
            ..Launch::default()
        });
        // SAFETY: closing the descriptor made above.
        unsafe { libc::close(leaked) };
        let fds: Vec<&str> = text.lines().collect();
        assert!(!fds.contains(&"200"), "{fds:?}");
        assert!(fds.contains(&"1"), "{fds:?}");
    }

    #[test]
    fn failures_are_errors_and_leave_no_child() {
        let e = spawn(Launch {
            program: "/no/such/program".into(),
            ..Launch::default()
        })
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let e = spawn(Launch {
            program: "/bin/true".into(),
            cwd: Some("/no/such/dir".into()),
            ..Launch::default()
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot enter /no/such/dir: No such file or directory (os error 2)"
        );
        let e = spawn(Launch {
            program: "/bin/true".into(),
            fds: vec![(0, HIGH_FD)],
            ..Launch::default()
        })
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        // This thread's own children (zombies included): other tests of the
        // process start children in parallel, which a `waitpid(-1)` would
        // see, and reap from under them.
        let left = std::fs::read_to_string("/proc/thread-self/children").unwrap();
        assert_eq!(left.trim(), "", "children left behind");
    }
}
