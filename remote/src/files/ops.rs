//! The file operations, written once: the server calls them in its own
//! process when no sandbox applies, and its helper calls them inside the
//! sandbox otherwise. Each answers as its reply's value, or with the
//! core's error (a missing path: `NotFound`; what the system refused,
//! permission included: `Io` with its errno), so each face raises the
//! class it raises for a local call.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use conch_core::Error;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{FileRequest, base64};

/// The most bytes one read returns and one write takes: their base64 (4/3
/// of it) and the request around it fit a frame (16 MiB) with room.
pub const MAX_BYTES: u64 = 8 << 20;

/// What `file_stat` tells of a path, and `file_list` of each entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileInfo {
    /// The last component of the path (an entry's name in its directory).
    pub name: String,
    #[serde(rename = "type")]
    pub kind: FileKind,
    /// Bytes (of the link itself, for a symlink).
    pub size: u64,
    /// The permission bits (`0o644`), with setuid, setgid and sticky.
    pub mode: u32,
    /// The last modification, in seconds since the epoch.
    pub mtime: f64,
    /// Where a symlink points (never followed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// Performs `request`; its reply's value.
pub fn perform(request: FileRequest) -> Result<Value, Error> {
    match request {
        FileRequest::Read {
            path,
            offset,
            limit,
        } => read(&path, offset, limit),
        FileRequest::Write { path, data, mode } => write(&path, &data, mode).map(|()| Value::Null),
        FileRequest::Stat { path } => {
            let meta = fs::symlink_metadata(&path).map_err(|e| failed("stat", &path, e))?;
            let name = path.file_name().map_or_else(
                || path.to_string_lossy().into_owned(),
                |n| n.to_string_lossy().into_owned(),
            );
            Ok(to_value(&info(name, &path, &meta)))
        }
        FileRequest::List { path } => list(&path),
        FileRequest::Remove { path, recursive } => remove(&path, recursive).map(|()| Value::Null),
    }
}

/// The error of `what` (a verb) on `path`: a missing path is `NotFound`.
fn failed(what: &str, path: &Path, err: io::Error) -> Error {
    if err.kind() == io::ErrorKind::NotFound {
        return Error::NotFound(format!("no such file or directory: {}", path.display()));
    }
    Error::io(format!("cannot {what} {}", path.display()), err)
}

fn to_value<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("a file's info serializes")
}

/// Reads `limit` bytes from `offset` (none: the rest, if it fits one
/// read). Only a regular file is read: a FIFO or a device could block or
/// never end.
fn read(path: &Path, offset: u64, limit: Option<u64>) -> Result<Value, Error> {
    if let Some(limit) = limit.filter(|&l| l > MAX_BYTES) {
        return Err(Error::InvalidArgument(format!(
            "limit must be at most {MAX_BYTES} bytes (one read), got {limit}"
        )));
    }
    // Non-blocking: opening a FIFO waits for a writer otherwise.
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| failed("read", path, e))?;
    let meta = file.metadata().map_err(|e| failed("read", path, e))?;
    if meta.is_dir() {
        return Err(failed(
            "read",
            path,
            io::Error::from_raw_os_error(libc::EISDIR),
        ));
    }
    if !meta.is_file() {
        return Err(Error::InvalidArgument(format!(
            "{} is not a regular file: only files are read",
            path.display()
        )));
    }
    let want = limit.unwrap_or(MAX_BYTES);
    let mut data = Vec::new();
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| (&mut file).take(want + 1).read_to_end(&mut data))
        .map_err(|e| failed("read", path, e))?;
    let more = data.len() as u64 > want;
    if more && limit.is_none() {
        return Err(Error::InvalidArgument(format!(
            "{} is {} bytes, more than one read returns ({MAX_BYTES}): read it by range (offset, limit)",
            path.display(),
            meta.len()
        )));
    }
    data.truncate(want as usize);
    Ok(json!({"data": base64::encode(&data), "size": meta.len(), "more": more}))
}

