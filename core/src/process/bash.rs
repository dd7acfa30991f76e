//! Which bash conch runs. Its session protocol needs bash 4 or newer
//! (`declare -A`, `$BASHPID`, …), and macOS ships bash 3.2 as `/bin/bash`,
//! so the bash is, in order (see `docs/behaviour.md`, "Which bash"):
//!
//! 1. the `shell` option, when given;
//! 2. `CONCH_BASH`, when set and not empty;
//! 3. the first `bash` on `PATH` that is 4 or newer;
//! 4. the first of `/opt/homebrew/bin/bash`, `/usr/local/bin/bash`
//!    (Homebrew on Apple silicon and on Intel) and `/bin/bash` that is 4 or
//!    newer.
//!
//! The first two are checked, never replaced: one that is not executable,
//! or is a bash older than 4, is an error. One that reports no bash version
//! at all (not a bash) is used as given, and a run says if it cannot run a
//! session. When nothing 4 or newer is found, the error names what was
//! found and how to get a newer one.
//!
//! A version is learnt by running the bash (a few milliseconds) and kept
//! for the life of the process, per file (its canonical path, length and
//! modification time): each bash is run once per process, and one that is
//! replaced (an upgrade) is run again.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, SystemTime};

use super::spawner::is_executable;
use crate::error::{Error, Result};
use crate::sync::lock;

/// The oldest bash major version that runs conch's protocol.
const OLDEST: u32 = 4;

/// The variable that names the bash, unless the `shell` option does.
const CONCH_BASH: &str = "CONCH_BASH";

/// Where a bash is looked for after `PATH`: Homebrew's (Apple silicon,
/// Intel), then the system's.
const FIXED: [&str; 3] = ["/opt/homebrew/bin/bash", "/usr/local/bin/bash", "/bin/bash"];

/// What the probe runs: prints the version as `<major>.<minor>.<patch>`.
const PROBE: &str = r#"printf %s "${BASH_VERSINFO[0]}.${BASH_VERSINFO[1]}.${BASH_VERSINFO[2]}""#;

/// How to get a bash that will do, when none was found.
const HINT: &str = "install one (macOS: brew install bash) and put it on PATH, or set CONCH_BASH or the shell option to its path";

/// The bash conch runs: given explicitly, or found.
pub(crate) fn find_bash(explicit: Option<&Path>) -> Result<PathBuf> {
    let fixed: Vec<&Path> = FIXED.iter().map(Path::new).collect();
    find_in(
        explicit,
        std::env::var_os(CONCH_BASH),
        std::env::var_os("PATH"),
        &fixed,
    )
}

/// [`find_bash`] with the environment given: `conch_bash` and `path` are
/// the values of `CONCH_BASH` and `PATH`, `fixed` the places looked at
/// after `PATH`.
fn find_in(
    explicit: Option<&Path>,
    conch_bash: Option<OsString>,
    path: Option<OsString>,
    fixed: &[&Path],
) -> Result<PathBuf> {
    let path = path.as_deref();
    if let Some(shell) = explicit {
        return given(shell, Given::ShellOption, path);
    }
    if let Some(bash) = conch_bash.filter(|v| !v.is_empty()) {
        return given(Path::new(&bash), Given::EnvVar, path);
    }
    // Each file once, however many names it has (`/bin` and `/usr/bin` are
    // often one directory).
    let mut seen = Vec::new();
    let mut found = Vec::new();
    let candidates = dirs(path)
        .map(|dir| dir.join("bash"))
        .chain(fixed.iter().map(|p| p.to_path_buf()));
    for candidate in candidates {
        let Some(key) = key(&candidate) else {
            continue;
        };
        if seen.contains(&key.0) {
            continue;
        }
        seen.push(key.0.clone());
        match version(&candidate, key, path) {
            Some(v) if v.major >= OLDEST => return Ok(candidate),
            Some(v) => found.push(format!("bash {v} at {}", candidate.display())),
            None => found.push(format!(
                "{}, which reports no bash version",
                candidate.display()
            )),
        }
    }
    let found = if found.is_empty() {
        let mut none = "no bash on PATH".to_string();
        if !fixed.is_empty() {
            let places: Vec<_> = fixed.iter().map(|p| p.display().to_string()).collect();
            none = format!("{none}, nor at {}", places.join(", "));
        }
        none
    } else {
        format!("found {}", found.join(", "))
    };
    Err(Error::Spawn(format!(
        "bash {OLDEST} or newer is needed ({found}): {HINT}"
    )))
}

/// Where a bash was named, for the error texts.
#[derive(Clone, Copy)]
enum Given {
    /// The `shell` option.
    ShellOption,
    /// `CONCH_BASH`.
    EnvVar,
}

