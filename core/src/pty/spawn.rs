//! Starting a PTY run's child without copying the host.
//!
//! `fork` copies the host's page tables, and the copy-on-write faults that
//! follow cost more the bigger the host: measured here, a PTY run of
//! `exit 0` took 2.8 ms from a small host, 42 ms from a host holding 1 GiB
//! and 95 ms from one holding 3 GiB — and agent hosts (Node, Python) are
//! big. `posix_spawn` (glibc: `clone(CLONE_VM | CLONE_VFORK)`) costs the
//! same whatever the host's size, and a PTY run spawns on every call.
//!
//! The child must lead a new session with the PTY as its controlling
//! terminal (so ctrl+c and SIGWINCH reach it). `POSIX_SPAWN_SETSID` runs
//! before the file actions, and a session leader without a controlling
//! terminal that opens a terminal acquires it; so the file actions open the
//! slave by its path as descriptor 0 and duplicate it onto 1 and 2. The
//! working directory and closing inherited descriptors need glibc 2.29 and
//! 2.34 (`posix_spawn_file_actions_addchdir_np`, `…_addclosefrom_np`), which
//! are looked up at run time; without them, portable-pty forks the child
//! (the same result, at fork's price).

use std::ffi::{CString, c_char, c_int};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use portable_pty::{CommandBuilder, SlavePty};

use crate::process::tree::Pid;

/// What the child runs: `program -c command`, with exactly `env`, in `cwd`.
pub(super) struct ChildSpec {
    pub program: PathBuf,
    pub command: String,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

impl ChildSpec {
    /// Starts the child on the terminal whose slave is `slave` (at path
    /// `tty`, when known). The caller reaps it.
    pub(super) fn spawn(&self, slave: &dyn SlavePty, tty: Option<&Path>) -> io::Result<Pid> {
        match (spawn_extensions(), tty) {
            (Some(ext), Some(tty)) => self.posix_spawn(tty, ext),
            _ => self.fork(slave),
        }
    }

