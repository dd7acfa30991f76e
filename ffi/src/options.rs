//! Option fields shared by the shell and one-shot structs, translated to
//! core values. Zero / NULL always means the core's default; any other value,
//! text or number, is checked by the core's parser of that option, whose
//! error names the field, so C accepts and refuses what every face does.

use std::ffi::c_char;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use conch_core::BadValue;
use conch_core::Mask;
use conch_core::Sandbox;
use conch_core::artifact::ArtifactStore;
use conch_core::input::{
    TimeUnit, count_option, interval_option, max_bytes_option, parse_option, timeout_option,
};
use conch_core::output::DEFAULT_MAX_BYTES;
use conch_core::process::env::{EnvPolicy, Inherit};
use conch_core::shell::Snapshot;

use crate::sandbox::conch_sandbox;

use crate::artifact::conch_artifact_store;
use crate::boundary::{env_list, opt_str_arg, opt_str_list};
use crate::cancel::conch_cancel_token;
use crate::handle;
use crate::status::{FfiError, FfiResult};

/// An optional path argument.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn opt_path(p: *const c_char, name: &str) -> FfiResult<Option<PathBuf>> {
    // SAFETY: forwarded from the caller.
    Ok(unsafe { opt_str_arg(p, name) }?.map(PathBuf::from))
}

/// A core checker's refusal of a value C passed: the caller's misuse, so
/// the message is prefixed with the function's name.
fn refused(error: conch_core::Error) -> FfiError {
    FfiError::arg(error.to_string())
}

/// An integer as the core's checkers take it (`i64`): one past `i64::MAX`
/// is as far out of any range as `i64::MAX`.
fn number(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A `timeout_ms` field: `0` means no timeout; any other value is checked by
/// the core (`UINT64_MAX` is refused, never clamped or overflowed).
pub(crate) fn timeout(ms: u64, name: &str) -> FfiResult<Option<Duration>> {
    if ms == 0 {
        return Ok(None);
    }
    timeout_option(name, ms, TimeUnit::Milliseconds)
        .map(Some)
        .map_err(refused)
}

/// An interval in milliseconds (`update_interval_ms`, a poll's `wait_ms`):
/// `0` means the core's default (`None`); any other value is checked by the
/// core.
pub(crate) fn interval(ms: u64, name: &str) -> FfiResult<Option<Duration>> {
    if ms == 0 {
        return Ok(None);
    }
    interval_option(name, ms, TimeUnit::Milliseconds)
        .map(Some)
        .map_err(refused)
}

/// A line count: `0` means no limit; any other value is checked by the core.
pub(crate) fn line_limit(lines: usize, name: &str) -> FfiResult<Option<usize>> {
    if lines == 0 {
        return Ok(None);
    }
    count_option(name, number(lines as u64))
        .map(Some)
        .map_err(refused)
}

/// `max_bytes`: `0` means the default (51200); any other value is checked
/// by the core.
pub(crate) fn max_bytes(bytes: usize, name: &str) -> FfiResult<usize> {
    if bytes == 0 {
        return Ok(DEFAULT_MAX_BYTES);
    }
    max_bytes_option(name, number(bytes as u64)).map_err(refused)
}

/// A `max_bytes` whose default belongs to someone else (a poll's: the
/// shell's): `0` is `None`; any other value is checked by the core.
pub(crate) fn opt_max_bytes(bytes: usize, name: &str) -> FfiResult<Option<usize>> {
    if bytes == 0 {
        return Ok(None);
    }
    max_bytes_option(name, number(bytes as u64))
        .map(Some)
        .map_err(refused)
}

/// An option given as text, parsed by the core; NULL is the core's default.
/// A value the option does not take is the caller's misuse.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn parsed<T: FromStr<Err = BadValue> + Default>(
    p: *const c_char,
    name: &str,
) -> FfiResult<T> {
    // SAFETY: forwarded from the caller.
    match unsafe { opt_str_arg(p, name) }? {
        None => Ok(T::default()),
        Some(text) => parse_option(name, text).map_err(|e| FfiError::arg(e.to_string())),
    }
}

