//! A sandboxed bash's own mount, PID, UTS and IPC namespaces: what Landlock cannot
//! see. Landlock decides who may open, make, remove or rename a file, but
//! not who may change its mode, owner or times (`chmod`, `chown`, `touch
//! -d`), and a sandboxed process still sees the host's processes in
//! `/proc` (their command lines, and more as root). So each sandboxed
//! bash is cloned into namespaces of its own, where:
//!
//! - every mount is read-only and `nosuid`, but the writable paths, which
//!   are copies of the host's mounts there (made before anything was made
//!   read-only, so they keep the host's own flags) and `nodev` (a device
//!   node made there cannot be opened);
//! - the secrets ([`super::secrets`]) are covered: an empty read-only
//!   tmpfs on each hidden directory, an empty read-only file on each hidden
//!   file, with what the policy names inside them put back;
//! - a fresh, read-only `/proc` shows only the session's processes (bash
//!   is the namespace's first process: the host and everything else is
//!   outside it);
//! - the host name and the System V and POSIX IPC objects are the
//!   session's own (UTS and IPC namespaces): a command neither renames
//!   the machine nor reads or writes the host's shared memory.
//!
//! The host plans it all ([`Namespaces::new`]); the child runs the plan
//! between the clone and `execve` ([`Namespaces::enter`]) with plain
//! system calls on data made before (see [`crate::process::spawner`]). A
//! host that is not root makes a user namespace too, mapping its own user
//! and group only, so that it may make the other two; the bash it execs
//! keeps no capability.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libc::c_int;

use super::secrets::Hidden;

/// `open_tree(2)`: make a detached copy of the tree.
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// `move_mount(2)`: the source is the descriptor itself.
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

/// `struct mount_attr` of `mount_setattr(2)` (its first version).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// What the child does, in order, once every tree it copies is copied
/// and every mount made read-only.
#[derive(Debug)]
enum Step {
    /// An empty read-only tmpfs on a hidden directory.
    HideDir(CString),
    /// The empty read-only file on a hidden file.
    HideFile(CString),
    /// The copy of tree `source` put back at its place; `make` are the
    /// mount points to make first (`true`: a directory), inside a hidden
    /// directory's tmpfs.
    Attach {
        source: usize,
        target: CString,
        make: Vec<(CString, bool)>,
        read_only: bool,
    },
}

/// The plan of a session's namespaces, shared by every bash it starts.
#[derive(Debug)]
pub struct Namespaces {
    flags: c_int,
    /// For a host that is not root: `(file, content)` to write, in order
    /// (`setgroups`, `uid_map`, `gid_map` of the child itself).
    id_maps: Vec<(CString, CString)>,
    /// Whether `/` is made read-only (not when the policy writes `/`).
    read_only_root: bool,
    /// The trees copied before anything is made read-only.
    sources: Vec<CString>,
    steps: Vec<Step>,
    /// Every tmpfs of [`Step::HideDir`], made read-only at the end.
    hidden_dirs: Vec<CString>,
    /// The empty file a hidden file shows.
    empty: CString,
}

/// Whether `path` is `base` or below it.
fn within(path: &Path, base: &Path) -> bool {
    path.starts_with(base)
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))
}

impl Namespaces {
    /// Plans the namespaces of a session that writes `writable`, reads the
    /// `kept` paths inside hidden ones (the policy named them), hides
    /// `hidden`, and shows `empty` (an empty file) on each hidden file.
    /// Every path is canonical.
    pub fn new(
        writable: &[PathBuf],
        kept: &[PathBuf],
        hidden: &Hidden,
        empty: &Path,
    ) -> io::Result<Namespaces> {
        enum Plan<'a> {
            Hide(&'a Path, bool),
            Attach(&'a Path, bool),
        }
        let mut plan: Vec<Plan> = Vec::new();
        for dir in &hidden.dirs {
            plan.push(Plan::Hide(dir, true));
        }
        for file in &hidden.files {
            plan.push(Plan::Hide(file, false));
        }
        for path in writable {
            plan.push(Plan::Attach(path, false));
        }
        for path in kept {
            if hidden.dirs.iter().any(|dir| within(path, dir)) && !writable.contains(path) {
                plan.push(Plan::Attach(path, true));
            }
        }
        // Outer mounts first: what goes inside a directory goes on the
        // mount that is there by then.
        fn path_of<'a>(p: &Plan<'a>) -> &'a Path {
            match *p {
                Plan::Hide(path, _) | Plan::Attach(path, _) => path,
            }
        }
        plan.sort_by_key(|p| path_of(p).components().count());
        plan.dedup_by(|a, b| path_of(a) == path_of(b));

