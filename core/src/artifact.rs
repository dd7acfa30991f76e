//! Artifacts: full output streams spilled to files, addressed as `artifact://<id>`.
//!
//! A model sees at most the sink's bound (50 KiB by default) of a command's
//! output; the rest is written to an artifact so it can be read back by id.
//! An [`ArtifactStore`] owns one directory of `<id>.<kind>.log` files, with ids
//! that are sequential integers (as strings) continuing after the largest id
//! already there. Allocating an id creates its file, empty and exclusively
//! (`O_EXCL`), so processes sharing a directory never get the same id: one
//! that finds the id taken moves past every id in the directory. Runs
//! reserve their id only when their output first spills
//! ([`ArtifactSlot::Next`]); a caller that reserved one beforehand
//! ([`ArtifactSlot::Reserved`]) gets its empty file removed when the run
//! needed none, leaving a gap in the ids.
//!
//! A store over a directory a host names ([`ArtifactStore::open`]) checks
//! at once that the directory can be created and written: a typo or a
//! read-only path is an error there, not outputs silently never spilled.
//! Without a named directory, the faces use one private directory per
//! process ([`ArtifactStore::process_default`]), so "full output in
//! artifact://N" holds out of the box.
//!
//! Resolution errors have fixed texts (docs/behaviour.md §11):
//! `artifact:// URL requires a numeric ID: artifact://0`,
//! `artifact:// ID must be numeric, got: X`,
//! `No artifacts directory found`, `Artifact N not found. Available: 0, 1`
//! (or `Available: none`).

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use crate::error::{Error, Result};
use crate::private_dir::{LOCK, lock_own, private_dir};

const URL_SCHEME: &str = "artifact://";

/// A reserved artifact: its id and the path the full output goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub id: String,
    pub path: PathBuf,
}

impl Artifact {
    /// The `artifact://<id>` URL a model uses to read it back.
    pub fn url(&self) -> String {
        format!("{URL_SCHEME}{}", self.id)
    }

    /// Gives an unused reservation back: removes the file when it is still
    /// empty (never a file that received output).
    pub fn release(&self) {
        if fs::metadata(&self.path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Where a run's whole output goes if it outgrows what the sink keeps.
#[derive(Debug, Clone)]
pub enum ArtifactSlot {
    /// An artifact reserved beforehand (its empty file exists; the sink
    /// removes it again when the run never spills).
    Reserved(Artifact),
    /// The next id of `store`, reserved when the output first spills: a run
    /// that never spills (most of them) touches no file at all, where a
    /// reservation costs a file created and removed again per run.
    Next {
        store: ArtifactStore,
        kind: &'static str,
    },
}

impl From<Artifact> for ArtifactSlot {
    fn from(artifact: Artifact) -> Self {
        ArtifactSlot::Reserved(artifact)
    }
}

impl ArtifactSlot {
    /// The artifact to write the stream to, reserving it now if it is not
    /// yet; `None` when the store cannot give one (no artifact, not an error).
    pub fn reserve(self) -> Option<Artifact> {
        match self {
            ArtifactSlot::Reserved(artifact) => Some(artifact),
            ArtifactSlot::Next { store, kind } => store.allocate(kind).ok(),
        }
    }

    /// Gives the slot back unused: a reserved artifact's empty file goes.
    pub fn release(self) {
        if let ArtifactSlot::Reserved(artifact) = self {
            artifact.release();
        }
    }
}

/// Some lines of an artifact, bounded in bytes: what
/// [`ArtifactStore::read_page`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactPage {
    /// The lines, line ends kept.
    pub text: String,
    /// The 0-based index of the first of them.
    pub offset_line: usize,
    /// How many lines `text` holds (a first line cut to the bound counts).
    pub lines: usize,
    /// The artifact's lines, counted as in every summary.
    pub total_lines: usize,
    /// The byte bound ended the page before the lines asked for.
    pub cut: bool,
}

/// What [`ArtifactStore::scan`] reads.
struct Window {
    offset_line: usize,
    limit_lines: Option<usize>,
    max_bytes: usize,
    /// Count every line of the artifact, past the window too.
    count_all: bool,
}

/// A directory of artifacts. Clones share the id counter, and so do all the
/// stores of one process over the same directory, so ids are never handed
/// out twice however many stores a host creates.
#[derive(Debug, Clone)]
pub struct ArtifactStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    /// The next id to hand out; `None` until the directory was scanned.
    next_id: Mutex<Option<u64>>,
    /// The process's own directory ([`ArtifactStore::process_default`]):
    /// the lock the process holds in it while it lives, taken again when
    /// the directory is made again. `None` for a directory a host names.
    own_lock: Option<Mutex<Option<File>>>,
}

impl ArtifactStore {
    /// A store over `dir`. Nothing touches the file system until the first
    /// [`ArtifactStore::allocate`].
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ArtifactStore::shared(dir.into(), false)
    }