/// `snapshot`: NULL or `"auto"`, `"none"`, or the path of a snapshot file.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn snapshot(p: *const c_char, name: &str) -> FfiResult<Snapshot> {
    // SAFETY: forwarded from the caller.
    unsafe { parsed(p, name) }
}

/// The `mask` option from the typed `skip_mask` (off) and `mask_names`
/// (the names that look secret, and these); `None` when neither is set.
///
/// # Safety
/// `names` is NULL or a NULL-terminated array of C strings.
pub(crate) unsafe fn mask(skip: bool, names: *const *const c_char) -> FfiResult<Option<Mask>> {
    // SAFETY: forwarded from the caller.
    let names = unsafe { opt_str_list(names, "opts->mask_names") }?;
    match (skip, names) {
        (true, Some(_)) => Err(FfiError::arg(
            "opts->skip_mask and opts->mask_names are both set: masking is either off or \
             wider, not both",
        )),
        (true, None) => Ok(Some(Mask::Off)),
        (false, Some(names)) => Ok(Some(Mask::Also(
            names.into_iter().map(str::to_string).collect(),
        ))),
        (false, None) => Ok(None),
    }
}

/// Which host variables reach the shell: the core's `EnvPolicy`, spelled
/// `env_policy` with `inherit` and `exclude` on every face. Zeroed: every
/// host variable, none excluded.
#[repr(C)]
pub struct conch_env_policy {
    /// NULL or `"all"`, `"core"` (PATH, HOME, … and `LC_*`), `"none"`.
    pub inherit: *const c_char,
    /// Globs (`*`, `?`) of variable names never passed on, e.g. `"*_KEY"`,
    /// `"*TOKEN*"`; ended by a NULL pointer; NULL: none.
    pub exclude: *const *const c_char,
}

/// The core's env policy from a `conch_env_policy`.
///
/// # Safety
/// `policy.inherit` is NULL or a C string; `policy.exclude` is NULL or a
/// NULL-terminated array of C strings.
pub(crate) unsafe fn env_policy(policy: &conch_env_policy, prefix: &str) -> FfiResult<EnvPolicy> {
    // SAFETY: forwarded from the caller.
    let inherit: Inherit =
        unsafe { parsed(policy.inherit, &format!("{prefix}env_policy.inherit")) }?;
    // SAFETY: forwarded from the caller.
    let exclude = unsafe { opt_str_list(policy.exclude, &format!("{prefix}env_policy.exclude")) }?
        .unwrap_or_default()
        .into_iter()
        .map(str::to_string)
        .collect();
    Ok(EnvPolicy { inherit, exclude })
}

/// The artifact store from `artifacts_dir` or `artifact_store` (at most one).
///
/// # Safety
/// `dir` is NULL or a C string; `store` is NULL or a live store.
pub(crate) unsafe fn artifacts(
    dir: *const c_char,
    store: *const conch_artifact_store,
    prefix: &str,
) -> FfiResult<Option<ArtifactStore>> {
    // SAFETY: forwarded from the caller.
    let dir = unsafe { opt_path(dir, &format!("{prefix}artifacts_dir")) }?;
    // SAFETY: forwarded from the caller.
    let store = unsafe { handle::opt_ref(store) };
    match (dir, store) {
        (Some(_), Some(_)) => Err(FfiError::arg(format!(
            "set {prefix}artifacts_dir or {prefix}artifact_store, not both"
        ))),
        (Some(dir), None) => Ok(Some(ArtifactStore::open(dir)?)),
        (None, Some(store)) => Ok(Some(store.clone())),
        (None, None) => Ok(None),
    }
}

/// The core token behind an optional `conch_cancel_token *`.
///
/// # Safety
/// `token` is NULL or a live token.
pub(crate) unsafe fn cancel(token: *const conch_cancel_token) -> Option<conch_core::CancelToken> {
    // SAFETY: forwarded from the caller.
    unsafe { handle::opt_ref(token) }.cloned()
}

/// What a struct's `options_json` sets: the core option type read from it
/// by its serde derive (the serialized form `docs/api/schema.json`
/// describes, snake_case), and the keys it named. C keeps typed fields for
/// what a host sets without a JSON library; `options_json` carries every
/// other option of the core type, so one the core adds reaches C with no
/// change of the header. Each typed field is merged with it by
/// [`Given::pick`]; the fields C has none for come from the JSON whole.
pub(crate) struct FromJson<T> {
    /// The options as read (defaults where the JSON names nothing).
    pub(crate) value: T,
    /// The keys the JSON set, to merge the typed fields with.
    pub(crate) given: Given,
}

