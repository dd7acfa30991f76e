//! The sandbox a host may put around what the model runs: which paths the
//! session may write (and read), whether it may open network sockets, and
//! resource limits. Off unless a host asks for it ([`crate::ShellOptions`]
//! `sandbox: None` costs nothing); on, it is applied to bash before bash
//! runs anything and inherited by everything bash starts, so no command can
//! step outside it or lift it.
//!
//! This module holds the policy as every face builds it, and its one parser
//! of the values a face receives. Fail closed: a policy the kernel cannot
//! enforce is [`crate::Error::SandboxUnavailable`] when the shell is
//! created, never a sandbox silently weaker than asked, unless the host sets
//! [`Sandbox::best_effort`].

use std::path::PathBuf;
use std::str::FromStr;

#[cfg(target_os = "linux")]
mod cgroup;
#[cfg(target_os = "linux")]
mod confine;
pub(crate) mod dirs;
mod domains;
#[cfg(target_os = "linux")]
mod enforce;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(target_os = "linux")]
mod namespaces;
mod program;
mod proxy;
#[cfg(any(target_vendor = "apple", test))]
mod seatbelt;
// What the namespaces (Linux) or Seatbelt (macOS) hide.
#[cfg(any(target_os = "linux", target_vendor = "apple"))]
mod secrets;
mod session;

// macOS and the BSDs: Seatbelt (macOS) and rlimits, no cgroups.
#[cfg(not(target_os = "linux"))]
#[path = "bsd/cgroup.rs"]
mod cgroup;
#[cfg(not(target_os = "linux"))]
#[path = "bsd/confine.rs"]
mod confine;
#[cfg(not(target_os = "linux"))]
#[path = "bsd/enforce.rs"]
mod enforce;

pub(crate) use cgroup::PidsCgroup;
pub(crate) use confine::{Confinement, Entry};
use dirs::SessionDirs;
pub use domains::{DomainPolicy, Host, Pattern, Refusal};
#[cfg(target_os = "linux")]
pub use landlock::{TEST_LANDLOCK_ABI_VAR, landlock_abi};
#[cfg(target_os = "linux")]
pub use namespaces::TEST_NO_NAMESPACES_VAR;
pub(crate) use program::run_program;
pub use program::{ProgramOutput, ProgramSandbox};
pub use proxy::{NetworkControl, Proxy, Violation};
pub(crate) use session::SessionSandbox;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{BadValue, Result};
use crate::wire::{read, shape};

/// What a sandboxed session may do. Built by a host; [`Default`] is the
/// strict policy: write only in the session's cwd and its private temp
/// directory, read everywhere, no network, no limits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(
    default,
    deny_unknown_fields,
    expecting = "a sandbox policy (an object)"
)]
pub struct Sandbox {
    /// Paths the session may write, beyond the two it always may: its
    /// starting cwd and a private temp directory made for it and given to
    /// bash as `TMPDIR`. A directory covers everything below it.
    pub writable: Vec<PathBuf>,
    /// Paths the session may read; `None`: every path. The writable paths
    /// and what bash itself needs to start (its binary, libraries, `/dev`)
    /// are readable either way.
    pub readable: Option<Vec<PathBuf>>,
    /// Whether the session may open network sockets, or reach named hosts
    /// only.
    #[serde(deserialize_with = "read::network")]
    #[schemars(schema_with = "shape::network")]
    pub network: Network,
    /// TCP ports the session may connect to while `network` is
    /// [`Network::Deny`] or [`Network::Domains`].
    #[serde(deserialize_with = "read::ports")]
    #[schemars(schema_with = "shape::ports")]
    pub allow_tcp_ports: Vec<u16>,
    /// Resource limits.
    pub limits: Limits,
    /// Apply what the kernel supports and go on without the rest, instead
    /// of failing. What was applied is then reported by the session.
    pub best_effort: bool,
}

