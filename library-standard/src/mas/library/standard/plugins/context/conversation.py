"""``summarising``: the package default context manager (spec 000, spec 002, DESIGN §6).

Under the soft trigger the committed history passes unchanged. Over it: (1) prune old
tool results (free; stop if that is enough), (2) keep a verbatim tail of at most
``keep_turns`` user turns *and* ``tail_tokens`` tokens, and fold everything older into the
running summary through the bound summarizer — built from the original, unpruned
messages, and checked for the identifiers of the folded range before it is committed —
(3) on summarizer failure keep the (pruned) messages, emit ``compaction.exception`` and
leave the crash marker set. After a compaction the summary is reused, and new turns
append verbatim, until the managed history passes ``trigger x (1 + hysteresis_ratio)``.

What does not fit is folded, never left for the final trim to cut: the tail and the
summary's room are sized so that they fit the history limit of the request at hand,
in-flight tool results included (docs/context.md, "Where every message goes").

This module decides when to fold and how much; :mod:`._compaction` carries a compaction
out and reports it.
"""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from typing import Any
from weakref import WeakKeyDictionary

from pydantic import ConfigDict, Field

from mas.runtime.context import ContextBudget, FixedCosts, History
from mas.runtime.protocols import BindContext, ManagedHistory, SummaryEngine
from mas.runtime.runtime import Runtime
from mas.runtime.spec.binding import Binding, bind

from ._base import summary_row
from ._boundary import BoundaryFolding, fold_points
from ._compaction import pruned_counts
from ._params import AutoInt, RecallFields, TriggerParams, TrimmerParams, budget_settings
from .identifier_check import UNRANKED, CheckMode, IdentifierCheck, SummaryFit
from .pruning import PruningParams, ToolResultPruner

log = logging.getLogger(__name__)

MIN_SUMMARY_ROOM = 256
"""The summary block's room is never under this (unless half the history limit is)."""

COVER_PER_TOKEN = 50
"""The summary's room grows by one token per this many tokens it covers (to its cap)."""


_TAIL_WARNED: WeakKeyDictionary[Runtime, set[tuple[str, int]]] = WeakKeyDictionary()
"""The (agent, keep_turns) pairs already warned about, per runtime: a lab binds a fresh
manager for each of its sessions, and one line per session would bury the others."""


class SummarisingParams(RecallFields):
    """Params of ``summarising`` (defaults from spec 000's table)."""

    model_config = ConfigDict(extra="forbid")

    keep_turns: int = Field(
        default=10, ge=0, description="Upper bound on the recent user turns kept verbatim."
    )
    tail_tokens: AutoInt = Field(
        default=None,
        gt=0,
        description="Token bound on the verbatim tail; auto = half the trigger less the "
        "summary's room, capped by the history limit of the request.",
    )
    summary_share: float = Field(
        default=0.125,
        gt=0,
        lt=1,
        description="Share of the trigger the summary block may take (its room) before "
        "it covers anything; the room grows with what the summary covers.",
    )
    summary_max_share: float = Field(
        default=0.25,
        gt=0,
        lt=1,
        description="Share of the trigger the summary's room grows to at most (one token "
        "per 50 covered); never below summary_share.",
    )
    summary_window_share: float = Field(
        default=0.125,
        gt=0,
        le=0.4,
        description="Share of the summarizer's window the grown room stays within: every "
        "call carries the summary in and reserves it out, so a larger room costs calls.",
    )
    identifier_check: CheckMode = Field(
        default="repair",
        description="Check the folded range's identifiers against the summary: repair "
        "(append what is missing, no model call), reask (ask the summarizer once more, "
        "then append), warn (count only), off.",
    )
    identifier_extractor: Binding = Field(
        default_factory=lambda: Binding(type="standard"),
        description="Identifier extractor sub-plugin (kind identifier_extractor).",
    )
    hysteresis_ratio: float = Field(
        default=0.1, ge=0, description="Reuse the summary until history passes trigger x (1 + h)."
    )
    summary_threshold: AutoInt = Field(
        default=None,
        gt=0,
        description="Absolute estimated-history trigger (auto = window-derived); capped.",
    )
    trigger: TriggerParams | None = Field(
        default=None, description="Spec-004 trigger: token_ratio or remaining_tokens."
    )
    trimmer: TrimmerParams = Field(default_factory=TrimmerParams)
    summarizer: Binding = Field(
        default_factory=lambda: Binding(type="llm"), description="Summarizer sub-plugin."
    )
    pruning: PruningParams = Field(default_factory=PruningParams)


