"""Write a run folder's timeline page, refusing paths that would leave where they point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mas.runtime.errors import MasError
from mas.runtime.paths import contained, refuse_symlinks
from mas.runtime.session import (
    EVENTS,
    STATE,
    SessionStateError,
    is_run_folder,
    load_state,
    write_atomic,
)
from mas.runtime.timeline._data import EventLines, timeline_data
from mas.runtime.timeline._page import render_page

TIMELINE = "timeline.html"
"""The page's file name inside the run folder when no other path is given."""


def write_timeline(run_dir: Path, out: Path | None = None) -> Path:
    """Write the timeline page of the session run folder ``run_dir``; return its path.

    :param out: the file to write; ``None``: ``run_dir/timeline.html``, which must resolve
        inside ``run_dir``. Either way the file must not be a symlink (the page replaces
        the file atomically, never writing through a link).
    :raises MasError: ``run_dir`` is not a session run folder, or ``out`` is a folder.
    :raises UnsafePathError: the file is a symlink, or the default file leaves ``run_dir``.
    :raises StorageError: the page could not be written.
    """
    run_dir = Path(run_dir)
    if not is_run_folder(run_dir) or not (run_dir / EVENTS).is_file():
        raise MasError(f"{run_dir}: not a session run folder (it needs transcript.json and "
                       f"{EVENTS} here); pass the folder `mas-ctl run --out` wrote")
    refuse_symlinks(run_dir, [EVENTS])
    target = run_dir / TIMELINE if out is None else Path(out)
    if out is None:
        refuse_symlinks(run_dir, [TIMELINE])
        contained(run_dir, target)
    elif target.is_symlink():
        refuse_symlinks(target.parent, [target.name])
    elif target.is_dir():
        raise MasError(f"{target}: is a folder; --out names the page's file")
    lines = EventLines(run_dir / EVENTS)
    data = timeline_data(lines)
    session = _session(run_dir)
    archive = session.get("archive")
    data["skipped_lines"] = lines.skipped
    data["archive"] = {key: value for key, value in archive.items()
                       if isinstance(value, int) and not isinstance(value, bool)
                       } if isinstance(archive, dict) else None
    write_atomic(target, render_page(data, session))
    return target


def _session(run_dir: Path) -> dict[str, Any]:
    # The header's names come from the saved view; a folder without one still renders.
    if (run_dir / STATE).is_symlink() or not (run_dir / STATE).is_file():
        return {}
    try:
        view = load_state(run_dir / STATE).get("context_usage")
    except (SessionStateError, OSError, ValueError):
        return {}
    return dict(view) if isinstance(view, dict) else {}
