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
from mas.runtime.spec.compile import CompiledAgent
from mas.runtime.spec.loader import ManifestSet
from mas.runtime.spec.windows import ReserveChoice, WindowChoice, resolve_reserve, resolve_window


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
    """Resolve the turn model's window and reserve, then the budget arithmetic."""
    scope, turn = agent.scope, agent.turn_model
    generation = manifests.infra.spec.generation if manifests.infra else None
    mappings = manifests.infra.spec.models if manifests.infra else {}
    window = resolve_window(
        turn.model,
        agent_context_window=scope.row_setting(turn.slot, "context_window"),
        infra_context_window=generation.context_window if generation else None,
        infra_mappings=mappings,
    )
    reserve = resolve_reserve(
        output_budget=generation.max_tokens if generation else None,
        binding_max_tokens=scope.row_setting(turn.slot, "max_tokens"),
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