    /// The store over `dir` every store of this process over it shares (a
    /// new one if none is open); `own`: the process's own directory.
    fn shared(dir: PathBuf, own: bool) -> Self {
        static OPEN: LazyLock<Mutex<HashMap<PathBuf, Weak<Inner>>>> =
            LazyLock::new(Default::default);
        let key = std::path::absolute(&dir).unwrap_or_else(|_| dir.clone());
        let mut open = OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        open.retain(|_, inner| inner.strong_count() > 0);
        let inner = open.get(&key).and_then(Weak::upgrade).unwrap_or_else(|| {
            let inner = Arc::new(Inner {
                dir,
                next_id: Mutex::new(None),
                own_lock: own.then(|| Mutex::new(None)),
            });
            open.insert(key, Arc::downgrade(&inner));
            inner
        });
        ArtifactStore { inner }
    }

    /// A store over `dir`, which is created (mode 0700) if needed and
    /// checked to be writable now: the error names the directory and why.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self> {
        let store = ArtifactStore::new(dir);
        let dir = store.dir();
        let unusable = |e: io::Error| {
            Error::io(
                format!("artifacts directory {} cannot be used", dir.display()),
                e,
            )
        };
        create_private_dir(dir).map_err(unusable)?;
        let probe = dir.join(format!(".conch-probe-{}", std::process::id()));
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map_err(unusable)?;
        let _ = fs::remove_file(&probe);
        Ok(store)
    }

    /// The store of the directory a face's `artifacts_dir` option names, or,
    /// when it names none, [`ArtifactStore::process_default`].
    pub fn for_option(dir: Option<PathBuf>) -> Result<Self> {
        match dir {
            Some(dir) => ArtifactStore::open(dir),
            None => Ok(ArtifactStore::process_default()),
        }
    }

    /// This process's private artifacts directory: one per process, in
    /// conch's private directory (`<temp>/conch-<uid>/artifacts-<pid>-<random>`),
    /// mode 0700, created on the first spill and removed with everything in
    /// it when the process exits normally. The process holds a lock in it
    /// while it lives, so that the directory of one killed outright (a Ray
    /// worker's, at `ray.kill`) is removed by the next conch of the same
    /// user (`private_dir`'s sweep). Where the private directory cannot be
    /// used, the temp directory holds it (`conch-artifacts-<pid>-<random>`),
    /// and nothing removes it after a kill.
    pub fn process_default() -> Self {
        static DEFAULT: LazyLock<ArtifactStore> = LazyLock::new(|| {
            let name = format!("artifacts-{}-{}", std::process::id(), unique_suffix());
            let dir = match private_dir() {
                Ok(private) => private.join(name),
                Err(_) => std::env::temp_dir().join(format!("conch-{name}")),
            };
            remove_at_exit(&dir);
            ArtifactStore::shared(dir, true)
        });
        DEFAULT.clone()
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The slot of the next artifact of `kind` in this store, reserved
    /// only if the output spills ([`ArtifactSlot::Next`]).
    pub fn slot(&self, kind: &'static str) -> ArtifactSlot {
        ArtifactSlot::Next {
            store: self.clone(),
            kind,
        }
    }

    /// The file artifact `id` of `kind` has in this store.
    pub fn path_of(&self, id: &str, kind: &str) -> PathBuf {
        self.inner.dir.join(format!("{id}.{kind}.log"))
    }

    /// Reserves the next id: creates `<dir>/<id>.<kind>.log`, empty, with
    /// `O_EXCL` (mode 0600), skipping every id another store or process
    /// took. Creates the directory (mode 0700: outputs may hold secrets) if
    /// needed.
    pub fn allocate(&self, kind: &str) -> Result<Artifact> {
        if kind.is_empty() || kind.contains(['/', '\\', '\0']) || kind.starts_with('.') {
            return Err(Error::InvalidArgument(format!(
                "Invalid artifact kind: {kind:?} (expected a file-name part such as \"bash\")"
            )));
        }
        let mut next_id = self
            .inner
            .next_id
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Created on every allocation (a no-op when it exists), so a
        // directory removed meanwhile comes back; scanned only once.
        create_private_dir(&self.inner.dir).map_err(|e| {
            Error::io(
                format!("creating artifacts directory {}", self.inner.dir.display()),
                e,
            )
        })?;
        self.hold_own_lock();
        let mut id = match *next_id {
            Some(id) => id,
            None => self.scan_next_id()?,
        };
        loop {
            let path = self.path_of(&id.to_string(), kind);
            let mut options = fs::OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            match options.open(&path) {
                Ok(_) => {
                    *next_id = Some(id + 1);
                    return Ok(Artifact {
                        id: id.to_string(),
                        path,
                    });
                }
                // Taken by another process sharing the directory: go past
                // everything there now.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    id = self.scan_next_id()?.max(id + 1);
                }
                Err(e) => {
                    return Err(Error::io(
                        format!("creating artifact file {}", path.display()),
                        e,
                    ));
                }
            }
        }
    }

    /// In the process's own directory, takes the lock when the directory
    /// has none (made now, or again after it was removed). Best effort:
    /// without it the directory is only left behind by a kill.
    fn hold_own_lock(&self) {
        let Some(lock) = &self.inner.own_lock else {
            return;
        };
        let mut held = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if held.is_some() && self.inner.dir.join(LOCK).exists() {
            return;
        }
        let _ = fs::remove_file(self.inner.dir.join(".lock-new"));
        *held = lock_own(&self.inner.dir).ok();
    }

    /// The whole text of `artifact://<id>`.
    pub fn resolve(&self, url: &str) -> Result<String> {
        let id = parse_url(url)?;
        let path = self.locate(id)?;
        let mut bytes = Vec::new();
        open_artifact(id, &path)?
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(format!("reading artifact {}", path.display()), e))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Lines `[offset_line, offset_line + limit_lines)` of an artifact
    /// (0-based, line ends kept; no limit means to the end). `id` is the bare
    /// id or its `artifact://` URL. Lines are counted as in every summary: a
    /// last line without `\n` counts. An offset past the last line is an
    /// error that gives the line count; offset 0 of an empty artifact is "".
    pub fn read(&self, id: &str, offset_line: usize, limit_lines: Option<usize>) -> Result<String> {
        let window = Window {
            offset_line,
            limit_lines,
            max_bytes: usize::MAX,
            count_all: false,
        };
        Ok(self.scan(id, window)?.text)
    }

    /// As [`ArtifactStore::read`], with the text bounded to `max_bytes`
    /// too, whatever the artifact holds: the page ends at the last whole
    /// line that fits (a first line longer than the bound is cut at a
    /// character boundary), and the whole artifact is counted, a buffer
    /// at a time, for [`ArtifactPage::total_lines`]. For a reader that must
    /// stay small however large an output was (a server answering
    /// `artifact://` reads).
    pub fn read_page(
        &self,
        id: &str,
        offset_line: usize,
        limit_lines: Option<usize>,
        max_bytes: usize,
    ) -> Result<ArtifactPage> {
        let window = Window {
            offset_line,
            limit_lines,
            max_bytes,
            count_all: true,
        };
        self.scan(id, window)
    }

    /// Reads `window` of artifact `id`, holding no more than the window's
    /// text (and one buffer) whatever the artifact's lines are like.
    fn scan(&self, id: &str, window: Window) -> Result<ArtifactPage> {
        // Any URL is read as one, so `file:///x` is "not an artifact://
        // URL", not a malformed id.
        let id = if id.contains("://") {
            parse_url(id)?
        } else {
            check_id(id)?
        };
        let path = self.locate(id)?;
        let context = || format!("reading artifact {}", path.display());
        let file = open_artifact(id, &path)?;
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        let Window {
            offset_line,
            limit_lines,
            max_bytes,
            count_all,
        } = window;
        let end = limit_lines.map(|limit| offset_line.saturating_add(limit));
        // Enough is read (short of counting everything) once the window's
        // last line ended, and the offset line is known to exist.
        let enough = end.map(|end| end.max(offset_line.saturating_add(1)));
        let mut text = Vec::new();
        let mut newlines = 0usize;
        let mut at_line_start = true;
        // Where the current line starts in `text`.
        let mut line_start = 0;
        let mut cut_at: Option<usize> = None;
        'read: loop {
            let buf = reader.fill_buf().map_err(|e| Error::io(context(), e))?;
            if buf.is_empty() {
                break;
            }
            let mut used = 0;
            while used < buf.len() {
                let rest = &buf[used..];
                let len = memchr_newline(rest).map_or(rest.len(), |i| i + 1);
                let piece = &rest[..len];
                let index = newlines;
                if at_line_start {
                    line_start = text.len();
                }
                let in_window =
                    cut_at.is_none() && index >= offset_line && end.is_none_or(|end| index < end);
                if in_window {
                    if max_bytes - text.len() >= piece.len() {
                        text.extend_from_slice(piece);
                    } else if index == offset_line {
                        // The page's first line alone is over the bound: its
                        // start, cut between characters.
                        text.extend_from_slice(&piece[..max_bytes - text.len()]);
                        let valid =
                            std::str::from_utf8(&text).map_or_else(|e| e.valid_up_to(), str::len);
                        text.truncate(valid);
                        cut_at = Some(1);
                    } else {
                        text.truncate(line_start);
                        cut_at = Some(index - offset_line);
                    }
                }
                used += len;
                at_line_start = piece.ends_with(b"\n");
                newlines += usize::from(at_line_start);
                let stop = cut_at.is_some() || enough.is_some_and(|n| newlines >= n);
                if stop && !count_all {
                    reader.consume(used);
                    break 'read;
                }
            }
            reader.consume(used);
        }
        // Exact when the whole artifact was read; a lower bound otherwise.
        let total_lines = newlines + usize::from(!at_line_start);
        if offset_line > 0 && total_lines <= offset_line {
            return Err(Error::InvalidArgument(format!(
                "Offset {offset_line} is beyond the end of artifact {id} ({total_lines} {})",
                if total_lines == 1 { "line" } else { "lines" }
            )));
        }
        let lines = cut_at.unwrap_or_else(|| {
            end.map_or(total_lines, |end| end.min(total_lines))
                .saturating_sub(offset_line)
        });
        Ok(ArtifactPage {
            text: String::from_utf8_lossy(&text).into_owned(),
            offset_line,
            lines,
            total_lines,
            cut: cut_at.is_some(),
        })
    }

    /// The file of artifact `id`: the first (by name) whose name starts with
    /// `<id>.`, whatever its kind.
    fn locate(&self, id: &str) -> Result<PathBuf> {
        let entries = match fs::read_dir(&self.inner.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Error::NotFound("No artifacts directory found".into()));
            }
            Err(e) => {
                return Err(Error::io(
                    format!("listing artifacts directory {}", self.inner.dir.display()),
                    e,
                ));
            }
        };
        let prefix = format!("{id}.");
        let mut found: Option<String> = None;
        let mut available: Vec<String> = Vec::new();
        for entry in entries.flatten() {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if name.starts_with(&prefix) {
                if found.as_ref().is_none_or(|f| name < *f) {
                    found = Some(name);
                }
            } else if let Some(other) = leading_id(&name) {
                available.push(other.to_string());
            }
        }
        if let Some(name) = found {
            return Ok(self.inner.dir.join(name));
        }
        available.sort_by(|a, b| numeric_order(a, b));
        available.dedup();
        Err(Error::NotFound(format!(
            "Artifact {id} not found. Available: {}",
            id_list(&available)
        )))
    }

    /// One past the largest id of a `^(\d+)\..*\.log$` file in the directory.
    fn scan_next_id(&self) -> Result<u64> {
        let entries = fs::read_dir(&self.inner.dir).map_err(|e| {
            Error::io(
                format!("listing artifacts directory {}", self.inner.dir.display()),
                e,
            )
        })?;
        let max = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let id = leading_id(&name)?;
                let rest = &name[id.len() + 1..];
                rest.ends_with(".log")
                    .then(|| id.parse::<u64>().ok())
                    .flatten()
            })
            .max();
        Ok(max.map_or(0, |max| max.saturating_add(1)))
    }
}

