//! The Landlock rules of a session: which paths it may read and write,
//! which TCP ports it may connect to, whether it may signal outside. They
//! are kept as a recipe ([`Rules`]) and made into a ruleset for each bash
//! the session starts ([`Rules::ruleset`]): the fresh `/proc` of each
//! bash's namespaces (see [`super::namespaces`]) is a filesystem of its
//! own, which a rule made before it existed cannot name, so the child adds
//! that one rule itself ([`allow_proc`]) before it restricts itself.

use std::os::fd::{OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};

/// The environment variable that caps the Landlock ABI conch believes the
/// kernel has (`0`: no Landlock), to test the fail-closed path on a new
/// kernel. Read each time a sandbox is made; never set in production.
pub const TEST_LANDLOCK_ABI_VAR: &str = "CONCH_TEST_LANDLOCK_ABI";

/// The Landlock ABI needed to control everything the filesystem rules
/// name: 3 adds `truncate(2)`, which the earlier ABIs leave open on every
/// readable file.
pub(super) const FILESYSTEM_ABI: i32 = 3;
/// The ABI of TCP port rules.
pub(super) const TCP_PORTS_ABI: i32 = 4;
/// The ABI of scopes: no signal to, and no abstract UNIX socket of, a
/// process outside the sandbox.
pub(super) const SCOPES_ABI: i32 = 6;

/// Device files every sandboxed session may write (what bash and a
/// terminal need); the ones this system lacks are skipped.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// What a session with `readable` set may always read: bash, the programs
/// and libraries it runs, their configuration, `/dev` and `/proc`.
pub(super) const SYSTEM_READABLE: &[&str] = &[
    "/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/dev", "/proc",
    "/sys", "/opt",
];

/// The Landlock ABI of this kernel (0: none), capped by
/// [`TEST_LANDLOCK_ABI_VAR`].
pub fn landlock_abi() -> i32 {
    // SAFETY: the version query of landlock_create_ruleset takes no memory.
    let kernel = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    let kernel = i32::try_from(kernel).unwrap_or(0).max(0);
    match std::env::var(TEST_LANDLOCK_ABI_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok())
    {
        Some(cap) => kernel.min(cap.max(0)),
        None => kernel,
    }
}

/// What a session's ruleset grants, made into a ruleset at each start.
#[derive(Debug, Clone)]
pub struct Rules {
    pub abi: i32,
    pub writable: Vec<PathBuf>,
    /// `None`: everything.
    pub readable: Option<Vec<PathBuf>>,
    pub tcp_ports: Option<Vec<u16>>,
    pub scopes: bool,
}

impl Rules {
    /// A new ruleset of these rules (see [`ruleset`]).
    pub fn ruleset(&self) -> Result<OwnedFd, String> {
        ruleset(
            self.abi,
            &self.writable,
            self.readable.as_deref(),
            self.tcp_ports.as_deref(),
            self.scopes,
        )
    }

    /// What a readable path is granted: the bits of a read rule on a
    /// directory, as `landlock_add_rule(2)` takes them.
    pub fn read_access(&self) -> u64 {
        AccessFs::from_read(ABI::from(self.abi)).bits()
    }
}

/// `struct landlock_path_beneath_attr`.
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Adds to `ruleset` a rule that lets the holder read the `/proc` mounted
/// now (the child's own, see [`super::namespaces`]).
///
/// # Safety
/// In the cloned child only, before `execve`. Makes no allocation.
pub unsafe fn allow_proc(ruleset: RawFd, access: u64) -> Result<(), libc::c_int> {
    // SAFETY: plain system calls on a local path and attribute.
    unsafe {
        let fd = libc::open(
            c"/proc".as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(*libc::__errno_location());
        }
        let attr = PathBeneathAttr {
            allowed_access: access,
            parent_fd: fd,
        };
        let added = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            1, // LANDLOCK_RULE_PATH_BENEATH
            &attr as *const PathBeneathAttr,
            0,
        );
        let errno = *libc::__errno_location();
        libc::close(fd);
        if added < 0 {
            return Err(errno);
        }
        Ok(())
    }
}

/// A Landlock ruleset: every filesystem access of `abi` handled; read
/// (and execute) granted on `readable` (`None`: on `/`), everything on
/// `writable` and the device files; with `tcp_ports`, TCP bind and connect
/// handled and connect granted to those ports; with `scopes`, signals and
/// abstract UNIX sockets kept inside. Every path named must exist.
fn ruleset(
    abi: i32,
    writable: &[PathBuf],
    readable: Option<&[PathBuf]>,
    tcp_ports: Option<&[u16]>,
    scopes: bool,
) -> std::result::Result<OwnedFd, String> {
    let abi = ABI::from(abi);
    let err = |e: landlock::RulesetError| e.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?;
    if tcp_ports.is_some() {
        ruleset = ruleset
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(err)?;
    }
    if scopes {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    let open =
        |path: &Path| PathFd::new(path).map_err(|e| format!("cannot open {}: {e}", path.display()));
    // A rule on a file takes only the rights of files.
    let fit = |path: &Path, access: landlock::BitFlags<AccessFs>| {
        if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(abi)
        }
    };
    let root = [PathBuf::from("/")];
    for path in readable.unwrap_or(&root) {
        // The system paths of a `readable` list may be missing here.
        let fd = match open(path) {
            Ok(fd) => fd,
            Err(_) if readable.is_some() && !path.exists() => continue,
            Err(e) => return Err(e),
        };
        created = created
            .add_rule(PathBeneath::new(fd, fit(path, AccessFs::from_read(abi))))
            .map_err(err)?;
    }
    for path in writable {
        created = created
            .add_rule(PathBeneath::new(
                open(path)?,
                fit(path, AccessFs::from_all(abi)),
            ))
            .map_err(err)?;
    }
    for device in DEVICES.iter().map(Path::new).filter(|p| p.exists()) {
        created = created
            .add_rule(PathBeneath::new(
                open(device)?,
                fit(device, AccessFs::from_all(abi)),
            ))
            .map_err(err)?;
    }
    for &port in tcp_ports.unwrap_or(&[]) {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(err)?;
    }
    Option::<OwnedFd>::from(created).ok_or_else(|| "no ruleset was made".to_string())
}
