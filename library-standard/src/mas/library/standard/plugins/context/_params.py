"""Params shared by the standard context managers: ``trimmer`` and ``trigger`` blocks."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationInfo,
    field_validator,
)
from pydantic.config import JsonDict

from mas.runtime.context import BudgetSettings, ContextBudget, Trigger
from mas.runtime.protocols import ArchiveSettings
from mas.runtime.spec.auto import AutoInt as AutoInt  # re-exported: conversation.py uses it
from mas.runtime.spec.windows import MAX_CONTEXT_WINDOW


class TrimmerParams(BaseModel):
    """``trimmer``: the assembly-time payload cap (spec 000, spec 003)."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: AutoInt = Field(
        default=None, gt=0, description="Payload cap in tokens; auto = the resolved window."
    )
    reserve_tokens: AutoInt = Field(
        default=None, ge=0, description="Completion reserve; auto = the model's max_tokens or 2000."
    )
    safety_margin_ratio: float = Field(
        default=0.1,
        ge=0,
        lt=1,
        description="Share of the window kept unused for estimate and provider overhead.",
    )


def _positive_bound(value: int | str | None) -> int | str | None:
    if isinstance(value, int) and value <= 0:
        raise ValueError(f"must be a positive integer, 'limit' or null (got {value})")
    return value


TokenBound = Annotated[int | Literal["limit"] | None, AfterValidator(_positive_bound)]
"""A history token budget: a positive integer, ``limit`` (the request's history hard
limit) or ``None`` for none."""

TOKEN_BOUND_HELP = (
    "History token budget: a positive integer, 'limit' (the history hard limit of each "
    "request, so the strategy itself holds the budget) or null for none."
)


def token_limit(bound: int | str | None, budget: ContextBudget) -> int | None:
    """The tokens ``bound`` (a :data:`TokenBound`) leaves history on this request."""
    if bound == "limit":
        return budget.history_hard_limit
    return bound if isinstance(bound, int) else None


def _value_range(kind: str, bounds: dict[str, JsonValue]) -> JsonDict:
    return {"if": {"properties": {"type": {"const": kind}}},
            "then": {"properties": {"value": bounds}}}


class TriggerParams(BaseModel):
    """``trigger``: a spec-004 trigger kind, an alternative to the window-derived default."""

    # The range depends on the kind; the JSON Schema says so too (mas-ctl schema), so an
    # editor flags what _check_range refuses.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"allOf": [
        _value_range("token_ratio", {"exclusiveMinimum": 0, "maximum": 1}),
        _value_range("remaining_tokens", {"minimum": 0, "maximum": MAX_CONTEXT_WINDOW}),
    ]})

    type: Literal["token_ratio", "remaining_tokens"] = Field(
        description="token_ratio: share of the window; remaining_tokens: tokens left in it."
    )
    value: float = Field(description="The ratio (0 < value <= 1) or the token count (>= 0).")

    @field_validator("value")
    @classmethod
    def _check_range(cls, value: float, info: ValidationInfo) -> float:
        # On the field, so the one-line error names trigger.value and its value once.
        kind = info.data.get("type")
        if kind == "token_ratio" and not 0 < value <= 1:
            raise ValueError("token_ratio value must be in (0, 1]")
        if kind == "remaining_tokens" and not 0 <= value <= MAX_CONTEXT_WINDOW:
            raise ValueError(f"remaining_tokens value must be in [0, {MAX_CONTEXT_WINDOW:,}] "
                             "and below the window")
        return value

    def to_trigger(self) -> Trigger:
        """The kernel's :class:`~mas.runtime.context.Trigger`."""
        return Trigger(self.type, self.value)


def budget_settings(
    trimmer: TrimmerParams,
    *,
    hysteresis_ratio: float = 0.1,
    summary_threshold: int | None = None,
    trigger: TriggerParams | None = None,
) -> BudgetSettings:
    """The kernel budget settings for these params."""
    return BudgetSettings(
        safety_margin_ratio=trimmer.safety_margin_ratio,
        max_tokens=trimmer.max_tokens,
        reserve_tokens=trimmer.reserve_tokens,
        hysteresis_ratio=hysteresis_ratio,
        summary_threshold=summary_threshold,
        trigger=trigger.to_trigger() if trigger is not None else None,
    )


class ArchiveParams(BaseModel):
    """``archive``: folded messages kept in the session's store for recall."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(default=True, description="Keep folded messages in the archive.")
    max_messages: int = Field(
        default=20_000, ge=1, description="Messages kept at most; the oldest are evicted."
    )
    max_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024, description="Bytes of message JSON kept at most."
    )


class RecallFields(BaseModel):
    """The ``recall`` and ``archive`` params every standard context manager takes."""

    recall: bool = Field(
        default=False,
        description="Offer the model a recall_context tool that searches folded messages.",
    )
    recall_max_tokens: int = Field(
        default=2_000, ge=64, description="Tokens one recall returns at most."
    )
    archive: ArchiveParams = Field(default_factory=ArchiveParams)

    def archive_settings(self) -> ArchiveSettings:
        """The kernel's :class:`~mas.runtime.protocols.ArchiveSettings` for these params."""
        return ArchiveSettings(
            enabled=self.archive.enabled or self.recall,
            max_messages=self.archive.max_messages,
            max_bytes=self.archive.max_bytes,
            recall=self.recall,
            recall_max_tokens=self.recall_max_tokens,
        )
