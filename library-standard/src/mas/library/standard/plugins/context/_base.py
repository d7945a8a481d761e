"""What the standard context managers share: fold bookkeeping, the managed view, state.

A manager *folds* a prefix of committed history: the summary (if any) stands in for it,
each skill's latest block from it is retained as its own system row, and
``commit(history)`` later drops it from the committed history (write-back). Positions are
the absolute message numbers of :class:`~mas.runtime.context.History`, so calling
``manage_history`` several times within a turn, or saving and restoring a session, never
folds the same messages twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple, overload

from mas.runtime.context import (
    DEFAULT_ESTIMATOR,
    BudgetSettings,
    FoldLedger,
    History,
    Tally,
    TokenEstimator,
    latest_blocks,
    skill_row,
)
from mas.runtime.context.archive import Archive
from mas.runtime.events import Event
from mas.runtime.protocols import ArchiveSettings, BindContext, ManagedHistory, Message

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"
"""Opens the summary block so the model knows what the row is."""


def summary_row(text: str) -> Message:
    """The summary block placed first in managed history."""
    return {"role": "system", "content": SUMMARY_PREFIX + text}


class Rows(NamedTuple):
    """The rows a manager puts before the live history, with their estimates."""

    messages: list[Message]
    tokens: list[int]
    total: int
    summary_rows: int
    skill_rows: tuple[int, ...]


class ViewTokens(Sequence[int]):
    """The managed view's per-message estimates, read from the history when asked.

    Steady-state requests never read them (the final trim does only when over budget),
    so the view does not copy 10,000 estimates on every call.
    """

    def __init__(self, rows: list[int], history: History, start: int) -> None:
        self._rows, self._history, self._start = rows, history, start
        self._end = history.end

    def __len__(self) -> int:
        return len(self._rows) + self._end - self._start

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))] if index.step not in (
                None, 1) else self._range(*index.indices(len(self))[:2])
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        rows = len(self._rows)
        return self._rows[index] if index < rows else self._history.tokens_of(
            self._start + index - rows)

    def _range(self, lo: int, hi: int) -> list[int]:
        rows = len(self._rows)
        head = self._rows[lo:hi]
        a, b = max(lo - rows, 0) + self._start, max(hi - rows, 0) + self._start
        return head + (self._history.token_slice(a, b) if b > a else [])


@dataclass
class FoldState:
    """A manager's saved state (JSON-serializable through :func:`dataclasses.asdict`).

    :ivar folded_through: absolute number of the first message not folded.
    :ivar summary: the running summary, ``None`` when there is none.
    :ivar skills: each retained skill's latest block, by name, in activation order.
    :ivar compaction_in_progress: set before ``compaction.start``, cleared after
        ``compaction.stop``; a failed or crashed compaction leaves it set (spec 002).
    :ivar summary_count: summaries written so far.
    :ivar compactions: compactions completed so far (prune-only ones included).
    :ivar last_compaction_metadata: metadata of the latest completed compaction.
    :ivar baseline_tokens: managed-history tokens right after the latest compaction; the
        summary is reused until history grows ``hysteresis_ratio`` past this baseline too.
    :ivar summarized_messages: folded messages the running summary stands in for.
    :ivar summarized_tokens: their estimated tokens when they were folded.
    :ivar dropped_messages: folded messages with no summary standing in for them.
    :ivar dropped_tokens: their estimated tokens when they were folded.
    :ivar identifiers: identifier-check totals over the session (``identifiers``,
        ``found``, ``repaired``, ``appended``, ``missing``).
    :ivar summary_identifiers: the identifiers the running summary was checked to quote
        (the next check starts from them instead of re-reading the summary); ``None`` when
        unknown (no summary, or it was written unchecked).
    :ivar summary_identifier_ranks: their ranks, as the fold that first saw each ranked
        it (0 said by people ... 3 tool output): what the summary clip keeps longest.
    :ivar in_turn_compactions: compactions made while tool results were in flight (the
        rest happened at a turn boundary).
    :ivar inflight_peaks: the peak in-flight tokens (working memory) of recent turns.
    :ivar turn_peak: the current turn's peak so far.
    :ivar turn_end: committed history's end when the current turn began.
    :ivar prune_scanned: absolute number up to which committed messages were examined
        for pruning (each is examined once).
    :ivar prune_candidates: absolute numbers of the tool results over the pruning floor
        that a later phase may still shrink.
    :ivar tail: the verbatim tail the latest fold kept, for a manager that keeps one
        (``keep_turns`` asked, ``turns``, ``messages``, ``tokens``, ``token_bound``);
        empty before the first.
    """

    folded_through: int = 0
    summary: str | None = None
    skills: dict[str, str] = field(default_factory=dict)
    compaction_in_progress: bool = False
    summary_count: int = 0
    compactions: int = 0
    last_compaction_metadata: dict[str, Any] | None = None
    baseline_tokens: int = 0
    summarized_messages: int = 0
    summarized_tokens: int = 0
    dropped_messages: int = 0
    dropped_tokens: int = 0
    identifiers: dict[str, int] = field(default_factory=dict)
    summary_identifiers: list[str] | None = None
    summary_identifier_ranks: dict[str, int] = field(default_factory=dict)
    in_turn_compactions: int = 0
    inflight_peaks: list[int] = field(default_factory=list)
    turn_peak: int = 0
    turn_end: int = 0
    prune_scanned: int = 0
    prune_candidates: list[int] = field(default_factory=list)
    tail: dict[str, int] = field(default_factory=dict)

    def ledger(self) -> FoldLedger:
        """What has been folded so far, summarized or dropped."""
        return FoldLedger(
            Tally(self.summarized_messages, self.summarized_tokens),
            Tally(self.dropped_messages, self.dropped_tokens),
        )


class FoldingManager:
    """Base class of the standard context managers (not registered itself)."""

    def __init__(
        self,
        settings: BudgetSettings,
        ctx: BindContext,
        archive_settings: ArchiveSettings | None = None,
        estimator: TokenEstimator = DEFAULT_ESTIMATOR,
    ) -> None:
        self.budget_settings = settings
        self.archive_settings = archive_settings or ArchiveSettings()
        self.archive: Archive | None = None
        self.runtime = ctx.runtime
        self.agent_name = ctx.agent_name
        self.pin_activated = ctx.pin_activated
        self.estimator = estimator
        self.state = FoldState()
        self._rows: Rows | None = None
        self._ledger: tuple[tuple[int, int, int, int], FoldLedger] | None = None

    # -- the managed view ------------------------------------------------------------

    def live_start(self, history: History) -> int:
        """Absolute number of the first committed message not yet folded."""
        return max(self.state.folded_through, history.base)

    def rows(self) -> Rows:
        """The leading rows (summary block, sent skill rows), cached until the state changes."""
        if self._rows is None:
            rows: list[Message] = []
            if self.state.summary is not None:
                rows.append(summary_row(self.state.summary))
            summary_rows = len(rows)
            skill_indexes: list[int] = []
            if not self.pin_activated:
                for block in self.state.skills.values():
                    skill_indexes.append(len(rows))
                    rows.append(skill_row(block))
            tokens = [self.estimator.message(row) for row in rows]
            self._rows = Rows(rows, tokens, sum(tokens), summary_rows, tuple(skill_indexes))
        return self._rows

    def managed_tokens(self, history: History, start: int | None = None) -> int:
        """Estimated tokens of the managed view (rows plus live messages)."""
        begin = self.live_start(history) if start is None else start
        return self.rows().total + history.tokens_between(begin, history.end)

    def view(
        self,
        history: History,
        *,
        compacted: bool = False,
        llm_called: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> ManagedHistory:
        """The managed history: leading rows, then every live committed message."""
        start = self.live_start(history)
        rows = self.rows()
        return ManagedHistory(
            messages=history.after(start, rows.messages),
            tokens=rows.total + history.tokens_between(start, history.end),
            summary_rows=rows.summary_rows,
            skill_rows=rows.skill_rows,
            compacted=compacted,
            llm_called=llm_called,
            metadata=metadata,
            message_tokens=ViewTokens(rows.tokens, history, start),
            ledger=self._current_ledger(),
        )

    def _current_ledger(self) -> FoldLedger:
        """:meth:`FoldState.ledger`, built again only when its numbers change: every view
        carries one, and they change only when the manager folds (ledgers are frozen)."""
        st = self.state
        key = (st.summarized_messages, st.summarized_tokens, st.dropped_messages,
               st.dropped_tokens)
        if self._ledger is None or self._ledger[0] != key:
            self._ledger = (key, st.ledger())
        return self._ledger[1]

    # -- folding ---------------------------------------------------------------------

    def attach_archive(self, archive: Archive) -> None:
        """Store the original of every message folded from now on in ``archive``."""
        self.archive = archive

    def retained_after_fold(self, history: History, start: int, stop: int) -> dict[str, str]:
        """The retained skills once ``[start, stop)`` is folded (state left unchanged)."""
        found = dict(self.state.skills)
        return latest_blocks(
            (history.message(i) for i in history.skill_indexes(start, stop)), found
        )

    def fold(
        self, history: History, stop: int, *, summary: str | None, unread: int = 0
    ) -> None:
        """Fold every live message before ``stop``; ``summary`` replaces the running one.

        :param unread: how many of the oldest folded messages the summary was written
            without reading: counted as dropped, not summarized.
        """
        start = self.live_start(history)
        st = self.state
        if summary is None and st.summarized_messages:
            # No summary stands in for what the old one covered any more.
            st.dropped_messages += st.summarized_messages
            st.dropped_tokens += st.summarized_tokens
            st.summarized_messages = st.summarized_tokens = 0
        if stop > start:
            if self.archive is not None:
                self.archive.add(start, history.originals(start, stop))
            count, tokens = stop - start, history.tokens_between(start, stop)
            unread = min(unread, count) if summary is not None else 0
            skipped = history.tokens_between(start, start + unread)
            st.dropped_messages += count if summary is None else unread
            st.dropped_tokens += tokens if summary is None else skipped
            if summary is not None:
                st.summarized_messages += count - unread
                st.summarized_tokens += tokens - skipped
            st.skills = self.retained_after_fold(history, start, stop)
            st.folded_through = stop
        st.summary = summary
        self._rows = None

    def commit(self, history: History) -> None:
        """Write-back: drop the folded prefix from the committed history."""
        history.drop_before(self.state.folded_through)

    # -- state and events ------------------------------------------------------------

    @property
    def last_compaction_metadata(self) -> dict[str, Any] | None:
        """Metadata of the latest completed compaction, ``None`` before the first."""
        return self.state.last_compaction_metadata

    @property
    def compaction_in_progress(self) -> bool:
        """The spec-002 crash marker: a compaction started and did not finish cleanly."""
        return self.state.compaction_in_progress

    def to_state(self) -> dict[str, Any]:
        """The manager's state as JSON-serializable data."""
        return asdict(self.state)

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore state saved by :meth:`to_state`."""
        self.state = FoldState(**state)
        self._rows = None

    def emit(self, name: str, data: dict[str, Any], session_id: str) -> None:
        """Emit a runtime event carrying the agent name."""
        self.runtime.emit(Event(name, {"agent_name": self.agent_name, **data}, session_id))
