"""A managed history's messages without copying the committed history (issue 17).

A context manager's view of a request is its leading rows (summary block, retained skill
rows) followed by the live committed messages. Copying 10,000 committed messages into a
new list on every request was a fifth of a steady-state turn, and the assembler copies
them once more into the request it sends. :class:`HistoryView` is that view without the
first copy: the rows, the history's own list and the range it covered when the view was
taken.

It stays what it was when taken. :class:`~mas.runtime.context.History` only ever appends
to a list a view may hold (a view ends where the list ended), and gives itself a new list
before it edits or drops messages in place, so a request kept after the history has grown
still reads the messages it was built from.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain, islice
from typing import overload

from mas.runtime.protocols import Message


class HistoryView(Sequence[Message]):
    """``rows`` followed by ``items[lo:hi]``, read-only.

    :param rows: the leading rows (copied: a handful at most).
    :param items: the committed history's list, shared, never changed through the view.
    :param lo: first position of ``items`` in the view.
    :param hi: one past the last.
    """

    __slots__ = ("_hi", "_items", "_lo", "_rows")

    def __init__(self, rows: Sequence[Message], items: list[Message], lo: int, hi: int) -> None:
        self._rows = list(rows)
        self._items = items
        self._lo = lo
        self._hi = hi

    def __len__(self) -> int:
        return len(self._rows) + self._hi - self._lo

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return self.to_list()[index]
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("HistoryView index out of range")
        rows = len(self._rows)
        return self._rows[index] if index < rows else self._items[self._lo + index - rows]

    def __iter__(self) -> Iterator[Message]:
        return chain(self._rows, islice(self._items, self._lo, self._hi))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HistoryView | list | tuple):
            return len(self) == len(other) and all(
                a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists, so unhashable like them

    def __repr__(self) -> str:
        return f"HistoryView({len(self._rows)} rows + messages [{self._lo}, {self._hi}))"

    def extend_into(self, out: list[Message]) -> None:
        """Append the view's messages to ``out``.

        When the view covers the whole shared list (the usual case: after the write-back
        the live history starts at its base, and nothing was appended since) this is one
        C-level copy of that list; otherwise the range is sliced out first.
        """
        out += self._rows
        if self._lo == 0 and self._hi == len(self._items):
            out += self._items
        else:
            out += self._items[self._lo:self._hi]

    def to_list(self) -> list[Message]:
        """The view's messages as a new list."""
        out: list[Message] = []
        self.extend_into(out)
        return out


def extend_with(out: list[Message], messages: Sequence[Message]) -> None:
    """Append ``messages`` (a list or a :class:`HistoryView`) to ``out`` in one copy."""
    if isinstance(messages, HistoryView):
        messages.extend_into(out)
    else:
        out += messages


__all__ = ["HistoryView", "extend_with"]
