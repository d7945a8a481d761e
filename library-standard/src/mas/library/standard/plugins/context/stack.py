"""``stack``: the full history, down to the newest messages that fit a token budget.

By default the history hard limit of each request bounds it (``max_tokens: limit``), so
a stack holds the budget itself at any context window and the final trim stays a
backstop (docs/spec-decisions.md); ``max_messages`` caps it by count as well. The cut
moves forward past tool results so no result loses its call; the count cap never passes
the newest user turn, the token bound only when that turn alone is over. No model call.
Skill blocks in dropped messages stay as retained system rows.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from mas.runtime.context import ContextBudget, History, safe_cut
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


class StackParams(RecallFields):
    """Params of ``stack``."""

    model_config = ConfigDict(extra="forbid")

    max_messages: int | None = Field(
        default=None, ge=1, description="Keep at most this many recent messages; null = all."
    )
    max_tokens: TokenBound = Field(default="limit", description=TOKEN_BOUND_HELP)
    trimmer: TrimmerParams = Field(default_factory=TrimmerParams)


class StackContextManager(FoldingManager):
    """Keeps the newest messages within ``max_tokens`` and ``max_messages``, pair-safe."""

    def __init__(self, params: StackParams, ctx: BindContext) -> None:
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
        """Cap the history to its token budget and ``max_messages`` (cut past tool results)."""
        start = cut = self.live_start(history)
        cap = self.params.max_messages
        if cap is not None and history.end - cut > cap:
            cut = self._safe(history, history.end - cap)
            starts = history.turn_starts(start)
            if starts:
                cut = min(cut, starts[-1])
        limit = token_limit(self.params.max_tokens, budget)
        if limit is not None:
            # Past the newest user turn too when it alone is over: what the budget does
            # not hold is left out on purpose (counted dropped), not left for the trim.
            fits = self._first_fitting(history, cut, limit - self.rows().total)
            if fits > cut:
                cut = self._safe(history, fits)
        if cut > start:
            self.fold(history, cut, summary=None)
            self.state.compactions += 1
        return self.view(history)

    @staticmethod
    def _safe(history: History, cut: int) -> int:
        """``cut`` (absolute) moved forward past tool results, so none loses its call."""
        return safe_cut(history.messages, cut - history.base) + history.base

    @staticmethod
    def _first_fitting(history: History, lo: int, room: int) -> int:
        """The first message at or after ``lo`` from which the rest fits ``room`` tokens.

        What a start keeps only shrinks as it moves on: a bisect on the prefix sums, not a
        walk over every message. ``history.end`` when not even the newest one fits.
        """
        hi = history.end
        while lo < hi:
            mid = (lo + hi) // 2
            if history.tokens_between(mid, history.end) <= room:
                hi = mid
            else:
                lo = mid + 1
        return lo
