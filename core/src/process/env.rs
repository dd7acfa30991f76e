//! The environment a command runs with.
//!
//! Agents run commands unattended: a pager, an editor or a credential prompt
//! would wait forever on a `/dev/null` stdin. [`NON_INTERACTIVE_ENV`] turns
//! those off (it overrides the host's values; the caller's session and run
//! env override it). [`EnvPolicy`] lets a host keep secrets out of the shell:
//! which host variables are inherited at all, and glob patterns of names that
//! are dropped — also after the user's rc snapshot, so nothing re-exports them.

use std::ffi::OsString;

/// Defaults that keep tools from waiting for a human: pagers and editors
/// that return at once, prompts and colours off, package managers quiet,
/// output unbuffered.
pub const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    // pagers
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("BAT_PAGER", "cat"),
    ("DELTA_PAGER", "cat"),
    ("GH_PAGER", "cat"),
    ("GLAB_PAGER", "cat"),
    ("PSQL_PAGER", "cat"),
    ("MYSQL_PAGER", "cat"),
    ("AWS_PAGER", ""),
    ("HOMEBREW_PAGER", "cat"),
    ("LESS", "FRX"),
    // editors and prompts
    ("GIT_EDITOR", "true"),
    ("VISUAL", "true"),
    ("EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("SSH_ASKPASS", "/usr/bin/false"),
    ("GPG_TTY", "not a tty"),
    ("CI", "1"),
    // package managers
    ("npm_config_yes", "true"),
    ("npm_config_update_notifier", "false"),
    ("npm_config_fund", "false"),
    ("npm_config_audit", "false"),
    ("npm_config_progress", "false"),
    ("PNPM_DISABLE_SELF_UPDATE_CHECK", "true"),
    ("PNPM_UPDATE_NOTIFIER", "false"),
    ("YARN_ENABLE_TELEMETRY", "0"),
    ("YARN_ENABLE_PROGRESS_BARS", "0"),
    // other tooling
    ("CARGO_TERM_PROGRESS_WHEN", "never"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("PIP_NO_INPUT", "1"),
    ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    ("TF_INPUT", "0"),
    ("TF_IN_AUTOMATION", "1"),
    ("GH_PROMPT_DISABLED", "1"),
    ("COMPOSER_NO_INTERACTION", "1"),
    ("CLOUDSDK_CORE_DISABLE_PROMPTS", "1"),
    ("PYTHONUNBUFFERED", "1"),
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
];

/// Host variables a fresh shell needs to behave like the user's shell;
/// what `Inherit::Core` keeps.
const CORE_VARS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "TERM",
    "COLORTERM",
    "HOSTNAME",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
];

/// Variables that change how bash starts: `BASH_ENV` names a file every
/// non-interactive bash sources, `SHELLOPTS` and `BASHOPTS` turn options
/// on (`xtrace`, `noexec`, …) before conch's start-up text runs, so that
/// it is traced into a command's output or never runs. They reach no
/// bash's start-up, whoever gives them: [`build_env`] drops them from
/// every layer, and the rc snapshot's capture runs without the host's.
pub(crate) fn changes_bash_start(name: &str) -> bool {
    matches!(name, "BASH_ENV" | "SHELLOPTS" | "BASHOPTS")
}

/// Variables bash owns or that would change how bash starts; never imported
/// from the host (a leaked `BASH_ENV` would run a script in every shell).
fn bash_internal(name: &str) -> bool {
    changes_bash_start(name)
        || matches!(
            name,
            "ENV"
                | "PS0"
                | "PS1"
                | "PS2"
                | "PS4"
                | "PWD"
                | "OLDPWD"
                | "SHLVL"
                | "HISTFILE"
                | "PROMPT_COMMAND"
                | "CDPATH"
                | "GLOBIGNORE"
                | "IFS"
                | "BASH_XTRACEFD"
        )
        || name.starts_with("BASH_FUNC_")
}

/// Which host variables a shell inherits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Inherit {
    /// Every host variable (minus exclusions and bash internals).
    All,
    /// Only [`CORE_VARS`] and `LC_*`.
    Core,
    /// Nothing from the host.
    None,
}

impl Default for Inherit {
    fn default() -> Self {
        crate::defaults::ENV_INHERIT
            .parse()
            .expect("the default env inheritance parses")
    }
}

/// `"all"`, `"core"` or `"none"`.
impl std::str::FromStr for Inherit {
    type Err = crate::error::BadValue;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "all" => Ok(Inherit::All),
            "core" => Ok(Inherit::Core),
            "none" => Ok(Inherit::None),
            other => Err(crate::error::BadValue::new(
                r#""all", "core" or "none""#,
                format_args!("{other:?}"),
            )),
        }
    }
}

/// What a host lets through to the shell.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(
    default,
    deny_unknown_fields,
    expecting = "an object with `inherit` and `exclude`"
)]
pub struct EnvPolicy {
    /// Which host variables reach the shell.
    #[serde(deserialize_with = "crate::wire::read::inherit")]
    pub inherit: Inherit,
    /// Glob patterns (`*` and `?`) of names to drop, e.g. `*_KEY`, `*SECRET*`.
    pub exclude: Vec<String>,
}

impl EnvPolicy {
    /// Whether `name` is excluded by a glob.
    pub fn excludes(&self, name: &str) -> bool {
        self.exclude.iter().any(|g| glob_match(g, name))
    }

