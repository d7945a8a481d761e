"""The final trim: hold the assembled request inside the hard budget (DESIGN §5).

Eviction order, each step only while the request is still over budget:

1. in-flight tool results (working memory) are shortened (head and tail kept with a
   marker) down to a common level at which the whole working memory takes at most half
   the budget — before any committed message is cut, so results in flight never push out
   the summary and the newest turn (with no committed history in the request, only a
   result over half the budget is shortened); budgets count them at that size
   (:func:`sendable_sizes`; counted in ``shortened_in_flight``);
2. managed history, oldest tool group first (groups stay whole), skipping the summary
   block, retained skill rows and the latest user turn;
3. oversized tool results — one result over half the budget — are shortened, so one
   huge result does not cost the summary;
4. the summary block;
5. unpinned context parts, last in request order first;
6. working memory, oldest complete tool group first, always keeping the newest group;
7. shortening: the largest remaining tool results keep head and tail with a marker, so a
   single huge result never pushes out the latest user turn or blanks the context.

Every committed message removed in steps 2 and 4 is *cut by the budget* in the request's
accounting (:mod:`mas.runtime.context.accounting`).

Pinned parts, retained skill rows, the current user turn and tool schemas are never
removed. If they alone exceed the budget the request leaves the trimmer over budget with a
warning; the engine still cuts a request larger than the model's window before sending.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress

from mas.runtime.context.estimate import TokenEstimator
from mas.runtime.context.groups import safe_cut, units
from mas.runtime.context.parts import ContextPart, PartsLayout, layout, order_parts
from mas.runtime.context.shorten import shorten_middle
from mas.runtime.context.skills import has_skill
from mas.runtime.protocols import ManagedHistory, Message


@dataclass
class TrimResult:
    """What survived the trim, and what it cost.

    :ivar parts: context parts kept, in request order.
    :ivar evicted_parts: unpinned parts removed to fit.
    :ivar history: managed-history messages kept.
    :ivar current_input: the current user turn (``None`` if there was none).
    :ivar working_memory: in-turn messages kept.
    :ivar system_tokens: estimate of the system message built from ``parts``.
    :ivar history_tokens: estimate of ``history``.
    :ivar current_tokens: estimate of ``current_input``.
    :ivar working_memory_tokens: estimate of ``working_memory``.
    :ivar dropped_history: history messages removed.
    :ivar dropped_history_tokens: estimated tokens of those messages.
    :ivar dropped_summary: the summary block was removed.
    :ivar dropped_working_memory: working-memory messages removed.
    :ivar shortened: tool results shortened with a marker.
    :ivar shortened_in_flight: of those, in-flight results shortened to the working-memory
        level (:func:`in_flight_level`) before any committed message was cut.
    :ivar in_flight_omitted_tokens: estimated tokens those left out of the request.
    :ivar warnings: human-readable warnings (pinned content over budget).
    """

    parts: list[ContextPart]
    history: Sequence[Message]
    current_input: Message | None
    working_memory: list[Message]
    system_tokens: int
    history_tokens: int
    current_tokens: int
    working_memory_tokens: int
    evicted_parts: list[ContextPart] = field(default_factory=list)
    dropped_history: int = 0
    dropped_history_tokens: int = 0
    dropped_summary: bool = False
    dropped_working_memory: int = 0
    shortened: int = 0
    shortened_in_flight: int = 0
    in_flight_omitted_tokens: int = 0
    warnings: list[str] = field(default_factory=list)

    def total(self, tools_tokens: int) -> int:
        """Estimated request tokens including ``tools_tokens``."""
        return (
            self.system_tokens
            + self.history_tokens
            + self.current_tokens
            + self.working_memory_tokens
            + tools_tokens
        )


def in_flight_level(messages: Sequence[Message], tokens: Sequence[int], hard_budget: int) -> int:
    """The size in-flight tool results are shortened to before any committed message is cut.

    The largest level (at most half the hard budget) at which the working memory, each
    shortenable result counted at ``min(size, level)``, takes at most half the hard budget:
    the other half stays for the system message, the summary and the newest turn, however
    many large results are in flight.
    """
    results = [t for m, t in zip(messages, tokens, strict=True) if _shortenable(m)]
    return _level(results, tokens, hard_budget)


def _level(results: list[int], tokens: Sequence[int], hard_budget: int) -> int:
    """:func:`in_flight_level` from the estimates of the shortenable results."""
    share = hard_budget // 2
    results = sorted(results)
    room = share - (sum(tokens) - sum(results))
    for k, size in enumerate(results):
        left = len(results) - k
        if size * left > room:
            return max(0, min(share, room // left))
        room -= size
    return share


def sendable_sizes(
    messages: Sequence[Message], tokens: Sequence[int], hard_budget: int
) -> list[int]:
    """What each in-flight message costs once the trim's first step has run.

    Tool results over :func:`in_flight_level` are shortened to it before any committed
    message is cut, so budgets that make room for working memory count them at that size.
    """
    if sum(tokens) <= hard_budget // 2:
        # Within half the budget the level is that half, over every (never negative)
        # estimate: nothing is shortened, so no message needs to be read.
        return list(tokens)
    # Each message is read once, for the level and the sizes both.
    shortenable = [_shortenable(m) for m in messages]
    level = _level(list(compress(tokens, shortenable)), tokens, hard_budget)
    return [
        min(t, level) if short else t for short, t in zip(shortenable, tokens, strict=True)
    ]


@dataclass(frozen=True)
class PartsSizes:
    """One estimator's view of a :class:`~mas.runtime.context.parts.PartsLayout`.

    :ivar system: the system message's estimate (0 when it would be empty).
    :ivar parts: each part's text estimate, in request order.
    """

    layout: PartsLayout
    estimator: TokenEstimator
    system: int
    parts: tuple[int, ...]


_last_sizes: PartsSizes | None = None


def parts_sizes(parts: Iterable[ContextPart], estimator: TokenEstimator) -> PartsSizes:
    """The estimates of ``parts``, remembered for the last layout and estimator seen (a
    session sends the same parts on every request)."""
    global _last_sizes
    found = layout(parts)
    last = _last_sizes
    if last is not None and last.layout is found and last.estimator is estimator:
        return last
    system = estimator.message({"role": "system", "content": found.text}) if found.text else 0
    sizes = PartsSizes(found, estimator, system,
                       tuple(estimator.text(p.text) for p in found.ordered))
    _last_sizes = sizes
    return sizes


def system_tokens(parts: list[ContextPart], estimator: TokenEstimator) -> int:
    """Estimate of the system message built from ``parts`` (0 when it would be empty)."""
    return parts_sizes(parts, estimator).system


def trim_request(
    *,
    parts: list[ContextPart],
    managed: ManagedHistory,
    current_input: Message | None,
    working_memory: list[Message],
    tools_tokens: int,
    hard_budget: int,
    estimator: TokenEstimator,
    system_cost: int | None = None,
    current_cost: int | None = None,
    working_memory_costs: Sequence[int] | None = None,
) -> TrimResult:
    """Fit the request into ``hard_budget``; see the module docstring for the order.

    When ``current_input`` is ``None`` the latest ``user`` message of the managed history
    is the current turn, and what follows it counts as working memory. ``system_cost``,
    ``current_cost`` and ``working_memory_costs`` are the estimates of the system message,
    of ``current_input`` and of each ``working_memory`` message when the caller has them
    (the fixed costs do); they are used only for a ``current_input`` given.
    """
    parts = order_parts(parts)
    history = managed.messages
    protected = set(managed.skill_rows) | set(range(managed.summary_rows))
    wm = list(working_memory)
    given = current_input is not None
    if current_input is None:
        last = _last_user(history, protected)
        if last is not None:
            current_input, wm = history[last], [*history[last + 1 :], *wm]
            history = history[:last]
    sys_tokens = system_cost if system_cost is not None else system_tokens(parts, estimator)
    if given and current_cost is not None:
        cur_tokens = current_cost
    else:
        cur_tokens = estimator.message(current_input) if current_input is not None else 0
    if given and working_memory_costs is not None and len(working_memory_costs) == len(wm):
        wm_tokens = list(working_memory_costs)
    else:
        wm_tokens = [estimator.message(m) for m in wm]
    hist_total = managed.tokens - (
        estimator.messages(managed.messages[len(history) :])
        if len(history) < len(managed.messages)
        else 0
    )
    total = sys_tokens + hist_total + cur_tokens + sum(wm_tokens) + tools_tokens
    result = TrimResult(
        parts, history, current_input, wm, sys_tokens, hist_total, cur_tokens, sum(wm_tokens)
    )
    if total <= hard_budget:
        return result
    return _Trim(result, managed, protected, wm_tokens, tools_tokens, hard_budget, estimator).run()


def _last_user(history: Sequence[Message], protected: set[int]) -> int | None:
    for i in range(len(history) - 1, -1, -1):
        if i not in protected and history[i].get("role") == "user":
            return i
    return None


class _Trim:
    """One over-budget trim; state kept on the instance to keep each step small."""

    def __init__(
        self,
        result: TrimResult,
        managed: ManagedHistory,
        protected: set[int],
        wm_tokens: list[int],
        tools_tokens: int,
        budget: int,
        estimator: TokenEstimator,
    ) -> None:
        self.r = result
        self.protected = protected
        self.summary = set(range(managed.summary_rows))
        self.summary_rows = managed.summary_rows
        self.hist = list(result.history)
        cached = managed.message_tokens
        # The manager's own estimates add up to the history tokens the result carries:
        # then the starting total needs no pass over thousands of messages.
        self.consistent = cached is not None and len(cached) == len(managed.messages)
        if cached is not None and self.consistent:
            self.hist_tokens = list(cached[: len(self.hist)])
        else:
            self.hist_tokens = [estimator.message(m) for m in self.hist]
        self.hist_alive = [True] * len(self.hist)
        self.wm = list(result.working_memory)
        self.wm_tokens = wm_tokens
        self.wm_alive = [True] * len(self.wm)
        self.tools_tokens = tools_tokens
        self.budget = budget
        self.est = estimator

    def total(self) -> int:
        if self.consistent:
            return self.r.total(self.tools_tokens)
        return (
            self.r.system_tokens
            + self.r.current_tokens
            + self.tools_tokens
            + sum(compress(self.hist_tokens, self.hist_alive))
            + sum(compress(self.wm_tokens, self.wm_alive))
        )

    def run(self) -> TrimResult:
        total = self.total()
        # The common level protects committed history; with none to protect, only a result
        # over half the budget is shortened and spec 003's drop of the oldest in-flight
        # tool groups (step 6) keeps its place.
        level = in_flight_level(self.wm, self.wm_tokens, self.budget) if self.hist else None
        before = self.r.shortened, total
        total = self._shorten(total, above=self.budget // 2 if level is None else level,
                              floor=level or 0, working_memory_only=True)
        self.r.shortened_in_flight = self.r.shortened - before[0]
        self.r.in_flight_omitted_tokens = before[1] - total
        total = self._drop_history(total, summary=False)
        total = self._shorten(total, above=self.budget // 2)
        total = self._drop_history(total, summary=True)
        total = self._evict_parts(total)
        total = self._drop_working_memory(total)
        total = self._shorten(total)
        if total > self.budget:
            self.r.warnings.append(
                f"pinned content alone ({total} estimated tokens) exceeds the hard budget "
                f"({self.budget}); nothing more can be removed, so it is sent over budget "
                "(the engine cuts it, counted, if it exceeds the model's window)"
            )
        return self._finish()

    def _drop_history(self, total: int, *, summary: bool) -> int:
        # Rows a manager protects (summary, skill rows) lead the history; after them the
        # droppable messages are contiguous, so the cut is found on prefix sums.
        first = max(self.protected, default=-1) + 1
        for begin, stop in units(self.hist, 0, first):
            if total <= self.budget:
                return total
            span = range(begin, stop)
            if any(i in self.protected and i not in self.summary for i in span):
                continue
            if summary != any(i in self.summary for i in span):
                continue
            total = self._drop(span, total)
            self.r.dropped_summary = self.r.dropped_summary or summary
        if summary or total <= self.budget or first >= len(self.hist):
            return total
        # Everything from ``first`` on is still sent here. The cut is the first message
        # from which what follows fits: scanned back from the newest, so the work follows
        # what is kept, not the thousands of messages cut.
        wm = sum(compress(self.wm_tokens, self.wm_alive))
        rows = sum(compress(self.hist_tokens[:first], self.hist_alive[:first]))
        fixed = self.r.system_tokens + self.r.current_tokens + self.tools_tokens + wm + rows
        keep = self.budget - fixed
        cut, kept, tokens = len(self.hist), 0, self.hist_tokens
        while cut > first and kept + tokens[cut - 1] <= keep:
            cut -= 1
            kept += tokens[cut]
        return self._drop(range(first, safe_cut(self.hist, cut)), total)

    def _drop(self, span: range, total: int) -> int:
        """Remove ``span`` in one pass: its live tokens and messages counted with C-level
        sums, never message by message (a cut of 5,000 messages costs microseconds)."""
        lo, hi = span.start, span.stop
        alive = self.hist_alive[lo:hi]
        removed = sum(compress(self.hist_tokens[lo:hi], alive))
        # The summary rows lead the history: what the span holds past them is history.
        rows = max(0, min(self.summary_rows, hi) - lo)
        row_tokens = sum(compress(self.hist_tokens[lo : lo + rows], alive[:rows]))
        self.r.dropped_history += alive.count(True) - alive[:rows].count(True)
        self.r.dropped_history_tokens += removed - row_tokens
        self.hist_alive[lo:hi] = [False] * (hi - lo)
        return total - removed

    def _evict_parts(self, total: int) -> int:
        for part in reversed(list(self.r.parts)):
            if total <= self.budget:
                break
            if part.pinned:
                continue
            self.r.parts.remove(part)
            self.r.evicted_parts.append(part)
            before = self.r.system_tokens
            self.r.system_tokens = system_tokens(self.r.parts, self.est)
            total -= before - self.r.system_tokens
        return total

    def _drop_working_memory(self, total: int) -> int:
        spans = units(self.wm)
        for begin, stop in spans[:-1]:
            if total <= self.budget:
                break
            if any(has_skill(self.wm[i]) for i in range(begin, stop)):
                continue
            for i in range(begin, stop):
                self.wm_alive[i] = False
                total -= self.wm_tokens[i]
                self.r.dropped_working_memory += 1
        return total

    def _shorten(
        self, total: int, above: int = 0, *, floor: int = 0, working_memory_only: bool = False
    ) -> int:
        """Shorten the largest tool results (only those over ``above`` tokens) to fit,
        none below ``floor`` tokens."""
        if total <= self.budget:
            return total
        pools = [
            (0, self.hist_alive, self.hist, self.hist_tokens),
            (1, self.wm_alive, self.wm, self.wm_tokens),
        ]
        candidates = [
            (tokens, seq, i)
            for seq, alive, msgs, toks in (pools[1:] if working_memory_only else pools)
            for i, (tokens, a) in enumerate(zip(toks, alive, strict=True))
            if a and tokens > above and _shortenable(msgs[i])
        ]
        for _tokens, seq, i in sorted(candidates, reverse=True):
            if total <= self.budget:
                break
            msgs, toks = (self.hist, self.hist_tokens) if seq == 0 else (self.wm, self.wm_tokens)
            content = msgs[i]["content"]
            # The in-flight step brings every result to one level (``floor``) rather than
            # cutting the largest to nothing while the others stay whole.
            want = max(floor, toks[i] - (total - self.budget))
            shortened, new_tokens = msgs[i], toks[i]
            # The character count is derived from the text's density; the marker and an
            # uneven head/tail can leave it a few tokens over, so cut again (at most 3x).
            for _attempt in range(3):
                over = new_tokens - want
                if over <= 0:
                    break
                text = shortened["content"]
                keep = self.est.chars_for(self.est.text(text) - over, like=text)
                cut = shorten_middle(content, min(keep, len(text) - 1))
                shortened = {**msgs[i], "content": cut}
                new_tokens = self.est.message(shortened)
            if new_tokens >= toks[i]:
                continue
            total -= toks[i] - new_tokens
            msgs[i], toks[i] = shortened, new_tokens
            self.r.shortened += 1
        return total

    def _finish(self) -> TrimResult:
        r = self.r
        r.history, r.history_tokens = _alive(self.hist, self.hist_tokens, self.hist_alive)
        r.working_memory, r.working_memory_tokens = _alive(self.wm, self.wm_tokens, self.wm_alive)
        return r


def _alive(
    messages: list[Message], tokens: list[int], alive: list[bool]
) -> tuple[list[Message], int]:
    return list(compress(messages, alive)), sum(compress(tokens, alive))


def _shortenable(message: Message) -> bool:
    return (
        message.get("role") == "tool"
        and isinstance(message.get("content"), str)
        and not has_skill(message)
    )
