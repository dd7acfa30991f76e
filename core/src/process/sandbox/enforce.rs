//! What the Linux kernel enforces of a session's sandbox: the mount and
//! PID namespaces, Landlock rules (the filesystem, TCP ports, scopes), a
//! seccomp filter (the network, the mounts), rlimits and cgroups.

use std::collections::BTreeMap;
use std::path::PathBuf;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::cgroup::Cgroup;
use super::landlock::{
    FILESYSTEM_ABI, Rules, SCOPES_ABI, SYSTEM_READABLE, TCP_PORTS_ABI, landlock_abi,
};
use super::namespaces::{self, Namespaces};
use super::proxy::Proxy;
use super::secrets::Hidden;
use super::session::{Enforced, SessionPaths};
use super::{Sandbox, SessionDirs};
use crate::error::{Error, Result};

/// Adds to `enforced` what this kernel enforces of `policy`, and names in
/// `enforced.missing` what it cannot. `proxy`: a domain policy's proxy,
/// whose port is the one TCP port besides the allowed ones.
pub(super) fn enforce(
    policy: &Sandbox,
    extra: &SessionPaths<'_>,
    dirs: &SessionDirs,
    proxy: Option<&Proxy>,
    enforced: &mut Enforced,
) -> Result<()> {
    let Enforced {
        confinement,
        applied,
        cgroups,
        missing,
    } = enforced;
    let dir = &dirs.dir;
    let name = dir
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();

    let mut writable = vec![extra.cwd.to_path_buf(), dir.clone()];
    writable.extend(policy.writable.iter().cloned());

    // What Landlock cannot see: the mount, PID, UTS and IPC namespaces.
    match namespaces::available(extra.shell) {
        Ok(()) => {
            let canonical = |paths: &[PathBuf]| -> Vec<PathBuf> {
                paths.iter().filter_map(|p| p.canonicalize().ok()).collect()
            };
            let mut named = writable.clone();
            named.extend(policy.readable.iter().flatten().cloned());
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let hidden = Hidden::of_system(home.as_deref(), &named);
            let mut kept = canonical(policy.readable.as_deref().unwrap_or_default());
            kept.extend(canonical(&extra.readable));
            let empty = dir.join("empty");
            std::fs::write(&empty, b"")
                .map_err(|e| Error::io(format!("cannot create {}", empty.display()), e))?;
            let plan = Namespaces::new(&canonical(&writable), &kept, &hidden, &empty)
                .map_err(|e| Error::SandboxUnavailable(format!("the namespaces: {e}")))?;
            confinement.namespaces = Some(plan);
            applied.namespaces = true;
        }
        Err(why) => missing.push(format!(
            "the mount, PID, UTS and IPC namespaces (read-only outside the writable \
             paths, secrets hidden, the host's processes hidden): {why}"
        )),
    }

    // Filesystem (and TCP ports, and scopes): Landlock.
    let abi = landlock_abi();
    applied.landlock_abi = abi.max(0) as u32;
    let mut tcp_ports = policy.allow_tcp_ports.clone();
    tcp_ports.extend(proxy.map(Proxy::port));
    // The proxy's namespace, entered by every process of the session.
    if let Some(netns) = proxy.and_then(Proxy::netns) {
        let netns = netns
            .try_clone_to_owned()
            .map_err(|e| Error::io("cannot keep the network namespace", e))?;
        confinement.netns = Some(netns);
    }
    let want_ports = policy.network.filtered() && !tcp_ports.is_empty();
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
            let what = match proxy {
                Some(_) => "the domain policy's proxy and the allowed TCP ports",
                None => "the allowed TCP ports",
            };
            missing.push(format!(
                "Landlock ABI {TCP_PORTS_ABI} ({what}; TCP stays denied): the kernel has ABI {abi}"
            ));
        }
        let scopes = abi >= SCOPES_ABI;
        let readable = policy.readable.as_ref().map(|paths| {
            let mut all: Vec<PathBuf> = paths.clone();
            all.extend(SYSTEM_READABLE.iter().map(PathBuf::from));
            all.extend(extra.readable.iter().cloned());
            all
        });
        let rules = Rules {
            abi,
            writable,
            readable,
            tcp_ports: ports.then_some(tcp_ports),
            scopes,
        };
        // Made once here to fail now, not at the first start.
        rules
            .ruleset()
            .map_err(|e| Error::SandboxUnavailable(format!("Landlock: {e}")))?;
        confinement.landlock = Some(rules);
        applied.filesystem = true;
        applied.tcp_ports = ports;
        applied.scopes = scopes;
    }

    // Network, and the mounts of the namespaces: a seccomp filter.
    let network = policy.network.filtered().then_some(applied.tcp_ports);
    if network.is_some() || applied.namespaces {
        match system_call_filter(network, applied.namespaces) {
            Ok(program) => {
                confinement.seccomp = Some(program);
                applied.network = network.is_some();
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
    let mut cgroup =
        |controller: &str, file: (&str, &str, u64)| match Cgroup::new(controller, &name, file) {
            Ok((cgroup, procs)) => {
                cgroups.push(cgroup);
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
    Ok(())
}

/// The seccomp filter of a sandbox. With `network` (`Network::Deny`):
/// `socket` and `socketpair` fail with `EPERM` for every family but
/// `AF_UNIX`, and so do the `io_uring` calls (io_uring makes sockets
/// without `socket(2)`); `Some(true)` lets TCP sockets (`AF_INET`/
/// `AF_INET6`, `SOCK_STREAM`, protocol 0 or TCP) through for Landlock's
/// port rules to restrict. With `mounts`: every call that mounts,
/// unmounts or changes a mount fails with `EPERM`, so a root bash cannot
/// undo its namespaces' read-only mounts or uncover what they hide, and so
/// does `open_by_handle_at`, which would open a file of the host's
/// filesystem by its handle past the mounts.
fn system_call_filter(
    network: Option<bool>,
    mounts: bool,
) -> std::result::Result<BpfProgram, String> {
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
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    if mounts {
        for call in [
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_mount_setattr,
            libc::SYS_open_tree,
            libc::SYS_move_mount,
            libc::SYS_fsopen,
            libc::SYS_fsconfig,
            libc::SYS_fsmount,
            libc::SYS_fspick,
            libc::SYS_pivot_root,
            // A file handle opened through a writable bind mount reaches
            // past every mount (its capability is dropped too).
            libc::SYS_open_by_handle_at,
        ] {
            rules.insert(call, Vec::new());
        }
    }
    let Some(tcp) = network else {
        return compile(rules, arch);
    };
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
    rules.extend([
        (libc::SYS_socket, socket),
        (libc::SYS_socketpair, pair),
        (libc::SYS_io_uring_setup, Vec::new()),
        (libc::SYS_io_uring_enter, Vec::new()),
        (libc::SYS_io_uring_register, Vec::new()),
    ]);
    compile(rules, arch)
}

/// `rules` (an empty list: the call always) fail with `EPERM`; every other
/// call is allowed.
fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    arch: TargetArch,
) -> std::result::Result<BpfProgram, String> {
    let err = |e: seccompiler::BackendError| e.to_string();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(err)?;
    BpfProgram::try_from(filter).map_err(err)
}
