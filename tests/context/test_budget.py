"""DESIGN §5 budget arithmetic, and the worked example of docs/context.md."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields, replace

import pytest

from mas.runtime.context import BudgetSettings, ContextBudget, FixedCosts, Trigger

FIXED = FixedCosts(system=1_500, current_input=200, working_memory=0, tools=800)


def test_worked_example_of_docs_context_md() -> None:
    """docs/context.md "Budget arithmetic": gpt-4o, 128,000 window, max_tokens 2,000."""
    b = ContextBudget.compute(window=128_000, reserve=2_000, fixed=FIXED)
    assert b.margin == 12_800  # 0.1 x 128,000
    assert b.hard_budget == 113_200  # 128,000 - 2,000 - 12,800
    assert b.fixed.total == 2_500
    assert b.history_hard_limit == 110_700  # 113,200 - 2,500
    assert b.soft_trigger == 100_636  # floor(110,700 / 1.1)
    assert b.retrigger == 110_699  # floor(100,636 x 1.1), inside the hard limit
    assert b.trigger_source == "auto"


def test_worked_example_with_summary_threshold_and_trimmer_overrides() -> None:
    """docs/context.md second example: summary_threshold 8000, trimmer 12000 / 512."""
    settings = BudgetSettings(summary_threshold=8_000, max_tokens=12_000, reserve_tokens=512)
    b = ContextBudget.compute(window=128_000, reserve=2_000, fixed=FIXED, settings=settings)
    assert (b.cap, b.cap_source) == (12_000, "trimmer.max_tokens")
    assert (b.request_reserve, b.request_reserve_source) == (512, "trimmer.reserve_tokens")
    assert b.margin == 1_200
    assert b.hard_budget == 10_288
    assert b.history_hard_limit == 7_788
    # 8,000 asks for a later trigger than the auto 7,080: spec 000 caps it.
    assert b.auto_trigger == 7_080 and b.soft_trigger == 7_080 and b.trigger_source == "auto"


def test_a_positive_summary_threshold_moves_compaction_earlier() -> None:
    """Spec 000: "A positive summary_threshold can move compaction earlier; it is capped so
    hysteresis stays inside the hard safety-bounded budget"."""
    b = ContextBudget.compute(
        window=128_000, fixed=FIXED, settings=BudgetSettings(summary_threshold=8_000)
    )
    assert (b.soft_trigger, b.trigger_source) == (8_000, "summary_threshold")
    assert b.retrigger == 8_800
    huge = ContextBudget.compute(
        window=128_000, fixed=FIXED, settings=BudgetSettings(summary_threshold=10**9)
    )
    assert huge.soft_trigger == huge.auto_trigger
    assert huge.retrigger <= huge.history_hard_limit


def test_an_exempt_cost_leaves_the_trigger_and_keeps_the_hard_limit() -> None:
    """The recall tool's schema: the trigger is what it would be without it; the hard limit
    (and the reuse ceiling under it) still pays for it."""
    plain = ContextBudget.compute(window=128_000, reserve=2_000, fixed=FIXED)
    schema = FixedCosts(system=FIXED.system, current_input=FIXED.current_input,
                        working_memory=FIXED.working_memory, tools=FIXED.tools + 120)
    b = ContextBudget.compute(window=128_000, reserve=2_000, fixed=schema, trigger_exempt=120)
    assert b.trigger_exempt == 120 and b.fixed.total == plain.fixed.total + 120
    assert b.history_hard_limit == plain.history_hard_limit - 120
    assert b.soft_trigger == plain.soft_trigger
    assert b.retrigger == b.history_hard_limit < plain.retrigger
    ratio = BudgetSettings(trigger=Trigger("token_ratio", 0.5))
    assert ContextBudget.compute(window=128_000, fixed=schema, settings=ratio,
                                 trigger_exempt=120).soft_trigger == ContextBudget.compute(
        window=128_000, fixed=FIXED, settings=ratio).soft_trigger
    # Never more than the fixed costs, never past the hard limit.
    tight = ContextBudget.compute(window=3_000, reserve=500, fixed=FixedCosts(tools=2_000),
                                  trigger_exempt=10**6)
    assert tight.trigger_exempt == 2_000 and tight.soft_trigger <= tight.history_hard_limit


