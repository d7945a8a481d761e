"""Paths the project writes or removes stay inside their root (DESIGN.md §11, Boundaries).

Three guards, used by every writer and remover of run folders:

- :func:`folder_name_problem` / :func:`check_folder_name`: a name from user input that
  becomes one path component (``metadata.name``, an experiment, flavour or step name, a
  dataset item id) is a plain name: no separator, no ``..``, no leading dot, no control
  character;
- :func:`contained`: a path, resolved with its symlinks followed, lies inside its root
  (resolved the same way); anything else raises :class:`UnsafePathError`;
- :func:`open_append`, :func:`truncate_own` and :func:`refuse_symlinks`: files of a run
  folder are opened with ``O_NOFOLLOW``, and a planted symlink is refused rather than
  written through; a file with another hard link is replaced by a copy of its own before
  it is appended to or cut.

And one for reading (issue 26, items 6 and 7): :func:`read_regular` reads only a regular
file (never a FIFO or a device, which would hang or never end), at most a given size,
optionally refusing a symlink.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from mas.runtime.errors import MasError

MAX_NAME_LENGTH = 128
"""Longest name accepted where a name becomes a folder or file name."""


FOLDER_NAME_PATTERN = r"^[^./\\\x00-\x1f\x7f](?![\s\S]*[/\\\x00-\x1f\x7f])"
""":func:`folder_name_problem`'s rule (length aside) as a JSON Schema ``pattern``, for editors.
A look-ahead, not ``$``: Python's ``$`` also matches before a final newline."""


MAX_RUN_FILE_BYTES = 1 << 30
"""Largest run-folder file read back (session.json, its journal, transcript.json,
events.jsonl): 1 GiB."""


class UnreadableFileError(MasError):
    """A file that is not read: not a regular file, too large, a symlink, unreadable.

    :ivar reason: why, without the path (``not a regular file (...)``).
    """

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.reason = reason


class UnsafePathError(MasError):
    """A path would leave its root, or a run folder holds a symlink where a file belongs."""


def folder_name_problem(value: str) -> str:
    """Why ``value`` cannot be used as one folder or file name (``""``: it can)."""
    if not value:
        return "must not be empty"
    if len(value) > MAX_NAME_LENGTH:
        return f"must be at most {MAX_NAME_LENGTH} characters (it becomes a folder name)"
    if "/" in value or "\\" in value:
        return "must not contain '/' or '\\' (it becomes a folder name)"
    if value.startswith("."):
        return "must not start with '.' (it becomes a folder name; '..' would leave the run)"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return "must not contain control characters (it becomes a folder name)"
    return ""


def check_folder_name(value: str) -> str:
    """``value`` unchanged when it is a safe folder name; for pydantic validators.

    :raises ValueError: the reason from :func:`folder_name_problem`.
    """
    problem = folder_name_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def contained(root: Path, path: Path) -> Path:
    """``path`` resolved, after checking that it lies inside ``root`` (both resolved).

    Symlinks anywhere along either path are followed first, so a symlinked folder that
    points elsewhere is caught.

    :raises UnsafePathError: the resolved path is outside the resolved root.
    """
    real_root = Path(root).resolve()
    real = Path(path).resolve()
    if real != real_root and real_root not in real.parents:
        raise UnsafePathError(
            f"{path}: resolves to {real}, outside {root}; refusing to write or remove it "
            "(remove the symlink or pick another folder)"
        )
    return real


def refuse_symlinks(folder: Path, names: Iterable[str]) -> None:
    """Refuse a run folder where any of ``names`` is a symlink (it would redirect writes).

    :raises UnsafePathError: naming the first symlink found.
    """
    for name in names:
        path = Path(folder) / name
        if path.is_symlink():
            raise UnsafePathError(
                f"{path}: is a symbolic link; run folders hold no symlinks (remove it and "
                "run again)"
            )


def open_append(path: Path) -> int:
    """Open ``path`` for appending (created when missing) without following a symlink.

    :return: the file descriptor.
    :raises UnsafePathError: ``path`` is a symlink.
    """
    return _open_own(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)


