"""Third-party metrics through the hooks, and the real engine with the offline judge."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from click.testing import CliRunner

from mas.library.eval import ComputedMetric, EvalConfig, MetricResult, evaluate_runs, judge_scope
from mas.library.eval import cli as eval_cli
from mas.library.eval.metrics.judge import STOCK_JUDGES
from mas.runtime import hookimpl


class Turns(ComputedMetric):
    """User turns in the transcript (a third-party computed metric)."""

    id = "UserTurns"
    description = "user turns"
    inputs = ("conversation",)

    def __init__(self, params: Any = None, ctx: Any = None) -> None:
        self.params = params

    def compute(self, run: Any) -> MetricResult:
        return MetricResult(float(sum(m["role"] == "user" for m in run.messages)), "counted")


class ThirdParty:
    @hookimpl
    def mas_register_eval_metrics(self, registry: Any) -> None:
        registry.register("user_turns", Turns, aliases=("UserTurns",))

    @hookimpl
    def mas_register_cli_commands(self, registry: Any) -> None:
        registry.register("noop", lambda: None)


def test_a_plugin_metric_is_bound_by_id_and_lands_in_metrics_json(
    register_plugin: Any, kit: SimpleNamespace, tmp_path: Any
) -> None:
    runtime = register_plugin(ThirdParty(), "third-party")
    assert runtime.registries.cli_command.get("noop").provider.name == "third-party"
    assert "eval" in runtime.registries.cli_command
    folder = kit.write_run(tmp_path / "r")
    config = EvalConfig(metrics=["UserTurns", "llm_calls"])
    evaluate_runs(runtime, [folder], config, engine=None, scope=judge_scope(config))
    metrics = kit.read_metrics(folder)["metrics"]
    assert metrics["UserTurns"]["value"] == 1.0 and metrics["LLMCalls"]["value"] == 2


def test_usage_metrics_need_an_event_log(register_plugin: Any, kit: SimpleNamespace,
                                         tmp_path: Any) -> None:
    folder = kit.write_run(tmp_path / "r")
    (folder / "events.jsonl").unlink()
    config = EvalConfig(metrics=["llm_calls"])
    evaluate_runs(register_plugin(ThirdParty()), [folder], config, engine=None,
                  scope=judge_scope(config))
    record = kit.read_metrics(folder)["metrics"]["LLMCalls"]
    assert record["value"] is None
    assert record["error"] == "skipped: no events.jsonl in the run folder"


def test_cli_with_the_offline_judge_through_the_real_engine(kit: SimpleNamespace,
                                                            tmp_path: Any) -> None:
    answered = kit.write_run(tmp_path / "runs" / "answered")
    lost = kit.write_run(tmp_path / "runs" / "lost", final_answer="I don't know: nothing "
                         "in this conversation mentions the ship date.")
    result = CliRunner().invoke(eval_cli.eval_command, [
        str(tmp_path / "runs"), "--recursive", "--model", "offline/default", "--json",
        "--prompt-metric", "MentionsDate=Score 1 if the final answer gives a date.",
    ])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["metadata"]["judge_model"] == "offline/default"
    ids = {s.mce_id for s in STOCK_JUDGES} | {"MentionsDate"}
    good, bad = kit.read_metrics(answered), kit.read_metrics(lost)
    assert ids <= set(good["metrics"]) and ids <= set(bad["metrics"])
    goal_good, goal_bad = good["metrics"]["GoalSuccessRate"], bad["metrics"]["GoalSuccessRate"]
    assert (goal_good["value"], goal_bad["value"]) == (1.0, 0.0)
    vote = goal_bad["detail"]["votes"][0]
    assert vote["evidence_verified"] == [True] and vote["prompt_tokens"] > 0
    assert (vote["seed"], vote["temperature"]) == (0, 0.0)
