//! A session's sandbox: the policy turned into what the kernel enforces
//! (a Landlock ruleset, a seccomp filter, limits, cgroups), the session's
//! private temp directory, and the report of what applied.

use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::cgroup::Cgroup;
use super::confine::Confinement;
use super::{Network, Sandbox, SandboxApplied};
use crate::error::{Error, Result};

/// The environment variable that caps the Landlock ABI conch believes the
/// kernel has (`0`: no Landlock), to test the fail-closed path on a new
/// kernel. Read each time a sandbox is made; never set in production.
pub const TEST_LANDLOCK_ABI_VAR: &str = "CONCH_TEST_LANDLOCK_ABI";

/// The Landlock ABI needed to control everything the filesystem rules
/// name: 3 adds `truncate(2)`, which the earlier ABIs leave open on every
/// readable file.
const FILESYSTEM_ABI: i32 = 3;
/// The ABI of TCP port rules.
const TCP_PORTS_ABI: i32 = 4;
/// The ABI of scopes: no signal to, and no abstract UNIX socket of, a
/// process outside the sandbox.
const SCOPES_ABI: i32 = 6;

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
const SYSTEM_READABLE: &[&str] = &[
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

/// A session's sandbox, in force for every bash it starts from
/// [`SessionSandbox::confinement`]. Its temp directory and cgroups go
/// when it is closed or dropped.
#[derive(Debug)]
pub struct SessionSandbox {
    confinement: Arc<Confinement>,
    dir: PathBuf,
    tmp: PathBuf,
    /// The session's pipes as FIFOs (see [`crate::process::io::named_pipe`]).
    pipes: PathBuf,
    cgroups: Vec<Cgroup>,
    applied: SandboxApplied,
    closed: bool,
}

/// What, besides the policy, a session's sandbox lets bash read.
#[derive(Debug)]
pub struct SessionPaths<'a> {
    /// The session's starting cwd (written too).
    pub cwd: &'a Path,
    /// Where the session dir is made (conch's private directory).
    pub base: &'a Path,
    /// Files bash sources or reads from the host (its own binary, conch's
    /// private directory, a snapshot).
    pub readable: Vec<PathBuf>,
}

