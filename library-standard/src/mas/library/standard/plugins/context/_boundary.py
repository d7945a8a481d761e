"""Where ``summarising`` folds: at the turn boundary, deep enough (issue 22, DESIGN §13).

A fold at a turn boundary leaves room for what the turn will add in flight — learned
from the peak working memory of the recent turns — so that tool results arriving
mid-turn rarely force a second fold; mid-turn folds stay possible (nothing is cut) and
are counted. Where one summarizer call holds less than the agent's history, a fold
takes the next turns that still fit its last call, so no call goes half empty.

Where one call holds less than the history at hand, a fold may also end inside a
turn, at any :func:`fold_points` position: before a message that is not a tool result,
so a tool call always stays with its results. A turn larger than a summarizer call is
otherwise folded whole, or not at all, and its fold's last call is as empty as the turn
is badly aligned with the calls.
"""

from __future__ import annotations

from mas.runtime.context import ContextBudget, History
from mas.runtime.context.groups import is_tool_result
from mas.runtime.protocols import SummaryEngine, SummaryRequest

from ._compaction import Compacting
from .identifier_check import SummaryFit
from .summarizer import Packing

INFLIGHT_TURNS = 8
"""Recent turns whose in-flight peak (working memory) a boundary fold leaves room for."""


def fold_points(history: History, start: int, stop: int) -> list[int]:
    """Absolute numbers in ``[start, stop)`` where a fold may end: each message that is
    not a tool result (the start of a tool group, a reply, a user turn)."""
    return [i for i in range(max(start, history.base), min(stop, history.end))
            if not is_tool_result(history.message(i))]


class BoundaryFolding(Compacting):
    """The in-flight learning and fold packing of ``summarising`` (a base class)."""

    def _track_inflight(self, history: History, working_memory: int) -> None:
        """Learn how much a turn grows in flight: the peak working memory of each turn.

        A turn ends when committed history grows; its peak joins the last
        :data:`INFLIGHT_TURNS` peaks, whose largest a fold leaves room for.
        """
        st = self.state
        if history.end != st.turn_end:
            if st.turn_end or st.turn_peak:  # not before the first turn
                st.inflight_peaks = [*st.inflight_peaks[1 - INFLIGHT_TURNS :], st.turn_peak]
            st.turn_end, st.turn_peak = history.end, 0
        st.turn_peak = max(st.turn_peak, working_memory)

    def _space(self, limit: int, working_memory: int) -> int:
        """What history may hold so that the rest of this turn fits: ``limit`` less the
        in-flight growth still expected (the largest recent peak less what is already in
        flight), never under half of ``limit``."""
        expected = max(self.state.inflight_peaks, default=0)
        return max(limit - max(0, expected - working_memory), limit // 2)

    def _small_calls(
        self,
        history: History,
        start: int,
        end: int,
        budget: ContextBudget,
        room: int,
        engine: SummaryEngine | None,
    ) -> Packing | None:
        """How folding ``[start, end)`` would fill the summarizer's calls, where one call
        holds less than the agent's history limit: there the calls, not the folds, are
        the cost. ``None`` elsewhere (a larger summarizer window folds as usual, so the
        verbatim tail keeps its recent turns) and when the summarizer cannot say how it
        packs (``packing``)."""
        packing_of = getattr(self.summarizer, "packing", None)
        if not callable(packing_of):
            return None
        request = SummaryRequest(
            messages=history.masked_originals(start, end),
            previous_summary=self.state.summary,
            window=budget.window,
            max_summary_tokens=SummaryFit(room=room, limit=budget.history_hard_limit)
            .text_room(self.estimator),
        )
        packing = packing_of(request, engine)
        if not isinstance(packing, Packing) or packing.room >= budget.history_hard_limit:
            return None
        return packing

    def _packed(
        self,
        history: History,
        start: int,
        end: int,
        budget: ContextBudget,
        room: int,
        engine: SummaryEngine | None,
        *,
        within_turn: bool = False,
    ) -> int:
        """``end`` moved past the next whole turns (with ``within_turn``, messages) that
        fit the summarizer's last call.

        The calls a fold makes are what it costs; a fold whose last call is half empty
        would leave those messages for a call of their own later, so the fold takes them
        now, to the last turn start (or :func:`fold_points` position) that fits — the
        newest committed turn too, when it fits. Unchanged where :meth:`_small_calls`
        says the calls are not the cost.
        """
        packing = self._small_calls(history, start, end, budget, room, engine)
        if packing is None:
            return end
        used = packing.used
        stops = (fold_points(history, end + 1, history.end) if within_turn
                 else history.turn_starts(end + 1))
        for stop in [*stops, history.end]:
            used += sum(packing.cost(m) for m in history.masked_originals(end, stop))
            if used > packing.room:
                break
            end = stop
        return end