/// Replaces `path` with `data`, atomically: a temporary file in the same
/// directory is written, flushed to disk and renamed over it, so a reader
/// sees the old file or the new one, never a part. Its parents are made.
/// The mode is `mode`, else the replaced file's, else `0o666` less the
/// umask (as a shell's `>` makes it). A symlink at `path` is replaced by
/// the file: its target is never written.
fn write(path: &Path, data: &[u8], mode: Option<u32>) -> Result<(), Error> {
    if data.len() as u64 > MAX_BYTES {
        return Err(Error::InvalidArgument(format!(
            "data must be at most {MAX_BYTES} bytes (one write), got {}",
            data.len()
        )));
    }
    if let Some(mode) = mode.filter(|&m| m > 0o7777) {
        return Err(Error::InvalidArgument(format!(
            "mode must be permission bits (0 to 0o7777), got {mode:#o}"
        )));
    }
    let (Some(dir), Some(_)) = (path.parent(), path.file_name()) else {
        return Err(Error::InvalidArgument(format!(
            "path must name a file, got {}",
            path.display()
        )));
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o777)
        .create(dir)
        .map_err(|e| failed("create", dir, e))?;
    let kept = fs::symlink_metadata(path)
        .ok()
        .filter(Metadata::is_file)
        .map(|m| m.permissions().mode() & 0o7777);
    let (temp, file) = temporary(dir).map_err(|e| failed("write", path, e))?;
    let written = fill(file, data, mode.or(kept))
        .and_then(|()| fs::rename(&temp, path))
        .map_err(|e| failed("write", path, e));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written?;
    // The rename is durable once the directory is.
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// A new file in `dir` that no one else made (`O_EXCL`, never through a
/// symlink), and its path.
fn temporary(dir: &Path) -> io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".conch-write-{}-{n}.tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&temp)
        {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes `data` into `file`, sets its mode, and flushes it to disk.
fn fill(mut file: File, data: &[u8], mode: Option<u32>) -> io::Result<()> {
    file.write_all(data)?;
    if let Some(mode) = mode {
        file.set_permissions(fs::Permissions::from_mode(mode))?;
    }
    file.sync_all()
}

/// The entries of directory `path`, sorted by name, each as `stat`
/// tells it (symlinks not followed).
fn list(path: &Path) -> Result<Value, Error> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(path).map_err(|e| failed("list", path, e))? {
        let entry = entry.map_err(|e| failed("list", path, e))?;
        // Gone since the directory was read: not listed.
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        entries.push(info(name, &entry.path(), &meta));
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(to_value(&entries))
}

fn info(name: String, path: &Path, meta: &Metadata) -> FileInfo {
    let kind = if meta.is_symlink() {
        FileKind::Symlink
    } else if meta.is_dir() {
        FileKind::Dir
    } else if meta.is_file() {
        FileKind::File
    } else {
        FileKind::Other
    };
    FileInfo {
        name,
        kind,
        size: meta.len(),
        mode: meta.permissions().mode() & 0o7777,
        mtime: meta.mtime() as f64 + meta.mtime_nsec() as f64 / 1e9,
        target: (kind == FileKind::Symlink)
            .then(|| fs::read_link(path).ok())
            .flatten()
            .map(|t| t.to_string_lossy().into_owned()),
    }
}

/// Removes a file, a symlink (never its target), or a directory: an empty
/// one, or with `recursive` its whole tree, whose symlinks are removed and
/// never followed.
fn remove(path: &Path, recursive: bool) -> Result<(), Error> {
    let meta = fs::symlink_metadata(path).map_err(|e| failed("remove", path, e))?;
    let removed = if !meta.is_dir() {
        fs::remove_file(path)
    } else if recursive {
        fs::remove_dir_all(path)
    } else {
        fs::remove_dir(path)
    };
    removed.map_err(|e| {
        if e.kind() == io::ErrorKind::DirectoryNotEmpty {
            let context = format!(
                "cannot remove {} (a directory with entries: recursive removes its tree)",
                path.display()
            );
            return Error::io(context, e);
        }
        failed("remove", path, e)
    })
}
