"""Degradation: what went wrong without stopping the run, counted per session.

A session that lost a compaction, cut messages to fit the budget or got an unscored vote
still finishes, but its numbers are not the strategy's own: such a session is
``degraded``, beside ``ok`` and ``failed`` (docs/run-folder.md). One record per session
counts each kind and keeps the last reason of each; one method adds to it::

    session.degradation.add("budget_cuts", 3, reason="3 messages (812 tokens) cut")

Each addition also emits a ``degraded`` event (kind, count, total, reason), so the record
and ``events.jsonl`` agree. The record is saved in ``session.json`` and
``transcript.json``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

DEGRADING = (
    "compaction_failures",
    "summarizer_retries",
    "unscored_votes",
    "judge_truncations",
    "budget_cuts",
    "tool_loops",
    "replies_capped",
)
"""Kinds that make a session ``degraded``."""

NOTICES = ("window_overflows_recovered", "summarizer_backoffs", "plugin_faults")
"""Kinds counted and shown that do not by themselves degrade a session: a turn or summary
request cut to fit its model's window (before sending, or after the provider refused it
whole), summary calls skipped while backing off a failing summarizer (each of those
is also a compaction failure), and plugins left out during a turn because a hook or
factory of theirs raised (the session may not have needed them)."""

KINDS = DEGRADING + NOTICES
"""Every kind a record accepts."""

OK, DEGRADED, FAILED = "ok", "degraded", "failed"
"""Session statuses."""

EXIT_DEGRADED = 3
"""Exit code of ``mas-ctl run`` and ``mas-ctl lab run`` when anything degraded (and
``--allow-degraded`` was not given)."""

Emit = Callable[[dict[str, Any]], None]


class Degradation:
    """Named counters of one session, each with its last reason.

    :param emit: called with the event data of every addition (``None``: no events).
    """

    def __init__(self, emit: Emit | None = None) -> None:
        self.counts: dict[str, int] = {}
        self.reasons: dict[str, str] = {}
        self.emit = emit
        self._lock = threading.Lock()

    def add(self, kind: str, count: int = 1, *, reason: str = "") -> None:
        """Count ``count`` more of ``kind`` (no-op for ``count <= 0``).

        :raises ValueError: ``kind`` is not one of :data:`KINDS`.
        """
        if kind not in KINDS:
            raise ValueError(f"degradation kind: must be one of {', '.join(KINDS)} (got {kind!r})")
        if count <= 0:
            return
        with self._lock:
            self.counts[kind] = self.counts.get(kind, 0) + count
            if reason:
                self.reasons[kind] = reason
            total = self.counts[kind]
        if self.emit is not None:
            self.emit({"kind": kind, "count": count, "total": total, "reason": reason})

    @property
    def degraded(self) -> bool:
        """Whether any degrading kind was counted."""
        return any(self.counts.get(kind, 0) for kind in DEGRADING)

    def status(self, error: str | None = None) -> str:
        """``failed`` with an error, else ``degraded`` or ``ok``."""
        return FAILED if error else (DEGRADED if self.degraded else OK)

    def summary(self) -> str:
        """One line: each counted kind, with its last reason; empty when nothing was."""
        return describe_counts(self.counts, self.reasons)

    def to_state(self) -> dict[str, Any]:
        """JSON data for ``session.json`` and ``transcript.json``."""
        with self._lock:
            return {"counts": dict(sorted(self.counts.items())),
                    "reasons": dict(sorted(self.reasons.items()))}

    def load_state(self, state: Mapping[str, Any] | None) -> None:
        """Replace the counters with what :meth:`to_state` saved (``None``: nothing saved)."""
        state = state or {}
        with self._lock:
            self.counts = {str(k): int(v) for k, v in (state.get("counts") or {}).items()}
            self.reasons = {str(k): str(v) for k, v in (state.get("reasons") or {}).items()}


def describe_counts(counts: Mapping[str, int], reasons: Mapping[str, str] | None = None) -> str:
    """``2 compaction_failures (last: …); 1 budget_cuts`` for the kinds with a count."""
    parts = []
    for kind in KINDS:
        number = counts.get(kind, 0)
        if number:
            last = (reasons or {}).get(kind)
            parts.append(f"{number} {kind}" + (f" (last: {last})" if last else ""))
    return "; ".join(parts)


def is_degraded(counts: Mapping[str, int]) -> bool:
    """Whether saved ``counts`` hold any degrading kind."""
    return any(counts.get(kind, 0) for kind in DEGRADING)
