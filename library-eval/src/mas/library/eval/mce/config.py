"""The scoring settings: the ``eval_mce`` step's ``config`` block, also used by ``mas-ctl eval``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mas.library.eval.metrics.judge import PromptMetricParams


class EvalConfig(BaseModel):
    """How runs are scored: the ``eval_mce`` step's ``config`` block, and ``mas-ctl eval``."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, description="Judge model (step 1 of the chain).")
    judge_model: str | None = Field(default=None, description="Alias of model (step 2).")
    panel: list[str] = Field(
        default_factory=list, description="More judge models beside the primary one."
    )
    metrics: list[str | dict[str, Any]] | None = Field(
        default=None,
        description="Metric ids, aliases or {type, params}; omitted = every ready-made metric.",
    )
    prompt_metrics: list[PromptMetricParams] = Field(
        default_factory=list, description="Inline judge metrics: id, prompt, unit, evidence."
    )
    samples: int = Field(default=1, ge=1, description="Votes per judge model on each metric.")
    seed: int | None = Field(default=0, description="Seed of sample 0 (sample i: seed + i).")
    temperature: float | None = Field(default=0.0, ge=0, description="Judge temperature.")
    max_tokens: int | None = Field(default=1024, ge=1, description="Judge output limit.")
    json_mode: bool = Field(default=True, description="Send response_format json_object.")
    max_concurrency: int = Field(default=4, ge=1, description="Requests in flight per judge.")
    max_tool_chars: int = Field(
        default=4000, ge=0,
        description="Clip longer tool results in the judged material (0: never).",
    )
    overwrite: bool = Field(default=False, description="Re-score ids already in metrics.json.")
    backend: Literal["auto", "native", "mce"] = Field(
        default="auto",
        description="Who computes the stock judge ids: mce (MCE's own metric classes and "
                    "prompts, in the .venv-mce worker), native (mas-lab's rubrics) or auto "
                    "($MAS_EVAL_BACKEND when set, else mce when its venv is found, else "
                    "native, saying why).",
    )
    mce_python: str | None = Field(
        default=None,
        description="Python of the MCE venv (default: $MAS_MCE_PYTHON, else .venv-mce/bin/"
                    "python in the current directory or a parent).",
    )
