//! What macOS and the BSDs enforce of a session's sandbox. macOS: a
//! Seatbelt profile (the filesystem, the network, the allowed TCP ports,
//! signals only within the sandbox, the secrets hidden) and rlimits,
//! `RLIMIT_AS` excepted (XNU does not enforce it). FreeBSD: rlimits only.
//! No cgroups anywhere here: the session-wide limits are never applied.

use std::path::PathBuf;

use super::proxy::Proxy;
use super::session::{Enforced, SessionPaths};
use super::{Sandbox, SessionDirs};
use crate::error::Result;

/// Adds to `enforced` what this system enforces of `policy`, and names in
/// `enforced.missing` what it cannot. `proxy`: a domain policy's proxy,
/// whose port is the one TCP port besides the allowed ones.
pub(super) fn enforce(
    policy: &Sandbox,
    extra: &SessionPaths<'_>,
    dirs: &SessionDirs,
    proxy: Option<&Proxy>,
    enforced: &mut Enforced,
) -> Result<()> {
    let mut writable = vec![extra.cwd.to_path_buf(), dirs.dir.clone()];
    writable.extend(policy.writable.iter().cloned());
    filesystem_and_network(policy, extra, &writable, proxy.map(Proxy::port), enforced);

    let limits = &policy.limits;
    let mut rlimits = vec![
        (libc::RLIMIT_CPU, limits.cpu_seconds),
        (libc::RLIMIT_FSIZE, limits.file_size_bytes),
        (libc::RLIMIT_NOFILE, limits.open_files),
    ];
    if cfg!(target_vendor = "apple") {
        if limits.memory_bytes.is_some() {
            enforced
                .missing
                .push("memory_bytes (RLIMIT_AS): macOS does not enforce it".to_string());
        }
    } else {
        rlimits.push((libc::RLIMIT_AS, limits.memory_bytes));
    }
    for (resource, value) in rlimits {
        if let Some(value) = value {
            enforced
                .confinement
                .rlimits
                .push((resource as libc::c_int, value));
        }
    }
    enforced.applied.limits = !enforced.confinement.rlimits.is_empty();
    if limits.processes.is_some() {
        enforced
            .missing
            .push("processes (a cgroup's pids cap): no cgroups on this system".to_string());
    }
    if limits.session_memory_bytes.is_some() {
        enforced.missing.push(
            "session_memory_bytes (a cgroup's memory cap): no cgroups on this system".to_string(),
        );
    }
    Ok(())
}

/// macOS: the filesystem and network rules as a Seatbelt profile, applied
/// by running each bash under `sandbox-exec`.
#[cfg(target_vendor = "apple")]
fn filesystem_and_network(
    policy: &Sandbox,
    extra: &SessionPaths<'_>,
    writable: &[PathBuf],
    proxy: Option<u16>,
    enforced: &mut Enforced,
) {
    use super::seatbelt::{self, SANDBOX_EXEC};
    let Enforced {
        confinement,
        applied,
        missing,
        ..
    } = enforced;
    if !std::path::Path::new(SANDBOX_EXEC).exists() {
        missing.push(format!(
            "Seatbelt (the filesystem and network rules): no {SANDBOX_EXEC}"
        ));
        return;
    }
    // Seatbelt compares resolved paths: /tmp is /private/tmp here.
    let resolved = |paths: &[PathBuf]| -> Vec<PathBuf> {
        paths
            .iter()
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
            .collect()
    };
    let writable = resolved(writable);
    let readable = policy.readable.as_ref().map(|paths| {
        let mut all = resolved(paths);
        all.extend(resolved(&extra.readable));
        all
    });
    let mut named = writable.clone();
    named.extend(readable.iter().flatten().cloned());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let hidden = super::secrets::Hidden::of_system(home.as_deref(), &named);
    let hidden: Vec<PathBuf> = hidden.dirs.into_iter().chain(hidden.files).collect();
    let deny = policy.network.filtered();
    let mut tcp_ports = Vec::new();
    if deny {
        tcp_ports.extend(&policy.allow_tcp_ports);
        tcp_ports.extend(proxy);
    }
    let profile = seatbelt::profile(&seatbelt::Policy {
        writable: &writable,
        readable: readable.as_deref(),
        network: !deny,
        tcp_ports: &tcp_ports,
        hidden: &hidden,
    });
    confinement.wrapper = Some((PathBuf::from(SANDBOX_EXEC), profile.args()));
    applied.filesystem = true;
    applied.network = deny;
    applied.tcp_ports = !tcp_ports.is_empty();
    applied.scopes = true;
}

/// FreeBSD and the other BSDs: no filesystem or network sandbox (yet).
#[cfg(not(target_vendor = "apple"))]
fn filesystem_and_network(
    policy: &Sandbox,
    _extra: &SessionPaths<'_>,
    _writable: &[PathBuf],
    _proxy: Option<u16>,
    enforced: &mut Enforced,
) {
    let missing = &mut enforced.missing;
    missing.push("the filesystem rules: no sandbox on this system".to_string());
    if policy.network.filtered() {
        missing.push("the network rule: no sandbox on this system".to_string());
    }
}
