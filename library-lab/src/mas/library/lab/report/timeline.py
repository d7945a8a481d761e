"""A timeline page per session, linked from the report, when the kernel can write one.

The kernel's ``write_timeline(run_dir, out)`` renders one session folder as a
self-contained HTML page. The report writes ``<session folder>/timeline.html`` for every
session when that function is importable; otherwise the links are left out and the report
says why. Each page that fails is counted and named, never skipped quietly.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable
from pathlib import Path

from mas.runtime.errors import MasError

log = logging.getLogger(__name__)

TIMELINE_MODULE = "mas.runtime.timeline"
"""The module holding ``write_timeline`` (the one line to change if it moves)."""

TIMELINE_PAGE = "timeline.html"

TimelineWriter = Callable[[Path, Path | None], Path]


def timeline_writer() -> TimelineWriter | None:
    """The kernel's ``write_timeline``, or ``None`` where this install has none."""
    if importlib.util.find_spec(TIMELINE_MODULE) is None:
        return None
    writer: TimelineWriter | None = getattr(importlib.import_module(TIMELINE_MODULE),
                                            "write_timeline", None)
    return writer


def write_timelines(run_path: Path, folders: list[str],
                    writer: TimelineWriter | None) -> tuple[dict[str, str], str | None]:
    """Write a page per session folder: (folder -> link relative to the run, note or ``None``).

    :param folders: session folders relative to ``run_path``.
    """
    if writer is None:
        return {}, (f"No session timeline pages: this install has no {TIMELINE_MODULE} "
                    "(write_timeline), so the sessions are linked by folder only.")
    links: dict[str, str] = {}
    failed: list[str] = []
    for folder in folders:
        try:
            writer(run_path / folder, run_path / folder / TIMELINE_PAGE)
        except (MasError, OSError, ValueError) as exc:
            log.warning("timeline of %s not written: %s", folder, exc)
            failed.append(f"{folder} ({type(exc).__name__}: {exc})")
            continue
        links[folder] = f"{folder}/{TIMELINE_PAGE}"
    if failed:
        return links, (f"{len(failed)} of {len(folders)} session timeline page(s) could not be "
                       f"written: {'; '.join(failed)}.")
    return links, None
