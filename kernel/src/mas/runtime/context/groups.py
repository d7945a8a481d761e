"""Boundary helpers: the one implementation of where a history may be cut (spec 002).

Two kinds of group matter to every strategy:

- a **user-turn group**: a ``user`` message and everything after it up to the next
  ``user`` message (the assistant's replies, tool calls and tool results of that turn);
- a **tool group** (a *unit*): an assistant message carrying ``tool_calls`` together with
  all the ``tool`` results that follow it, parallel calls included. Any other message is a
  unit of one.

A cut at the start of a user-turn group or of a unit never separates a tool call from its
result. Strategies cut only through these helpers.
"""

from __future__ import annotations

from collections.abc import Sequence

from mas.runtime.protocols import Message


def call_ids(message: Message) -> list[str]:
    """The ids of an assistant message's ``tool_calls`` (empty for any other message)."""
    calls = message.get("tool_calls") or ()
    return [str(call.get("id")) for call in calls if isinstance(call, dict)]


def is_tool_result(message: Message) -> bool:
    """True for a ``tool`` message (the result of a tool call)."""
    return message.get("role") == "tool"


def is_user(message: Message) -> bool:
    """True for a ``user`` message: the start of a user-turn group."""
    return message.get("role") == "user"


def user_turn_starts(messages: Sequence[Message], start: int = 0) -> list[int]:
    """Indexes (``>= start``) of the ``user`` messages, i.e. where each user turn begins."""
    return [i for i in range(start, len(messages)) if messages[i].get("role") == "user"]


def units(
    messages: Sequence[Message], start: int = 0, end: int | None = None
) -> list[tuple[int, int]]:
    """Split ``messages[start:end]`` into ``(begin, stop)`` units that must stay whole.

    An assistant message with ``tool_calls`` absorbs every consecutive ``tool`` message
    after it; every other message is its own unit.
    """
    stop = len(messages) if end is None else end
    spans: list[tuple[int, int]] = []
    i = start
    while i < stop:
        j = i + 1
        if messages[i].get("tool_calls"):
            while j < stop and messages[j].get("role") == "tool":
                j += 1
        spans.append((i, j))
        i = j
    return spans


def safe_cut(messages: Sequence[Message], index: int) -> int:
    """The first index ``>= index`` where a cut keeps every tool result with its call.

    A cut is unsafe exactly when it lands on a ``tool`` message (its call lies before the
    cut), so the cut moves forward past those.
    """
    i = max(0, index)
    while i < len(messages) and messages[i].get("role") == "tool":
        i += 1
    return i


def pair_problems(messages: Sequence[Message]) -> list[str]:
    """Every broken tool pairing in ``messages``, one readable line each (empty when sound).

    Reports a ``tool`` result whose ``tool_call_id`` no preceding assistant in its unit
    issued, and an assistant ``tool_calls`` entry with no result in its unit.
    """
    problems: list[str] = []
    for begin, stop in units(messages):
        head = messages[begin]
        issued = call_ids(head)
        if head.get("role") == "tool":
            problems.append(
                f"message {begin}: tool result {head.get('tool_call_id')!r} has no call"
            )
            continue
        answered = [str(messages[k].get("tool_call_id")) for k in range(begin + 1, stop)]
        for k, call_id in enumerate(answered, start=begin + 1):
            if call_id not in issued:
                problems.append(f"message {k}: tool result {call_id!r} has no call")
        for call_id in issued:
            if call_id not in answered:
                problems.append(f"message {begin}: tool call {call_id!r} has no result")
    return problems
