//! The session's state as text another bash sources: what a job starts
//! from, and what a session goes on with when a run is moved to the
//! background (its bash becomes the job, a new one takes its place).
//!
//! The session's bash writes its variables (`declare -p`, one per line:
//! bash quotes newlines in values as `$'…\n…'`), a NUL, then its
//! functions, aliases, shell options and umask. The host drops the
//! variables no bash may be given (read-only or dynamic ones bash sets
//! itself, and the protocol's own) and adds what the new bash needs on
//! top.

use std::fmt::Write as _;
use std::path::Path;

use crate::protocol::{ansi_c_quote, quote_path, single_quote};

/// The script the session's bash runs to write its state to `path`.
pub fn dump_script(path: &str) -> String {
    format!(
        "{{ builtin declare -p; builtin printf '\\0'; builtin declare -f; builtin alias -p; \
         builtin shopt -p; builtin set +o; builtin umask -p; }} \
         >{} 2>/dev/null",
        single_quote(path)
    )
}

/// Variables bash keeps itself (read-only, or set afresh by every bash):
/// never carried over.
const BASH_OWN: &[&str] = &[
    "BASH",
    "BASHOPTS",
    "BASHPID",
    "BASH_ALIASES",
    "BASH_ARGC",
    "BASH_ARGV",
    "BASH_ARGV0",
    "BASH_CMDS",
    "BASH_COMMAND",
    "BASH_EXECUTION_STRING",
    "BASH_LINENO",
    "BASH_SOURCE",
    "BASH_SUBSHELL",
    "BASH_VERSINFO",
    "BASH_VERSION",
    "DIRSTACK",
    "EPOCHREALTIME",
    "EPOCHSECONDS",
    "EUID",
    "FUNCNAME",
    "GROUPS",
    "HISTCMD",
    "LINENO",
    "PIPESTATUS",
    "PPID",
    "PWD",
    "RANDOM",
    "SECONDS",
    "SHELLOPTS",
    "SHLVL",
    "SRANDOM",
    "UID",
    "_",
];

/// What goes on top of the session's state.
#[derive(Default)]
pub struct StateAdditions<'a> {
    /// Where to go (a job's own cwd; already validated).
    pub cwd: Option<&'a Path>,
    /// Variables to export.
    pub env: &'a [(String, String)],
    /// A job's command, left in `$__conch_c`. `set -x` and `set -v` are
    /// then held back in `$__conch_on` for the job's root to run just
    /// before the command, so that the root's own steps are neither traced
    /// nor echoed into the job's output.
    pub command: Option<&'a str>,
}

/// The text to source: the dump `dump` (as [`dump_script`] wrote it) with
/// the variables filtered, then `extra`.
pub fn restore_text(dump: &[u8], extra: &StateAdditions<'_>) -> String {
    let dump = String::from_utf8_lossy(dump);
    let (vars, rest) = dump.split_once('\0').unwrap_or((&dump, ""));
    let mut text = String::with_capacity(dump.len() + 256);
    for line in vars.lines() {
        if carried(line) {
            text.push_str(line);
            text.push('\n');
        }
    }
    let mut on = String::new();
    for line in rest.split_inclusive('\n') {
        let held = match line.trim_end_matches('\n') {
            "set -o xtrace" => "set -x\n",
            "set -o verbose" => "set -v\n",
            _ => "",
        };
        if extra.command.is_some() && !held.is_empty() {
            on.push_str(held);
        } else {
            text.push_str(line);
        }
    }
    if let Some(dir) = extra.cwd {
        let _ = writeln!(text, "builtin cd -- {}", quote_path(dir));
    }
    for (name, value) in extra.env {
        let _ = writeln!(text, "builtin export {name}={}", single_quote(value));
    }
    if let Some(command) = extra.command {
        let _ = writeln!(
            text,
            "__conch_c={} __conch_on={}",
            ansi_c_quote(command),
            ansi_c_quote(&on)
        );
    }
    text
}

