//! A snapshot of the user's bash setup: the aliases, functions and options
//! their `~/.bashrc` defines, captured once by their real bash and sourced
//! by every session at start.
//!
//! The capture runs in its own session with a timeout, its output never
//! reaches a command, and what it leaves running is killed. Functions are
//! written as plain `declare -f` text (no per-function `eval`), names that
//! would shadow core tools are left out (`alias grep='grep --color'` must
//! not change what the model sees), and `PATH` entries the rc adds are
//! prepended at source time rather than freezing the whole `PATH`.
//! Snapshots are cached per shell path and rc modification time, in memory
//! and as files in the private directory. Any failure means no snapshot.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rustix::process::Signal;

use crate::private_dir::private_dir;
use crate::process::env::changes_bash_start;
use crate::process::spawner::{Launch, dev_null, spawn};
use crate::process::tree;
use crate::protocol::single_quote;
use crate::sync::lock;

/// The longest a user's rc may take to load.
const CAPTURE_TIMEOUT: Duration = Duration::from_secs(2);

/// Names a snapshot never defines, so core tools behave as documented.
const CORE_TOOLS: &str = "ls|dir|vdir|cat|head|tail|less|more|grep|egrep|fgrep|rg|find|fd|locate|sed|awk|perl|cp|mv|rm|mkdir|rmdir|touch|chmod|chown|ln|pwd|readlink|stat|cut|sort|uniq|xargs|tee|tr|basename|dirname|cd|echo|printf|test|true|false|env|kill|wc";

type Key = (PathBuf, PathBuf, Option<SystemTime>);
static CACHE: LazyLock<Mutex<HashMap<Key, Option<PathBuf>>>> = LazyLock::new(Default::default);

/// The snapshot for `shell` and the user's `~/.bashrc`, made if needed.
pub fn for_shell(shell: &Path) -> Option<PathBuf> {
    let rc = PathBuf::from(std::env::var_os("HOME")?).join(".bashrc");
    for_rc(shell, &rc)
}

/// The snapshot of `rc` as loaded by `shell`; `None` when there is no rc or
/// the capture fails.
pub fn for_rc(shell: &Path, rc: &Path) -> Option<PathBuf> {
    let mtime = std::fs::metadata(rc).and_then(|m| m.modified()).ok()?;
    let key = (shell.to_path_buf(), rc.to_path_buf(), Some(mtime));
    if let Some(hit) = lock(&CACHE).get(&key)
        && hit.as_ref().is_none_or(|p| p.exists())
    {
        return hit.clone();
    }
    let made = capture(shell, rc, mtime);
    lock(&CACHE).insert(key, made.clone());
    made
}

fn capture(shell: &Path, rc: &Path, mtime: SystemTime) -> Option<PathBuf> {
    let stamp = mtime
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    let id = fnv1a(format!("{}\0{}\0{stamp}", shell.display(), rc.display()).as_bytes());
    let dir = private_dir().ok()?;
    let path = dir.join(format!("snapshot-{id:016x}.sh"));
    if path.exists() {
        return Some(path);
    }
    let tmp = dir.join(format!("snapshot-{id:016x}.{}.tmp", std::process::id()));
    let script = capture_script(rc.to_str()?, tmp.to_str()?);
    let null = dev_null().ok()?;
    let launch = Launch {
        program: shell.to_path_buf(),
        args: ["--noprofile", "--norc", "-c", &script]
            .map(OsString::from)
            .into(),
        // Neither `ENV` nor what changes how bash starts: the rc alone
        // makes the snapshot.
        env: std::env::vars_os()
            .filter(|(k, _)| {
                !k.to_str()
                    .is_some_and(|k| k == "ENV" || changes_bash_start(k))
            })
            .collect(),
        fds: (0..3).map(|fd| (null.as_raw_fd(), fd)).collect(),
        ..Launch::default()
    };
    let mut child = spawn(launch).ok()?;
    let sid = child.pid();
    let deadline = Instant::now() + CAPTURE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    // Whatever the rc started in the background goes too.
    tree::signal_all(&tree::session_members(sid), Signal::KILL);
    let ok = status.is_some_and(|s| s.success()) && std::fs::rename(&tmp, &path).is_ok();
    let _ = std::fs::remove_file(&tmp);
    ok.then_some(path)
}

/// The bash script that loads `rc` and writes the snapshot to `out`.
fn capture_script(rc: &str, out: &str) -> String {
    format!(
        r#"__conch_path0=$PATH
source {rc} </dev/null >/dev/null 2>&1
umask 077
{{
  echo '# conch rc snapshot'
  echo 'unalias -a 2>/dev/null || true'
  for __f in $(declare -F | cut -d' ' -f3); do
    case $__f in _*|{tools}) continue;; esac
    declare -f -- "$__f"
  done
  shopt -p 2>/dev/null | grep -vE ' (login_shell|restricted_shell|progcomp_alias)$' | head -n 1000
  set -o | awk '$2=="on" && $1 !~ /^(onecmd|monitor|restricted|errexit|nounset|xtrace|verbose|noexec|history|interactive-comments|braceexpand|hashall)$/ {{print "set -o " $1}}' | head -n 1000
  echo 'shopt -s expand_aliases'
  alias | grep -vE '^alias ({tools})=' | sed 's/^alias /alias -- /' | head -n 1000
  __add=
  IFS=: read -ra __dirs <<< "$PATH"
  for __d in "${{__dirs[@]}}"; do
    case ":$__conch_path0:" in *":$__d:"*) ;; *) __add+="$__d:";; esac
  done
  [ -n "$__add" ] && printf 'PATH=%q"$PATH"\n' "$__add"
  true
}} > {out}
"#,
        rc = single_quote(rc),
        out = single_quote(out),
        tools = CORE_TOOLS,
    )
}

/// A stable 64-bit hash for file names (not for security).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    })
}
