"""Context assembly: history, estimates, budget arithmetic, boundaries, skills and the trim.

The agent session loop uses it like this (one call per model call, one after the turn)::

    from mas.runtime.context import History, ContextPart, prepare_request

    history = History()                      # committed messages of the session
    request = prepare_request(
        cm=cm,                               # bound ContextManager (spec.context_manager)
        history=history,
        parts=[ContextPart("agent", "role", role_prompt, placement="system", pinned=True)],
        current_input={"role": "user", "content": question},
        working_memory=turn_messages,        # this turn's tool calls/results so far
        tools=tool_schemas,
        window=resolved_window, reserve=completion_reserve,
        engine=engine, runtime=runtime, session_id=session_id,
    )
    reply = call_model(request.messages, tools=request.tools)
    ...
    history.extend([user_message, *turn_messages, final_answer])   # turn finished
    cm.commit(history)                       # write-back: drop the folded prefix

``cm.to_state()`` / ``cm.load_state(state)`` and ``history.to_state()`` /
``History.from_state(state)`` save and restore a session. Every strategy cuts history
only through :mod:`mas.runtime.context.groups`.
"""

from __future__ import annotations

from mas.runtime.context.accounting import Accounting, FoldLedger, Tally, account
from mas.runtime.context.assembler import (
    AssembledRequest,
    assemble,
    fixed_costs,
    prepare_request,
    request_accounting,
)
from mas.runtime.context.budget import (
    DEFAULT_HYSTERESIS_RATIO,
    DEFAULT_RESERVE,
    DEFAULT_SAFETY_MARGIN_RATIO,
    DEFAULT_WINDOW,
    BudgetSettings,
    ContextBudget,
    FixedCosts,
    Trigger,
    hard_budget,
)
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR, TokenEstimator
from mas.runtime.context.groups import (
    call_ids,
    pair_problems,
    safe_cut,
    units,
    user_turn_starts,
)
from mas.runtime.context.history import History
from mas.runtime.context.history_view import HistoryView
from mas.runtime.context.identity_memo import IdentityMemo
from mas.runtime.context.parts import PLACEMENTS, ContextPart, order_parts, system_text
from mas.runtime.context.shorten import omission_marker, shorten_middle
from mas.runtime.context.skills import (
    latest_blocks,
    mask_skills,
    placeholder,
    skill_blocks,
    skill_row,
)
from mas.runtime.context.trimmer import TrimResult, trim_request

__all__ = [
    "HistoryView",
    "Accounting",
    "FoldLedger",
    "Tally",
    "account",
    "request_accounting",
    "hard_budget",
    "DEFAULT_ESTIMATOR",
    "DEFAULT_HYSTERESIS_RATIO",
    "DEFAULT_RESERVE",
    "DEFAULT_SAFETY_MARGIN_RATIO",
    "DEFAULT_WINDOW",
    "PLACEMENTS",
    "AssembledRequest",
    "BudgetSettings",
    "ContextBudget",
    "ContextPart",
    "FixedCosts",
    "History",
    "IdentityMemo",
    "TokenEstimator",
    "TrimResult",
    "Trigger",
    "assemble",
    "call_ids",
    "fixed_costs",
    "latest_blocks",
    "mask_skills",
    "omission_marker",
    "order_parts",
    "pair_problems",
    "placeholder",
    "prepare_request",
    "safe_cut",
    "shorten_middle",
    "skill_blocks",
    "skill_row",
    "system_text",
    "trim_request",
    "units",
    "user_turn_starts",
]
