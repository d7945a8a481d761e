"""Scoring run folders end to end with a scripted judge: metrics.json, skips, failures."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest

from mas.library.eval import EvalConfig, evaluate_runs, judge_scope
from mas.library.eval.metrics.judge import STOCK_JUDGES
from mas.runtime import Runtime
from mas.runtime.spec.model_ref import JudgeScope

MCE_IDS = [s.mce_id for s in STOCK_JUDGES]
INLINE = {"id": "Politeness", "prompt": "Score 1 if every agent reply is polite.",
          "unit": "binary", "evidence": False}


@pytest.fixture(scope="module")
def runtime() -> Runtime:
    return Runtime.create()


def test_all_stock_ids_plus_inline_metric_land_in_one_schema_valid_file(
    runtime: Runtime, kit: SimpleNamespace, tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = kit.write_run(tmp_path / "run-1", item={"id": "i", "turns": [],
                                                     "expected_facts": ["A-1042", "12 May"]})
    config = EvalConfig(model="judge-x", prompt_metrics=[INLINE], samples=2)
    engine = kit.ScriptedEngine(lambda *_: kit.verdict(1, "fine", ["12 May"]))
    with caplog.at_level(logging.INFO, logger="mas.library.eval.mce.runner"):
        report = evaluate_runs(runtime, [folder], config, engine=engine,
                               scope=judge_scope(config))
    assert "MCE Jury configured (model=judge-x, source=eval_mce.config.model" in caplog.text
    assert report.metadata["judge_model"] == "judge-x"
    assert report.metadata["judge_model_source"] == "eval_mce.config.model"
    document = kit.read_metrics(folder)
    assert set(MCE_IDS) | {"Politeness", "FactRecall", "Tokens"} <= set(document["metrics"])
    goal = document["metrics"]["GoalSuccessRate"]
    assert goal["value"] == 1.0 and goal["detail"]["n_votes"] == 2
    assert len(goal["detail"]["prompt_sha256"]) == 64
    assert document["metrics"]["FactRecall"]["value"] == 1.0
    assert document["judge"]["judge_model_source"] == "eval_mce.config.model"
    assert document["run_quality"]["status"] == "ok"
    assert len(engine.calls) == (len(MCE_IDS) + 1) * 2


def test_errored_run_is_skipped_for_judging_but_keeps_usage(
    runtime: Runtime, kit: SimpleNamespace, tmp_path
) -> None:
    folder = kit.write_run(tmp_path / "r", error="BudgetExceededError: max_llm_calls")
    engine = kit.ScriptedEngine()
    evaluate_runs(runtime, [folder], EvalConfig(model="j"), engine=engine,
                  scope=judge_scope(EvalConfig(model="j")))
    document = kit.read_metrics(folder)
    assert engine.calls == []
    goal = document["metrics"]["GoalSuccessRate"]
    assert goal["value"] is None and goal["error"].startswith("skipped: agent errored")
    assert document["metrics"]["LLMCalls"]["value"] == 2
    assert document["run_quality"]["status"] == "partial"


def test_empty_final_answer_skips_metrics_that_need_it(
    runtime: Runtime, kit: SimpleNamespace, tmp_path
) -> None:
    folder = kit.write_run(tmp_path / "r", final_answer="")
    config = EvalConfig(model="j", metrics=["ResponseCompleteness", "Consistency"])
    evaluate_runs(runtime, [folder], config, engine=kit.ScriptedEngine(),
                  scope=judge_scope(config))
    metrics = kit.read_metrics(folder)["metrics"]
    assert metrics["ResponseCompleteness"]["error"] == "skipped: the final answer is empty"
    assert metrics["Consistency"]["value"] == 1.0


def test_no_judge_model_keeps_the_computed_metrics(
    runtime: Runtime, kit: SimpleNamespace, tmp_path
) -> None:
    folder = kit.write_run(tmp_path / "r")
    report = evaluate_runs(runtime, [folder], EvalConfig(), engine=kit.ScriptedEngine(),
                           scope=JudgeScope(package_default=None))
    assert "no concrete judge model" in report.metadata["judge_error"]
    document = kit.read_metrics(folder)
    assert document["metrics"]["Groundedness"]["value"] is None
    assert "no jury" in document["metrics"]["Groundedness"]["error"]
    assert document["metrics"]["Tokens"]["value"] == 250
    assert document["judge"] is None


def test_timeouts_and_bad_replies_never_lose_other_metrics(
    runtime: Runtime, kit: SimpleNamespace, tmp_path
) -> None:
    from mas.runtime.errors import ModelCallError

    def reply(metric: str, model: str, messages: list[dict[str, Any]]) -> str:
        if metric == "Groundedness":
            raise ModelCallError("model call to 'j' failed: Timeout")
        return "not json" if metric == "Consistency" else kit.verdict(0)

    folder = kit.write_run(tmp_path / "r")
    config = EvalConfig(model="j", metrics=["Groundedness", "Consistency", "GoalSuccessRate",
                                             "Tokens"])
    evaluate_runs(runtime, [folder], config, engine=kit.ScriptedEngine(reply),
                  scope=judge_scope(config))
    document = kit.read_metrics(folder)
    metrics = document["metrics"]
    assert metrics["Groundedness"]["value"] is None and "Timeout" in metrics["Groundedness"][
        "detail"]["votes"][0]["error"]
    assert metrics["Consistency"]["detail"]["votes"][0]["raw"] == "not json"
    assert metrics["GoalSuccessRate"]["value"] == 0.0 and metrics["Tokens"]["value"] == 250
    assert document["run_quality"]["status"] == "partial"
    assert len(document["run_quality"]["errors"]) == 2


def test_scored_runs_are_skipped_unless_overwrite_and_missing_ids_are_added(
    runtime: Runtime, kit: SimpleNamespace, tmp_path
) -> None:
    folder = kit.write_run(tmp_path / "r")
    engine = kit.ScriptedEngine()
    first = EvalConfig(model="j", metrics=["GoalSuccessRate"])
    evaluate_runs(runtime, [folder], first, engine=engine, scope=judge_scope(first))
    again = evaluate_runs(runtime, [folder], first, engine=engine, scope=judge_scope(first))
    assert again.runs[0].status == "skipped" and len(engine.calls) == 1
    more = EvalConfig(model="j", metrics=["GoalSuccessRate", "Consistency"])
    added = evaluate_runs(runtime, [folder], more, engine=engine, scope=judge_scope(more))
    assert added.runs[0].scored == ["Consistency"] and len(engine.calls) == 2
    assert set(kit.read_metrics(folder)["metrics"]) == {"GoalSuccessRate", "Consistency"}
    forced = first.model_copy(update={"overwrite": True})
    redone = evaluate_runs(runtime, [folder], forced, engine=engine, scope=judge_scope(forced))
    assert redone.runs[0].scored == ["GoalSuccessRate"] and len(engine.calls) == 3
    assert set(kit.read_metrics(folder)["metrics"]) == {"GoalSuccessRate", "Consistency"}


def test_damaged_metrics_file_fails_the_run_unless_overwrite(
    runtime: Runtime, kit: SimpleNamespace, tmp_path
) -> None:
    folder = kit.write_run(tmp_path / "r")
    (folder / "metrics.json").write_text("[]")
    config = EvalConfig(metrics=["Tokens"])
    report = evaluate_runs(runtime, [folder], config, engine=None, scope=judge_scope(config))
    assert report.runs[0].status == "failed" and "not a metrics file" in report.runs[0].error
    forced = config.model_copy(update={"overwrite": True})
    report = evaluate_runs(runtime, [folder], forced, engine=None, scope=judge_scope(forced))
    assert report.runs[0].status == "scored" and kit.read_metrics(folder)["metrics"]["Tokens"]


def test_unreadable_run_fails_alone(runtime: Runtime, kit: SimpleNamespace, tmp_path) -> None:
    good = kit.write_run(tmp_path / "good")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "transcript.json").write_text("{not json")
    config = EvalConfig(metrics=["Tokens"])
    report = evaluate_runs(runtime, [bad, good], config, engine=None, scope=judge_scope(config))
    assert [o.status for o in report.runs] == ["failed", "scored"]
    assert "not valid JSON" in (report.runs[0].error or "")
    assert json.loads((good / "metrics.json").read_text())["metrics"]["Tokens"]["value"] == 250


def test_schema_rejects_a_broken_file(kit: SimpleNamespace) -> None:
    import jsonschema

    with pytest.raises(jsonschema.ValidationError):
        kit.assert_schema_valid({"format": "mas-lab/metrics/v1", "session_id": "s",
                                 "metrics": {"X": {"value": "high"}},
                                 "run_quality": {"status": "ok", "warnings": [], "errors": []}})


def test_metrics_that_do_not_apply_are_warnings_not_errors(
    runtime: Runtime, kit: SimpleNamespace, tmp_path
) -> None:
    folder = kit.write_run(tmp_path / "r", messages=[
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    config = EvalConfig(metrics=["ToolErrorRate", "FactRecall", "Tokens"])
    evaluate_runs(runtime, [folder], config, engine=None, scope=judge_scope(config))
    document = kit.read_metrics(folder)
    assert document["metrics"]["ToolErrorRate"]["status"] == "not_applicable"
    assert document["metrics"]["Tokens"]["status"] == "scored"
    quality = document["run_quality"]
    assert quality["status"] == "ok" and quality["errors"] == []
    assert "not applicable: FactRecall: no expected_facts in item.json" in quality["warnings"]


def test_a_file_without_per_id_status_is_merged(
    runtime: Runtime, kit: SimpleNamespace, tmp_path
) -> None:
    folder = kit.write_run(tmp_path / "r")
    (folder / "metrics.json").write_text(json.dumps({
        "session_id": "r", "metrics": {"Old": {"value": None, "error": "judge timed out"}},
        "run_quality": {"status": "unscored", "warnings": [], "errors": []}}))
    config = EvalConfig(metrics=["Tokens"])
    evaluate_runs(runtime, [folder], config, engine=None, scope=judge_scope(config))
    document = kit.read_metrics(folder)
    assert document["metrics"]["Old"]["status"] == "unscored"
    assert document["run_quality"]["errors"] == ["Old: judge timed out"]
