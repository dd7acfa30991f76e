//! A session's sandbox: its private directory, what the platform enforces
//! of the policy ([`enforce`](super::enforce): Linux's kernel, or macOS's
//! Seatbelt), and the report of what applied. Fail closed: what is asked
//! and cannot be enforced fails the session
//! ([`Error::SandboxUnavailable`]) unless the policy is `best_effort`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cgroup::Cgroup;
use super::confine::Confinement;
use super::enforce::enforce;
use super::proxy::{NetworkControl, Proxy, Violation};
use super::{Sandbox, SandboxApplied, SessionDirs};
use crate::error::{Error, Result};
use crate::process::env::Env;

/// A session's sandbox, in force for every bash it starts from
/// [`SessionSandbox::confinement`]. Its directory and cgroups go when it
/// is closed or dropped.
#[derive(Debug)]
pub struct SessionSandbox {
    confinement: Arc<Confinement>,
    cgroups: Vec<Cgroup>,
    dirs: SessionDirs,
    applied: SandboxApplied,
    /// The proxy of a [`Network::Domains`] policy, the only way out of the
    /// sandbox to the network.
    proxy: Option<Proxy>,
}

/// What, besides the policy, a session's sandbox lets bash read.
#[derive(Debug)]
pub struct SessionPaths<'a> {
    /// The session's starting cwd (written too).
    pub cwd: &'a Path,
    /// Where the session dir is made (conch's private directory).
    pub base: &'a Path,
    /// The session's bash (what Linux probes its namespaces with).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub shell: &'a Path,
    /// Files bash sources or reads from the host (its own binary, conch's
    /// private directory, a snapshot).
    #[cfg_attr(
        not(any(target_os = "linux", target_vendor = "apple")),
        allow(dead_code)
    )]
    pub readable: Vec<PathBuf>,
}

/// What the platform made of a policy: filled by [`enforce`].
#[derive(Default)]
pub(super) struct Enforced {
    pub confinement: Confinement,
    pub applied: SandboxApplied,
    pub cgroups: Vec<Cgroup>,
    /// What was asked and is not enforced, each with why.
    pub missing: Vec<String>,
}

impl SessionSandbox {
    /// Turns `policy` into what this platform enforces; see the module's
    /// documentation.
    pub fn new(policy: &Sandbox, extra: SessionPaths<'_>) -> Result<SessionSandbox> {
        let dirs = SessionDirs::new(policy, extra.base)?;
        let proxy = match policy.network.domains() {
            // Its own network namespace, unless commands must also reach
            // allowed ports on the host's loopback.
            Some(domains) => Some(
                Proxy::start(domains.clone(), policy.allow_tcp_ports.is_empty()).map_err(|e| {
                    Error::SandboxUnavailable(format!("the domain policy's proxy: {e}"))
                })?,
            ),
            None => None,
        };
        let mut enforced = Enforced::default();
        let done = enforce(policy, &extra, &dirs, proxy.as_ref(), &mut enforced);
        let Enforced {
            confinement,
            mut applied,
            cgroups,
            missing,
        } = enforced;
        // From here, dropping `session` removes its directory and cgroups.
        let mut session = SessionSandbox {
            confinement: Arc::new(confinement),
            cgroups,
            dirs,
            applied: SandboxApplied::default(),
            proxy,
        };
        done?;
        if !missing.is_empty() && !policy.best_effort {
            session.close();
            return Err(Error::SandboxUnavailable(missing.join("; ")));
        }
        applied.not_applied = missing;
        session.applied = applied;
        Ok(session)
    }

    /// The sandbox of a session or a run whose bash is `shell`, starting in
    /// `cwd` and reading `files` at start (the rc snapshot, the loop
    /// builtin): its directory in conch's private directory, which (with
    /// `shell` and `files`) it may always read.
    pub fn for_shell(
        policy: &Sandbox,
        cwd: &Path,
        shell: &Path,
        files: &[&Path],
    ) -> Result<SessionSandbox> {
        let base = crate::private_dir::private_dir()?;
        let mut readable = vec![base.clone(), shell.to_path_buf()];
        readable.extend(files.iter().map(|file| file.to_path_buf()));
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

    /// `env` with `TMPDIR` set to the sandbox's temp directory, and the
    /// proxy variables of a domain policy.
    pub fn set_env(&self, env: &mut Env) {
        self.dirs.set_tmpdir(env);
        if let Some(proxy) = &self.proxy {
            for (name, value) in proxy.env() {
                env.retain(|(n, _)| n != name.as_str());
                env.push((name.into(), value.into()));
            }
        }
    }

    /// The handle on a domain policy's proxy (`None`: no domain policy).
    pub fn network(&self) -> Option<NetworkControl> {
        self.proxy.as_ref().map(Proxy::control)
    }

    /// The connections the domain policy refused since the last call.
    pub fn take_violations(&self) -> Vec<Violation> {
        self.network()
            .map(|network| network.take_violations())
            .unwrap_or_default()
    }

    /// Stops the proxy of a domain policy, as if it had died: from now on
    /// the session's commands cannot connect anywhere (tests show that a
    /// lost proxy fails closed).
    #[doc(hidden)]
    pub fn stop_proxy(&mut self) {
        if let Some(proxy) = &mut self.proxy {
            proxy.stop();
        }
    }

    /// What the child applies (shared by every bash of the session).
    pub fn confinement(&self) -> Arc<Confinement> {
        self.confinement.clone()
    }

    /// Where the session's pipes are FIFOs: its bash opens them again by
    /// path, and may not reach the host's `/proc/<pid>/fd`.
    pub fn pipes(&self) -> &Path {
        &self.dirs.pipes
    }

    /// A directory the session's bash may write and the host reads
    /// (conch's own files of the session), removed with the sandbox.
    pub fn dir(&self) -> &Path {
        &self.dirs.dir
    }

    pub fn applied(&self) -> &SandboxApplied {
        &self.applied
    }

    /// Empties and removes the cgroups, then the session's directory. Call
    /// it once the session's processes are killed. Idempotent.
    pub fn close(&mut self) {
        if let Some(proxy) = &mut self.proxy {
            proxy.stop();
        }
        for cgroup in self.cgroups.drain(..) {
            cgroup.remove();
        }
        self.dirs.remove();
    }
}

impl Drop for SessionSandbox {
    fn drop(&mut self) {
        self.close();
    }
}