/// The keys an `options_json` set, and the name of the field it came in.
pub(crate) struct Given {
    keys: Vec<String>,
    name: String,
}

/// `options_json` (NULL: none) as the core type `T`; `command` is the typed
/// `command` field of a struct that has one (the JSON then must not set it).
///
/// # Safety
/// `text` is NULL or a NUL-terminated string.
pub(crate) unsafe fn from_json<T: serde::de::DeserializeOwned>(
    text: *const c_char,
    name: &str,
    command: Option<&str>,
) -> FfiResult<FromJson<T>> {
    // SAFETY: forwarded from the caller.
    let text = unsafe { opt_str_arg(text, name) }?;
    let mut object = match text.map(serde_json::from_str::<serde_json::Value>) {
        None => serde_json::Map::new(),
        Some(Ok(serde_json::Value::Object(object))) => object,
        Some(Ok(_)) => return Err(FfiError::arg(format!("{name} must be a JSON object"))),
        Some(Err(e)) => return Err(FfiError::arg(format!("{name} is not JSON: {e}"))),
    };
    let keys: Vec<String> = object.keys().cloned().collect();
    let given = Given {
        keys,
        name: name.to_string(),
    };
    if let Some(command) = command {
        given.pick("command", "opts->command", Some(()), ())?;
        object.insert("command".into(), command.into());
    }
    let value = serde_json::from_value(serde_json::Value::Object(object))
        .map_err(|e| FfiError::arg(format!("{name}: {e}")))?;
    Ok(FromJson { value, given })
}

/// [`from_json`] for a struct with a required `command` (a run, a job, a
/// one-shot command), whose `options_json` must not set it.
///
/// # Safety
/// `command` and `json` are NULL or NUL-terminated strings.
pub(crate) unsafe fn with_command<T: serde::de::DeserializeOwned>(
    command: *const c_char,
    json: *const c_char,
) -> FfiResult<FromJson<T>> {
    // SAFETY: forwarded from the caller.
    unsafe {
        let command = crate::boundary::str_arg(command, "opts->command")?;
        from_json(json, "opts->options_json", Some(command))
    }
}

impl Given {
    /// The value of option `key`: the typed field `field`'s when it is set
    /// (`Some`), the JSON's otherwise. Set both ways, it is the caller's
    /// mistake, never a silent choice of one.
    pub(crate) fn pick<V>(
        &self,
        key: &str,
        field: &str,
        typed: Option<V>,
        json: V,
    ) -> FfiResult<V> {
        match typed {
            Some(_) if self.has(key) => Err(FfiError::arg(format!(
                "{} sets \"{key}\", which {field} sets too: set it one way",
                self.name
            ))),
            Some(value) => Ok(value),
            None => Ok(json),
        }
    }

    /// A path option: the typed field (`opts-><key>`, NULL: unset) or the
    /// JSON's.
    ///
    /// # Safety
    /// `p` is NULL or a NUL-terminated string.
    pub(crate) unsafe fn path(
        &self,
        key: &str,
        p: *const c_char,
        json: Option<PathBuf>,
    ) -> FfiResult<Option<PathBuf>> {
        let field = format!("opts->{key}");
        // SAFETY: forwarded from the caller.
        let typed = unsafe { opt_path(p, &field) }?;
        self.pick(key, &field, typed.map(Some), json)
    }

    /// `env`: the typed `"KEY=VALUE"` list (NULL: unset) or the JSON's.
    ///
    /// # Safety
    /// `list` is NULL or a NULL-terminated array of C strings.
    pub(crate) unsafe fn env(
        &self,
        list: *const *const c_char,
        json: Vec<(String, String)>,
    ) -> FfiResult<Vec<(String, String)>> {
        let typed = (!list.is_null())
            // SAFETY: forwarded from the caller.
            .then(|| unsafe { env_list(list, "opts->env") })
            .transpose()?;
        self.pick("env", "opts->env", typed, json)
    }

