"""Hook implementations of mas-library-eval (entry point ``eval``).

Registers the stock judge metrics under lower_snake_case names with their MCE ids as
aliases, the computed metrics (the evidence metrics among them), the inline
``prompt_metric`` template, and ``mas-ctl eval``.
Nothing heavy is imported here: the CLI module loads its dependencies when it runs.
"""

from __future__ import annotations

from typing import Any

from mas.library.eval.metrics.computed import COMPUTED
from mas.library.eval.metrics.evidence import EVIDENCE
from mas.library.eval.metrics.judge import (
    STOCK_JUDGES,
    PromptMetricParams,
    StockJudgeParams,
    prompt_metric,
    stock_factory,
)
from mas.library.eval.metrics.select import PROMPT_METRIC_TYPE
from mas.runtime import hookimpl
from mas.runtime.registry import KindRegistry


@hookimpl
def mas_register_eval_metrics(registry: KindRegistry) -> None:
    """Register the stock judge ids, the computed metrics and ``prompt_metric``."""
    for stock in STOCK_JUDGES:
        registry.register(
            stock.name, stock_factory(stock), params=StockJudgeParams,
            description=f"{stock.mce_id} (judge): {stock.description}",
            aliases=(stock.mce_id,),
        )
    for name, cls, params, aliases in (*COMPUTED, *EVIDENCE):
        registry.register(name, cls, params=params,
                          description=f"{cls.id} (computed): {cls.description}", aliases=aliases)
    registry.register(
        PROMPT_METRIC_TYPE, prompt_metric, params=PromptMetricParams,
        description="inline judge metric from eval_mce.config.prompt_metrics (id, prompt, unit, "
        "evidence)",
    )


@hookimpl
def mas_register_cli_commands(registry: KindRegistry) -> None:
    """Register ``mas-ctl eval``."""
    registry.register("eval", _eval_command, description="score session run folders (MCE jury)")


def _eval_command() -> Any:
    from mas.library.eval.cli import eval_command

    return eval_command
