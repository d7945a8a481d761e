"""What goes wrong inside one turn, counted on the session's degradation record (DESIGN §11).

A plugin left out while the turn ran, a compaction of this session that failed, a reply
too large to keep, a turn that used up its tool rounds: each is added to the session's
:class:`~mas.runtime.degradation.Degradation` with a one-line reason, so the run's
output, ``inspect`` and the lab report it.
"""

from __future__ import annotations

import logging
from collections.abc import Container
from dataclasses import replace
from typing import Any

from mas.runtime.degradation import Degradation
from mas.runtime.events import Event
from mas.runtime.protocols import ModelReply

# The session logger (spec 000's table): these lines are the turn's, wherever counted.
log = logging.getLogger("mas.runtime.session.agent")


def count_turn_event(degradation: Degradation, session_id: str, event: Event) -> None:
    """Count ``event`` if it is a fault of the running turn (listener of the runtime)."""
    if event.name == "plugin.fault":
        # Runtime-wide: a plugin left out while this turn ran (its hook or factory
        # raised); later requests go without it.
        data = event.data
        where = f"{data.get('file')}:{data.get('line')}"
        degradation.add("plugin_faults", reason=(
            f"plugin {data.get('plugin')!r} left out, at {where}: {data.get('error')}")[:300])
        return
    # Only compactions of this session, while its turn runs (the runtime is shared).
    if event.name != "compaction.exception" or event.session_id != session_id:
        return
    reason = " ".join(str(event.data.get("reason") or event.data.get("kind") or "").split())
    if reason.startswith("SummarizerBackoffError"):
        # Skipped without a request: the failure that started the back-off stays the
        # compaction failures' last reason.
        degradation.add("compaction_failures")
        degradation.add("summarizer_backoffs", reason=reason[:300])
    else:
        degradation.add("compaction_failures", reason=reason[:300])


def capped(reply: ModelReply, limit: int, turn: int, degradation: Degradation) -> ModelReply:
    """``reply`` with its text cut to ``limit`` characters (``max_reply_chars``), counted
    as ``replies_capped``: one huge reply would otherwise be saved, re-sent and
    re-estimated on every later turn."""
    if len(reply.text) <= limit:
        return reply
    reason = (f"turn {turn}: a reply of {len(reply.text):,} characters cut to "
              f"{limit:,} (spec.budget.max_reply_chars)")
    log.warning("%s", reason)
    degradation.add("replies_capped", reason=reason)
    return replace(reply, text=reply.text[:limit] + f"\n[reply cut at {limit:,} characters]")


def tool_loop(calls: list[dict[str, Any]], known: Container[str], rounds: int, turn: int,
              degradation: Degradation) -> None:
    """The turn used up its ``rounds`` tool rounds with the model still calling tools
    (``known``: the session's tool names): counted as ``tool_loops``."""
    names = sorted({str((c.get("function") or {}).get("name", "")) for c in calls})
    unknown = [n for n in names if n not in known]
    what = f"unknown tool(s) {', '.join(map(repr, unknown))}" if unknown else (
        f"tool(s) {', '.join(map(repr, names))}")
    reason = f"turn {turn}: all {rounds} tool rounds used and the model still called {what}"
    log.warning("%s; the turn ends without a tool answer", reason)
    degradation.add("tool_loops", reason=reason)


__all__ = ["capped", "count_turn_event", "tool_loop"]
