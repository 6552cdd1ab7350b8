"""Reading files from outside safely, and writing files atomically.

``read_regular`` opens a path only when it is a regular file (a FIFO would block the reader until someone
writes; a device or a socket is never data), reads at most ``limit`` bytes and says so in one line when the
file is larger. ``write_atomic`` writes a sibling temporary file and renames it over the target, so a full
disk or a kill leaves the old file (or none), never half a new one. Both raise ``FileProblem`` (an
``OSError`` subclass carrying a one-line reason) so callers wrap it in their own one-line error.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


class FileProblem(OSError):
    """A file that cannot be read or written as asked; ``str()`` is one line naming the file and why.
    ``not_regular``: it is a FIFO, socket, device or folder (the others: unreadable, too large, unwritable)."""

    not_regular = False

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "file problem"


class NotRegular(FileProblem):
    """A FIFO, socket, device or folder where a regular file was expected."""

    not_regular = True


def _kind(mode: int) -> str:
    return ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a folder" if stat.S_ISDIR(mode)
            else "not a regular file")


def check_regular(path: str | os.PathLike) -> None:
    """FileProblem unless ``path`` (after symlinks) is a regular file."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError) as exc:
        raise FileProblem(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from exc
    if not stat.S_ISREG(mode):
        raise NotRegular(f"{path} is {_kind(mode)}, not a regular file; refusing to read it")


def open_regular(path: str | os.PathLike):
    """``path`` opened for reading in binary, refused unless it is a regular file. O_NONBLOCK makes
    opening a FIFO return at once instead of waiting for a writer; the check is on the opened file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL byte
        raise FileProblem(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(f"{path} is {_kind(mode)}, not a regular file; refusing to read it")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``; FileProblem when it is not one or is over ``limit`` bytes."""
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limit:
            raise FileProblem(f"{path}: {what} of {_size(size)} is larger than kernelscope reads ({_size(limit)})")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise FileProblem(f"{path}: {what} is larger than kernelscope reads ({_size(limit)})")
    return data


def read_private(path: str | os.PathLike, limit: int) -> bytes | None:
    """The bytes of a cache file kept for this user (a start's parsed CSS, its compiled code): None where it is
    absent, unreadable, not a regular file (a FIFO does not block), not the user's own, or over ``limit``
    bytes. What the bytes hold is the caller's to check."""
    try:
        with open_regular(path) as fh:
            info = os.fstat(fh.fileno())
            if info.st_size > limit or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
                return None
            return fh.read(limit + 1)
    except (OSError, ValueError):
        return None


def write_private(path: str | os.PathLike, data: bytes) -> None:
    """Write a cache file for this user only (mode 0600), its folder made, through ``write_atomic``."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data, mode=0o600)


def _size(n: int) -> str:
    return f"{n >> 20} MB" if n >= 1 << 20 else f"{n >> 10} KB" if n >= 1 << 10 else f"{n} bytes"


def write_atomic(path: str | os.PathLike, data: str | bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through a temporary sibling renamed into place: a full disk or a kill
    leaves the old file (or none) and no temporary. FileProblem names the file and the cause."""
    target = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif target.exists():
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        else:  # mkstemp's 0600 is for temporaries; a written report gets the user's usual mode
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise FileProblem(f"cannot write {target} ({why(exc)})") from exc
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def why(exc: BaseException) -> str:
    """An OSError's cause in words a user acts on (a full disk, a read-only file system ...)."""
    code = getattr(exc, "errno", None)
    if code == errno.ENOSPC:
        return "no space left on the device"
    if code == errno.EROFS:
        return "the file system is read-only"
    if code == errno.EDQUOT:
        return "disk quota exceeded"
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if code == errno.EXDEV:
        return "it is on another file system than its staging folder"
    return getattr(exc, "strerror", None) or " ".join(str(exc).split())[:200]


def free_bytes(folder: str | os.PathLike) -> int | None:
    """Bytes an unprivileged writer may still use on ``folder``'s file system (None when unknown)."""
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def writable_folder(folder: str | os.PathLike, need: int = 1 << 20) -> str | None:
    """Why nothing can be created in ``folder`` (or its nearest existing parent), or None when it can:
    checked by creating and removing a file, since root and read-only mounts make ``access`` lie, and
    by the space left (at least ``need`` bytes)."""
    p = Path(folder).absolute()
    while not p.exists() and p.parent != p:
        p = p.parent
    try:
        fd, probe = tempfile.mkstemp(prefix=".kernelscope-probe-", dir=p)
    except OSError as exc:
        return f"cannot write in {p} ({why(exc)})"
    os.close(fd)
    os.unlink(probe)
    free = free_bytes(p)
    if free is not None and free < need:
        return f"cannot write in {p} (no space left on the device: {_size(free)} free)"
    return None


def open_private_log(path: str | os.PathLike) -> int:
    """A descriptor to append to the log file ``path``: created 0600, or an existing one of this user's made
    0600; never through a symlink (O_NOFOLLOW: a planted link to ~/.bashrc is refused), never a FIFO, device
    or socket (opened without blocking, then checked). FileProblem names the file and why."""
    flags = (os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags, 0o600)
    except (OSError, ValueError) as exc:
        if getattr(exc, "errno", None) == errno.ELOOP:
            raise FileProblem(f"{path} is a symlink; refusing to write a log through it") from exc
        try:  # a FIFO with no reader fails the non-blocking open (ENXIO): name what it is
            mode = os.lstat(path).st_mode
        except (OSError, ValueError):
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            raise NotRegular(f"{path} is {_kind(mode)}, not a regular file; refusing to write a log to it") from exc
        raise FileProblem(f"cannot write the log {path} ({why(exc)})") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(f"{path} is {_kind(info.st_mode)}, not a regular file; refusing to write a log to it")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise FileProblem(f"{path} belongs to another user; refusing to write a log to it")
        if stat.S_IMODE(info.st_mode) != 0o600:
            os.fchmod(fd, 0o600)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise
