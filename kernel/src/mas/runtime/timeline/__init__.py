"""The session timeline: one self-contained HTML page drawn from a run folder's events.

::

    from mas.runtime.timeline import write_timeline

    page = write_timeline(Path("runs/demo-session"))   # runs/demo-session/timeline.html

Every model request is a stacked bar of its tokens against the window, the hard budget
and the trigger; beneath it, markers for compactions, recalls, pruning passes and
degradations, and the committed history's share sent, summarized, dropped and cut.
Numbers and names only, never message text (docs/run-folder.md, "See the context").
"""

from __future__ import annotations

from mas.runtime.timeline._data import EventLines, timeline_data
from mas.runtime.timeline._page import render_page
from mas.runtime.timeline._write import TIMELINE, write_timeline

__all__ = ["TIMELINE", "EventLines", "render_page", "timeline_data", "write_timeline"]
