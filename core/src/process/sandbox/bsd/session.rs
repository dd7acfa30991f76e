//! A session's sandbox on macOS and the BSDs: the policy turned into what
//! these systems enforce, the session's private temp directory, and the
//! report of what applied. macOS: a Seatbelt profile (the filesystem, the
//! network, the allowed TCP ports, signals only within the sandbox, the
//! secrets hidden) and rlimits, `RLIMIT_AS` excepted (XNU does not enforce
//! it). FreeBSD: rlimits only. No cgroups anywhere here: the session-wide
//! limits are never applied. What is asked and missing fails the session
//! ([`Error::SandboxUnavailable`]) unless the policy is `best_effort`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::confine::Confinement;
use super::{Sandbox, SandboxApplied};
use crate::error::{Error, Result};

/// A session's sandbox, in force for every bash it starts from
/// [`SessionSandbox::confinement`]. Its directory goes when it is closed
/// or dropped.
#[derive(Debug)]
pub struct SessionSandbox {
    confinement: Arc<Confinement>,
    dirs: super::SessionDirs,
    applied: SandboxApplied,
}

/// What, besides the policy, a session's sandbox lets bash read.
#[derive(Debug)]
pub struct SessionPaths<'a> {
    /// The session's starting cwd (written too).
    pub cwd: &'a Path,
    /// Where the session dir is made (conch's private directory).
    pub base: &'a Path,
    /// The session's bash (what Linux probes its namespaces with; there
    /// are none here).
    #[allow(dead_code)]
    pub shell: &'a Path,
    /// Files bash sources or reads from the host (its own binary, conch's
    /// private directory, a snapshot): in the Seatbelt profile's readable
    /// paths; no other sandbox here has such a list.
    #[cfg_attr(not(target_vendor = "apple"), allow(dead_code))]
    pub readable: Vec<PathBuf>,
}

impl SessionSandbox {
    /// Turns `policy` into what this system enforces; see the module's
    /// documentation.
    pub fn new(policy: &Sandbox, extra: SessionPaths<'_>) -> Result<SessionSandbox> {
        let dirs = super::SessionDirs::new(policy, extra.base)?;
        let mut confinement = Confinement::default();
        let mut applied = SandboxApplied::default();
        let mut missing = Vec::new();

        let mut writable = vec![extra.cwd.to_path_buf(), dirs.dir.clone()];
        writable.extend(policy.writable.iter().cloned());
        filesystem_and_network(
            policy,
            &extra,
            &writable,
            &mut confinement,
            &mut applied,
            &mut missing,
        );

        let limits = &policy.limits;
        let mut rlimits = vec![
            (libc::RLIMIT_CPU, limits.cpu_seconds),
            (libc::RLIMIT_FSIZE, limits.file_size_bytes),
            (libc::RLIMIT_NOFILE, limits.open_files),
        ];
        if cfg!(target_vendor = "apple") {
            if limits.memory_bytes.is_some() {
                missing.push("memory_bytes (RLIMIT_AS): macOS does not enforce it".to_string());
            }
        } else {
            rlimits.push((libc::RLIMIT_AS, limits.memory_bytes));
        }
        for (resource, value) in rlimits {
            if let Some(value) = value {
                confinement.rlimits.push((resource as libc::c_int, value));
            }
        }
        applied.limits = !confinement.rlimits.is_empty();
        if limits.processes.is_some() {
            missing.push("processes (a cgroup's pids cap): no cgroups on this system".to_string());
        }
        if limits.session_memory_bytes.is_some() {
            missing.push(
                "session_memory_bytes (a cgroup's memory cap): no cgroups on this system"
                    .to_string(),
            );
        }

        if !missing.is_empty() && !policy.best_effort {
            return Err(Error::SandboxUnavailable(missing.join("; ")));
        }
        applied.not_applied = missing;
        Ok(SessionSandbox {
            confinement: Arc::new(confinement),
            dirs,
            applied,
        })
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
                shell,
                readable,
            },
        )
    }

    /// `env` with `TMPDIR` set to the sandbox's temp directory.
    pub fn set_tmpdir(&self, env: &mut Vec<(String, String)>) {
        self.dirs.set_tmpdir(env);
    }

    /// What the child applies (shared by every bash of the session).
    pub fn confinement(&self) -> Arc<Confinement> {
        self.confinement.clone()
    }

    /// Where the session's pipes are FIFOs.
    pub fn pipes(&self) -> &Path {
        &self.dirs.pipes
    }

    /// A directory the session's bash may write and the host reads,
    /// removed with the sandbox.
    pub fn dir(&self) -> &Path {
        &self.dirs.dir
    }

    pub fn applied(&self) -> &SandboxApplied {
        &self.applied
    }

    /// Removes the session's directory. Call it once the session's
    /// processes are killed. Idempotent.
    pub fn close(&mut self) {
        self.dirs.remove();
    }
}

/// macOS: the filesystem and network rules as a Seatbelt profile, applied
/// by running each bash under `sandbox-exec`.
#[cfg(target_vendor = "apple")]
fn filesystem_and_network(
    policy: &Sandbox,
    extra: &SessionPaths<'_>,
    writable: &[PathBuf],
    confinement: &mut Confinement,
    applied: &mut SandboxApplied,
    missing: &mut Vec<String>,
) {
    use super::seatbelt::{self, SANDBOX_EXEC};
    if !Path::new(SANDBOX_EXEC).exists() {
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
    let deny = policy.network == super::Network::Deny;
    let tcp_ports = if deny {
        policy.allow_tcp_ports.as_slice()
    } else {
        &[]
    };
    let profile = seatbelt::profile(&seatbelt::Policy {
        writable: &writable,
        readable: readable.as_deref(),
        network: !deny,
        tcp_ports,
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
    _confinement: &mut Confinement,
    _applied: &mut SandboxApplied,
    missing: &mut Vec<String>,
) {
    missing.push("the filesystem rules: no sandbox on this system".to_string());
    if policy.network == super::Network::Deny {
        missing.push("the network rule: no sandbox on this system".to_string());
    }
}