def test_spec_004_trigger_kinds() -> None:
    ratio = ContextBudget.compute(
        window=100_000,
        fixed=FixedCosts(system=1_000),
        settings=BudgetSettings(trigger=Trigger("token_ratio", 0.5)),
    )
    assert (ratio.soft_trigger, ratio.trigger_source) == (49_000, "token_ratio")
    remaining = ContextBudget.compute(
        window=100_000,
        fixed=FixedCosts(system=1_000),
        settings=BudgetSettings(trigger=Trigger("remaining_tokens", 40_000)),
    )
    assert (remaining.soft_trigger, remaining.trigger_source) == (59_000, "remaining_tokens")
    late = ContextBudget.compute(
        window=100_000, settings=BudgetSettings(trigger=Trigger("token_ratio", 1.0))
    )
    assert late.trigger_source == "auto"


def test_unknown_window_falls_back_to_128000_with_a_warning_and_reserve_to_2000() -> None:
    """Spec 003: "The default fallback, 128,000 tokens, with a warning"; spec 000: "2000
    reserve when unset"."""
    b = ContextBudget.compute(window=None)
    assert (b.window, b.window_source) == (128_000, "fallback")
    assert (b.reserve, b.reserve_source) == (2_000, "default")
    assert "context_window" in b.warnings[0]


def test_margin_zero_and_fixed_costs_beyond_the_budget_clamp_at_zero() -> None:
    b = ContextBudget.compute(
        window=10_000, reserve=1_000, settings=BudgetSettings(safety_margin_ratio=0.0)
    )
    assert b.hard_budget == 9_000
    tight = ContextBudget.compute(window=10_000, reserve=1_000, fixed=FixedCosts(system=50_000))
    assert tight.history_hard_limit == 0 and tight.soft_trigger == 0 and tight.retrigger == 0


def test_every_number_is_exposed_in_as_dict() -> None:
    data = ContextBudget.compute(window=128_000, fixed=FIXED).as_dict()
    for key in (
        "window",
        "reserve",
        "margin",
        "hard_budget",
        "history_hard_limit",
        "soft_trigger",
        "retrigger",
        "auto_trigger",
        "cap",
        "request_reserve",
    ):
        assert isinstance(data[key], int), key
    assert data["fixed"]["total"] == 2_500


def test_a_computed_budget_is_a_whole_frozen_dataclass() -> None:
    """compute() stores the fields without the dataclass __init__: none may be missing."""
    b = ContextBudget.compute(window=128_000, fixed=FIXED, trigger_exempt=300)
    assert set(vars(b)) == {f.name for f in fields(ContextBudget)}
    assert b == ContextBudget(**{f.name: getattr(b, f.name) for f in fields(ContextBudget)})
    with pytest.raises(FrozenInstanceError):
        b.window = 1  # type: ignore[misc]


def test_a_remembered_budget_is_the_one_computing_again_would_give() -> None:
    settings = BudgetSettings(hysteresis_ratio=0.2)
    first = ContextBudget.compute(window=20_000, reserve=500, fixed=FIXED, settings=settings)
    again = ContextBudget.compute(
        window=20_000, reserve=500, fixed=replace(FIXED), settings=settings)
    assert again is first  # the same arguments: remembered
    equal = ContextBudget.compute(
        window=20_000, reserve=500, fixed=FIXED, settings=BudgetSettings(hysteresis_ratio=0.2))
    assert equal == first and equal is not first  # other settings objects are not trusted
    other = ContextBudget.compute(window=20_000, reserve=500, fixed=FIXED, settings=settings,
                                  trigger_exempt=800)
    assert other != first and other.trigger_exempt == 800