/// The bash named by the user, checked: a path (a relative one is the
/// host's), or a name looked up on `path`.
fn given(shell: &Path, by: Given, path: Option<&OsStr>) -> Result<PathBuf> {
    let resolved = if shell.as_os_str().as_encoded_bytes().contains(&b'/') {
        Some(std::path::absolute(shell).unwrap_or_else(|_| shell.to_path_buf()))
    } else {
        dirs(path)
            .map(|dir| dir.join(shell))
            .find(|p| is_executable(p))
    };
    let bash = match (resolved, by) {
        (Some(bash), _) if is_executable(&bash) => bash,
        (None, Given::ShellOption) => {
            return Err(Error::Spawn(format!(
                "{} not found on PATH",
                shell.display()
            )));
        }
        (Some(bash), Given::ShellOption) => {
            return Err(Error::Spawn(format!(
                "Shell not found or not executable: {}",
                bash.display()
            )));
        }
        (_, Given::EnvVar) => {
            return Err(Error::Spawn(format!(
                "CONCH_BASH is set to {}, which is not an executable file",
                shell.display()
            )));
        }
    };
    let version = key(&bash).and_then(|key| version(&bash, key, path));
    match version {
        Some(v) if v.major < OLDEST => {
            let (name, fix) = match by {
                Given::ShellOption => ("the shell option", "set the shell option to its path"),
                Given::EnvVar => ("CONCH_BASH", "set CONCH_BASH to its path"),
            };
            Err(Error::Spawn(format!(
                "bash {OLDEST} or newer is needed ({name} names bash {v} at {}): install one (macOS: brew install bash) and {fix}",
                bash.display()
            )))
        }
        _ => Ok(bash),
    }
}

/// The absolute directories of `PATH` (an empty or relative entry, the
/// current directory, is not where conch looks for its bash).
fn dirs(path: Option<&OsStr>) -> impl Iterator<Item = PathBuf> + '_ {
    path.into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
}

/// The version `bash` reports (`5.2.15`), probed once per file; `None`
/// when it reports none or cannot run.
pub(crate) fn version_of(bash: &Path) -> Option<String> {
    let path = std::env::var_os("PATH");
    version(bash, key(bash)?, path.as_deref()).map(|v| v.text)
}

/// A bash's version, as it reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    major: u32,
    /// `<major>.<minor>.<patch>`.
    text: String,
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A file, as the cache knows it: its canonical path, length and
/// modification time.
type Key = (PathBuf, u64, Option<SystemTime>);

/// What each file probed reported (`None`: no bash version); a slot of its
/// own per file, so a file is probed once even by callers at the same time,
/// and callers for other files do not wait.
type Slot = Arc<Mutex<Option<Option<Version>>>>;

static VERSIONS: LazyLock<Mutex<HashMap<Key, Slot>>> = LazyLock::new(Default::default);

/// The cache key of an executable file; `None` for anything else.
fn key(path: &Path) -> Option<Key> {
    if !is_executable(path) {
        return None;
    }
    let canonical = path.canonicalize().ok()?;
    let meta = canonical.metadata().ok()?;
    Some((canonical, meta.len(), meta.modified().ok()))
}

/// The version of `bash` (the file `key`), probed on the first call for the
/// file; `None` when it reports none. A probe that cannot run is not kept.
fn version(bash: &Path, key: Key, path: Option<&OsStr>) -> Option<Version> {
    let slot = lock(&VERSIONS).entry(key).or_default().clone();
    let mut slot = lock(&slot);
    if let Some(known) = &*slot {
        return known.clone();
    }
    let probed = probe(bash, path).ok()?;
    *slot = Some(probed.clone());
    probed
}

/// Runs `bash` to print its version, with nothing of the host's
/// environment but `path` as `PATH`.
fn probe(bash: &Path, path: Option<&OsStr>) -> io::Result<Option<Version>> {
    let mut cmd = Command::new(bash);
    cmd.args(["--noprofile", "--norc", "-c", PROBE])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let mut child = spawn(&mut cmd)?;
    let mut out = Vec::new();
    // A version is short: more is not a bash's answer, and the pipe closed
    // on the rest ends a program that goes on writing.
    let read = child
        .stdout
        .take()
        .map_or(Ok(0), |stdout| stdout.take(64).read_to_end(&mut out));
    // The status does not matter, and cannot be had in a host that ignores
    // SIGCHLD (the child is reaped at once): only the output does.
    let _ = child.wait();
    read?;
    Ok(parse(&out))
}

/// Starts `cmd`, again a few times while the file is busy: a file just
/// written cannot be run while a child forked meanwhile by another thread
/// still holds it open for writing (`ETXTBSY`), which passes at its `exec`.
fn spawn(cmd: &mut Command) -> io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            started => return started,
        }
    }
}

