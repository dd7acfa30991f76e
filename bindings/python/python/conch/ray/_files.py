"""A ``ShellActor``'s files: the remote face's file operations
(remote/src/files/ops.rs), done on the actor's node."""

from __future__ import annotations

import contextlib
import errno as _errno
import os
import shutil
import stat as _stat
import uuid
from typing import Any, Callable, TypeVar

import conch

# The most bytes one file read returns and one write takes, as for
# ``conch.RemoteFiles`` (docs/remote.md, Files).
MAX_FILE_BYTES = 8 << 20
T = TypeVar("T")


def _failed(what: str, path: str, err: OSError) -> conch.ConchError:
    if err.errno == _errno.ENOENT:
        return conch.NotFoundError(f"no such file or directory: {path}")
    return conch.IoError(err.errno, f"cannot {what} {path}: {os.strerror(err.errno or 0)} (os error {err.errno})")


def _failing(what: str, path: str, fn: Callable[..., T], *args: Any) -> T:
    try:
        return fn(path, *args)
    except OSError as e:
        raise _failed(what, path, e) from None


def _read(path: str, offset: int, limit: int | None) -> bytes:
    if limit is not None and limit > MAX_FILE_BYTES:
        raise conch.InvalidArgumentError(f"limit must be at most {MAX_FILE_BYTES} bytes (one read), got {limit}")
    # Non-blocking: opening a FIFO waits for a writer otherwise.
    fd = _failing("read", path, os.open, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if _stat.S_ISDIR(st.st_mode):
            raise _failed("read", path, OSError(_errno.EISDIR, "Is a directory"))
        if not _stat.S_ISREG(st.st_mode):
            raise conch.InvalidArgumentError(f"{path} is not a regular file: only files are read")
        want = MAX_FILE_BYTES if limit is None else limit
        parts, got = [], 0
        while got <= want:
            part = _failing("read", path, lambda _p: os.pread(fd, want + 1 - got, offset + got))
            if not part:
                break
            parts.append(part)
            got += len(part)
        data = b"".join(parts)
        if len(data) > want and limit is None:
            raise conch.InvalidArgumentError(
                f"{path} is {st.st_size} bytes, more than one read returns ({MAX_FILE_BYTES}): "
                "read it by range (offset, limit)"
            )
        return data[:want]
    finally:
        os.close(fd)


def _write(path: str, data: bytes, mode: int | None) -> None:
    """Atomic: a temporary file beside the target, flushed, renamed over
    it; a reader sees the old file or the new one, never a part."""
    if len(data) > MAX_FILE_BYTES:
        raise conch.InvalidArgumentError(f"data must be at most {MAX_FILE_BYTES} bytes (one write), got {len(data)}")
    if mode is not None and not 0 <= mode <= 0o7777:
        raise conch.InvalidArgumentError(f"mode must be permission bits (0 to 0o7777), got {mode:#o}")
    folder, name = os.path.split(path)
    if not name:
        raise conch.InvalidArgumentError(f"path must name a file, got {path}")
    folder = folder or "."
    _failing("create", folder, os.makedirs, 0o777, True)
    try:
        st = os.lstat(path)
        kept = _stat.S_IMODE(st.st_mode) if _stat.S_ISREG(st.st_mode) else None
    except OSError:
        kept = None
    temp = os.path.join(folder, f".conch-write-{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = _failing("write", path, lambda _p: os.open(temp, flags, 0o666))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if (mode if mode is not None else kept) is not None:
                os.fchmod(f.fileno(), mode if mode is not None else kept)
            f.flush()
            os.fsync(f.fileno())
        os.rename(temp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise _failed("write", path, e) from None
    # The rename is durable once the directory is.
    with contextlib.suppress(OSError):
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _info(name: str, path: str, st: os.stat_result) -> dict[str, Any]:
    kind = ("symlink" if _stat.S_ISLNK(st.st_mode) else "dir" if _stat.S_ISDIR(st.st_mode)
            else "file" if _stat.S_ISREG(st.st_mode) else "other")
    info: dict[str, Any] = {"name": name, "type": kind, "size": st.st_size,
                            "mode": _stat.S_IMODE(st.st_mode), "mtime": st.st_mtime_ns / 1e9}
    if kind == "symlink":
        with contextlib.suppress(OSError):
            info["target"] = os.readlink(path)
    return info


def _list(path: str) -> list[dict[str, Any]]:
    entries = []
    for name in _failing("list", path, os.listdir):
        full = os.path.join(path, name)
        try:
            st = os.lstat(full)
        except OSError:
            continue  # gone since the directory was read
        entries.append(_info(name, full, st))
    return sorted(entries, key=lambda e: e["name"].encode("utf-8", "surrogateescape"))


def _remove(path: str, recursive: bool) -> None:
    st = _failing("remove", path, os.lstat)
    try:
        if not _stat.S_ISDIR(st.st_mode):
            os.unlink(path)
        elif recursive:
            shutil.rmtree(path)  # symlinks inside are removed, never followed
        else:
            os.rmdir(path)
    except OSError as e:
        if e.errno == _errno.ENOTEMPTY:
            raise conch.IoError(e.errno, f"cannot remove {path} (a directory with entries: "
                                f"recursive removes its tree): {os.strerror(e.errno)} (os error {e.errno})") from None
        raise _failed("remove", path, e) from None