impl SessionSandbox {
    /// Turns `policy` into what the kernel enforces. Fails with
    /// [`Error::SandboxUnavailable`] naming what this kernel or host lacks,
    /// unless `policy.best_effort` (then [`SessionSandbox::applied`] says
    /// what did not apply).
    pub fn new(policy: &Sandbox, extra: SessionPaths<'_>) -> Result<SessionSandbox> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        if let Some(n) = policy.limits.open_files
            && n < 64
        {
            return Err(Error::InvalidArgument(format!(
                "open_files must be >= 64 (the session's bash holds descriptors up to 63), got {n}"
            )));
        }
        let name = format!(
            "sandbox-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = extra.base.join(&name);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .recursive(false)
            .create(&dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let tmp = dir.join("tmp");
        let pipes = dir.join("pipes");
        let mut session = SessionSandbox {
            confinement: Arc::default(),
            tmp: tmp.clone(),
            pipes: pipes.clone(),
            dir: dir.clone(),
            cgroups: Vec::new(),
            applied: SandboxApplied::default(),
            closed: false,
        };
        for sub in [&tmp, &pipes] {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(sub)
                .map_err(|e| Error::io(format!("cannot create {}", sub.display()), e))?;
        }
        let mut confinement = Confinement::default();
        let mut applied = SandboxApplied::default();
        let mut missing = Vec::new();

        // Filesystem (and TCP ports, and scopes): Landlock.
        let abi = landlock_abi();
        applied.landlock_abi = abi.max(0) as u32;
        let want_ports = policy.network == Network::Deny && !policy.allow_tcp_ports.is_empty();
        if abi < 1 {
            missing.push("Landlock (the filesystem rules): the kernel has none".to_string());
        } else {
            if abi < FILESYSTEM_ABI {
                missing.push(format!(
                    "Landlock ABI {FILESYSTEM_ABI} (truncate outside the writable paths): the kernel has ABI {abi}"
                ));
            }
            let ports = want_ports && abi >= TCP_PORTS_ABI;
            if want_ports && !ports {
                missing.push(format!(
                    "Landlock ABI {TCP_PORTS_ABI} (the allowed TCP ports; TCP stays denied): the kernel has ABI {abi}"
                ));
            }
            let scopes = abi >= SCOPES_ABI;
            let mut writable = vec![extra.cwd.to_path_buf(), dir.clone()];
            writable.extend(policy.writable.iter().cloned());
            let readable = policy.readable.as_ref().map(|paths| {
                let mut all: Vec<PathBuf> = paths.clone();
                all.extend(SYSTEM_READABLE.iter().map(PathBuf::from));
                all.extend(extra.readable.iter().cloned());
                all
            });
            let fd = ruleset(
                abi,
                &writable,
                readable.as_deref(),
                ports.then_some(&policy.allow_tcp_ports[..]),
                scopes,
            )
            .map_err(|e| Error::SandboxUnavailable(format!("Landlock: {e}")))?;
            confinement.landlock = Some(fd);
            applied.filesystem = true;
            applied.tcp_ports = ports;
            applied.scopes = scopes;
        }

        // Network: a seccomp filter on socket families.
        if policy.network == Network::Deny {
            let tcp = applied.tcp_ports;
            match socket_filter(tcp) {
                Ok(program) => {
                    confinement.seccomp = Some(program);
                    applied.network = true;
                }
                Err(e) => missing.push(format!("seccomp (the network rule): {e}")),
            }
        }

        // Limits of each process: hard rlimits.
        let limits = &policy.limits;
        for (resource, value) in [
            (libc::RLIMIT_CPU, limits.cpu_seconds),
            (libc::RLIMIT_AS, limits.memory_bytes),
            (libc::RLIMIT_FSIZE, limits.file_size_bytes),
            (libc::RLIMIT_NOFILE, limits.open_files),
        ] {
            if let Some(value) = value {
                confinement.rlimits.push((resource, value));
            }
        }
        applied.limits = !confinement.rlimits.is_empty();

        // Limits of the session: cgroups.
        let mut cgroup = |controller: &str, file: (&str, &str, u64)| match Cgroup::new(
            controller, &name, file,
        ) {
            Ok((cgroup, procs)) => {
                session.cgroups.push(cgroup);
                confinement.cgroup_procs.push(procs);
                true
            }
            Err(e) => {
                missing.push(e);
                false
            }
        };
        if let Some(n) = limits.processes {
            applied.processes = cgroup("pids", ("pids.max", "pids.max", n));
        }
        if let Some(n) = limits.session_memory_bytes {
            applied.session_memory = cgroup("memory", ("memory.limit_in_bytes", "memory.max", n));
        }

        if !missing.is_empty() && !policy.best_effort {
            // `session` drops here: its directory and cgroups go.
            return Err(Error::SandboxUnavailable(missing.join("; ")));
        }
        applied.not_applied = missing;
        session.applied = applied;
        session.confinement = Arc::new(confinement);
        Ok(session)
    }

    /// The sandbox of a session or a run whose bash is `shell`, starting in
    /// `cwd`, sourcing `snapshot`: its directory in conch's private
    /// directory, which (with `shell` and `snapshot`) it may always read.
    pub fn for_shell(
        policy: &Sandbox,
        cwd: &Path,
        shell: &Path,
        snapshot: Option<&Path>,
    ) -> Result<SessionSandbox> {
        let base = crate::private_dir::private_dir()?;
        let mut readable = vec![base.clone(), shell.to_path_buf()];
        readable.extend(snapshot.map(Path::to_path_buf));
        SessionSandbox::new(
            policy,
            SessionPaths {
                cwd,
                base,
                readable,
            },
        )
    }

    /// `env` with `TMPDIR` set to the sandbox's temp directory.
    pub fn set_tmpdir(&self, env: &mut Vec<(String, String)>) {
        env.retain(|(k, _)| k != "TMPDIR");
        env.push(("TMPDIR".into(), self.tmp.to_string_lossy().into_owned()));
    }

    /// What the child applies (shared by every bash of the session).
    pub fn confinement(&self) -> Arc<Confinement> {
        self.confinement.clone()
    }

    /// Where the session's pipes are FIFOs: its bash opens them again by
    /// path, and may not reach the host's `/proc/<pid>/fd`.
    pub fn pipes(&self) -> &Path {
        &self.pipes
    }

    /// A directory the session's bash may write and the host reads
    /// (conch's own files of the session), removed with the sandbox.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn applied(&self) -> &SandboxApplied {
        &self.applied
    }

    /// Empties and removes the cgroups, then the temp directory. Call it
    /// once the session's processes are killed. Idempotent.
    pub fn close(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        for cgroup in &self.cgroups {
            cgroup.remove();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for SessionSandbox {
    fn drop(&mut self) {
        self.close();
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

/// The seccomp filter of `Network::Deny`: `socket` and `socketpair` fail
/// with `EPERM` for every family but `AF_UNIX`, and so do the `io_uring`
/// calls (io_uring makes sockets without `socket(2)`). With `tcp`, TCP
/// sockets (`AF_INET`/`AF_INET6`, `SOCK_STREAM`, protocol 0 or TCP) are
/// let through for Landlock's port rules to restrict.
fn socket_filter(tcp: bool) -> std::result::Result<BpfProgram, String> {
    let arch = match std::env::consts::ARCH {
        "x86_64" => TargetArch::x86_64,
        "aarch64" => TargetArch::aarch64,
        "riscv64" => TargetArch::riscv64,
        other => return Err(format!("no filter is made for {other}")),
    };
    let err = |e: seccompiler::BackendError| e.to_string();
    let cond = |arg: u8, op: SeccompCmpOp, value: i32| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value as u64).map_err(err)
    };
    let rule = |conds: Vec<SeccompCondition>| SeccompRule::new(conds).map_err(err);
    let mut socket = Vec::new();
    if tcp {
        socket.push(rule(vec![
            cond(0, SeccompCmpOp::Ne, libc::AF_UNIX)?,
            cond(0, SeccompCmpOp::Ne, libc::AF_INET)?,
            cond(0, SeccompCmpOp::Ne, libc::AF_INET6)?,
        ])?);
        for family in [libc::AF_INET, libc::AF_INET6] {
            // Any type but SOCK_STREAM (the low 4 bits; the rest are flags).
            for kind in (0..16).filter(|&k| k != libc::SOCK_STREAM) {
                socket.push(rule(vec![
                    cond(0, SeccompCmpOp::Eq, family)?,
                    cond(1, SeccompCmpOp::MaskedEq(0xf), kind)?,
                ])?);
            }
            // Any protocol but the default and TCP (SCTP and MPTCP are
            // stream sockets the port rules do not cover).
            socket.push(rule(vec![
                cond(0, SeccompCmpOp::Eq, family)?,
                cond(2, SeccompCmpOp::Ne, 0)?,
                cond(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP)?,
            ])?);
        }
    } else {
        socket.push(rule(vec![cond(0, SeccompCmpOp::Ne, libc::AF_UNIX)?])?);
    }
    let pair = vec![rule(vec![cond(0, SeccompCmpOp::Ne, libc::AF_UNIX)?])?];
    let rules: BTreeMap<i64, Vec<SeccompRule>> = [
        (libc::SYS_socket, socket),
        (libc::SYS_socketpair, pair),
        (libc::SYS_io_uring_setup, Vec::new()),
        (libc::SYS_io_uring_enter, Vec::new()),
        (libc::SYS_io_uring_register, Vec::new()),
    ]
    .into_iter()
    .collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(err)?;
    BpfProgram::try_from(filter).map_err(err)
}
