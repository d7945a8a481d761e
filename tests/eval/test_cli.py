"""``mas-ctl eval`` invoked directly through click's CliRunner (judge engine scripted)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from mas.library.eval import cli as eval_cli
from mas.library.eval.metrics.judge import STOCK_JUDGES
from mas.runtime import Runtime


@pytest.fixture
def engine(kit: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    scripted = kit.ScriptedEngine(lambda *_: kit.verdict(1, "fine"))
    monkeypatch.setattr(eval_cli, "make_engine", lambda runtime, infra=None: scripted)
    return scripted


def _invoke(*args: str) -> object:
    return CliRunner().invoke(eval_cli.eval_command, list(args))


def test_command_is_registered_for_mas_ctl() -> None:
    entry = Runtime.create().registries.cli_command.get("eval")
    assert entry.factory() is eval_cli.eval_command


def test_list_metrics_shows_ids_aliases_and_inputs() -> None:
    result = _invoke("--list-metrics")
    assert result.exit_code == 0
    for stock in STOCK_JUDGES:
        assert stock.mce_id in result.output and stock.name in result.output
    assert "inputs: conversation, final_answer" in result.output
    listed = json.loads(_invoke("--list-metrics", "--json").output)
    fact = next(item for item in listed if item["id"] == "FactRecall")
    assert fact["kind"] == "computed" and fact["inputs"] == ["final_answer", "expected_facts"]


def test_scores_a_run_folder_with_an_inline_metric(kit: SimpleNamespace, engine, tmp_path) -> None:
    folder = kit.write_run(tmp_path / "run")
    result = _invoke(str(folder), "--model", "judge-m",
                     "--prompt-metric", "Polite=Score 1 if polite.")
    assert result.exit_code == 0, result.output
    assert "judge model=judge-m source=override" in result.output
    document = kit.read_metrics(folder)
    assert {s.mce_id for s in STOCK_JUDGES} | {"Polite"} <= set(document["metrics"])
    assert {call["model"] for call in engine.calls} == {"judge-m"}


def test_recursive_json_and_skip_then_overwrite(kit: SimpleNamespace, engine, tmp_path) -> None:
    for name in ("a/run-1", "b/deeper/run-2"):
        kit.write_run(tmp_path / name)
    result = _invoke(str(tmp_path), "-r", "--json", "-m", "GoalSuccessRate", "-m", "tokens")
    report = json.loads(result.output)
    assert [r["status"] for r in report["runs"]] == ["scored", "scored"]
    # Without --model or an experiment, no manifest pins a judge: the run folders' turn
    # models are not application manifests (spec 000 step 7), so the defaults answer.
    assert report["metadata"]["judge_model"] == "offline/default"
    assert report["metadata"]["judge_model_source"] == "package.defaults.model"
    again = json.loads(_invoke(str(tmp_path), "-r", "--json", "-m", "GoalSuccessRate").output)
    assert [r["status"] for r in again["runs"]] == ["skipped", "skipped"]
    forced = json.loads(_invoke(str(tmp_path), "-r", "--json", "--overwrite",
                                "-m", "GoalSuccessRate").output)
    assert [r["status"] for r in forced["runs"]] == ["scored", "scored"]
    assert len(engine.calls) == 4


def test_unknown_metric_lists_available_ids_and_exits_2(engine, tmp_path, kit) -> None:
    result = _invoke(str(kit.write_run(tmp_path / "r")), "-m", "GoalSucess")
    assert result.exit_code == 2
    assert "unknown metric id" in result.output and "GoalSuccessRate (goal_success_rate)" in \
        result.output
    assert engine.calls == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--prompt-metric", "no-equals-sign"], "expected ID=PROMPT"),
        (["--prompt-metric", "Tone="], "prompt_metrics[0].prompt: must not be"),
        (["--samples", "0"], "0 is not in the range"),
    ],
)
def test_bad_options(kit: SimpleNamespace, engine, tmp_path, args: list[str],
                     message: str) -> None:
    result = _invoke(str(kit.write_run(tmp_path / "r")), *args)
    assert result.exit_code == 2 and message in result.output


def test_source_must_be_a_run_folder_unless_recursive(tmp_path) -> None:
    result = _invoke(str(tmp_path))
    assert result.exit_code == 2 and "pass --recursive" in result.output
    assert "no run folder" in _invoke(str(tmp_path), "-r").output
    assert "missing argument SOURCE" in _invoke().output


def test_eval_config_file(kit: SimpleNamespace, engine, tmp_path) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text("model: from-file\nmetrics: [Consistency]\nprompt_metrics:\n"
                      "  - {id: Brief, prompt: Score 1 if replies are short., unit: binary}\n")
    folder = kit.write_run(tmp_path / "r")
    result = _invoke(str(folder), "--eval-config", str(config), "--json")
    assert json.loads(result.output)["metadata"]["judge_model"] == "from-file"
    assert set(kit.read_metrics(folder)["metrics"]) == {"Consistency", "Brief"}
    config.write_text("model: x\nsampels: 2\n")
    bad = _invoke(str(folder), "--eval-config", str(config))
    assert bad.exit_code == 2 and "sampels: unknown field" in bad.output
