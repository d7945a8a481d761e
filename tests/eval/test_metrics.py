"""Metric registration, id aliases, bad metric input, and the computed metrics."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mas.library.eval import bind_metrics, catalog, load_run
from mas.library.eval.metrics.computed import (
    CacheHitRate,
    CacheHitRateParams,
    Compactions,
    Cost,
    FactRecall,
    LlmCalls,
    Tokens,
    ToolErrorRate,
)
from mas.library.eval.metrics.judge import STOCK_JUDGES
from mas.runtime import Runtime
from mas.runtime.errors import ManifestError

MCE_IDS = [s.mce_id for s in STOCK_JUDGES]


@pytest.fixture(scope="module")
def runtime() -> Runtime:
    return Runtime.create()


def test_every_stock_id_is_registered_with_its_snake_case_name(runtime: Runtime) -> None:
    registry = runtime.registries.eval_metric
    assert len(MCE_IDS) == 9 and "ComponentConflictRate" in MCE_IDS
    for stock in STOCK_JUDGES:
        entry = registry.get(stock.mce_id)
        assert entry.name == stock.name and entry.provider.name == "eval"
        assert registry.get(stock.name) is entry
        assert registry.get(stock.name.replace("_", "-").upper()) is entry


@pytest.mark.parametrize("written", ["GoalSuccessRate", "goal_success_rate", "goal-success-rate"])
def test_alias_binds_and_normalizes_to_the_mce_id(runtime: Runtime, written: str) -> None:
    [metric] = bind_metrics(runtime, [written])
    assert metric.id == "GoalSuccessRate" and metric.kind == "judge"


def test_default_selection_is_every_ready_made_metric(runtime: Runtime) -> None:
    ids = {m.id for m in bind_metrics(runtime)}
    assert set(MCE_IDS) <= ids
    assert {"FactRecall", "ToolErrorRate", "LLMCalls", "Tokens", "Cost", "Compactions",
            "CacheHitRate"} <= ids
    assert ids == {entry.id for entry in catalog(runtime)}


def test_binding_with_params(runtime: Runtime) -> None:
    [metric] = bind_metrics(runtime, [{"type": "cache_hit_rate", "params": {"layer": "x"}}])
    assert isinstance(metric, CacheHitRate) and metric.params.layer == "x"


def test_unknown_id_lists_the_available_ones(runtime: Runtime) -> None:
    with pytest.raises(ManifestError) as info:
        bind_metrics(runtime, ["GoalSucessRate"], location="config")
    text = str(info.value)
    assert "config.metrics[0]: unknown metric id" in text and "did you mean" in text
    assert "GoalSuccessRate (goal_success_rate)" in text and "FactRecall (fact_recall)" in text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"id": "Tone"}, "prompt_metrics[0].prompt: Field required"),
        ({"id": "Tone", "prompt": "  "}, "prompt_metrics[0].prompt: must not be"),
        ({"id": "1bad", "prompt": "p"}, "prompt_metrics[0].id: must start"),
        ({"id": "Tone", "prompt": "p", "unit": "stars"}, "prompt_metrics[0].unit: Input should"),
        ({"id": "Tone", "prompt": "p", "scale": 5}, "prompt_metrics[0].scale: unknown field"),
        ({"id": "goal_success_rate", "prompt": "p"}, "clashes with a registered metric id"),
    ],
)
def test_bad_prompt_metrics(runtime: Runtime, raw: dict, expected: str) -> None:
    with pytest.raises(ManifestError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        bind_metrics(runtime, [], [raw])


def test_bad_params_and_duplicates(runtime: Runtime) -> None:
    with pytest.raises(ManifestError, match=r"metrics\[0\]\.params\.layers: unknown field"):
        bind_metrics(runtime, [{"type": "cache_hit_rate", "params": {"layers": "x"}}])
    with pytest.raises(ManifestError, match=r"metrics\[0\]: Input should be a valid"):
        bind_metrics(runtime, [5])
    with pytest.raises(ManifestError, match="metric id given twice"):
        bind_metrics(runtime, ["GoalSuccessRate", "goal_success_rate"])


def test_prompt_metric_is_a_judge_metric_on_its_unit(runtime: Runtime) -> None:
    [metric] = bind_metrics(runtime, [], [{"id": "Tone", "prompt": "Polite?", "unit": "likert"}])
    assert (metric.id, metric.kind, metric.unit.name) == ("Tone", "judge", "likert")


def test_usage_metrics_from_events(kit: SimpleNamespace, tmp_path) -> None:
    run = load_run(kit.write_run(tmp_path / "r"))
    calls = LlmCalls().compute(run)
    assert calls.value == 2 and calls.detail["by_purpose"] == {"turn": 1, "summary": 1}
    tokens = Tokens().compute(run)
    assert tokens.value == 250 and tokens.detail["cached_tokens"] == 60
    assert Cost().compute(run).value == pytest.approx(0.003)
    compactions = Compactions().compute(run)
    assert compactions.value == 1 and compactions.detail["summarizer_calls"] == 1
    hit_rate = CacheHitRate().compute(run)
    assert hit_rate.value == 0.5 and hit_rate.detail["prompt_cache_token_ratio"] == 60 / 200
    assert CacheHitRate(CacheHitRateParams(layer="provider_cache")).compute(run).value is None


def test_unpriced_calls_and_no_lookups(kit: SimpleNamespace, tmp_path) -> None:
    events = [{"event": "llm.call", "prompt_tokens": None, "cost": None}]
    run = load_run(kit.write_run(tmp_path / "r", events=events))
    cost = Cost().compute(run)
    assert cost.value is None and "pricing_or_usage_unavailable" in (cost.error or "")
    assert Tokens().compute(run).value == 0
    assert CacheHitRate().compute(run).error == "no cache lookups"


def test_torn_event_line_is_skipped_with_a_warning(kit: SimpleNamespace, tmp_path) -> None:
    folder = kit.write_run(tmp_path / "r")
    with (folder / "events.jsonl").open("a") as handle:
        handle.write('{"event": "llm.ca')
    run = load_run(folder)
    assert LlmCalls().compute(run).value == 2 and "skipped a line" in run.warnings[0]


def test_fact_recall_is_case_and_whitespace_insensitive(kit: SimpleNamespace, tmp_path) -> None:
    item = {"id": "i1", "turns": [], "expected_facts": ["a-1042", "12   MAY", "Rotterdam"]}
    run = load_run(kit.write_run(tmp_path / "r", item=item,
                                 final_answer="Order A-1042\nships on 12 May."))
    result = FactRecall().compute(run)
    assert result.value == pytest.approx(2 / 3) and result.detail["missing"] == ["Rotterdam"]
    no_item = FactRecall().compute(load_run(kit.write_run(tmp_path / "s")))
    assert no_item.value is None and no_item.status == "not_applicable"
    errored = load_run(kit.write_run(tmp_path / "e", item=item, error="boom"))
    assert FactRecall().missing_input(errored) == "agent errored: boom"
    empty = FactRecall().compute(load_run(kit.write_run(tmp_path / "n", item=item,
                                                        final_answer="")))
    assert empty.value == 0.0


def test_tool_error_rate(kit: SimpleNamespace, tmp_path) -> None:
    messages = [{"role": "user", "content": "go"},
                {"role": "tool", "tool_call_id": "1", "content": '{"error": "timeout"}'},
                {"role": "tool", "tool_call_id": "2", "content": "Error: no such file"},
                {"role": "tool", "tool_call_id": "3", "content": '{"error": null, "ok": 1}'},
                {"role": "tool", "tool_call_id": "4", "content": "All errors fixed"}]
    run = load_run(kit.write_run(tmp_path / "r", messages=messages))
    assert ToolErrorRate().compute(run).value == 0.5
    no_tools = load_run(kit.write_run(tmp_path / "s", messages=messages[:1]))
    assert ToolErrorRate().compute(no_tools).status == "not_applicable"


def test_every_registered_metric_follows_the_kernel_protocol(runtime: Runtime) -> None:
    from mas.runtime.protocols import Metric

    metrics = bind_metrics(runtime, None, [{"id": "Tone", "prompt": "Polite?"}])
    assert metrics and all(isinstance(metric, Metric) for metric in metrics)
    assert {m.kind for m in metrics} == {"judge", "computed"}


EXPECTED_DIRECTIONS = {"LLMCalls": "lower", "Tokens": "lower", "Cost": "lower",
                       "ToolErrorRate": "lower", "Compactions": "neither",
                       "FactRecall": "higher", "CacheHitRate": "higher"}


def test_every_registered_metric_declares_which_way_is_better(runtime: Runtime) -> None:
    from mas.library.eval.metrics.base import DIRECTIONS, direction_of

    seen = {}
    for entry in runtime.registries.eval_metric:
        if entry.name == "prompt_metric":
            continue  # built from a user's rubric: its own test below
        metric = entry.factory(entry.params.model_validate({}), None)
        assert direction_of(metric) in DIRECTIONS, entry.name
        seen[metric.id] = direction_of(metric)
    for metric_id, direction in EXPECTED_DIRECTIONS.items():
        assert seen[metric_id] == direction, metric_id
    assert all(seen[stock.mce_id] == "higher" for stock in STOCK_JUDGES)


def test_a_prompt_metric_takes_its_direction_from_the_rubric_params() -> None:
    from mas.library.eval.metrics.base import direction_of
    from mas.library.eval.metrics.judge import PromptMetricParams, prompt_metric

    assert direction_of(prompt_metric(PromptMetricParams(id="Tone", prompt="p"))) == "higher"
    faults = prompt_metric(PromptMetricParams(id="Rude", prompt="p", direction="lower"))
    assert direction_of(faults) == "lower"


def test_a_metric_declaring_no_known_direction_is_refused_by_name() -> None:
    from mas.library.eval.metrics.base import direction_of

    with pytest.raises(ValueError, match="metric 'Odd': direction must be one of"):
        direction_of(SimpleNamespace(id="Odd", direction="up"))
    assert direction_of(SimpleNamespace(id="Plain")) == "higher"