impl Sandbox {
    /// Whether this kernel and host can give the sandbox, without starting
    /// anything: makes it (a ruleset, a filter, cgroups) and removes it
    /// again. [`crate::Error::SandboxUnavailable`] names what is missing;
    /// with `best_effort`, the result says what would not apply.
    pub fn check(&self) -> Result<SandboxApplied> {
        let cwd = std::env::current_dir()
            .map_err(|e| crate::Error::io("cannot read the current directory", e))?;
        let shell = std::path::Path::new("/bin/sh");
        let sandbox = SessionSandbox::for_shell(self, &cwd, shell, &[])?;
        Ok(sandbox.applied().clone())
    }
}

/// The `sandbox` option as every face takes it: a policy (an object of
/// [`Sandbox`]'s fields), `true` for the strict default ([`Sandbox::default`],
/// as `{}`), `false` or `null` for none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxOption(pub Option<Sandbox>);

impl<'de> Deserialize<'de> for SandboxOption {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::{MapAccess, Visitor, value::MapAccessDeserializer};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SandboxOption;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sandbox policy (an object), true, false or null")
            }
            fn visit_bool<E>(self, on: bool) -> std::result::Result<SandboxOption, E> {
                Ok(SandboxOption(on.then(Sandbox::default)))
            }
            fn visit_unit<E>(self) -> std::result::Result<SandboxOption, E> {
                Ok(SandboxOption(None))
            }
            fn visit_none<E>(self) -> std::result::Result<SandboxOption, E> {
                Ok(SandboxOption(None))
            }
            fn visit_some<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> std::result::Result<SandboxOption, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<SandboxOption, A::Error> {
                Sandbox::deserialize(MapAccessDeserializer::new(map))
                    .map(|s| SandboxOption(Some(s)))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether a sandboxed session may open network sockets. `AF_UNIX`
/// sockets (local IPC, not the network) are always allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Network {
    /// Every socket family.
    Allow,
    /// No socket but `AF_UNIX`: no TCP, no UDP (so no DNS), no raw socket.
    #[default]
    Deny,
    /// The hosts a [`DomainPolicy`] allows, through the session's proxy:
    /// commands may connect to the proxy (and the allowed TCP ports) only,
    /// and their environment points at it.
    Domains(DomainPolicy),
}

/// `"allow"`, `"deny"`, or `{"allow": [...], "deny": [...], "resolve":
/// {...}}`, checked as a sandbox's `network` is; `null` is a type error
/// (a value given on its own, as to `set_network`, must say what it is).
impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        read::network_value(d)
    }
}

/// The form [`Network`]'s `Deserialize` reads: a policy crosses a wire
/// (the remote protocol's `set_network`) as the host wrote it.
impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let policy = match self {
            Network::Allow => return s.serialize_str("allow"),
            Network::Deny => return s.serialize_str("deny"),
            Network::Domains(policy) => policy,
        };
        let words =
            |patterns: &[Pattern]| patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("allow", &words(&policy.allow))?;
        map.serialize_entry("deny", &words(&policy.deny))?;
        map.serialize_entry("resolve", &policy.resolve)?;
        map.end()
    }
}

impl Network {
    /// The domain policy, when the network is by name.
    pub fn domains(&self) -> Option<&DomainPolicy> {
        match self {
            Network::Domains(policy) => Some(policy),
            _ => None,
        }
    }

    /// Whether sockets are filtered: everything but `Allow`.
    pub fn filtered(&self) -> bool {
        *self != Network::Allow
    }
}

/// `"allow"` or `"deny"`.
impl FromStr for Network {
    type Err = BadValue;

    fn from_str(text: &str) -> Result<Self, BadValue> {
        match text {
            "allow" => Ok(Network::Allow),
            "deny" => Ok(Network::Deny),
            _ => Err(BadValue::new(
                r#""allow" or "deny""#,
                format_args!("{text:?}"),
            )),
        }
    }
}

