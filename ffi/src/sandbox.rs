//! `conch_sandbox`: the sandbox a C host puts around a shell, translated to
//! the core's [`Sandbox`]. Zero means the default of each field (the strict
//! policy); every value is checked by the core's parser of that option,
//! under the field's name, so C refuses what every face refuses. Also
//! `conch_shell_set_network`, which changes the domains a session with a
//! domain policy may reach.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int};
use std::path::PathBuf;

use conch_core::input::{limit_option, port_option};
use conch_core::process::sandbox::SandboxApplied;
use conch_core::{BadValue, DomainPolicy, Error, Limits, Network, Sandbox};

use crate::boundary::{
    self, free_c_string, into_raw_or_null, opt_c_owned, opt_str_list, out_arg, pair_list,
};
use crate::handle::{self, Castable, OwnershipBox};
use crate::shell::conch_shell;
use crate::status::{FfiError, FfiResult};

/// Whether a sandboxed session may open network sockets (the `network`
/// field of `conch_sandbox`, an `int32_t`). `AF_UNIX` sockets are always
/// allowed.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum conch_network {
    /// No socket but `AF_UNIX`: no TCP (but to `allow_tcp_ports`), no UDP
    /// (so no DNS). The default (0).
    CONCH_NETWORK_DENY = 0,
    /// Every socket family.
    CONCH_NETWORK_ALLOW = 1,
    /// The hosts a domain policy allows (`conch_domain_policy`), through
    /// the session's proxy: commands may connect to that proxy (and to
    /// `allow_tcp_ports`) only, and their environment names it
    /// (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`). A refused connection is
    /// a `sandbox_violations` entry of the result.
    CONCH_NETWORK_DOMAINS = 2,
}

/// The domain policy of `CONCH_NETWORK_DOMAINS` (the `domains` field of
/// `conch_sandbox`, the argument of `conch_shell_set_network`). Each list
/// is a NULL-terminated array of strings; NULL: empty. Zeroed: nothing is
/// allowed. Every entry is checked by the core's parser (an error names it:
/// `opts->sandbox->domains.allow[1] must be a domain pattern …`).
#[repr(C)]
pub struct conch_domain_policy {
    /// What commands may reach: `example.com`, `*.example.com` (the names
    /// below it, not itself), either with a port (`example.com:443`), or an
    /// address block (`10.0.0.0/8`, a bare address). NULL: nothing.
    pub allow: *const *const c_char,
    /// What they may not, whatever `allow` says (the same forms).
    pub deny: *const *const c_char,
    /// `"NAME=IP"` strings: names the proxy resolves to that address
    /// instead of asking DNS (as curl's `--resolve`).
    pub resolve: *const *const c_char,
}

/// Resource limits of a sandboxed session; 0: no limit.
#[repr(C)]
pub struct conch_sandbox_limits {
    /// CPU seconds of each process a command starts (`RLIMIT_CPU`).
    pub cpu_seconds: u64,
    /// Address space of each process, in bytes (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// Largest file a process may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Descriptors each process may hold open (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// Processes the whole session may have at once.
    pub processes: u64,
    /// Memory the whole session may use at once, in bytes.
    pub session_memory_bytes: u64,
}