/// Opens the file of artifact `id` for reading, if it is a regular file
/// and not a link: conch writes only regular files there, and a link
/// planted in a shared directory (`3.bash.log -> /etc/passwd`) must not
/// make a reader serve another file.
fn open_artifact(id: &str, path: &Path) -> Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let refused =
        || Error::InvalidArgument(format!("Artifact {id} is not a regular file: refused"));
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refused(),
            _ => Error::io(format!("reading artifact {}", path.display()), e),
        })?;
    let is_file = file
        .metadata()
        .map_err(|e| Error::io(format!("reading artifact {}", path.display()), e))?
        .is_file();
    if is_file { Ok(file) } else { Err(refused()) }
}

/// The id of an `artifact://<id>` URL (a trailing `/` is allowed).
fn parse_url(url: &str) -> Result<&str> {
    let Some(rest) = url.strip_prefix(URL_SCHEME) else {
        return Err(Error::InvalidArgument(format!(
            "Not an artifact:// URL: {url}"
        )));
    };
    let id = rest.strip_suffix('/').unwrap_or(rest);
    check_id(id)
}

fn check_id(id: &str) -> Result<&str> {
    if id.is_empty() {
        return Err(Error::InvalidArgument(
            "artifact:// URL requires a numeric ID: artifact://0".into(),
        ));
    }
    if !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::InvalidArgument(format!(
            "artifact:// ID must be numeric, got: {id}"
        )));
    }
    Ok(id)
}

