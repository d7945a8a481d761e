"""The budget an agent runs with, resolved from its manifests (what compile reports).

Window and reserve come from :mod:`mas.runtime.spec.windows`; the rest of the arithmetic
is :class:`~mas.runtime.context.budget.ContextBudget`, fed with the bound context
manager's settings. Fixed costs are those of an empty request (the system instructions
only): a live turn recomputes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mas.runtime.context.budget import BudgetSettings, ContextBudget, FixedCosts
from mas.runtime.context.estimate import TokenEstimator
from mas.runtime.errors import ManifestError, Problem
from mas.runtime.spec.compile import CompiledAgent
from mas.runtime.spec.loader import ManifestSet
from mas.runtime.spec.model_ref import RowValue
from mas.runtime.spec.windows import (
    SOURCE_AGENT_WINDOW,
    SOURCE_FALLBACK,
    SOURCE_INFRA_WINDOW,
    SOURCE_MAX_TOKENS,
    SOURCE_OUTPUT_BUDGET,
    ReserveChoice,
    WindowChoice,
    WindowSettingError,
    resolve_reserve,
    resolve_window,
)


@dataclass(frozen=True)
class ResolvedBudget:
    """Window, reserve and the derived budget of one agent's turn model."""

    window: WindowChoice
    reserve: ReserveChoice
    budget: ContextBudget

    def as_dict(self) -> dict[str, Any]:
        """The ``compile --json`` fields: window, reserve, margin, hard request budget."""
        return {
            "window": {
                "value": self.window.value,
                "source": self.window.source,
                "warning": self.window.warning,
            },
            "reserve": {"value": self.reserve.value, "source": self.reserve.source},
            "margin": self.budget.margin,
            "hard_budget": self.budget.hard_budget,
            "history_hard_limit": self.budget.history_hard_limit,
            "soft_trigger": self.budget.soft_trigger,
        }


def resolve_budget(agent: CompiledAgent, manifests: ManifestSet) -> ResolvedBudget:
    """Resolve the turn model's window and reserve, then the budget arithmetic.

    :raises ManifestError: a setting out of its bounds (:func:`budget_problems`), or a
        window or reserve that is not a positive integer up to ``MAX_CONTEXT_WINDOW``.
    """
    try:
        resolved = _resolve(agent, manifests)
    except WindowSettingError as exc:
        field, _, message = str(exc).partition(": ")
        raise ManifestError([Problem(agent.loaded.source, field, message)]) from exc
    problems = budget_problems(agent, resolved)
    if problems:
        raise ManifestError(problems)
    # A manager may say at bind what this budget does to its own settings (summarising:
    # a keep_turns its tail's token bound overrides); it logs that itself, once.
    check = getattr(agent.context_manager, "check_budget", None)
    if callable(check):
        check(resolved.budget)
    return resolved


def budget_check(agents: list[CompiledAgent], manifests: ManifestSet) -> list[Problem]:
    """Every problem :func:`resolve_budget` raises, for each of ``agents``."""
    problems: list[Problem] = []
    for agent in agents:
        try:
            resolve_budget(agent, manifests)
        except ManifestError as exc:
            problems.extend(exc.problems)
    return problems


def budget_problems(agent: CompiledAgent, resolved: ResolvedBudget) -> list[Problem]:
    """Settings that leave a budget of nothing, one problem each (agent.md, "Bounds").

    - the completion reserve must be below the window (``max_tokens`` at or over it
      leaves no room for input);
    - reserve and safety margin together must leave a positive hard request budget;
    - a ``remaining_tokens`` trigger must be below the window (at or over it, the
      trigger is 0 and every turn compacts).
    """
    budget, source = resolved.budget, agent.loaded.source
    model = agent.turn_model.model
    window = f"the {budget.window:,}-token window of {model} (from {budget.window_source})"
    where = agent.binding_source if agent.binding_source != "default" else "spec.context_manager"
    if budget.request_reserve >= budget.cap:
        # Blame the field the user wrote: the reserve's, or the window's when the
        # reserve is the 2,000-token default.
        fields = {
            SOURCE_OUTPUT_BUDGET: "infra.spec.generation.max_tokens",
            "trimmer.reserve_tokens": f"{where}.params.trimmer.reserve_tokens",
            SOURCE_INFRA_WINDOW: "infra.spec.generation.context_window",
        }
        field = budget.request_reserve_source
        if field == SOURCE_FALLBACK:
            field = budget.window_source
        return [Problem(source, fields.get(field, field), f"a completion reserve of "
                        f"{budget.request_reserve:,} tokens leaves no room for input in "
                        f"{window}; the reserve must be below the window",
                        budget.request_reserve, True)]
    problems: list[Problem] = []
    if budget.hard_budget <= 0:
        problems.append(Problem(
            source, f"{where}.params.trimmer",
            f"reserve {budget.request_reserve:,} + safety margin {budget.margin:,} leave no "
            f"request budget in {window}; lower safety_margin_ratio or the reserve"))
    trigger = budget.trigger
    over = trigger is not None and trigger.value >= budget.window
    if trigger is not None and trigger.type == "remaining_tokens" and over:
        problems.append(Problem(
            source, f"{where}.params.trigger.value",
            f"a remaining_tokens trigger must be below {window}", trigger.value, True))
    return problems


def _resolve(agent: CompiledAgent, manifests: ManifestSet) -> ResolvedBudget:
    scope, turn = agent.scope, agent.turn_model
    generation = manifests.infra.spec.generation if manifests.infra else None
    mappings = manifests.infra.spec.models if manifests.infra else {}
    # Each row value carries the manifest row that supplied it (agent or MAS, by id).
    row_window = scope.row_value(turn.slot, "context_window") or RowValue(0, SOURCE_AGENT_WINDOW)
    row_reserve = scope.row_value(turn.slot, "max_tokens") or RowValue(0, SOURCE_MAX_TOKENS)
    window = resolve_window(
        turn.model,
        agent_context_window=row_window.value or None,
        agent_source=row_window.source,
        infra_context_window=generation.context_window if generation else None,
        infra_mappings=mappings,
    )
    reserve = resolve_reserve(
        output_budget=generation.max_tokens if generation else None,
        binding_max_tokens=row_reserve.value or None,
        binding_source=row_reserve.source,
    )
    settings = getattr(agent.context_manager, "budget_settings", None)
    instructions = agent.loaded.agent.spec.instructions
    fixed = FixedCosts(
        system=TokenEstimator().message({"role": "system", "content": instructions})
        if instructions
        else 0
    )
    budget = ContextBudget.compute(
        window=window.value,
        reserve=reserve.value,
        fixed=fixed,
        settings=settings if isinstance(settings, BudgetSettings) else None,
        window_source=window.source,
        reserve_source=reserve.source,
    )
    return ResolvedBudget(window, reserve, budget)