/// The sandbox around everything a shell runs, set in
/// `conch_shell_options.sandbox`. Zero-initialize it (`= {0}`): that is the
/// strict policy (write only in the session's cwd and its private temp
/// directory, read everywhere, no network, no limits); then set what you
/// need. A policy the kernel cannot enforce makes `conch_shell_new` fail
/// with `CONCH_ERR_SANDBOX_UNAVAILABLE` (unless `best_effort`).
#[repr(C)]
pub struct conch_sandbox {
    /// Paths the session may write besides its cwd and temp directory (a
    /// directory covers everything below it), ended by a NULL pointer;
    /// NULL: none.
    pub writable: *const *const c_char,
    /// Paths the session may read, ended by a NULL pointer; NULL: every
    /// path. A list holding only the NULL terminator: none but the writable
    /// paths and what bash needs to start.
    pub readable: *const *const c_char,
    /// A `conch_network` value; 0: `CONCH_NETWORK_DENY`.
    pub network: i32,
    /// TCP ports the session may connect to while the network is denied,
    /// `allow_tcp_ports_count` of them (each 1 to 65535); NULL: none.
    pub allow_tcp_ports: *const u16,
    pub allow_tcp_ports_count: usize,
    pub limits: conch_sandbox_limits,
    /// true: apply what the kernel supports and go on without the rest,
    /// instead of failing.
    pub best_effort: bool,
    /// The domain policy when `network` is `CONCH_NETWORK_DOMAINS`; zeroed
    /// otherwise (a list set with another `network` is an error).
    pub domains: conch_domain_policy,
}

/// The core's network of a `conch_network` value and, for
/// `CONCH_NETWORK_DOMAINS`, its policy (`None`: empty lists); errors name
/// the fields `network_name` and `domains_name`.
///
/// # Safety
/// Every list of `domains` is NULL or valid, as documented on
/// `conch_domain_policy`.
unsafe fn network(
    value: i32,
    domains: Option<&conch_domain_policy>,
    network_name: &str,
    domains_name: &str,
) -> FfiResult<Network> {
    let refused = |e: conch_core::Error| FfiError::arg(e.to_string());
    let lists = |d: &conch_domain_policy| [d.allow, d.deny, d.resolve].iter().any(|l| !l.is_null());
    match value {
        n if n == conch_network::CONCH_NETWORK_DENY as i32
            || n == conch_network::CONCH_NETWORK_ALLOW as i32 =>
        {
            if domains.is_some_and(lists) {
                return Err(FfiError::arg(format!(
                    "{domains_name} is set but {network_name} is not CONCH_NETWORK_DOMAINS"
                )));
            }
            Ok(match n == conch_network::CONCH_NETWORK_ALLOW as i32 {
                true => Network::Allow,
                false => Network::Deny,
            })
        }
        n if n == conch_network::CONCH_NETWORK_DOMAINS as i32 => {
            let Some(d) = domains else {
                return Ok(Network::Domains(DomainPolicy::default()));
            };
            let list = |items, key: &str| -> FfiResult<Vec<String>> {
                // SAFETY: the caller's guarantee on the lists.
                Ok(
                    unsafe { opt_str_list(items, &format!("{domains_name}.{key}")) }?
                        .unwrap_or_default()
                        .into_iter()
                        .map(String::from)
                        .collect(),
                )
            };
            let (allow, deny) = (list(d.allow, "allow")?, list(d.deny, "deny")?);
            // SAFETY: the caller's guarantee on the lists.
            let resolve: BTreeMap<String, String> =
                unsafe { pair_list(d.resolve, &format!("{domains_name}.resolve"), "NAME=IP") }?
                    .into_iter()
                    .collect();
            DomainPolicy::parse(domains_name, &allow, &deny, &resolve)
                .map(Network::Domains)
                .map_err(refused)
        }
        n => {
            let words = "CONCH_NETWORK_DENY, CONCH_NETWORK_ALLOW or CONCH_NETWORK_DOMAINS";
            Err(refused(BadValue::new(words, n).named(network_name)))
        }
    }
}