/// The digits before the first `.` of `name`, when there are some.
fn leading_id(name: &str) -> Option<&str> {
    let (digits, _) = name.split_once('.')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(digits)
}

/// The most runs of ids a not-found error lists: a directory shared by
/// many runs holds thousands, and the model reads every byte of the text.
const LISTED_RUNS: usize = 20;

/// Sorted ids as a not-found error lists them: `none`, `2, 10`, or runs
/// of three or more consecutive ids as ranges (`0-602`); past
/// [`LISTED_RUNS`] runs, the first and last halves around `…`, with the
/// count of ids.
fn id_list(ids: &[String]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    let mut runs: Vec<&[String]> = Vec::new();
    let mut start = 0;
    for i in 1..=ids.len() {
        let follows = i < ids.len()
            && matches!(
                (ids[i - 1].parse::<u64>(), ids[i].parse::<u64>()),
                (Ok(a), Ok(b)) if a.checked_add(1) == Some(b)
            );
        if !follows {
            runs.push(&ids[start..i]);
            start = i;
        }
    }
    let shown = |run: &&[String]| match run {
        [first, _, .., last] => format!("{first}-{last}"),
        _ => run.join(", "),
    };
    if runs.len() <= LISTED_RUNS {
        return runs.iter().map(shown).collect::<Vec<_>>().join(", ");
    }
    let half = LISTED_RUNS / 2;
    let head: Vec<String> = runs[..half].iter().map(shown).collect();
    let tail: Vec<String> = runs[runs.len() - half..].iter().map(shown).collect();
    format!(
        "{}, …, {} ({} artifacts)",
        head.join(", "),
        tail.join(", "),
        ids.len()
    )
}