/// A version as the probe prints it: three dot-separated numbers.
fn parse(out: &[u8]) -> Option<Version> {
    let text = std::str::from_utf8(out).ok()?;
    let parts: Vec<&str> = text.split('.').collect();
    let numeric = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() != 3 || !parts.iter().all(numeric) {
        return None;
    }
    Some(Version {
        major: parts[0].parse().ok()?,
        text: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A directory of its own for a test, removed at the end.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            static NEXT: AtomicUsize = AtomicUsize::new(0);
            let dir = std::env::temp_dir().join(format!(
                "conch-bash-{name}-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }

        /// An executable `name` (in subdirectory `sub`) running `script`.
        fn script(&self, sub: &str, name: &str, script: &str) -> PathBuf {
            let dir = self.0.join(sub);
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join(name);
            std::fs::write(&file, format!("#!/bin/sh\n{script}\n")).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
            file
        }

        /// A fake `bash` in `sub` that reports `version`.
        fn bash(&self, sub: &str, version: &str) -> PathBuf {
            self.script(sub, "bash", &format!("printf {version}"))
        }

        fn path(&self, sub: &str) -> PathBuf {
            self.0.join(sub)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A `PATH` of `dirs`.
    fn path_of(dirs: &[PathBuf]) -> Option<OsString> {
        Some(std::env::join_paths(dirs).unwrap())
    }

    fn message(r: Result<PathBuf>) -> String {
        match r {
            Err(e @ Error::Spawn(_)) => e.to_string(),
            other => panic!("not a spawn error: {other:?}"),
        }
    }

    #[test]
    fn an_explicit_new_bash_is_taken() {
        let d = Dir::new("explicit-new");
        let new = d.bash("a", "5.2.15");
        let old = d.bash("b", "3.2.57");
        // Before CONCH_BASH and PATH, which hold an old one.
        let got = find_in(
            Some(&new),
            Some(old.clone().into()),
            path_of(&[d.path("b")]),
            &[],
        );
        assert_eq!(got.unwrap(), new);
    }

    #[test]
    fn an_explicit_old_bash_is_refused() {
        let d = Dir::new("explicit-old");
        let old = d.bash("a", "3.2.57");
        let new = d.bash("b", "5.2.15");
        // Never replaced by a newer one on PATH.
        let e = message(find_in(Some(&old), None, path_of(&[d.path("b")]), &[&new]));
        assert_eq!(
            e,
            format!(
                "bash 4 or newer is needed (the shell option names bash 3.2.57 at {}): install one (macOS: brew install bash) and set the shell option to its path",
                old.display()
            )
        );
    }

    #[test]
    fn an_explicit_name_is_looked_up_on_path() {
        let d = Dir::new("explicit-name");
        let new = d.bash("a", "4.4.23");
        let path = path_of(&[d.path("none"), d.path("a")]);
        let got = find_in(Some(Path::new("bash")), None, path.clone(), &[]);
        assert_eq!(got.unwrap(), new);
        let e = message(find_in(Some(Path::new("no-such-bash")), None, path, &[]));
        assert_eq!(e, "no-such-bash not found on PATH");
    }

    #[test]
    fn an_old_conch_bash_is_refused() {
        let d = Dir::new("env-old");
        let old = d.bash("a", "3.2.57");
        let new = d.bash("b", "5.2.15");
        let e = message(find_in(
            None,
            Some(old.clone().into()),
            path_of(&[d.path("b")]),
            &[&new],
        ));
        assert_eq!(
            e,
            format!(
                "bash 4 or newer is needed (CONCH_BASH names bash 3.2.57 at {}): install one (macOS: brew install bash) and set CONCH_BASH to its path",
                old.display()
            )
        );
        // A new one is taken; an empty one is no setting.
        let got = find_in(None, Some(new.clone().into()), None, &[]);
        assert_eq!(got.unwrap(), new);
        let got = find_in(None, Some("".into()), path_of(&[d.path("b")]), &[]);
        assert_eq!(got.unwrap(), new);
    }

    #[test]
    fn the_first_new_bash_on_path_is_taken() {
        let d = Dir::new("path-order");
        d.bash("old", "3.2.57");
        let new = d.bash("new", "4.0.0");
        d.bash("newer", "5.2.15");
        let path = path_of(&[
            d.path("empty"),
            d.path("old"),
            d.path("new"),
            d.path("newer"),
        ]);
        assert_eq!(find_in(None, None, path, &[]).unwrap(), new);
    }

    #[test]
    fn nothing_new_is_an_error_naming_what_was_found() {
        let d = Dir::new("none-new");
        let old = d.bash("old", "3.2.57");
        let not_bash = d.script("sh", "bash", "echo not a bash; exit 2");
        let also_old = d.bash("fixed", "3.1.0");
        let path = path_of(&[d.path("old"), d.path("sh"), d.path("old")]);
        let e = message(find_in(None, None, path, &[&also_old]));
        assert_eq!(
            e,
            format!(
                "bash 4 or newer is needed (found bash 3.2.57 at {}, {}, which reports no bash version, bash 3.1.0 at {}): install one (macOS: brew install bash) and put it on PATH, or set CONCH_BASH or the shell option to its path",
                old.display(),
                not_bash.display(),
                also_old.display()
            )
        );
        let e = message(find_in(None, None, path_of(&[d.path("empty")]), &[]));
        assert_eq!(
            e,
            "bash 4 or newer is needed (no bash on PATH): install one (macOS: brew install bash) and put it on PATH, or set CONCH_BASH or the shell option to its path"
        );
        let e = message(find_in(None, None, None, &[&d.path("nowhere/bash")]));
        assert!(
            e.starts_with(&format!(
                "bash 4 or newer is needed (no bash on PATH, nor at {}/nowhere/bash): ",
                d.0.display()
            )),
            "{e}"
        );
        assert!(e.contains("brew install bash"), "{e}");
    }

    #[test]
    fn what_is_not_executable_is_refused_or_skipped() {
        let d = Dir::new("not-executable");
        let plain = d.bash("plain", "5.2.15");
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        let new = d.bash("new", "5.2.15");
        let e = message(find_in(Some(&plain), None, None, &[]));
        assert_eq!(
            e,
            format!("Shell not found or not executable: {}", plain.display())
        );
        let missing = d.path("missing/bash");
        let e = message(find_in(Some(&missing), None, None, &[]));
        assert_eq!(
            e,
            format!("Shell not found or not executable: {}", missing.display())
        );
        let e = message(find_in(None, Some(plain.clone().into()), None, &[&new]));
        assert_eq!(
            e,
            format!(
                "CONCH_BASH is set to {}, which is not an executable file",
                plain.display()
            )
        );
        // On PATH, a directory named bash and a plain file are passed over.
        std::fs::create_dir_all(d.path("dir/bash")).unwrap();
        let path = path_of(&[d.path("dir"), d.path("plain"), d.path("new")]);
        assert_eq!(find_in(None, None, path, &[]).unwrap(), new);
    }

    #[test]
    fn something_that_reports_no_version_is_used_if_named() {
        // Not refused: a run reports a shell that cannot run a session.
        let d = Dir::new("not-bash");
        let not_bash = d.script("a", "not-bash", "exit 0");
        assert_eq!(find_in(Some(&not_bash), None, None, &[]).unwrap(), not_bash);
    }

    #[test]
    fn the_fixed_places_come_after_path() {
        let d = Dir::new("fixed");
        let old = d.bash("old", "3.2.57");
        let new = d.bash("brew", "5.2.37");
        let missing = d.path("missing/bash");
        let path = path_of(&[d.path("empty")]);
        let got = find_in(None, None, path, &[&missing, &old, &new]);
        assert_eq!(got.unwrap(), new);
        // Unset PATH: the fixed places only.
        assert_eq!(find_in(None, None, None, &[&new]).unwrap(), new);
    }

    #[test]
    fn each_bash_is_probed_once() {
        let d = Dir::new("cache");
        let count = d.path("count");
        let bash = d.script(
            "a",
            "bash",
            &format!("echo probed >> '{}'\nprintf 5.1.16", count.display()),
        );
        for _ in 0..3 {
            assert_eq!(find_in(Some(&bash), None, None, &[]).unwrap(), bash);
            let path = path_of(&[d.path("a")]);
            assert_eq!(find_in(None, None, path, &[]).unwrap(), bash);
        }
        let probes = || std::fs::read_to_string(&count).unwrap().lines().count();
        assert_eq!(probes(), 1);
        // A replaced file is probed again.
        std::fs::write(
            &bash,
            format!(
                "#!/bin/sh\n# replaced\necho probed >> '{}'\nprintf 3.2.57\n",
                count.display()
            ),
        )
        .unwrap();
        let e = message(find_in(Some(&bash), None, None, &[]));
        assert!(e.contains("names bash 3.2.57 at"), "{e}");
        assert_eq!(probes(), 2);
    }

    #[test]
    fn versions_are_three_numbers() {
        let v = parse(b"5.2.15").unwrap();
        assert_eq!((v.major, v.to_string().as_str()), (5, "5.2.15"));
        for bad in [&b""[..], b"5.2", b"5.2.15\n", b"x.2.15", b"..", b"5.2.15.1"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_real_bash_is_found() {
        let fixed: Vec<&Path> = FIXED.iter().map(Path::new).collect();
        let bash = find_in(None, None, Some("/bin".into()), &fixed).unwrap();
        assert_eq!(bash, Path::new("/bin/bash"));
        let v = version(&bash, key(&bash).unwrap(), None).unwrap();
        assert!(v.major >= 5, "{v}");
    }
}