/// Resource limits of a sandboxed session; `None`: no limit. The first four
/// bind each process a command starts (not bash itself, whose own use is
/// the session's); the last two bind the session as a whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields, expecting = "an object of limits")]
pub struct Limits {
    /// CPU time of each process, in seconds (`RLIMIT_CPU`).
    #[serde(deserialize_with = "read::cpu_seconds")]
    #[schemars(schema_with = "shape::positive")]
    pub cpu_seconds: Option<u64>,
    /// Address space of each process, in bytes (`RLIMIT_AS`).
    #[serde(deserialize_with = "read::memory_bytes")]
    #[schemars(schema_with = "shape::positive")]
    pub memory_bytes: Option<u64>,
    /// Largest file a process may write, in bytes (`RLIMIT_FSIZE`).
    #[serde(deserialize_with = "read::file_size_bytes")]
    #[schemars(schema_with = "shape::positive")]
    pub file_size_bytes: Option<u64>,
    /// Descriptors each process may hold open (`RLIMIT_NOFILE`).
    #[serde(deserialize_with = "read::open_files")]
    #[schemars(schema_with = "shape::positive")]
    pub open_files: Option<u64>,
    /// Processes the whole session may have at once (a cgroup's
    /// `pids` cap: a count per user, `RLIMIT_NPROC`, does not bind root).
    #[serde(deserialize_with = "read::processes")]
    #[schemars(schema_with = "shape::positive")]
    pub processes: Option<u64>,
    /// Memory the whole session may use at once, in bytes (a cgroup's
    /// memory cap).
    #[serde(deserialize_with = "read::session_memory_bytes")]
    #[schemars(schema_with = "shape::positive")]
    pub session_memory_bytes: Option<u64>,
}

impl Limits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        *self != Limits::default()
    }
}

/// What of a session's sandbox is in force ([`crate::Shell::sandbox_applied`]):
/// everything the policy asked for, unless it was made with
/// [`Sandbox::best_effort`] on a kernel or host that lacks something,
/// which [`SandboxApplied::not_applied`] then names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxApplied {
    /// The kernel's Landlock ABI (0: none).
    pub landlock_abi: u32,
    /// The session's own mount, PID, UTS and IPC namespaces: every mount
    /// but the writable paths read-only (so `chmod`, `chown`, `touch -d`
    /// and links outside them fail too), the secrets covered (password
    /// hashes, SSH host keys, `/root`, other users' homes, credential
    /// stores, the daemons' control sockets), a `/proc` that shows only
    /// the session's own processes, and a host name and IPC objects of
    /// its own.
    pub namespaces: bool,
    /// The filesystem rules (Landlock).
    pub filesystem: bool,
    /// The socket filter of [`Network::Deny`] (seccomp); `false` with
    /// [`Network::Allow`].
    pub network: bool,
    /// The allowed TCP ports (Landlock ABI 4); `false` when none are asked.
    pub tcp_ports: bool,
    /// No signal to, and no abstract UNIX socket of, a process outside the
    /// sandbox (Landlock ABI 6): applied when the kernel has it, never
    /// required.
    pub scopes: bool,
    /// The per-process limits (rlimits, always applied when asked);
    /// `false` when none is asked.
    pub limits: bool,
    /// [`Limits::processes`] (a cgroup); `false` when not asked.
    pub processes: bool,
    /// [`Limits::session_memory_bytes`] (a cgroup); `false` when not asked.
    pub session_memory: bool,
    /// What was asked and did not apply, each with why.
    pub not_applied: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::parse_option;

    #[test]
    fn network_parses_allow_and_deny_only() {
        assert_eq!("allow".parse(), Ok(Network::Allow));
        assert_eq!("deny".parse(), Ok(Network::Deny));
        let err = parse_option::<Network>("network", "off").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"network must be "allow" or "deny", got "off""#
        );
    }

    #[test]
    fn the_default_policy_is_strict() {
        let policy = Sandbox::default();
        assert_eq!(policy.network, Network::Deny);
        assert!(policy.writable.is_empty() && policy.readable.is_none());
        assert!(!policy.limits.any() && !policy.best_effort);
    }
}