/// The core policy of `sandbox`, whose fields are named `<prefix><field>`
/// in errors (`opts->sandbox->limits.cpu_seconds`).
///
/// # Safety
/// Every pointer field is NULL or valid, as documented on `conch_sandbox`.
pub(crate) unsafe fn sandbox(sandbox: &conch_sandbox, prefix: &str) -> FfiResult<Sandbox> {
    let refused = |e: conch_core::Error| FfiError::arg(e.to_string());
    let paths = |list, name: &str| -> FfiResult<Option<Vec<PathBuf>>> {
        // SAFETY: the caller's guarantee on the list fields.
        Ok(unsafe { opt_str_list(list, &format!("{prefix}{name}")) }?
            .map(|items| items.into_iter().map(PathBuf::from).collect()))
    };
    // SAFETY: the caller's guarantee on the list fields.
    let network = unsafe {
        network(
            sandbox.network,
            Some(&sandbox.domains),
            &format!("{prefix}network"),
            &format!("{prefix}domains"),
        )
    }?;
    let ports: &[u16] = match (
        sandbox.allow_tcp_ports.is_null(),
        sandbox.allow_tcp_ports_count,
    ) {
        (_, 0) => &[],
        (true, _) => {
            return Err(FfiError::arg(format!(
                "{prefix}allow_tcp_ports is NULL but {prefix}allow_tcp_ports_count is not 0"
            )));
        }
        // SAFETY: the caller's guarantee: `count` ports at the pointer.
        (false, count) => unsafe { std::slice::from_raw_parts(sandbox.allow_tcp_ports, count) },
    };
    let allow_tcp_ports = ports
        .iter()
        .enumerate()
        .map(|(i, &port)| port_option(&format!("{prefix}allow_tcp_ports[{i}]"), i64::from(port)))
        .collect::<Result<_, _>>()
        .map_err(refused)?;
    let limit = |value: u64, name: &str| -> FfiResult<Option<u64>> {
        if value == 0 {
            return Ok(None);
        }
        // One past `i64::MAX` is as unlimited as `i64::MAX`.
        let value = i64::try_from(value).unwrap_or(i64::MAX);
        limit_option(&format!("{prefix}limits.{name}"), value)
            .map(Some)
            .map_err(refused)
    };
    let l = &sandbox.limits;
    Ok(Sandbox {
        writable: paths(sandbox.writable, "writable")?.unwrap_or_default(),
        readable: paths(sandbox.readable, "readable")?,
        network,
        allow_tcp_ports,
        limits: Limits {
            cpu_seconds: limit(l.cpu_seconds, "cpu_seconds")?,
            memory_bytes: limit(l.memory_bytes, "memory_bytes")?,
            file_size_bytes: limit(l.file_size_bytes, "file_size_bytes")?,
            open_files: limit(l.open_files, "open_files")?,
            processes: limit(l.processes, "processes")?,
            session_memory_bytes: limit(l.session_memory_bytes, "session_memory_bytes")?,
        },
        best_effort: sandbox.best_effort,
    })
}

/// An optional `const conch_sandbox *` field: NULL is no sandbox.
///
/// # Safety
/// `p` is NULL or points to a valid `conch_sandbox`.
pub(crate) unsafe fn opt_sandbox(
    p: *const conch_sandbox,
    prefix: &str,
) -> FfiResult<Option<Sandbox>> {
    // SAFETY: forwarded from the caller.
    match unsafe { p.as_ref() } {
        None => Ok(None),
        // SAFETY: forwarded from the caller.
        Some(s) => unsafe { sandbox(s, prefix) }.map(Some),
    }
}

/// Changes the network of a session started with a domain policy
/// (`CONCH_NETWORK_DOMAINS`), between runs: the host approved a domain, or
/// took one back. `network` is a `conch_network` value:
/// `CONCH_NETWORK_DOMAINS` with `domains` the new lists (NULL: empty, so
/// nothing is allowed), or `CONCH_NETWORK_DENY` (no domain; `domains`
/// NULL). Connections made from then on are checked against it (a command
/// running keeps the ones it opened). Errors (`CONCH_ERR_INVALID_ARG`,
/// the session unchanged): a bad pattern or resolve entry (named:
/// `domains.allow[1] must be a domain pattern …`),
/// `CONCH_NETWORK_ALLOW` (the whole network cannot be opened this way), a
/// session started without a domain policy, NULL `shell`;
/// `CONCH_ERR_CLOSED` for a closed shell.
///
/// # Safety
/// `shell` is a live handle; `domains` is NULL or points to a valid
/// `conch_domain_policy`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_set_network(
    shell: *mut conch_shell,
    network: i32,
    domains: *const conch_domain_policy,
) -> c_int {
    boundary::status("conch_shell_set_network", || {
        // SAFETY: the caller's guarantees.
        let (shell, network) = unsafe {
            let shell = handle::to_arc(shell, "shell")?;
            (
                shell,
                self::network(network, domains.as_ref(), "network", "domains")?,
            )
        };
        shell.set_network(&network)
    })
}

