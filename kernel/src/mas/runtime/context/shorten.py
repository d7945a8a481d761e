"""Shorten a long text to its head and tail with a marker in between.

Used by the final trimmer (a single tool result larger than the history budget) and by
tool-result pruning (soft trim). The marker says how much was left out.
"""

from __future__ import annotations


def omission_marker(omitted: int) -> str:
    """The marker put where ``omitted`` characters were removed."""
    return f"\n[... {omitted} characters omitted ...]\n"


def shorten_middle(
    text: str, max_chars: int, *, head: int | None = None, tail: int | None = None
) -> str:
    """``text`` cut to about ``max_chars``: its head, a marker, its tail.

    :param max_chars: target length including the marker; texts already that short come
        back unchanged.
    :param head: characters kept from the start (default: half of what the marker leaves).
    :param tail: characters kept from the end (default: the rest).
    """
    if len(text) <= max_chars:
        return text
    if head is None or tail is None:
        room = max(0, max_chars - len(omission_marker(len(text))))
        head = room - room // 2 if head is None else head
        tail = room // 2 if tail is None else tail
    head, tail = max(0, head), max(0, tail)
    if head + tail >= len(text):
        return text
    omitted = len(text) - head - tail
    return text[:head] + omission_marker(omitted) + (text[len(text) - tail :] if tail else "")