    /// `mask`: the typed `skip_mask` or `mask_names` (both unset when
    /// false and NULL) or the JSON's.
    ///
    /// # Safety
    /// As for [`mask`].
    pub(crate) unsafe fn mask(
        &self,
        skip: bool,
        names: *const *const c_char,
        json: Mask,
    ) -> FfiResult<Mask> {
        let field = if skip {
            "opts->skip_mask"
        } else {
            "opts->mask_names"
        };
        // SAFETY: forwarded from the caller.
        self.pick("mask", field, unsafe { mask(skip, names) }?, json)
    }

    /// A duration option: the typed `<key>_ms` field (0: unset) or the
    /// JSON's.
    pub(crate) fn millis(
        &self,
        key: &str,
        ms: u64,
        json: Option<Duration>,
    ) -> FfiResult<Option<Duration>> {
        let field = format!("opts->{key}_ms");
        self.pick(key, &field, timeout(ms, &field)?.map(Some), json)
    }

    /// `non_interactive_env`: the typed `skip_non_interactive_env` (false:
    /// unset) or the JSON's.
    pub(crate) fn non_interactive(&self, skip: bool, json: bool) -> FfiResult<bool> {
        self.pick(
            "non_interactive_env",
            "opts->skip_non_interactive_env",
            skip.then_some(false),
            json,
        )
    }

    /// `env_policy`: the typed struct (zeroed: unset) or the JSON's.
    ///
    /// # Safety
    /// As for [`env_policy`].
    pub(crate) unsafe fn env_policy(
        &self,
        policy: &conch_env_policy,
        json: EnvPolicy,
    ) -> FfiResult<EnvPolicy> {
        let typed = (!policy.inherit.is_null() || !policy.exclude.is_null())
            // SAFETY: forwarded from the caller.
            .then(|| unsafe { env_policy(policy, "opts->") })
            .transpose()?;
        self.pick("env_policy", "opts->env_policy", typed, json)
    }

    /// `max_bytes`: the typed field (0: unset) or the JSON's.
    pub(crate) fn max_bytes(&self, bytes: usize, json: usize) -> FfiResult<usize> {
        let typed = (bytes != 0)
            .then(|| max_bytes(bytes, "opts->max_bytes"))
            .transpose()?;
        self.pick("max_bytes", "opts->max_bytes", typed, json)
    }

    /// A line limit (`head`, `tail`): the typed `<key>_lines` field (0:
    /// unset) or the JSON's.
    pub(crate) fn lines(
        &self,
        key: &str,
        lines: usize,
        json: Option<usize>,
    ) -> FfiResult<Option<usize>> {
        let field = format!("opts->{key}_lines");
        self.pick(key, &field, line_limit(lines, &field)?.map(Some), json)
    }

    /// The artifact store: the typed `artifacts_dir` or `artifact_store`
    /// (both NULL: unset), or the JSON's `artifacts_dir`. Neither set is no
    /// artifacts, C's default (the JSON's is the process's store).
    ///
    /// # Safety
    /// As for [`artifacts`].
    pub(crate) unsafe fn artifacts(
        &self,
        dir: *const c_char,
        store: *const conch_artifact_store,
        json: Option<ArtifactStore>,
    ) -> FfiResult<Option<ArtifactStore>> {
        // SAFETY: forwarded from the caller.
        let typed = unsafe { artifacts(dir, store, "opts->") }?;
        let json = json.filter(|_| self.has("artifacts_dir"));
        self.pick(
            "artifacts_dir",
            "opts->artifacts_dir",
            typed.map(Some),
            json,
        )
    }

    /// `sandbox`: the typed pointer (NULL: unset) or the JSON's.
    ///
    /// # Safety
    /// `p` is NULL or points to a valid `conch_sandbox`.
    pub(crate) unsafe fn sandbox(
        &self,
        p: *const conch_sandbox,
        json: Option<Sandbox>,
    ) -> FfiResult<Option<Sandbox>> {
        // SAFETY: forwarded from the caller.
        let typed = unsafe { crate::sandbox::opt_sandbox(p, "opts->sandbox->") }?;
        self.pick("sandbox", "opts->sandbox", typed.map(Some), json)
    }

    /// Whether the JSON set `key`.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }
}
