"""Tool-result pruning: free, in place, never changes message count or order.

Spec 002 prunes oversized tool results before any model call is considered
(``max_result_chars``); spec 004 adds two position-based phases over old results —
soft trim (keep ``head_chars`` and ``tail_chars``) and hard clear (a placeholder) —
guarded by ``keep_last_assistants``, ``soft_trim_ratio``, ``hard_clear_ratio`` and
``min_prunable_tool_chars``. Oldest results go first, and pruning stops as soon as the
caller's target is met. Results carrying a skill block are never touched.

The *fill* a ratio is compared with is the share of the model window the request would
fill: (fixed costs + managed history) / window.

Which rule comes from where (docs/context.md, "Tool-result pruning"): the cap
(``max_result_chars``, 8,192 characters) is spec 002's and runs when a compaction starts,
before any summarizer call; soft trim and hard clear are spec 004's and run on every
request once the fill reaches their ratio, independently of summarization
(:meth:`ToolResultPruner.phases_pass`). ``min_prunable_tool_chars`` is a hard floor for
all of them, judged on the result as it was committed: a result pruned once never
becomes eligible for more by having been shortened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from mas.runtime.context import History, shorten_middle
from mas.runtime.protocols import Message


class SoftTrimParams(BaseModel):
    """``pruning.soft_trim``: which results are trimmed and how much is kept."""

    model_config = ConfigDict(extra="forbid")

    max_chars: int = Field(default=4000, ge=1, description="Results longer than this are trimmed.")
    head_chars: int = Field(default=1500, ge=0, description="Characters kept from the start.")
    tail_chars: int = Field(default=1500, ge=0, description="Characters kept from the end.")


class HardClearParams(BaseModel):
    """``pruning.hard_clear``: replace whole old results with a placeholder."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Run the hard-clear phase.")
    placeholder: str = Field(
        default="[Old tool result content cleared]", description="Text left in place."
    )


