"""Read a run folder's ``events.jsonl`` into the timeline's compact, text-free data.

The reader is generic: it knows the shape of ``context.assembled`` (one per model request)
and the names of the marker events, and takes every number it finds on them. A field a
newer event carries shows up by itself; a field missing is simply absent; an event kind it
does not know is skipped. Strings never pass, except a few labels that are names chosen by
the code (a degradation ``kind``, a check ``mode``), never prompt or reply text.

The result holds arrays of numbers, one entry per request, so 10,000 requests embed in a
few hundred kilobytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

REQUEST = "context.assembled"
"""The event of one assembled model request."""

TURN = "session.turn"
"""The event closing a committed turn."""

MARKERS = {
    "compaction.stop": "compaction",
    "compaction.exception": "compaction",
    "recall": "recall",
    "context.pruned": "pruning",
    "degraded": "degradation",
}
"""Event kinds drawn as markers, and the row of markers each goes to."""

LABELS = frozenset({"kind", "mode", "trigger_source", "purpose"})
"""The only string fields kept, all names the code chooses: never message text."""

_SKIPPED = frozenset({"ts", "monotonic_time", "system_time", "duration"})
"""Numbers that are clock readings, not measurements of the context."""

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
"""A field or label value the page shows: a lower_snake_case name, nothing else."""

ACCOUNTING = ("sent", "summarized", "dropped", "cut")
"""The four accounting states of every committed message (docs/context.md)."""

ORDER = ("system", "tools", "skills", "working_memory", "summary", "pruned", "history",
         "current_input")
"""Stacking order of the breakdown, bottom up: fixed parts first, the request's own input
on top; a key not listed here goes after these, in the order it first appeared."""

_LIMITS = {"window": "context_window", "hard": "hard_budget", "trigger": "soft_trigger"}
"""The lines drawn across the bars, and the ``context.assembled`` field of each."""


class EventLines:
    """The events of an ``events.jsonl`` in order, counting the lines that are not one.

    A line that is not a JSON object with an ``event`` name (a torn last line, a stray
    write) is skipped, never fatal, and counted in :attr:`skipped` so the page can say so.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.skipped = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Read the file afresh; :attr:`skipped` counts this pass."""
        self.skipped = 0
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                try:
                    event = json.loads(line)
                except ValueError:
                    event = None
                if isinstance(event, dict) and isinstance(event.get("event"), str):
                    yield event
                elif line.strip():
                    self.skipped += 1


def timeline_data(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The page's data: per-request columns, the accounting shares and the markers.

    A marker's ``at`` is the index of the request it precedes (the number of requests
    assembled before it). A compaction without an ``at_boundary`` field of its own is
    placed at a turn boundary when no request of the current turn was assembled before it.
    """
    builder = _Builder()
    for event in events:
        builder.add(event)
    return builder.result()


class _Builder:
    """Accumulates columns while the events stream past."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.parts: dict[str, list[int]] = {}
        self.columns: dict[str, list[int | None]] = {
            name: [] for name in ("est", "turn", "prompt", "cached", "over", *_LIMITS)
        }
        self.accounting: dict[str, tuple[list[int | None], list[int | None]]] = {
            state: ([], []) for state in ACCOUNTING
        }
        self.markers: dict[str, dict[str, Any]] = {}
        self.turns = 0
        self.requests_this_turn = 0

    @property
    def count(self) -> int:
        return len(self.columns["est"])

    def add(self, event: dict[str, Any]) -> None:
        name = event["event"]
        if name == REQUEST:
            self._request(event)
        elif name == TURN:
            self.turns += 1
            self.requests_this_turn = 0
        elif name == "llm.call" and event.get("purpose") == "turn" and self.count:
            self._provider(event)
        elif name in MARKERS:
            self._marker(MARKERS[name], name, event)

    def _request(self, event: dict[str, Any]) -> None:
        index = self.count
        breakdown = event.get("breakdown")
        for key, value in (breakdown.items() if isinstance(breakdown, dict) else ()):
            if _NAME.match(str(key)) and _number(value) is not None:
                if key not in self.parts:
                    self.keys.append(key)
                    self.parts[key] = [0] * index
                self.parts[key].append(int(value))
        for values in self.parts.values():
            if len(values) == index:
                values.append(0)
        cols = self.columns
        cols["est"].append(_int(event.get("estimated_tokens")))
        cols["turn"].append(self.turns + 1)
        cols["prompt"].append(None)
        cols["cached"].append(None)
        cols["over"].append(1 if event.get("over_budget") is True else 0)
        for column, field in _LIMITS.items():
            cols[column].append(_int(event.get(field)))
        accounting = event.get("accounting")
        for state, (messages, tokens) in self.accounting.items():
            counts = accounting.get(state) if isinstance(accounting, dict) else None
            counts = counts if isinstance(counts, dict) else {}
            messages.append(_int(counts.get("messages")))
            tokens.append(_int(counts.get("tokens")))
        self.requests_this_turn += 1

    def _provider(self, event: dict[str, Any]) -> None:
        # The turn's model call that follows an assembled request reports what the
        # provider counted for it; only the first call after the request is taken.
        if self.columns["prompt"][-1] is None:
            self.columns["prompt"][-1] = _int(event.get("prompt_tokens"))
            self.columns["cached"][-1] = _int(event.get("cached_tokens"))

    def _marker(self, row: str, name: str, event: dict[str, Any]) -> None:
        fields = dict(_fields(event))
        if row == "compaction":
            fields["failed"] = 1 if name == "compaction.exception" else 0
            if "at_boundary" not in fields:
                fields["at_boundary"] = 1 if self.requests_this_turn == 0 else 0
        table = self.markers.setdefault(row, {"cols": [], "rows": []})
        cols: list[str] = table["cols"]
        for key in fields:
            if key not in cols:
                cols.append(key)
        table["rows"].append([self.count, *(fields.get(key) for key in cols)])

    def result(self) -> dict[str, Any]:
        keys = sorted(self.keys, key=lambda key: (
            ORDER.index(key) if key in ORDER else len(ORDER), self.keys.index(key)))
        for table in self.markers.values():
            width = len(table["cols"]) + 1
            table["rows"] = [row + [None] * (width - len(row)) for row in table["rows"]]
        return {
            "version": 1,
            "requests": self.count,
            "turns": self.turns,
            "keys": keys,
            "parts": [self.parts[key] for key in keys],
            **self.columns,
            "accounting": {
                state: {"messages": messages, "tokens": tokens}
                for state, (messages, tokens) in self.accounting.items()
            },
            "markers": self.markers,
        }


def _fields(event: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, int | float | str]]:
    """The numbers and labels of ``event``, nested objects flattened one level as
    ``outer.inner``; flags become 0 or 1."""
    for key, value in event.items():
        if key in _SKIPPED or not _NAME.match(str(key)):
            continue
        if isinstance(value, dict) and not prefix:
            yield from _fields(value, f"{key}.")
        elif isinstance(value, str):
            if not prefix and key in LABELS and _NAME.match(value):
                yield key, value
        else:
            number = _number(value)
            if number is not None:
                yield prefix + key, number


def _number(value: Any) -> int | float | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return round(value, 4)
    return None


def _int(value: Any) -> int | None:
    number = _number(value)
    return None if number is None or isinstance(value, bool) else int(number)
