"""``stack``: the full history, optionally capped to the last ``max_messages`` messages.

The cut moves forward past tool results so no result loses its call, and never passes
the newest user turn. No model call. Skill blocks in dropped messages stay as retained
system rows.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from mas.runtime.context import ContextBudget, History, safe_cut
from mas.runtime.protocols import BindContext, ManagedHistory, SummaryEngine

from ._base import FoldingManager
from ._params import RecallFields, TrimmerParams, budget_settings


class StackParams(RecallFields):
    """Params of ``stack``."""

    model_config = ConfigDict(extra="forbid")

    max_messages: int | None = Field(
        default=None, ge=1, description="Keep at most this many recent messages; null = all."
    )
    trimmer: TrimmerParams = Field(default_factory=TrimmerParams)


class StackContextManager(FoldingManager):
    """Keeps everything, or the newest ``max_messages`` with a pair-safe cut."""

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
        """Cap the history to ``max_messages`` (moving the cut past tool results)."""
        cap = self.params.max_messages
        start = self.live_start(history)
        if cap is not None and history.end - start > cap:
            cut = safe_cut(history.messages, history.end - cap - history.base) + history.base
            starts = history.turn_starts(start)
            if starts:
                cut = min(cut, starts[-1])
            if cut > start:
                self.fold(history, cut, summary=None)
                self.state.compactions += 1
        return self.view(history)