def truncate_own(path: Path, size: int) -> None:
    """Cut ``path`` to ``size`` bytes, never through a symlink or a hard link.

    :raises UnsafePathError: ``path`` is a symlink.
    """
    fd = _open_own(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)


def _open_own(path: Path, flags: int) -> int:
    fd = _open_nofollow(path, flags)
    if os.fstat(fd).st_nlink > 1:
        # A hard link shares the inode with a file elsewhere: writing would change that
        # file too. The folder's file becomes a copy of its own (the other name keeps the
        # old content).
        os.close(fd)
        _unlink_copy(Path(path))
        fd = _open_nofollow(path, flags)
    return fd


def _unlink_copy(path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as copy, open(path, "rb") as original:
            shutil.copyfileobj(original, copy)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_regular(path: Path, limit: int, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes.

    Opened without blocking (a FIFO would wait for a writer) and checked on the open
    descriptor, so what is read is what was checked; read with a bound too, for a file
    that grows meanwhile.

    :raises FileNotFoundError: ``path`` does not exist.
    :raises UnreadableFileError: not a regular file (a FIFO, a device, a folder), larger
        than ``limit``, a symlink when ``follow_symlinks`` is false, or unreadable; the
        message names the path and why.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        why = "is a symbolic link" if exc.errno == errno.ELOOP else f"cannot read ({exc.strerror})"
        raise UnreadableFileError(path, why) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFileError(path, "not a regular file (a pipe, device or folder)")
        data = handle.read(limit + 1) if info.st_size <= limit else b""
    if info.st_size > limit or len(data) > limit:
        size = max(info.st_size, len(data))
        raise UnreadableFileError(path, f"too large ({size:,} bytes; at most {limit:,})")
    return data


def open_lock(path: Path) -> int:
    """Open (or create) a lock file for reading and writing without following a symlink.

    :raises UnsafePathError: ``path`` is a symlink.
    """
    return _open_nofollow(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC)


@contextmanager
def hold_lock(path: Path, owner: str, hint: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created, never followed if a symlink).

    The file says who holds it, so a refused second process can name the first. The lock
    goes with the process, so a killed holder never leaves a stale lock behind. Folders
    this call created are removed again on release when nothing but the lock was written
    in them: a command refused for bad input leaves no empty run folder behind.

    :param owner: written into the file, e.g. ``mas-ctl run (pid 123)``.
    :param hint: what the refused process should do, appended to its error.
    :raises MasError: another process holds the lock.
    """
    path = Path(path)
    created = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with os.fdopen(open_lock(path), "r+", encoding="utf-8") as handle:
            yield from _locked(handle, path, owner, hint)
    finally:
        _remove_if_unused(path, created)


def _locked(handle: IO[str], path: Path, owner: str, hint: str) -> Iterator[None]:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        raise MasError(f"{path.parent} is in use by {holder}; {hint}") from None
    handle.seek(0)
    handle.truncate()
    handle.write(owner)
    handle.flush()
    try:
        yield
    finally:
        handle.truncate(0)
        fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_if_unused(lock: Path, created: list[Path]) -> None:
    """Remove ``lock`` and the folders in ``created`` (innermost first) left empty."""
    if not created:
        return
    try:
        if [entry.name for entry in lock.parent.iterdir()] != [lock.name]:
            return
        lock.unlink()
        for folder in created:
            folder.rmdir()  # refuses a folder something else wrote into meanwhile
    except OSError:
        return


def _open_nofollow(path: Path, flags: int) -> int:
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(
                f"{path}: is a symbolic link; run folders hold no symlinks (remove it and "
                "run again)"
            ) from None
        raise


def remove_tree(root: Path, path: Path) -> None:
    """Delete the folder ``path`` and everything in it, only when it lies inside ``root``.

    A symlink at ``path`` is removed as a link, never followed; links inside the folder
    are removed without touching their targets (:func:`shutil.rmtree` does not follow them).

    :raises UnsafePathError: ``path`` (its parent resolved) is outside ``root``.
    """
    path = Path(path)
    contained(root, path.parent)
    if path.is_symlink():
        path.unlink()
        return
    if path.exists():
        contained(root, path)
        shutil.rmtree(path)
