"""``sliding_window``: keep the last N user turns that fit a token budget; no model call.

Both bounds apply by default: at most ``keep_turns`` (10, spec 000) turns *and* the
request's history hard limit (``max_tokens: limit``), so the window itself holds the
budget at any context window and the final trim stays a backstop (docs/spec-decisions.md).
Cuts fall only at user-turn starts, so tool groups are never split; the newest user turn
is kept unless it alone is over the token budget. Skill blocks in the dropped turns stay
as retained system rows.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from pydantic import ConfigDict, Field

from mas.runtime.context import ContextBudget, History
from mas.runtime.protocols import BindContext, ManagedHistory, SummaryEngine

from ._base import FoldingManager
from ._params import (
    TOKEN_BOUND_HELP,
    RecallFields,
    TokenBound,
    TrimmerParams,
    budget_settings,
    token_limit,
)


class SlidingWindowParams(RecallFields):
    """Params of ``sliding_window``."""

    model_config = ConfigDict(extra="forbid")

    keep_turns: int | None = Field(
        default=10, ge=1, description="User turns kept; null = no turn limit."
    )
    max_tokens: TokenBound = Field(default="limit", description=TOKEN_BOUND_HELP)
    trimmer: TrimmerParams = Field(default_factory=TrimmerParams)


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
        limit = token_limit(self.params.max_tokens, budget)
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
            # Even the newest turn is dropped when it alone is over: what the window does
            # not hold is left out on purpose (counted dropped), not left for the trim.
            cut = starts[lo] if lo < len(starts) else history.end
        if cut > start:
            self.fold(history, cut, summary=None)
            self.state.compactions += 1
        return self.view(history)