        let read_only_root = !writable.iter().any(|p| p == Path::new("/"));
        let mut sources = Vec::new();
        let mut steps = Vec::new();
        for item in &plan {
            match *item {
                Plan::Hide(path, true) => steps.push(Step::HideDir(c_path(path)?)),
                Plan::Hide(path, false) => steps.push(Step::HideFile(c_path(path)?)),
                Plan::Attach(path, _) if path == Path::new("/") => {}
                Plan::Attach(path, read_only) => {
                    let mut make = Vec::new();
                    if let Some(dir) = hidden.dirs.iter().find(|dir| within(path, dir)) {
                        let mut at = dir.clone();
                        let rest: Vec<_> = path.strip_prefix(dir).unwrap_or(path).iter().collect();
                        for (i, part) in rest.iter().enumerate() {
                            at.push(part);
                            let is_dir = i + 1 < rest.len() || path.is_dir();
                            make.push((c_path(&at)?, is_dir));
                        }
                    }
                    sources.push(c_path(path)?);
                    steps.push(Step::Attach {
                        source: sources.len() - 1,
                        target: c_path(path)?,
                        make,
                        read_only,
                    });
                }
            }
        }
        // SAFETY: getters with no argument.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        // UTS and IPC namespaces of its own too: a command's `hostname`
        // and its System V shared memory, semaphores and message queues
        // (and POSIX message queues) stay inside the session.
        let mut flags =
            libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWUTS | libc::CLONE_NEWIPC;
        let mut id_maps = Vec::new();
        if uid != 0 {
            flags |= libc::CLONE_NEWUSER;
            let c = |s: String| CString::new(s).expect("no NUL");
            id_maps = vec![
                (c("/proc/self/setgroups".into()), c("deny".into())),
                (
                    c("/proc/self/uid_map".into()),
                    c(format!("{uid} {uid} 1\n")),
                ),
                (
                    c("/proc/self/gid_map".into()),
                    c(format!("{gid} {gid} 1\n")),
                ),
            ];
        }
        let hidden_dirs = steps
            .iter()
            .filter_map(|s| match s {
                Step::HideDir(path) => Some(path.clone()),
                _ => None,
            })
            .collect();
        Ok(Namespaces {
            flags,
            id_maps,
            read_only_root,
            sources,
            steps,
            hidden_dirs,
            empty: c_path(empty)?,
        })
    }

    /// The flags the child is cloned with.
    pub(crate) fn clone_flags(&self) -> c_int {
        self.flags
    }

    /// How many trees the child copies: the room it needs for their
    /// descriptors.
    pub(crate) fn trees(&self) -> usize {
        self.sources.len()
    }

    /// Sets the namespaces up in the cloned child: maps its ids (not
    /// root), keeps its mounts from the host's, copies the trees it puts
    /// back, makes every mount read-only, runs the steps and mounts a
    /// fresh `/proc`. `trees` holds the copies meanwhile (room for
    /// [`Namespaces::trees`]). Returns the errno of what failed.
    ///
    /// # Safety
    /// In the cloned child only, before `execve`. Makes no allocation.
    pub(crate) unsafe fn enter(&self, trees: &mut [RawFd]) -> Result<(), c_int> {
        // SAFETY: plain system calls on data owned by `self` and `trees`.
        unsafe {
            let errno = || *libc::__errno_location();
            let check = |r: libc::c_long| if r < 0 { Err(errno()) } else { Ok(()) };
            for (file, content) in &self.id_maps {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(errno());
                }
                let len = content.as_bytes().len();
                let written = libc::write(fd, content.as_ptr().cast(), len);
                libc::close(fd);
                if written != len as isize {
                    return Err(errno());
                }
            }
            let root = c"/";
            // (The source and type are ignored: named all the same, as
            // tools that check the call, valgrind's, expect.)
            check(libc::mount(
                c"none".as_ptr(),
                root.as_ptr(),
                c"none".as_ptr(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) as libc::c_long)?;
            for (slot, source) in trees.iter_mut().zip(&self.sources) {
                let fd = libc::syscall(
                    libc::SYS_open_tree,
                    libc::AT_FDCWD,
                    source.as_ptr(),
                    OPEN_TREE_CLONE
                        | libc::O_CLOEXEC as libc::c_uint
                        | libc::AT_RECURSIVE as libc::c_uint,
                );
                check(fd)?;
                *slot = fd as RawFd;
            }
            if self.read_only_root {
                set_attr(
                    root,
                    libc::AT_RECURSIVE,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
                )?;
            }
            let sealed = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
            for step in &self.steps {
                match step {
                    Step::HideDir(dir) => check(libc::mount(
                        c"tmpfs".as_ptr(),
                        dir.as_ptr(),
                        c"tmpfs".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        c"mode=0755,size=64k".as_ptr().cast(),
                    ) as libc::c_long)?,
                    Step::HideFile(file) => {
                        check(libc::mount(
                            self.empty.as_ptr(),
                            file.as_ptr(),
                            std::ptr::null(),
                            libc::MS_BIND,
                            std::ptr::null(),
                        ) as libc::c_long)?;
                        set_attr(file, 0, sealed)?;
                    }
                    Step::Attach {
                        source,
                        target,
                        make,
                        read_only,
                    } => {
                        for (point, is_dir) in make {
                            if *is_dir {
                                if libc::mkdir(point.as_ptr(), 0o755) < 0 && errno() != libc::EEXIST
                                {
                                    return Err(errno());
                                }
                            } else {
                                let fd = libc::open(
                                    point.as_ptr(),
                                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                                    0o644,
                                );
                                if fd < 0 {
                                    return Err(errno());
                                }
                                libc::close(fd);
                            }
                        }
                        let tree = std::mem::replace(&mut trees[*source], -1);
                        let moved = libc::syscall(
                            libc::SYS_move_mount,
                            tree,
                            c"".as_ptr(),
                            libc::AT_FDCWD,
                            target.as_ptr(),
                            MOVE_MOUNT_F_EMPTY_PATH,
                        );
                        libc::close(tree);
                        check(moved)?;
                        let attrs = if *read_only {
                            sealed
                        } else {
                            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
                        };
                        set_attr(target, libc::AT_RECURSIVE, attrs)?;
                    }
                }
            }
            for dir in &self.hidden_dirs {
                set_attr(dir, 0, MOUNT_ATTR_RDONLY)?;
            }
            check(libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC | libc::MS_RDONLY,
                std::ptr::null(),
            ) as libc::c_long)
        }
    }
}