    fn posix_spawn(&self, tty: &Path, ext: Extensions) -> io::Result<Pid> {
        let program = cstring(self.program.as_os_str().as_bytes())?;
        let argv = [
            program.clone(),
            cstring(b"-c")?,
            cstring(self.command.as_bytes())?,
        ];
        let envp = self
            .env
            .iter()
            .map(|(k, v)| cstring(format!("{k}={v}").as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let tty = cstring(tty.as_os_str().as_bytes())?;
        let cwd = cstring(self.cwd.as_os_str().as_bytes())?;
        let argv_ptrs = null_terminated(&argv);
        let envp_ptrs = null_terminated(&envp);

        let mut actions = FileActions::new()?;
        let mut attrs = SpawnAttrs::new()?;
        let fa = &mut actions.0;
        // SAFETY: the file actions and attributes are initialized and live
        // until after posix_spawn; every pointer is a NUL-terminated string
        // or a NULL-terminated array of them that outlives the call.
        unsafe {
            check(libc::posix_spawn_file_actions_addopen(
                fa,
                0,
                tty.as_ptr(),
                libc::O_RDWR,
                0,
            ))?;
            check(libc::posix_spawn_file_actions_adddup2(fa, 0, 1))?;
            check(libc::posix_spawn_file_actions_adddup2(fa, 0, 2))?;
            check((ext.addchdir)(fa, cwd.as_ptr()))?;
            check((ext.addclosefrom)(fa, 3))?;

            // Default dispositions and an empty mask: a host that ignores
            // SIGINT or SIGPIPE must not pass that on.
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            check(libc::posix_spawnattr_setsigdefault(&mut attrs.0, &all))?;
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            check(libc::posix_spawnattr_setsigmask(&mut attrs.0, &none))?;
            let flags = libc::POSIX_SPAWN_SETSID
                | libc::POSIX_SPAWN_SETSIGDEF as libc::c_short
                | libc::POSIX_SPAWN_SETSIGMASK as libc::c_short;
            check(libc::posix_spawnattr_setflags(&mut attrs.0, flags))?;

            let mut pid: libc::pid_t = 0;
            check(libc::posix_spawn(
                &mut pid,
                program.as_ptr(),
                &actions.0,
                &attrs.0,
                argv_ptrs.as_ptr(),
                envp_ptrs.as_ptr(),
            ))?;
            Ok(pid)
        }
    }

    /// The fallback: portable-pty forks, `setsid`s and sets the controlling
    /// terminal itself.
    fn fork(&self, slave: &dyn SlavePty) -> io::Result<Pid> {
        let mut cmd = CommandBuilder::new(&self.program);
        cmd.arg("-c");
        cmd.arg(&self.command);
        cmd.env_clear();
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.cwd(&self.cwd);
        let child = slave
            .spawn_command(cmd)
            .map_err(|e| io::Error::other(e.to_string()))?;
        // Reaped with waitpid (which keeps the signal number); the handle
        // itself neither waits nor kills on drop.
        child
            .process_id()
            .map(|pid| pid as Pid)
            .ok_or_else(|| io::Error::other("no process id"))
    }
}

type AddChdir = unsafe extern "C" fn(*mut libc::posix_spawn_file_actions_t, *const c_char) -> c_int;
type AddClosefrom = unsafe extern "C" fn(*mut libc::posix_spawn_file_actions_t, c_int) -> c_int;

/// The glibc extensions posix_spawn needs here.
#[derive(Clone, Copy)]
struct Extensions {
    addchdir: AddChdir,
    addclosefrom: AddClosefrom,
}

/// Looked up once: linking them directly would make conch unloadable on an
/// older glibc.
fn spawn_extensions() -> Option<Extensions> {
    static EXTENSIONS: OnceLock<Option<Extensions>> = OnceLock::new();
    *EXTENSIONS.get_or_init(|| {
        // RTLD_DEFAULT is the null handle on glibc.
        let lookup = |name: &std::ffi::CStr| {
            // SAFETY: dlsym with a NUL-terminated name; a NULL result is checked.
            let p = unsafe { libc::dlsym(std::ptr::null_mut(), name.as_ptr()) };
            (!p.is_null()).then_some(p)
        };
        let addchdir = lookup(c"posix_spawn_file_actions_addchdir_np")?;
        let addclosefrom = lookup(c"posix_spawn_file_actions_addclosefrom_np")?;
        // SAFETY: these glibc symbols have exactly these signatures.
        unsafe {
            Some(Extensions {
                addchdir: std::mem::transmute::<*mut libc::c_void, AddChdir>(addchdir),
                addclosefrom: std::mem::transmute::<*mut libc::c_void, AddClosefrom>(addclosefrom),
            })
        }
    })
}

/// `posix_spawn_file_actions_t`, destroyed on drop.
struct FileActions(libc::posix_spawn_file_actions_t);

impl FileActions {
    fn new() -> io::Result<Self> {
        // SAFETY: zeroed storage initialized by the call before any use.
        let mut fa = FileActions(unsafe { std::mem::zeroed() });
        check(unsafe { libc::posix_spawn_file_actions_init(&mut fa.0) })?;
        Ok(fa)
    }
}

impl Drop for FileActions {
    fn drop(&mut self) {
        // SAFETY: initialized in `new`.
        unsafe { libc::posix_spawn_file_actions_destroy(&mut self.0) };
    }
}

/// `posix_spawnattr_t`, destroyed on drop.
struct SpawnAttrs(libc::posix_spawnattr_t);

impl SpawnAttrs {
    fn new() -> io::Result<Self> {
        // SAFETY: zeroed storage initialized by the call before any use.
        let mut attrs = SpawnAttrs(unsafe { std::mem::zeroed() });
        check(unsafe { libc::posix_spawnattr_init(&mut attrs.0) })?;
        Ok(attrs)
    }
}

impl Drop for SpawnAttrs {
    fn drop(&mut self) {
        // SAFETY: initialized in `new`.
        unsafe { libc::posix_spawnattr_destroy(&mut self.0) };
    }
}

/// posix_spawn functions return an errno value instead of setting errno.
fn check(rc: c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

fn cstring(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL byte"))
}

fn null_terminated(strings: &[CString]) -> Vec<*mut c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use portable_pty::{PtySize, native_pty_system};

    /// Fields of `/proc/<pid>/stat` after the command name.
    fn stat_fields(pid: Pid) -> Vec<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let (_, rest) = stat.rsplit_once(')').unwrap();
        rest.split_whitespace().map(str::to_string).collect()
    }

    /// Both ways of starting give a session leader with the terminal as its
    /// controlling terminal, the exact environment and the working directory.
    fn check_child(fork: bool) {
        let pair = native_pty_system().openpty(PtySize::default()).unwrap();
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let spec = ChildSpec {
            program: "/bin/sh".into(),
            command: "read -r line".into(),
            env: vec![("CONCH_SPAWN_TEST".into(), "yes".into())],
            cwd: dir.clone(),
        };
        let tty = pair.master.tty_name();
        let pid = if fork {
            spec.fork(&*pair.slave).unwrap()
        } else {
            let ext = spawn_extensions().expect("glibc with posix_spawn extensions");
            spec.posix_spawn(tty.as_deref().unwrap(), ext).unwrap()
        };
        drop(pair.slave);
        // Both ways return while the exec is still in progress (portable-pty
        // closes std's exec-report pipe early; vfork resumes the parent as
        // the new image is being set up): wait until it has its environment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let environ = loop {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
            let environ = std::fs::read_to_string(format!("/proc/{pid}/environ")).unwrap();
            if comm == "sh\n" && !environ.is_empty() {
                break environ;
            }
            assert!(std::time::Instant::now() < deadline, "child never exec'd");
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        let fields = stat_fields(pid);
        // state ppid pgrp session tty_nr
        assert_eq!(fields[3], pid.to_string(), "session leader");
        assert_ne!(fields[4], "0", "has a controlling terminal");
        let mut vars: Vec<&str> = environ.split_terminator('\0').collect();
        // portable-pty always sets SHELL.
        vars.retain(|v| !(fork && v.starts_with("SHELL=")));
        assert_eq!(vars, ["CONCH_SPAWN_TEST=yes"]);
        assert_eq!(std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(), dir);
        let mut writer = pair.master.take_writer().unwrap();
        writer.write_all(b"done\n").unwrap();
        let mut status = 0;
        // SAFETY: waitpid on our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }

    use std::io::Write as _;

    #[test]
    fn posix_spawned_child_owns_the_terminal() {
        check_child(false);
    }

    #[test]
    fn forked_child_owns_the_terminal() {
        check_child(true);
    }
}