class PruningParams(BaseModel):
    """``pruning``: how old tool results are shrunk, on every request at the fill ratios
    and, when a compaction starts, before any summarizer call."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(
        default=True,
        description="Prune old tool results: on every request at the fill ratios, and when "
        "a compaction starts.",
    )
    max_result_chars: int | None = Field(
        default=8192,
        ge=1,
        description="Old results longer than this are cut to head and tail first (spec 002).",
    )
    keep_last_assistants: int = Field(
        default=3,
        ge=0,
        description="Results after the last N assistant messages are never pruned.",
    )
    soft_trim_ratio: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="Soft trim runs once the request fills this share of the window (0-1).",
    )
    hard_clear_ratio: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Hard clear runs once the request fills this share of the window (0-1).",
    )
    min_prunable_tool_chars: int = Field(
        default=4000,
        ge=0,
        description="Results this long or shorter, as committed, are never pruned by any phase.",
    )
    soft_trim: SoftTrimParams = Field(default_factory=SoftTrimParams)
    hard_clear: HardClearParams = Field(default_factory=HardClearParams)


@dataclass
class PruneReport:
    """What one pruning pass changed (counts of results and characters)."""

    capped: int = 0
    soft_trimmed: int = 0
    cleared: int = 0
    chars_before: int = 0
    chars_after: int = 0

    @property
    def changed(self) -> int:
        """Results changed by any phase."""
        return self.capped + self.soft_trimmed + self.cleared


class ToolResultPruner:
    """Applies :class:`PruningParams` to a range of a :class:`~mas.runtime.context.History`."""

    def __init__(self, params: PruningParams) -> None:
        self.params = params

    def protected_from(self, history: History, start: int) -> int:
        """First absolute index protected by ``keep_last_assistants`` (``end`` if none)."""
        keep = self.params.keep_last_assistants
        if keep == 0:
            return history.end
        seen = 0
        messages, base = history.messages, history.base  # read directly: this runs per request
        for index in range(history.end - 1, start - 1, -1):
            if messages[index - base].get("role") == "assistant":
                seen += 1
                if seen == keep:
                    return index
        return start

    def eligible(self, history: History, index: int) -> bool:
        """The result at ``index`` may be pruned: a tool result without a skill block whose
        committed text is over ``min_prunable_tool_chars`` (the hard floor)."""
        original = history.original(index)
        content = original.get("content")
        # The length first, and the history's own record of skills rather than a read of
        # the whole text (issue 22: a cold bound asks this of 10,000 messages).
        return (
            isinstance(content, str)
            and len(content) > self.params.min_prunable_tool_chars
            and original.get("role") == "tool"
            and not history.carries_skill(index)
        )

    def candidates(self, history: History, start: int, stop: int) -> list[int]:
        """Absolute indexes in ``[start, stop)`` that some phase would shrink, oldest first."""
        return self.changeable(history, [i for i in range(start, stop)
                                         if self.eligible(history, i)])

    def changeable(self, history: History, eligible: list[int]) -> list[int]:
        """Of ``eligible`` indexes (already :meth:`eligible`), those some phase would
        shrink, in order (none when pruning is off)."""
        if not self.params.enabled:
            return []
        return [i for i in eligible if self._would_change(history.message(i)["content"])]

    def _would_change(self, text: str) -> bool:
        changes = [self._cap(text), self._soft_trim(text)]
        if self.params.hard_clear.enabled:
            changes.append(self._clear(text))
        return any(new is not None and len(new) < len(text) for new in changes)

    def phases_pass(
        self, history: History, candidates: list[int], fill: Callable[[int], float]
    ) -> PruneReport:
        """Spec 004's soft trim and hard clear over ``candidates``, each while the fill is
        at or over its ratio, oldest first (the cap is left to compaction).

        :param fill: the fill with that many tokens fewer (``fill(0)``: as it is now).
            When clearing every candidate would still leave the fill at the hard-clear
            ratio, each one ends cleared: trimming it first would be work undone at once
            (a cold bound of thousands of old results), so the soft trim is skipped.
        """
        p = self.params
        placeholder = history.estimator.message({"role": "tool",
                                                 "content": p.hard_clear.placeholder})
        doomed = p.hard_clear.enabled and fill(sum(
            history.tokens_of(i) - placeholder for i in candidates)) >= p.hard_clear_ratio
        return self.prune(history, candidates, satisfied=lambda: False, fill=lambda: fill(0),
                          cap=False, soft_trim=not doomed)

    def prune(
        self,
        history: History,
        indexes: list[int],
        *,
        satisfied: Callable[[], bool],
        fill: Callable[[], float],
        cap: bool = True,
        soft_trim: bool = True,
    ) -> PruneReport:
        """Prune ``indexes`` in place, phase by phase, until ``satisfied()``.

        :param cap: run spec 002's cap first (compaction does; the per-request pass not).
        :param soft_trim: run the soft trim (:meth:`phases_pass` skips one undone at once).
        """
        report = PruneReport()
        p = self.params
        phases: list[tuple[str, Callable[[str], str | None]]] = []
        if cap and p.max_result_chars is not None:
            phases.append(("capped", self._cap))
        if soft_trim:
            phases.append(("soft_trimmed", self._soft_trim))
        if p.hard_clear.enabled:
            phases.append(("cleared", self._clear))
        for counter, change in phases:
            ratio = {"soft_trimmed": p.soft_trim_ratio, "cleared": p.hard_clear_ratio}.get(counter)
            for index in indexes:
                if satisfied() or (ratio is not None and fill() < ratio):
                    break
                text = history.message(index)["content"]
                new = change(text)
                if new is None or len(new) >= len(text):
                    continue
                report.chars_before += len(text)
                report.chars_after += len(new)
                history.replace(index, {**history.message(index), "content": new})
                setattr(report, counter, getattr(report, counter) + 1)
        return report

    def _cap(self, text: str) -> str | None:
        limit = self.params.max_result_chars
        return shorten_middle(text, limit) if limit is not None and len(text) > limit else None

    def _soft_trim(self, text: str) -> str | None:
        st = self.params.soft_trim
        if len(text) <= st.max_chars:
            return None
        return shorten_middle(text, st.max_chars, head=st.head_chars, tail=st.tail_chars)

    def _clear(self, text: str) -> str | None:
        placeholder = self.params.hard_clear.placeholder
        return placeholder if text != placeholder else None

    def prune_messages(
        self, messages: list[Message], *, window: int, fixed: int = 0
    ) -> list[Message]:
        """A pruned copy of a plain message list (all phases whose ratio the fill reaches).

        For callers outside a context manager; ``keep_last_assistants`` still applies.
        """
        history = History(messages)
        stop = self.protected_from(history, 0)
        self.prune(
            history,
            self.candidates(history, 0, stop),
            satisfied=lambda: False,
            fill=lambda: (fixed + history.total_tokens) / window,
        )
        return list(history.messages)