/// Sets `attrs` on the mount at `path` (`flags`: `AT_RECURSIVE` for all
/// below it too).
///
/// # Safety
/// A plain system call; safe anywhere, meant for the cloned child.
unsafe fn set_attr(path: &std::ffi::CStr, flags: c_int, attrs: u64) -> Result<(), c_int> {
    let attr = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: `attr` and `path` outlive the call.
    unsafe {
        if libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        ) < 0
        {
            return Err(*libc::__errno_location());
        }
    }
    Ok(())
}

/// The environment variable that makes conch believe the namespaces
/// cannot be made (any value), to test the fail-closed path. Read each
/// time a sandbox is made; never set in production.
pub const TEST_NO_NAMESPACES_VAR: &str = "CONCH_TEST_NO_NAMESPACES";

/// Whether this kernel and host let a child make its namespaces, found
/// once per process by starting `shell -c :` in a plan that copies
/// nothing back: `Err` says why not.
pub fn available(shell: &Path) -> Result<(), String> {
    if std::env::var_os(TEST_NO_NAMESPACES_VAR).is_some() {
        return Err(format!("{TEST_NO_NAMESPACES_VAR} is set"));
    }
    static FOUND: OnceLock<Result<(), String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let plan = Namespaces::new(&[], &[], &Hidden::default(), Path::new("/dev/null"))
                .map_err(|e| e.to_string())?;
            let confinement = super::Confinement {
                namespaces: Some(plan),
                ..Default::default()
            };
            let launch = crate::process::spawner::Launch {
                program: shell.to_path_buf(),
                args: vec!["-c".into(), ":".into()],
                sandbox: Some(std::sync::Arc::new(confinement)),
                ..Default::default()
            };
            let mut child = crate::process::spawner::spawn(launch).map_err(|e| e.to_string())?;
            match child.wait() {
                Ok(status) if status.success() => Ok(()),
                Ok(status) => Err(format!("a probe exited with {status}")),
                Err(e) => Err(e.to_string()),
            }
        })
        .clone()
}
