"""``sliding_window``: keep the last N user turns (or a token budget); no model call.

Cuts fall only at user-turn starts, so tool groups are never split, and the newest user
turn is always kept. Skill blocks in the dropped turns stay as retained system rows.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from mas.runtime.context import ContextBudget, History
from mas.runtime.protocols import BindContext, ManagedHistory, SummaryEngine

from ._base import FoldingManager
from ._params import RecallFields, TrimmerParams, budget_settings


class SlidingWindowParams(RecallFields):
    """Params of ``sliding_window``."""

    model_config = ConfigDict(extra="forbid")

    keep_turns: int | None = Field(
        default=10, ge=1, description="User turns kept; null = no turn limit."
    )
    max_tokens: int | Literal["limit"] | None = Field(
        default=None,
        description="History token budget: a positive integer, 'limit' (the history hard "
        "limit), or null for none.",
    )
    trimmer: TrimmerParams = Field(default_factory=TrimmerParams)

    @field_validator("max_tokens")
    @classmethod
    def _positive(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and value <= 0:
            raise ValueError(f"must be a positive integer, 'limit' or null (got {value})")
        return value


class SlidingWindowContextManager(FoldingManager):
    """Keeps the newest user turns whole and drops older ones."""

    def __init__(self, params: SlidingWindowParams, ctx: BindContext) -> None:
        super().__init__(budget_settings(params.trimmer), ctx, params.archive_settings())
        self.params = params

    def manage_history(
        self,
        history: History,
        budget: ContextBudget,
        *,
        engine: SummaryEngine | None = None,
        system: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        session_id: str = "",
    ) -> ManagedHistory:
        """Slide the window forward to the newest turns that fit the limits."""
        start = self.live_start(history)
        starts = history.turn_starts(start)
        cut = start
        if self.params.keep_turns is not None and len(starts) > self.params.keep_turns:
            cut = starts[-self.params.keep_turns]
        limit = self._token_limit(budget)
        if limit is not None and starts:
            # What a start keeps only shrinks as the start moves on: bisect for the first
            # that fits (O(log² n) on the prefix sums, not a walk over every turn).
            room = limit - self.rows().total
            lo, hi = bisect_left(starts, cut), len(starts)
            while lo < hi:
                mid = (lo + hi) // 2
                if history.tokens_between(starts[mid], history.end) <= room:
                    hi = mid
                else:
                    lo = mid + 1
            cut = starts[min(lo, len(starts) - 1)]  # the newest turn stays even when over
        if cut > start:
            self.fold(history, cut, summary=None)
            self.state.compactions += 1
        return self.view(history)

    def _token_limit(self, budget: ContextBudget) -> int | None:
        if self.params.max_tokens == "limit":
            return budget.history_hard_limit
        return self.params.max_tokens if isinstance(self.params.max_tokens, int) else None