/// What of a shell's sandbox is in force, as `conch_shell_sandbox_applied`
/// returns it: the core's `SandboxApplied` in C types (the fields and what
/// each means are the core's, in `docs/api/schema.json` and
/// `docs/api/c.md`): each `bool` is true when that part is in force, false
/// when it is not or was not asked; `not_applied` is what was asked and did
/// not apply, each with why, joined by `\n`, NULL when everything applied.
/// Owned by the caller: free it with `conch_sandbox_applied_free`, which
/// also frees `not_applied`.
#[repr(C)]
pub struct conch_sandbox_applied {
    pub landlock_abi: u32,
    pub filesystem: bool,
    pub network: bool,
    pub tcp_ports: bool,
    pub scopes: bool,
    pub limits: bool,
    pub processes: bool,
    pub session_memory: bool,
    pub namespaces: bool,
    pub not_applied: *const c_char,
}

impl Castable for conch_sandbox_applied {
    type Ownership = OwnershipBox;
    type RustType = conch_sandbox_applied;
}

/// The core's answer as C reads it (one allocation, and one string).
fn applied_into_c(applied: &SandboxApplied) -> FfiResult<*mut conch_sandbox_applied> {
    let not_applied =
        opt_c_owned((!applied.not_applied.is_empty()).then(|| applied.not_applied.join("\n")))?;
    Ok(handle::into_raw(conch_sandbox_applied {
        landlock_abi: applied.landlock_abi,
        filesystem: applied.filesystem,
        network: applied.network,
        tcp_ports: applied.tcp_ports,
        scopes: applied.scopes,
        limits: applied.limits,
        processes: applied.processes,
        session_memory: applied.session_memory,
        namespaces: applied.namespaces,
        not_applied: into_raw_or_null(not_applied),
    }))
}

/// What of the shell's sandbox is in force. On `CONCH_OK`, `*out` is the
/// answer (free it with `conch_sandbox_applied_free`). A shell started
/// without a sandbox has none: `CONCH_ERR_NOT_FOUND` (`*out` untouched).
/// Errors: NULL arguments (`CONCH_ERR_INVALID_ARG`).
///
/// # Safety
/// `shell` is a live handle; `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_shell_sandbox_applied(
    shell: *mut conch_shell,
    out: *mut *mut conch_sandbox_applied,
) -> c_int {
    boundary::status("conch_shell_sandbox_applied", || {
        // SAFETY: the caller's guarantees.
        let (shell, out) = unsafe { (handle::to_arc(shell, "shell")?, out_arg(out, "out")?) };
        let applied = shell
            .sandbox_applied()
            .ok_or_else(|| Error::NotFound("this shell has no sandbox".into()))?;
        *out = applied_into_c(&applied)?;
        Ok(())
    })
}

/// Frees what `conch_shell_sandbox_applied` returned, and its string. NULL
/// is a no-op.
///
/// # Safety
/// `applied` is NULL or returned by `conch_shell_sandbox_applied`, not
/// freed before.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn conch_sandbox_applied_free(applied: *mut conch_sandbox_applied) {
    boundary::quiet("conch_sandbox_applied_free", || {
        // SAFETY: `applied` is NULL or came from `applied_into_c`, not freed
        // before (caller's guarantee), and its string from
        // `CString::into_raw`.
        unsafe {
            if let Some(a) = handle::take(applied) {
                free_c_string(a.not_applied);
            }
        }
    })
}