class SummarisingContextManager(BoundaryFolding):
    """Keeps recent turns verbatim and folds older ones into a running summary."""

    def __init__(self, params: SummarisingParams, ctx: BindContext) -> None:
        super().__init__(
            budget_settings(
                params.trimmer,
                hysteresis_ratio=params.hysteresis_ratio,
                summary_threshold=params.summary_threshold,
                trigger=params.trigger,
            ),
            ctx,
            params.archive_settings(),
        )
        self.params = params
        self.summarizer = bind("summarizer", params.summarizer, ctx.at("params", "summarizer"))
        self.identifier_check = IdentifierCheck(
            params.identifier_check,
            bind(
                "identifier_extractor",
                params.identifier_extractor,
                ctx.at("params", "identifier_extractor"),
            ),
        )
        self.pruner = ToolResultPruner(params.pruning)
        self._warned_baseline = False

    @property
    def tail(self) -> dict[str, int] | None:
        """The verbatim tail the latest fold kept (``inspect`` shows it); ``None`` before."""
        return dict(self.state.tail) or None

    def check_budget(self, budget: ContextBudget) -> None:
        """At bind: warn when the tail's token bound at ``budget`` holds no turn at all.

        ``keep_turns`` is an upper bound; the tail is bounded by tokens too
        (:meth:`_tail_cap`). Under the smallest exchange (a user message and a reply),
        no turn is ever kept verbatim, whatever the conversation says — so it is said
        now, with the numbers, not discovered in a run's accounting.
        """
        limit = budget.history_hard_limit
        if not self.params.keep_turns or limit <= 0:
            return
        room = self._summary_room(budget, limit, None)
        bound = self._tail_cap(budget, limit, room)
        smallest = self.estimator.message({"role": "user", "content": ""}) + \
            self.estimator.message({"role": "assistant", "content": ""})
        if bound < smallest:
            self._warn_tail(0, bound, budget, room)

    def _warn_tail(self, kept: int, bound: int, budget: ContextBudget, room: int) -> None:
        """``keep_turns`` asked, ``kept`` turns, and why: once per runtime and agent.

        Only for a ``keep_turns`` the manifest sets: the default is an upper bound the
        token bound is meant to tighten (docs/context.md, "When the token bound overrides
        keep_turns").
        """
        if "keep_turns" not in self.params.model_fields_set:
            return
        warned = _TAIL_WARNED.setdefault(self.runtime, set())
        key = (self.agent_name, self.params.keep_turns)
        if key in warned:
            return
        warned.add(key)
        sized = (
            f"tail_tokens {self.params.tail_tokens}"
            if self.params.tail_tokens is not None
            else f"auto: half the trigger {budget.soft_trigger} less the summary's room {room}"
        )
        log.warning(
            "summarising: keep_turns %d asked, %d turn(s) kept verbatim: the tail's token "
            "bound is %d tokens (%s; history limit %d). Set tail_tokens, raise the context "
            "window or lower keep_turns.",
            self.params.keep_turns, kept, bound, sized, budget.history_hard_limit,
        )

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
        """Return history unchanged under the trigger; otherwise prune, then fold.

        Committed history is judged against the budget of a turn boundary: this turn's
        working memory (tool calls and results in flight) is left out of the soft
        trigger, so the summarizer is not called on every in-turn tool step (spec 000).
        The request at hand must still fit: when history plus what is in flight would
        pass the history hard limit, history is folded now rather than cut by the trim.
        """
        boundary = budget
        f = budget.fixed
        if f.working_memory:
            boundary = ContextBudget.compute(
                window=budget.window,
                reserve=budget.reserve,
                fixed=FixedCosts(f.system, f.current_input, 0, f.tools),
                settings=self.budget_settings,
                window_source=budget.window_source,
                reserve_source=budget.reserve_source,
                trigger_exempt=budget.trigger_exempt,
            )
        limit = budget.history_hard_limit
        self._track_inflight(history, budget.fixed.working_memory)
        managed = self._manage(
            history, budget, boundary, engine=engine, system=system, tools=tools,
            session_id=session_id,
        )
        return self._within(managed, limit)

    def _manage(
        self,
        history: History,
        budget: ContextBudget,
        boundary: ContextBudget,
        *,
        engine: SummaryEngine | None,
        system: str | None,
        tools: list[dict[str, Any]] | None,
        session_id: str,
    ) -> ManagedHistory:
        limit = budget.history_hard_limit
        in_flight = budget.fixed.working_memory
        self._prune_phases(history, budget, session_id)
        # At the turn boundary the fold leaves room for what the turn will add in flight,
        # so that a mid-turn fold (counted) is needed only when a turn outgrows the recent
        # ones; mid-turn, only what this request needs triggers one.
        space = self._space(limit, in_flight)
        target = min(self._threshold(boundary), space if not in_flight else limit)
        current = self.view(history)  # a HistoryView: no copy, and its tokens are the estimate
        estimated = current.tokens
        if estimated <= target or limit <= 0:
            # With no room for history at all (the current turn fills the request), a
            # summary could not be sent either: folding now would only spend a call.
            return current
        start = self.live_start(history)
        room = self._summary_room(boundary, limit, engine)
        bound = self._tail_cap(boundary, space, room)
        # Inside a turn only where one summarizer call holds less than the history at
        # hand: with a call that takes the whole fold, a part-turn tail only brings the
        # next fold sooner.
        calls = self._small_calls(history, start, start, budget, room, engine)
        within_turn = calls is not None and calls.room < estimated
        recent = self._recent_start(history, start, bound, within_turn=within_turn)
        self._check_tail(history, start, recent, bound, boundary, room)
        if recent > start:
            recent = self._packed(history, start, recent, budget, room, engine,
                                  within_turn=within_turn)
        fold_end = recent if recent > start else None
        protect = min(recent, self.pruner.protected_from(history, start))
        # The per-request pass above keeps every eligible result of the live history.
        prunable = self.pruner.changeable(
            history, [i for i in self.state.prune_candidates if start <= i < protect])
        if fold_end is None and not prunable:
            return current  # nothing to do; the final trim holds the budget
        managed = self._compact(
            history,
            current,
            budget,
            start,
            fold_end,
            prunable,
            estimated,
            target,
            SummaryFit(room=room, limit=limit),
            engine=engine,
            system=system,
            tools=tools,
            session_id=session_id,
        )
        if fold_end is not None and self.state.folded_through == fold_end:  # it folded
            self.state.tail = {
                "keep_turns": self.params.keep_turns,
                "turns": len(history.turn_starts(fold_end)),
                "messages": history.end - fold_end,
                "tokens": history.tokens_between(fold_end, history.end),
                "token_bound": bound,
            }
        return managed

    def _check_tail(
        self, history: History, start: int, recent: int, bound: int,
        boundary: ContextBudget, room: int,
    ) -> None:
        """Warn (once) when the token bound kept fewer turns than ``keep_turns`` asks and
        the live history holds."""
        asked = min(self.params.keep_turns, len(history.turn_starts(start)))
        kept = len(history.turn_starts(recent))
        if kept < asked:
            self._warn_tail(kept, bound, boundary, room)

    def _prune_phases(self, history: History, budget: ContextBudget, session_id: str) -> None:
        """Spec 004's soft trim and hard clear, on their own fill ratios, on every request.

        Independent of summarization: at 38 % fill an old 60k-character result is trimmed
        whether or not history has reached the trigger. Each committed message is examined
        once; only results over the floor are kept as candidates, so a steady-state
        request costs work proportional to what was committed since the last one.
        """
        p, st = self.params.pruning, self.state
        if not p.enabled:
            return
        start = self.live_start(history)
        placeholder = p.hard_clear.placeholder
        fresh = range(max(st.prune_scanned, start), history.end)
        added = [i for i in fresh if self.pruner.eligible(history, i)]
        if st.prune_candidates or added:  # most requests have neither: nothing to rebuild
            st.prune_candidates = [
                *(i for i in st.prune_candidates
                  if i >= start and history.message(i)["content"] != placeholder),
                *added,
            ]
        st.prune_scanned = history.end
        fixed = budget.fixed.total

        def fill(released: int = 0) -> float:
            return (fixed + self.managed_tokens(history) - released) / max(budget.window, 1)

        if not st.prune_candidates or fill() < min(p.soft_trim_ratio, p.hard_clear_ratio):
            return
        # The newest keep_turns turns stay byte-identical, as keep_last_assistants' do.
        starts = history.turn_starts(start)
        keep = self.params.keep_turns
        recent = starts[-keep] if keep and len(starts) >= keep else (start if keep else history.end)
        if min(st.prune_candidates) >= recent:
            return  # every candidate is in the newest turns, which stay as they are
        protect = min(recent, self.pruner.protected_from(history, start))
        ready = [i for i in st.prune_candidates if i < protect]
        if not ready:
            return  # every candidate is still protected: a pass would change nothing
        report = self.pruner.phases_pass(history, ready, fill)
        if report.changed:
            self._rows = None
            self.emit("context.pruned", {**pruned_counts(report), "fill": round(fill(), 4)},
                      session_id)

    def _within(self, managed: ManagedHistory, limit: int) -> ManagedHistory:
        """This request's view, its summary block shortened to what ``limit`` leaves it.

        A summary written at a turn boundary can be larger than the room that large tool
        results in flight leave it. That room is transient, so only this request's copy
        is shortened (still sent: its messages stay *summarized*); the running summary is
        untouched.
        """
        tokens = managed.message_tokens
        if managed.tokens <= limit or not managed.summary_rows or tokens is None:
            return managed
        room = tokens[0] - (managed.tokens - limit)
        if room <= 0 or self.state.summary is None:
            return managed  # the rest alone is over the limit; the final trim decides
        ranks = self.state.summary_identifier_ranks
        row = summary_row(SummaryFit(room=room, limit=limit).clip(
            self.state.summary,
            identifiers={i: ranks.get(i, UNRANKED) for i in self.state.summary_identifiers or ()},
        ))
        cost = self.estimator.message(row)
        return replace(
            managed,
            messages=[row, *managed.messages[1:]],
            tokens=managed.tokens - tokens[0] + cost,
            message_tokens=[cost, *tokens[1 : len(tokens)]],
        )

    def _summary_room(
        self, boundary: ContextBudget, limit: int, engine: SummaryEngine | None
    ) -> int:
        """Tokens the summary block may take.

        ``summary_share`` of the trigger, plus one token per :data:`COVER_PER_TOKEN`
        tokens the summary already covers (a summary of a long session has more to say),
        up to ``summary_max_share`` of the trigger and ``summary_window_share`` of the
        summarizer's window (every call carries the summary in and out, so a larger one
        costs calls); at least :data:`MIN_SUMMARY_ROOM` (small windows
        still get a usable summary), never more than half the history limit.
        """
        trigger = boundary.soft_trigger
        base = math.floor(trigger * self.params.summary_share)
        top = math.floor(trigger * self.params.summary_max_share)
        window_of = getattr(self.summarizer, "input_window", None)
        if callable(window_of):
            top = min(top, int(window_of(engine, boundary.window)
                                * self.params.summary_window_share))
        top = max(base, top)
        grown = min(base + self.state.summarized_tokens // COVER_PER_TOKEN, top)
        return max(1, min(max(grown, MIN_SUMMARY_ROOM), limit // 2))

    def _tail_cap(self, boundary: ContextBudget, limit: int, room: int) -> int:
        """Token bound on the verbatim tail for this request.

        ``tail_tokens`` when set, else half the trigger less the summary's room — so that
        after a compaction the managed history is at most half the trigger and the
        summary is reused for a good stretch of turns. Never more than the history limit
        of this request leaves beside the summary and the retained skill rows.
        """
        auto = boundary.soft_trigger // 2 - room
        wanted = self.params.tail_tokens if self.params.tail_tokens is not None else auto
        skills = self.rows().total - self._summary_tokens()
        return max(0, min(wanted, limit - room - skills))

    def _summary_tokens(self) -> int:
        rows = self.rows()
        return sum(rows.tokens[: rows.summary_rows])

    def _threshold(self, budget: ContextBudget) -> int:
        """The soft trigger before the first fold; after it, the hysteresis ceiling.

        The ceiling is ``trigger x (1 + h)``. When what the last compaction had to keep
        (the ``keep_turns`` recent turns and the summary) is itself over the soft trigger,
        the same hysteresis is taken from that baseline instead — ``baseline x (1 + h)``,
        never past the history hard limit — so the summary is reused until history has
        grown by ``h`` again rather than rewritten on every turn.
        """
        folded_before = self.state.folded_through > 0 or self.state.summary is not None
        if not folded_before:
            return budget.soft_trigger
        baseline = self.state.baseline_tokens
        if baseline <= budget.soft_trigger:
            return budget.retrigger
        if not self._warned_baseline:
            self._warned_baseline = True
            # Without an explicit tail_tokens the tail and the summary stay within half the
            # trigger, so what is over it is the turn in progress, its tool results and the
            # retained skill rows: the hysteresis at work, not a setting to change (the
            # compaction's event records the tokens either way).
            settings_at_fault = "tail_tokens" in self.params.model_fields_set
            log.log(
                logging.WARNING if settings_at_fault else logging.INFO,
                "summarising: the kept turns and summary (%d tokens) exceed the trigger "
                "(%d, %s); the summary is rewritten whenever history grows %.0f%% past them. "
                + ("Lower tail_tokens or keep_turns, or raise summary_threshold, for fewer "
                   "summarizer calls." if settings_at_fault else
                   "What is over is the turn in progress, its tool results and retained skills."),
                baseline, budget.soft_trigger, budget.trigger_source,
                budget.hysteresis_ratio * 100,
            )
        grown = math.floor(baseline * (1 + budget.hysteresis_ratio))
        return max(budget.retrigger, min(grown, budget.history_hard_limit))

    def _recent_start(
        self, history: History, start: int, tail_cap: int, *, within_turn: bool = False
    ) -> int:
        """Where the verbatim tail begins: at most ``keep_turns`` turns and ``tail_cap`` tokens.

        The tail starts at a user turn when the newest turn fits ``tail_cap``. When it
        does not and ``within_turn`` (a summarizer call holds less than the history at
        hand), the tail is that turn's newest messages that fit, from a
        :func:`~._boundary.fold_points` position (never a tool result, so no tool group
        is split): folding the turn whole would leave a last call as empty as the turn
        is badly aligned with the calls. Otherwise, or when not even its last message
        fits, everything is folded (``history.end``): with one call for the whole fold,
        a part-turn tail would only bring the next fold sooner.
        """
        keep = self.params.keep_turns
        if keep == 0:
            return history.end
        starts = history.turn_starts(start)
        allowed = starts[-keep:]
        if len(starts) < keep and (not starts or starts[0] > start):
            allowed = [start, *allowed]
        for candidate in allowed:
            if history.tokens_between(candidate, history.end) <= tail_cap:
                return candidate
        if within_turn:
            newest = allowed[-1] if allowed else start
            for candidate in fold_points(history, newest + 1, history.end):
                if history.tokens_between(candidate, history.end) <= tail_cap:
                    return candidate
        return history.end