/// Whether a `declare -p` line is for a variable a new bash may be given.
fn carried(line: &str) -> bool {
    // `declare -FLAGS NAME=…` or `declare -FLAGS NAME` (set, no value).
    let Some(rest) = line.strip_prefix("declare -") else {
        return false;
    };
    let Some((_, decl)) = rest.split_once(' ') else {
        return false;
    };
    let name = decl.split(['=', ' ']).next().unwrap_or_default();
    !name.starts_with("__conch") && !BASH_OWN.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bash's state, dumped, filtered and sourced by a fresh bash with
    /// an empty environment, comes back whole.
    #[test]
    fn state_round_trips_through_a_fresh_bash() {
        let dir = std::env::temp_dir().join(format!("conch-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dump = dir.join("dump");
        let setup = format!(
            "f() {{ echo \"f $1\"; }}; alias ll='echo aliased'; declare -a arr=(1 $'2\\n3'); \
             x=$'multi\\nline'; declare -r ro=5; declare -A as=([k]=v); declare -ix n=7; \
             shopt -s extglob; set -o pipefail; umask 027; {}",
            dump_script(dump.to_str().unwrap())
        );
        let status = std::process::Command::new("bash")
            .args(["--noprofile", "--norc", "-c", &setup])
            .status()
            .unwrap();
        assert!(status.success());
        let text = restore_text(
            &std::fs::read(&dump).unwrap(),
            &StateAdditions {
                env: &[("JOB".into(), "it's".into())],
                command: Some("f ok"),
                ..StateAdditions::default()
            },
        );
        let file = dir.join("restore");
        std::fs::write(&file, text).unwrap();
        let check = "builtin source \"$1\" >/dev/null 2>&1 || echo FAILED; \
             declare -p arr x ro as n; f ok; shopt -s expand_aliases; eval ll; shopt -q extglob && echo extglob; \
             [[ -o pipefail ]] && echo pipefail; umask; echo \"$JOB|$__conch_c|$(printenv n)\"";
        let out = std::process::Command::new("bash")
            .args(["--noprofile", "--norc", "-c", check, "bash"])
            .arg(&file)
            .env_clear()
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "declare -a arr=([0]=\"1\" [1]=$'2\\n3')\ndeclare -- x=$'multi\\nline'\n\
             declare -r ro=\"5\"\ndeclare -A as=([k]=\"v\" )\ndeclare -ix n=\"7\"\nf ok\naliased\n\
             extglob\npipefail\n0027\nit's|f ok|7\n"
        );
    }

    /// `set -x` and `set -v` on in the session are held back for a job's
    /// command (its root's own steps are not traced) and kept as they are
    /// for a session's next bash.
    #[test]
    fn xtrace_and_verbose_are_held_back_for_a_job_only() {
        let dump = b"declare -- x=\"1\"\0set -o errexit\nset -o verbose\nset -o xtrace\nf () \n{ \n    :\n}\n";
        let job = restore_text(
            dump,
            &StateAdditions {
                command: Some("true"),
                ..StateAdditions::default()
            },
        );
        assert!(
            !job.contains("set -o xtrace") && !job.contains("set -o verbose"),
            "{job}"
        );
        assert!(
            job.contains("set -o errexit\nf () \n{ \n    :\n}\n"),
            "{job}"
        );
        assert!(
            job.ends_with("__conch_c=$'true' __conch_on=$'set -v\\nset -x\\n'\n"),
            "{job}"
        );
        let session = restore_text(dump, &StateAdditions::default());
        assert!(
            session.contains("set -o verbose\nset -o xtrace\n") && !session.contains("__conch_on"),
            "{session}"
        );
    }

    #[test]
    fn bash_own_and_protocol_variables_are_dropped() {
        assert!(carried("declare -- x=\"1\""));
        assert!(carried("declare -x PATH=\"/bin\""));
        assert!(carried("declare -- unset_but_declared"));
        assert!(!carried("declare -r BASHOPTS=\"x\""));
        assert!(!carried("declare -ir PPID=\"1\""));
        assert!(!carried("declare -- __conch_h=\"00000001\""));
        assert!(!carried("declare -x PWD=\"/\""));
        assert!(!carried("  body of something"));
    }
}
