//! `sandbox`: the sandbox a Node host puts around a session, as the core's
//! [`Sandbox`]. An object of the policy's fields (camelCase, like every
//! Node option), `true` or `{}` for the strict default, `false`, `null` or
//! absent for none. Every value is checked by the core's parser of that
//! option under its Node name (`sandbox.limits.cpuSeconds`); a key the
//! policy does not have is an error, never ignored (a misspelt limit must
//! not vanish).

use conch_core::input::parse_option;
use conch_core::input::{limit_option, port_option};
use conch_core::{Limits, Network, Sandbox};
use napi::ValueType;
use napi::bindgen_prelude::{
    Either, FromNapiValue, JsObjectValue, Null, Object, TypeName, Unknown, sys,
};
use napi_derive::napi;

use crate::errors::{JsResult, core_error, from_napi, invalid};

/// What a sandboxed session may do. Every field is optional; another key
/// is an `InvalidArgument` error.
#[napi(object, object_to_js = false)]
pub struct SandboxOptions {
    /// Paths the session may write besides its cwd and its private temp
    /// directory (`TMPDIR`); a directory covers everything below it.
    pub writable: Option<Vec<String>>,
    /// Paths the session may read; absent or `null`: every path.
    #[napi(ts_type = "Array<string> | null")]
    pub readable: Option<Either<Vec<String>, Null>>,
    /// `'deny'` (default: no socket but `AF_UNIX`) or `'allow'`.
    #[napi(ts_type = "'allow' | 'deny'")]
    pub network: Option<String>,
    /// TCP ports the session may connect to while the network is denied.
    pub allow_tcp_ports: Option<Vec<f64>>,
    pub limits: Option<SandboxLimits>,
    /// Apply what the kernel supports and go on without the rest, instead
    /// of failing with `SandboxUnavailable`.
    pub best_effort: Option<bool>,
}

/// Resource limits of a sandboxed session, each a whole number >= 1;
/// absent: no limit.
#[napi(object, object_to_js = false)]
pub struct SandboxLimits {
    /// CPU seconds of each process a command starts.
    pub cpu_seconds: Option<f64>,
    /// Address space of each process, in bytes.
    pub memory_bytes: Option<f64>,
    /// Largest file a process may write, in bytes.
    pub file_size_bytes: Option<f64>,
    /// Descriptors each process may hold open.
    pub open_files: Option<f64>,
    /// Processes the whole session may have at once.
    pub processes: Option<f64>,
    /// Memory the whole session may use at once, in bytes.
    pub session_memory_bytes: Option<f64>,
}

const SANDBOX_KEYS: &[&str] = &[
    "writable",
    "readable",
    "network",
    "allowTcpPorts",
    "limits",
    "bestEffort",
];
const LIMIT_KEYS: &[&str] = &[
    "cpuSeconds",
    "memoryBytes",
    "fileSizeBytes",
    "openFiles",
    "processes",
    "sessionMemoryBytes",
];

/// The `sandbox` option as received: its translation, whose error the
/// call reports as any other option's (conversion itself never fails, so
/// the error keeps its `InvalidArgument` code).
pub struct SandboxArg(JsResult<Option<Sandbox>>);

impl SandboxArg {
    /// The core policy, or the option's error.
    pub fn policy(arg: Option<SandboxArg>) -> JsResult<Option<Sandbox>> {
        arg.map_or(Ok(None), |arg| arg.0)
    }
}

