"""Committed conversation history with cached estimates and incremental boundaries.

A session appends each finished turn to a :class:`History`. Appending estimates only the
new message and updates the prefix sums (:class:`~mas.runtime.context.prefix_sums.PrefixSums`,
O(log n) to append, replace or sum a range), the list of user-turn starts and the list of
messages carrying skill blocks, so bounding a 10,000-message history costs work
proportional to what changed. Positions are *absolute*: message ``i`` keeps number ``i``
even after a context manager's write-back drops the folded prefix (``base`` moves up).

Pruning replaces a message in place; the first version of every replaced message is kept
as its *original* until the message is dropped, so a summary is written from what was
really said rather than from a pruned placeholder (DESIGN §11).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Any

from mas.runtime.context.estimate import DEFAULT_ESTIMATOR, TokenEstimator, message_tokens
from mas.runtime.context.history_view import HistoryView
from mas.runtime.context.prefix_sums import PrefixSums
from mas.runtime.context.skills import has_skill, mask_skills
from mas.runtime.protocols import Message


class History:
    """Committed messages, their token estimates, and where turns and skills start.

    :param messages: initial messages (plain OpenAI chat dicts).
    :param estimator: the token estimator used for every message.
    :param base: absolute number of the first message (for restored sessions).
    """

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        estimator: TokenEstimator = DEFAULT_ESTIMATOR,
        base: int = 0,
    ) -> None:
        self.estimator = estimator
        self._base = base
        self._messages: list[Message] = []
        self._shared = False  # a HistoryView holds _messages: edit a copy, never it
        self._sums = PrefixSums()
        self._user_starts: list[int] = []
        self._skill_rows: list[int] = []
        self._originals: dict[int, Message] = {}
        # Replaced messages whose original carried a skill block (their rows may not now).
        self._skilled_originals: set[int] = set()
        self.extend(messages)

    # -- reading ---------------------------------------------------------------------

    @property
    def messages(self) -> list[Message]:
        """The live messages, oldest first. Read-only by convention: mutate via methods."""
        return self._messages

    @property
    def base(self) -> int:
        """Absolute number of ``messages[0]``."""
        return self._base

    @property
    def end(self) -> int:
        """Absolute number one past the last message."""
        return self._base + len(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def total_tokens(self) -> int:
        """Estimated tokens of every live message (O(1))."""
        return self._sums.total

    def message(self, index: int) -> Message:
        """The message with absolute number ``index``."""
        return self._messages[index - self._base]

    def tokens_of(self, index: int) -> int:
        """Cached estimate of the message with absolute number ``index``."""
        return self._sums.value(index - self._base)

    def tokens_between(self, start: int, stop: int) -> int:
        """Estimated tokens of absolute range ``[start, stop)`` (clamped to the live range)."""
        size = len(self._messages)
        lo, hi = start - self._base, stop - self._base
        # Several calls a request: clamped without ``end``, min() and max(), each a call
        # that costs more than the comparison.
        lo = 0 if lo < 0 else size if lo > size else lo
        hi = 0 if hi < 0 else size if hi > size else hi
        return self._sums.between(lo, hi)

    def slice(self, start: int, stop: int | None = None) -> list[Message]:
        """Messages of absolute range ``[start, stop)``."""
        lo = max(start, self._base) - self._base
        hi = len(self._messages) if stop is None else max(stop, self._base) - self._base
        return self._messages[lo:hi]

    def after(self, start: int, prefix: Sequence[Message] = ()) -> HistoryView:
        """``prefix`` followed by the messages from absolute ``start`` on, without a copy.

        The view keeps reading what the history held when it was taken: appends land past
        its end, and an edit or a drop in place first gives the history a new list
        (:mod:`~mas.runtime.context.history_view`).
        """
        self._shared = True
        size = len(self._messages)
        return HistoryView(prefix, self._messages, min(max(start - self._base, 0), size), size)

    def token_slice(self, start: int, stop: int | None = None) -> list[int]:
        """Cached estimates of the messages of absolute range ``[start, stop)``."""
        lo = max(start, self._base) - self._base
        hi = len(self._messages) if stop is None else max(stop, self._base) - self._base
        return self._sums.values(lo, hi)

    def original(self, index: int) -> Message:
        """The message at absolute ``index`` as it was committed, before any pruning."""
        found = self._originals.get(index)
        return found if found is not None else self._messages[index - self._base]

    def originals(self, start: int, stop: int) -> list[Message]:
        """:meth:`original` of every message of absolute range ``[start, stop)``."""
        found = self.slice(start, stop)
        if self._originals:
            lo, hi = max(start, self._base), min(stop, self.end)
            # Whichever is fewer is walked: the range, or the messages replaced so far.
            if hi - lo < len(self._originals):
                replaced = ((i, self._originals[i]) for i in range(lo, hi)
                            if i in self._originals)
            else:
                replaced = ((i, m) for i, m in self._originals.items() if lo <= i < hi)
            for index, message in replaced:
                found[index - lo] = message
        return found

    def masked_originals(self, start: int, stop: int) -> list[Message]:
        """:meth:`originals` of ``[start, stop)`` with skill blocks masked (what a summary
        is written from). Only the messages that may carry one are read: those marked as
        carrying one, and those whose original carried one before a replacement — a cold
        backlog of thousands of messages is not scanned again."""
        found = self.originals(start, stop)
        lo = max(start, self._base)
        suspects = set(self.skill_indexes(lo, stop))
        suspects.update(i for i in self._skilled_originals if lo <= i < stop)
        for index in suspects:
            found[index - lo] = mask_skills(found[index - lo])
        return found

    def carries_skill(self, index: int) -> bool:
        """Whether the message at absolute ``index``, as committed, holds a skill block
        (from the history's own record: no text is read)."""
        return bool(self.skill_indexes(index, index + 1)) or index in self._skilled_originals

    def turn_starts(self, start: int | None = None) -> list[int]:
        """Absolute numbers of the ``user`` messages at or after ``start``."""
        lo = self._base if start is None else start
        return self._user_starts[bisect_left(self._user_starts, lo) :]

    def skill_indexes(self, start: int, stop: int) -> list[int]:
        """Absolute numbers in ``[start, stop)`` of messages that carry a skill block."""
        rows = self._skill_rows
        return rows[bisect_left(rows, start) : bisect_left(rows, stop)]

    # -- changing --------------------------------------------------------------------

    def append(self, message: Message) -> None:
        """Add one committed message (one estimate, an O(log n) prefix-sum step).

        A message sent in flight keeps the estimate its requests made
        (:func:`~mas.runtime.context.estimate.message_tokens`).
        """
        index = self.end
        tokens = message_tokens(self.estimator, message)
        self._messages.append(message)
        self._sums.append(tokens)
        if message.get("role") == "user":
            self._user_starts.append(index)
        if has_skill(message):
            self._skill_rows.append(index)

    def extend(self, messages: Iterable[Message]) -> None:
        """Append several messages in order (a committed turn, or a restored or cold
        history, in one pass; in-flight messages keep their estimates as in :meth:`append`)."""
        added = list(messages)
        first = self.end
        tokens = [message_tokens(self.estimator, m) for m in added]
        self._messages.extend(added)
        self._sums.extend(tokens)
        self._user_starts.extend(
            first + k for k, m in enumerate(added) if m.get("role") == "user"
        )
        self._skill_rows.extend(first + k for k, m in enumerate(added) if has_skill(m))

    def replace(self, index: int, message: Message) -> None:
        """Swap the message at absolute ``index`` for ``message`` (same role expected).

        Used by pruning, which never changes message count or order: O(log n).
        """
        local = index - self._base
        old = self._messages[local]
        if old.get("role") != message.get("role"):
            raise ValueError(
                f"replace({index}): role {message.get('role')!r} differs from {old.get('role')!r}"
            )
        tokens = self.estimator.message(message)
        if index not in self._originals:
            self._originals[index] = old
            if self.skill_indexes(index, index + 1):
                self._skilled_originals.add(index)
        if self._shared:
            self._messages, self._shared = list(self._messages), False
        self._messages[local] = message
        self._sums.set(local, tokens)
        was_skill = bool(self.skill_indexes(index, index + 1))
        if was_skill != has_skill(message):
            if was_skill:
                self._skill_rows.remove(index)
            else:
                self._skill_rows.insert(bisect_left(self._skill_rows, index), index)

    def drop_before(self, index: int) -> int:
        """Forget every message numbered below ``index`` (write-back of a folded prefix).

        :return: how many messages were dropped.
        """
        count = min(max(index - self._base, 0), len(self._messages))
        if not count:
            return 0
        # A new list, not ``del``: a view taken before still reads the dropped messages.
        self._messages, self._shared = self._messages[count:], False
        self._sums.drop_first(count)
        self._base += count
        del self._user_starts[: bisect_left(self._user_starts, self._base)]
        del self._skill_rows[: bisect_left(self._skill_rows, self._base)]
        if self._originals:
            self._originals = {i: m for i, m in self._originals.items() if i >= self._base}
            self._skilled_originals = {i for i in self._skilled_originals if i >= self._base}
        return count

    # -- saving ----------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """A JSON-serializable snapshot: ``{"base": int, "messages": [...]}``.

        ``originals`` (absolute number as a string → message) is present when pruning
        replaced messages.
        """
        state: dict[str, Any] = {"base": self._base, "messages": list(self._messages)}
        if self._originals:
            state["originals"] = {str(i): m for i, m in sorted(self._originals.items())}
        return state

    @classmethod
    def from_state(
        cls, state: dict[str, Any], *, estimator: TokenEstimator = DEFAULT_ESTIMATOR
    ) -> History:
        """Rebuild a history saved with :meth:`to_state` (estimates are recomputed)."""
        history = cls(
            state.get("messages", []), estimator=estimator, base=int(state.get("base", 0))
        )
        for key, message in (state.get("originals") or {}).items():
            if history.base <= int(key) < history.end:
                history._originals[int(key)] = message
                if has_skill(message):
                    history._skilled_originals.add(int(key))
        return history
