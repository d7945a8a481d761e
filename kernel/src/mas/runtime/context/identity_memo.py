"""Values remembered per object, for objects a caller treats as settled.

A tool result in flight is estimated on every request of its turn and again when it is
committed; a folded message is costed by the boundary's plan and again when it is
chunked. Each of those values depends only on an object that is not edited once sent
(a ``str``, or a message whose content and tool calls are settled), so it is remembered
by the object's identity.

The memo holds the object itself, so its ``id`` cannot be reused by another object while
the entry lives, and the *witnesses* the value also depends on (an estimator, a message's
content): an entry whose witnesses are no longer equal is a miss. A full memo starts
afresh in one call, which is safe from threads: a race can lose an entry, never serve
another object's value.
"""

from __future__ import annotations

from typing import Generic, TypeVar

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """At most ``size`` values, each remembered for one object and its witnesses."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: dict[int, tuple[object, tuple[object, ...], V]] = {}

    def get(self, key: object, *witnesses: object) -> V | None:
        """The value remembered for ``key`` with equal ``witnesses``, else ``None``."""
        found = self._entries.get(id(key))
        if found is not None and found[0] is key and found[1] == witnesses:
            return found[2]
        return None

    def put(self, key: object, value: V, *witnesses: object) -> V:
        """Remember ``value`` for ``key`` and ``witnesses``; returns ``value``."""
        if len(self._entries) >= self.size:
            self._entries.clear()  # a turn's (or a fold's) objects come back at once
        self._entries[id(key)] = (key, witnesses, value)
        return value

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["IdentityMemo"]