impl TypeName for SandboxArg {
    fn type_name() -> &'static str {
        "SandboxOptions | boolean"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl FromNapiValue for SandboxArg {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Self> {
        // SAFETY: forwarded from napi, which hands us a live value of `env`.
        Ok(SandboxArg(unsafe { translate(env, value) }))
    }
}

/// # Safety
/// `value` is a live value of `env`.
unsafe fn translate(env: sys::napi_env, value: sys::napi_value) -> JsResult<Option<Sandbox>> {
    // SAFETY: the caller's guarantee.
    let unknown = unsafe { Unknown::from_napi_value(env, value) }.map_err(from_napi)?;
    match unknown.get_type().map_err(from_napi)? {
        ValueType::Undefined | ValueType::Null => Ok(None),
        ValueType::Boolean => {
            // SAFETY: checked to be a boolean just above.
            let on = unsafe { bool::from_napi_value(env, value) }.map_err(from_napi)?;
            Ok(on.then(Sandbox::default))
        }
        ValueType::Object => {
            // SAFETY: checked to be an object just above.
            let object: Object = unsafe { unknown.cast() }.map_err(from_napi)?;
            known_keys(&object, "sandbox", SANDBOX_KEYS)?;
            let limits: Unknown = object.get_named_property("limits").map_err(from_napi)?;
            if limits.get_type().map_err(from_napi)? == ValueType::Object {
                // SAFETY: checked to be an object just above.
                let limits: Object = unsafe { limits.cast() }.map_err(from_napi)?;
                known_keys(&limits, "sandbox.limits", LIMIT_KEYS)?;
            }
            // SAFETY: the caller's guarantee.
            let options = unsafe { SandboxOptions::from_napi_value(env, value) }
                .map_err(|e| invalid(format!("sandbox: {}", e.reason)))?;
            policy(options).map(Some)
        }
        _ => Err(invalid(
            "sandbox must be an object, true, false or null".to_owned(),
        )),
    }
}

/// Refuses a key of `object` that is not in `keys`, by its name.
fn known_keys(object: &Object, name: &str, keys: &[&str]) -> JsResult<()> {
    let names = object.get_property_names().map_err(from_napi)?;
    for i in 0..names.get_array_length().map_err(from_napi)? {
        let key: String = names.get_element(i).map_err(from_napi)?;
        if !keys.contains(&key.as_str()) {
            return Err(invalid(format!("{name}.{key} is not a sandbox option")));
        }
    }
    Ok(())
}

fn policy(o: SandboxOptions) -> JsResult<Sandbox> {
    let network = match o.network {
        Some(text) => parse_option::<Network>("sandbox.network", &text).map_err(core_error)?,
        None => Network::default(),
    };
    let allow_tcp_ports = o
        .allow_tcp_ports
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, port)| port_option(&format!("sandbox.allowTcpPorts[{i}]"), port))
        .collect::<Result<_, _>>()
        .map_err(core_error)?;
    let limits = match o.limits {
        Some(l) => {
            let limit = |value: Option<f64>, name: &str| {
                value
                    .map(|n| limit_option(&format!("sandbox.limits.{name}"), n))
                    .transpose()
                    .map_err(core_error)
            };
            Limits {
                cpu_seconds: limit(l.cpu_seconds, "cpuSeconds")?,
                memory_bytes: limit(l.memory_bytes, "memoryBytes")?,
                file_size_bytes: limit(l.file_size_bytes, "fileSizeBytes")?,
                open_files: limit(l.open_files, "openFiles")?,
                processes: limit(l.processes, "processes")?,
                session_memory_bytes: limit(l.session_memory_bytes, "sessionMemoryBytes")?,
            }
        }
        None => Limits::default(),
    };
    Ok(Sandbox {
        writable: o
            .writable
            .unwrap_or_default()
            .into_iter()
            .map(Into::into)
            .collect(),
        readable: match o.readable {
            Some(Either::A(paths)) => Some(paths.into_iter().map(Into::into).collect()),
            Some(Either::B(Null)) | None => None,
        },
        network,
        allow_tcp_ports,
        limits,
        best_effort: o.best_effort.unwrap_or(false),
    })
}

/// What of a session's sandbox is in force, as `shell.sandboxApplied`
/// gives it (the same fields in every face). Everything asked applies
/// unless the policy was `bestEffort`.
#[napi(object, object_from_js = false)]
#[derive(Clone)]
pub struct SandboxApplied {
    /// The kernel's Landlock ABI (0: none).
    pub landlock_abi: u32,
    /// The filesystem rules (Landlock).
    pub filesystem: bool,
    /// The socket filter of `network: 'deny'` (seccomp); `false` with
    /// `'allow'`.
    pub network: bool,
    /// The allowed TCP ports (Landlock ABI 4); `false` when none are asked.
    pub tcp_ports: bool,
    /// No signal to, nor abstract UNIX socket of, a process outside the
    /// sandbox (Landlock ABI 6): applied when the kernel has it.
    pub scopes: bool,
    /// The per-process limits (always applied).
    pub limits: bool,
    /// `limits.processes` (a cgroup); `false` when not asked.
    pub processes: bool,
    /// `limits.sessionMemoryBytes` (a cgroup); `false` when not asked.
    pub session_memory: bool,
    /// What was asked and did not apply, each with why.
    pub not_applied: Vec<String>,
}

impl From<&conch_core::process::sandbox::SandboxApplied> for SandboxApplied {
    fn from(a: &conch_core::process::sandbox::SandboxApplied) -> Self {
        SandboxApplied {
            landlock_abi: a.landlock_abi,
            filesystem: a.filesystem,
            network: a.network,
            tcp_ports: a.tcp_ports,
            scopes: a.scopes,
            limits: a.limits,
            processes: a.processes,
            session_memory: a.session_memory,
            not_applied: a.not_applied.clone(),
        }
    }
}
