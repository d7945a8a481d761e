"""Saving and restoring session state atomically.

A save writes a temporary file in the same folder, flushes and fsyncs it, then renames it
over the old file: a crash at any point leaves either the old state or the new one, never
a torn file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from mas.runtime.errors import MasError, StorageError
from mas.runtime.paths import refuse_symlinks
from mas.runtime.secrets import mask

STATE_VERSION = 1


class SessionStateError(MasError):
    """A session file is unreadable or from an incompatible version."""


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so readers see the old or the new content, whole.

    Keys are masked first (:func:`mas.runtime.secrets.mask`): nothing stored holds one.
    """
    path = Path(path)
    text = mask(text)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise StorageError.writing(path, exc) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise StorageError.writing(path, exc) from exc
        raise


def save_state(path: Path, state: dict[str, Any]) -> None:
    """Write a session state dict (with its format version) atomically."""
    write_atomic(path, json.dumps({"version": STATE_VERSION, **state}, sort_keys=True))


def load_state(path: Path) -> dict[str, Any]:
    """Read a state written by :func:`save_state`.

    :raises SessionStateError: unreadable, not JSON, or another format version.
    :raises UnsafePathError: ``path`` is a symlink (it would read and then replace a file
        elsewhere).
    """
    refuse_symlinks(Path(path).parent, [Path(path).name])
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SessionStateError(f"cannot read session file {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        found = data.get("version") if isinstance(data, dict) else None
        raise SessionStateError(
            f"session file {path} has format version {found!r}; expected {STATE_VERSION}"
        )
    return data