/// Orders decimal strings by value, whatever their length.
fn numeric_order(a: &str, b: &str) -> std::cmp::Ordering {
    let a = a.trim_start_matches('0');
    let b = b.trim_start_matches('0');
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// A number that differs between runs of a process with a reused pid: the
/// clock's nanoseconds, hashed with the standard library's random
/// per-process keys. Decimal in a name, as `private_dir`'s sweep reads it
/// (`<kind>-<pid>-<n>`).
fn unique_suffix() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish() as u32
}

/// Removes `dir` (recursively) when the process exits normally: `exit()`
/// from C, the end of `main`, Python's and Node's own exits all run the C
/// library's exit handlers. Only in this process: a child it forked (a
/// prefork server's worker) inherits the handler and the directory, and
/// its exit must not take the directory from its parent.
fn remove_at_exit(dir: &Path) {
    static DIR: std::sync::OnceLock<(PathBuf, u32)> = std::sync::OnceLock::new();
    extern "C" fn remove() {
        if let Some((dir, owner)) = DIR.get()
            && *owner == std::process::id()
        {
            let _ = fs::remove_dir_all(dir);
        }
    }
    if DIR.set((dir.to_path_buf(), std::process::id())).is_ok() {
        // SAFETY: `remove` is a plain `extern "C" fn()` that touches only
        // a static set before it is registered; registering can fail only
        // when the table is full, and then the directory simply stays.
        unsafe {
            libc::atexit(remove);
        }
    }
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Where the first `\n` of `bytes` is.
fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls_with_their_documented_errors() {
        assert_eq!(parse_url("artifact://12").unwrap(), "12");
        assert_eq!(parse_url("artifact://12/").unwrap(), "12");
        assert_eq!(
            parse_url("artifact://").unwrap_err().to_string(),
            "artifact:// URL requires a numeric ID: artifact://0"
        );
        assert_eq!(
            parse_url("artifact://abc").unwrap_err().to_string(),
            "artifact:// ID must be numeric, got: abc"
        );
        assert!(matches!(
            parse_url("file:///x"),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn lists_ids_in_runs_and_bounds_the_list() {
        let ids = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>();
        assert_eq!(id_list(&[]), "none");
        assert_eq!(id_list(&ids(&[0, 1])), "0, 1");
        assert_eq!(id_list(&ids(&[2, 10])), "2, 10");
        assert_eq!(id_list(&ids(&(0..603).collect::<Vec<_>>())), "0-602");
        assert_eq!(id_list(&ids(&[0, 1, 2, 5, 7, 8, 9, 10])), "0-2, 5, 7-10");
        let sparse: Vec<u64> = (0..600).map(|n| n * 2).collect();
        let text = id_list(&ids(&sparse));
        assert_eq!(
            text,
            "0, 2, 4, 6, 8, 10, 12, 14, 16, 18, …, \
             1180, 1182, 1184, 1186, 1188, 1190, 1192, 1194, 1196, 1198 (600 artifacts)"
        );
    }

    #[test]
    fn orders_ids_by_value() {
        let mut ids = vec!["10", "2", "0", "100", "9"];
        ids.sort_by(|a, b| numeric_order(a, b));
        assert_eq!(ids, ["0", "2", "9", "10", "100"]);
    }
}