    fn inherits(&self, name: &str) -> bool {
        if bash_internal(name) || self.excludes(name) {
            return false;
        }
        match self.inherit {
            Inherit::All => true,
            Inherit::Core => CORE_VARS.contains(&name) || name.starts_with("LC_"),
            Inherit::None => false,
        }
    }

    /// Bash text that unsets every exported variable matching an exclusion
    /// glob; run after the snapshot is sourced. Empty when nothing is excluded.
    pub fn bash_unset_script(&self) -> String {
        if self.exclude.is_empty() {
            return String::new();
        }
        let pats: Vec<String> = self.exclude.iter().map(|g| bash_glob(g)).collect();
        format!(
            "for __conch_v in $(compgen -v); do case $__conch_v in {}) unset \"$__conch_v\";; esac; done; unset __conch_v",
            pats.join("|")
        )
    }
}

/// A process environment, as `execve` takes it: a host's variable may hold
/// any bytes but NUL.
pub type Env = Vec<(OsString, OsString)>;

/// Builds a process environment: the host's variables the policy lets
/// through, then the non-interactive defaults (when `non_interactive`), then
/// `overrides` in order (later wins). Names the policy excludes are dropped
/// from every layer, so a secret cannot come back through the session env,
/// and so are the variables that change how bash starts
/// ([`changes_bash_start`]): the environment is a bash's at its start.
/// A host's value that is not UTF-8 goes through as it is, as the host's
/// own children get it; a name that is not cannot be a shell variable's and
/// is left out.
pub fn build_env(policy: &EnvPolicy, non_interactive: bool, overrides: &[(String, String)]) -> Env {
    let mut env: Env = std::env::vars_os()
        .filter(|(k, _)| k.to_str().is_some_and(|k| policy.inherits(k)))
        .collect();
    let set = |env: &mut Env, k: &str, v: &str| {
        if policy.excludes(k) || changes_bash_start(k) {
            return;
        }
        match env.iter_mut().find(|(name, _)| name == k) {
            Some(slot) => slot.1 = v.into(),
            None => env.push((k.into(), v.into())),
        }
    };
    if non_interactive {
        for (k, v) in NON_INTERACTIVE_ENV {
            set(&mut env, k, v);
        }
    }
    for (k, v) in overrides {
        set(&mut env, k, v);
    }
    env
}

/// Refuses a command bash cannot be given (a NUL byte) and variables it
/// cannot hold, before anything waits or runs.
pub(crate) fn check_command(command: &str, env: &[(String, String)]) -> crate::Result<()> {
    if command.contains('\0') {
        return Err(crate::Error::InvalidArgument(
            "command contains a NUL byte".into(),
        ));
    }
    env.iter().try_for_each(|(k, v)| validate_var(k, v))
}

/// Checks that a variable name is a valid shell identifier and a value has
/// no NUL byte (neither can be passed to a process otherwise).
pub fn validate_var(name: &str, value: &str) -> crate::Result<()> {
    let mut chars = name.chars();
    let ok_start = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    if !ok_start || !chars.all(|c| c == '_' || c.is_ascii_alphanumeric()) {
        return Err(crate::Error::InvalidArgument(format!(
            "invalid environment variable name: {name:?}"
        )));
    }
    if value.contains('\0') {
        return Err(crate::Error::InvalidArgument(format!(
            "environment variable {name} contains a NUL byte"
        )));
    }
    Ok(())
}

/// `*` matches any run, `?` one character; everything else literally.
fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// The same glob as a bash `case` pattern: `*` and `?` stay, the rest is quoted.
fn bash_glob(glob: &str) -> String {
    glob.chars()
        .map(|c| match c {
            '*' | '?' => c.to_string(),
            c if c.is_ascii_alphanumeric() || c == '_' => c.to_string(),
            c => format!("\\{c}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("*_KEY", "OPENAI_API_KEY"));
        assert!(glob_match("*SECRET*", "MY_SECRET_THING"));
        assert!(glob_match("A?C", "ABC"));
        assert!(!glob_match("*_KEY", "KEYS"));
        assert!(!glob_match("A?C", "AC"));
        assert!(glob_match("*", ""));
    }

    #[test]
    fn layers_and_exclusions() {
        let policy = EnvPolicy {
            inherit: Inherit::None,
            exclude: vec!["*TOKEN*".into()],
        };
        let env = build_env(
            &policy,
            true,
            &[
                ("PAGER".into(), "less".into()),
                ("GH_TOKEN".into(), "x".into()),
            ],
        );
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.to_str())
        };
        assert_eq!(get("PAGER"), Some("less"), "caller value wins");
        assert_eq!(get("GIT_EDITOR"), Some("true"));
        assert_eq!(get("GH_TOKEN"), None, "excluded everywhere");
        assert_eq!(get("HOME"), None, "nothing inherited");
    }

    #[test]
    fn core_inherit_keeps_path_only_core() {
        let policy = EnvPolicy {
            inherit: Inherit::Core,
            exclude: vec![],
        };
        let env = build_env(&policy, false, &[]);
        assert!(env.iter().any(|(k, _)| k == "PATH"));
        assert!(
            env.iter()
                .filter_map(|(k, _)| k.to_str())
                .all(|k| CORE_VARS.contains(&k) || k.starts_with("LC_"))
        );
    }

    #[test]
    fn names_are_validated() {
        assert!(validate_var("A_1", "x").is_ok());
        assert!(validate_var("1A", "x").is_err());
        assert!(validate_var("A-B", "x").is_err());
        assert!(validate_var("A", "a\0b").is_err());
    }
}
