"""Request assembly (spec 003, "Request Composition") and the session-facing entry point.

Order of ``messages``: one system message (context parts by placement, then priority) →
managed committed history (summary block, retained skill rows, recent turns) → the
current user turn → in-turn working memory. Tool schemas go in ``tools`` and count
toward the window.

:func:`prepare_request` is what the agent session calls before every model call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from mas.runtime.context.accounting import Accounting, Tally, account
from mas.runtime.context.budget import ContextBudget, FixedCosts, hard_budget
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR, TokenEstimator, message_tokens
from mas.runtime.context.history import History
from mas.runtime.context.history_view import extend_with
from mas.runtime.context.parts import ContextPart, system_text
from mas.runtime.context.trimmer import (
    TrimResult,
    parts_sizes,
    sendable_sizes,
    system_tokens,
    trim_request,
)
from mas.runtime.events import Event
from mas.runtime.protocols import ContextManager, ManagedHistory, Message, SummaryEngine

if TYPE_CHECKING:
    from mas.runtime.runtime import Runtime


@dataclass
class AssembledRequest:
    """One assembled, trimmed request and the numbers behind it.

    :ivar messages: the chat messages to send.
    :ivar tools: the tool schemas to send (``None`` for none).
    :ivar estimate: estimated prompt tokens of ``messages`` plus ``tools``.
    :ivar budget: the budget it was held to.
    :ivar managed: what the context manager returned.
    :ivar trim: what the final trim kept and removed.
    :ivar parts: metadata of every collected part (never its text).
    :ivar tools_tokens: estimate of ``tools``.
    :ivar accounting: where every committed message went (``None`` when assembled without
        the session's history, as :func:`assemble` alone is).
    :ivar served_tokens: working-memory tokens that serve this turn only (recall results
        past the stubs they are committed as), left out of the manager's budget.
    """

    messages: list[Message]
    tools: list[dict[str, Any]] | None
    estimate: int
    budget: ContextBudget
    managed: ManagedHistory
    trim: TrimResult
    parts: list[dict[str, Any]] = field(default_factory=list)
    tools_tokens: int = 0
    accounting: Accounting | None = None
    served_tokens: int = 0

    @property
    def warnings(self) -> list[str]:
        """Budget and trim warnings."""
        return [*self.budget.warnings, *self.trim.warnings]

    @property
    def over_budget(self) -> bool:
        """The estimate exceeds the hard budget (only when pinned content alone does)."""
        return self.estimate > self.budget.hard_budget

    def event_data(self) -> dict[str, Any]:
        """The ``context.assembled`` payload: numbers and metadata, never text."""
        t = self.trim
        return {
            "estimated_tokens": self.estimate,
            "breakdown": {
                "system": t.system_tokens,
                "history": t.history_tokens,
                "current_input": t.current_tokens,
                "working_memory": t.working_memory_tokens,
                "tools": self.tools_tokens,
            },
            "context_window": self.budget.window,
            "window_source": self.budget.window_source,
            "completion_reserve": self.budget.request_reserve,
            "reserve_source": self.budget.request_reserve_source,
            "safety_margin": self.budget.margin,
            "hard_budget": self.budget.hard_budget,
            "remaining": self.budget.window - self.budget.request_reserve - self.estimate,
            "soft_trigger": self.budget.soft_trigger,
            "trigger_source": self.budget.trigger_source,
            "retrigger": self.budget.retrigger,
            "trigger_exempt": self.budget.trigger_exempt,
            "messages": len(self.messages),
            "parts": self.parts,
            "trimmed": {
                "history_messages": t.dropped_history,
                "summary": t.dropped_summary,
                "working_memory_messages": t.dropped_working_memory,
                "shortened_tool_results": t.shortened,
                "shortened_in_flight": t.shortened_in_flight,
                "in_flight_omitted_tokens": t.in_flight_omitted_tokens,
                "evicted_parts": [p.section_id for p in t.evicted_parts],
            },
            "over_budget": self.over_budget,
            "served_tokens": self.served_tokens,
            "accounting": self.accounting.as_dict() if self.accounting is not None else None,
            "_compaction_metadata": self.managed.metadata,
        }


_last_tools: tuple[tuple[dict[str, Any], ...], TokenEstimator, int] | None = None


def tools_tokens(tools: list[dict[str, Any]] | None, estimator: TokenEstimator) -> int:
    """``estimator.tools(tools)``, remembered for the last schemas seen.

    A session sends the same schema objects on every call; encoding them to JSON each
    time was the largest fixed cost of a steady-state request. The memo holds the schema
    objects themselves, so it matches only those very objects (never a reused id).
    """
    global _last_tools
    if not tools:
        return 0
    last = _last_tools
    if last is not None and last[1] is estimator and len(last[0]) == len(tools) and all(
        a is b for a, b in zip(last[0], tools, strict=True)
    ):
        return last[2]
    tokens = estimator.tools(tools)
    _last_tools = (tuple(tools), estimator, tokens)
    return tokens


def fixed_costs(
    parts: Sequence[ContextPart],
    current_input: Message | None,
    working_memory: Sequence[Message],
    tools: list[dict[str, Any]] | None,
    estimator: TokenEstimator = DEFAULT_ESTIMATOR,
    *,
    hard_budget: int | None = None,
) -> FixedCosts:
    """Estimate everything in the request that is not committed history.

    With ``hard_budget``, in-flight tool results count at the size the trim shortens them
    to before it would cut history (:func:`~mas.runtime.context.trimmer.sendable_sizes`).
    """
    return _measured(parts, current_input, working_memory, tools, estimator, hard_budget)[0]


def _measured(
    parts: Sequence[ContextPart],
    current_input: Message | None,
    working_memory: Sequence[Message],
    tools: list[dict[str, Any]] | None,
    estimator: TokenEstimator,
    hard_budget: int | None,
) -> tuple[FixedCosts, list[int]]:
    """:func:`fixed_costs` and the estimate of each working-memory message, which the
    final trim then reuses instead of estimating the turn's tool results again."""
    sizes = [message_tokens(estimator, m) for m in working_memory]
    wm = sum(sizes if hard_budget is None else sendable_sizes(working_memory, sizes, hard_budget))
    fixed = FixedCosts(
        system=system_tokens(list(parts), estimator),
        current_input=message_tokens(estimator, current_input) if current_input is not None else 0,
        working_memory=wm,
        tools=tools_tokens(tools, estimator),
    )
    return fixed, sizes


_NOTHING = Tally()
"""What the trim cut from most requests (tallies are frozen, so one serves them all)."""


def request_accounting(
    history: History, managed: ManagedHistory, trim: TrimResult
) -> Accounting:
    """The four states of every committed message on this request (DESIGN §11)."""
    # The live messages are the newest committed ones: their tokens are one prefix-sum
    # lookup, not a sum over the history on every request.
    end = history.end
    live_messages = len(managed.messages) - managed.leading_rows
    live_tokens = history.tokens_between(end - live_messages, end)
    return account(
        committed=end,
        live=Tally(live_messages, live_tokens),
        ledger=managed.ledger,
        trimmed=Tally(trim.dropped_history, trim.dropped_history_tokens)
        if trim.dropped_history or trim.dropped_history_tokens else _NOTHING,
        summary_sent=managed.summary_rows > 0 and not trim.dropped_summary,
    )


def trimmed_positions(history: History, managed: ManagedHistory, trim: TrimResult) -> list[int]:
    """Absolute positions of the committed messages the final trim removed.

    The trim keeps the managed messages it sends in order, each the very object it was
    given or, for a shortened tool result, a copy with the same ``tool_call_id``; so one
    pass over both sequences finds what is missing (linear, and only run on a request
    that was cut).
    """
    messages, kept = managed.messages, trim.history
    first_live = history.end - (len(messages) - managed.leading_rows)
    cut: list[int] = []
    k = 0
    for j, message in enumerate(messages):
        if k < len(kept) and (kept[k] is message or _shortened(kept[k], message, messages, j)):
            k += 1
        elif j >= managed.leading_rows:
            cut.append(first_live + j - managed.leading_rows)
    return cut


def _shortened(sent: Message, message: Message, messages: Sequence[Message], j: int) -> bool:
    # A shortened copy is a new dict: never the next managed message itself.
    return (
        message.get("role") == "tool" and sent.get("role") == "tool"
        and sent.get("tool_call_id") == message.get("tool_call_id")
        and not (j + 1 < len(messages) and sent is messages[j + 1])
    )


def assemble(
    *,
    parts: Sequence[ContextPart],
    managed: ManagedHistory,
    current_input: Message | None,
    working_memory: Sequence[Message] = (),
    tools: list[dict[str, Any]] | None = None,
    budget: ContextBudget,
    estimator: TokenEstimator = DEFAULT_ESTIMATOR,
    fixed: FixedCosts | None = None,
    working_memory_costs: Sequence[int] | None = None,
) -> AssembledRequest:
    """Build and trim the request in spec 003's order (no events; see :func:`prepare_request`).

    :param fixed: the fixed costs of exactly these parts, input and tools, when the caller
        has them (their system, current-input and tools estimates are then not computed
        again).
    :param working_memory_costs: ``estimator.message`` of each working-memory message,
        when the caller has them.
    """
    tools_cost = fixed.tools if fixed is not None else tools_tokens(tools, estimator)
    trim = trim_request(
        parts=list(parts),
        managed=managed,
        current_input=current_input,
        working_memory=list(working_memory),
        tools_tokens=tools_cost,
        hard_budget=budget.hard_budget,
        estimator=estimator,
        system_cost=fixed.system if fixed is not None else None,
        current_cost=fixed.current_input if fixed is not None else None,
        working_memory_costs=working_memory_costs,
    )
    text = system_text(trim.parts)
    messages: list[Message] = [{"role": "system", "content": text}] if text else []
    extend_with(messages, trim.history)
    if trim.current_input is not None:
        messages.append(trim.current_input)
    messages += trim.working_memory
    return AssembledRequest(
        messages=messages,
        tools=tools or None,
        estimate=trim.total(tools_cost),
        budget=budget,
        managed=managed,
        trim=trim,
        parts=_parts_metadata(parts, trim, estimator),
        tools_tokens=tools_cost,
    )


def _parts_metadata(
    parts: Sequence[ContextPart], trim: TrimResult, estimator: TokenEstimator
) -> list[dict[str, Any]]:
    evicted = {id(p) for p in trim.evicted_parts}
    sizes = parts_sizes(parts, estimator)
    return [
        {
            "source": p.source,
            "section_id": p.section_id,
            "placement": p.placement,
            "priority": p.priority,
            "pinned": p.pinned,
            "tokens": tokens,
            "evicted": id(p) in evicted,
        }
        for p, tokens in zip(sizes.layout.ordered, sizes.parts, strict=True)
    ]


def prepare_request(
    *,
    cm: ContextManager,
    history: History,
    parts: Sequence[ContextPart] = (),
    current_input: Message | None = None,
    working_memory: Sequence[Message] = (),
    tools: list[dict[str, Any]] | None = None,
    window: int | None,
    reserve: int | None = None,
    window_source: str = "resolved",
    reserve_source: str = "max_tokens",
    engine: SummaryEngine | None = None,
    runtime: Runtime | None = None,
    session_id: str = "",
    estimator: TokenEstimator | None = None,
    served_tokens: int = 0,
    trigger_exempt: int = 0,
) -> AssembledRequest:
    """Everything the session does before a model call, in one call.

    Estimates the fixed costs, computes the :class:`ContextBudget` with the manager's
    ``budget_settings``, asks ``cm.manage_history`` for the bounded history, assembles
    and trims the request, and emits ``context.assembled`` (plus a ``warning`` event per
    warning) on ``runtime``.

    :param cm: the bound context manager.
    :param history: committed messages (not including the current turn).
    :param parts: system-message sections (agent context, memory seeds, context parts).
    :param current_input: the current user message.
    :param working_memory: this turn's assistant tool calls and tool results so far.
    :param tools: the tool schemas of this call.
    :param window: the resolved input window (``None``: 128,000 with a warning).
    :param reserve: the completion reserve (``None``: 2,000).
    :param engine: the engine the summarizer calls (``None``: summarizers that need a
        model fail over to keeping the messages).
    :param runtime: where events go (``None``: no events).
    :param served_tokens: tokens of ``working_memory`` that serve this turn only (recall
        results beyond their committed stubs): the manager's budget leaves them out, so a
        recall never makes it fold; the final trim counts them (DESIGN §13).
    :param trigger_exempt: tokens of ``tools`` the soft trigger leaves out (the
        ``recall_context`` schema): they count against the history's hard limit only, so
        offering recall never moves a fold (:meth:`ContextBudget.compute`).
    """
    est = estimator or history.estimator
    # The hard budget does not depend on the fixed costs; the fixed costs need it to count
    # in-flight tool results at the size the trim would send them.
    hard = hard_budget(window, reserve, cm.budget_settings)
    fixed, sizes = _measured(parts, current_input, working_memory, tools, est, hard)
    served = min(max(served_tokens, 0), fixed.working_memory)
    budget = ContextBudget.compute(
        window=window,
        reserve=reserve,
        fixed=replace(fixed, working_memory=fixed.working_memory - served) if served else fixed,
        settings=cm.budget_settings,
        window_source=window_source,
        reserve_source=reserve_source,
        trigger_exempt=min(trigger_exempt, fixed.tools),
    )
    text = system_text(parts) or None
    managed = cm.manage_history(
        history, budget, engine=engine, system=text, tools=tools, session_id=session_id
    )
    request = assemble(
        parts=parts,
        managed=managed,
        current_input=current_input,
        working_memory=working_memory,
        tools=tools,
        budget=budget,
        estimator=est,
        fixed=fixed,
        working_memory_costs=sizes,
    )
    request.accounting = request_accounting(history, managed, request.trim)
    request.served_tokens = served
    if runtime is not None:
        for warning in request.warnings:
            runtime.emit(Event("warning", {"source": "context", "message": warning}, session_id))
        runtime.emit(Event("context.assembled", request.event_data(), session_id))
    return request
