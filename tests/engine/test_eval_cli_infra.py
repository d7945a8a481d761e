"""Issue 12, item 10: ``mas-ctl eval --infra`` sends judge calls the way the Infra says,
and ``eval --model`` is the caller's override (source ``override``, docs/models.md).

The judge is a real LiteLLM call to the scripted OpenAI server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mas.library.eval import cli as eval_cli

VERDICT = json.dumps({"score": 1, "reasoning": "fine", "evidence": []})


def _run_folder(folder: Path) -> Path:
    folder.mkdir(parents=True)
    messages = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi."}]
    (folder / "transcript.json").write_text(json.dumps({
        "session_id": "s1", "agent": "helper", "model": "gpt-4o", "messages": messages,
        "final_answer": "Hi.", "error": None}))
    (folder / "events.jsonl").write_text("")
    return folder


def _infra(path: Path, base_url: str) -> Path:
    path.write_text(
        "apiVersion: mas/v1\nkind: Infra\nmetadata: {name: judge-proxy}\nspec:\n"
        f"  generation:\n    api_base: {base_url}\n    api_key_env: JUDGE_PROXY_KEY\n"
        "    num_retries: 0\n"
        "  models: {judge-alias: openai/deployed-judge}\n"
    )
    return path


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(eval_cli.eval_command, list(args))


def test_eval_infra_sends_judge_calls_through_the_infra(
    server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_PROXY_KEY", "sk-judge-proxy-0123456789")
    server.ok(VERDICT)
    folder = _run_folder(tmp_path / "run")
    infra = _infra(tmp_path / "infra.yaml", server.base_url)
    result = _invoke(str(folder), "--infra", str(infra), "--model", "judge-alias",
                     "-m", "GoalSuccessRate", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["metadata"]["judge_model"] == "judge-alias"
    assert report["metadata"]["judge_model_source"] == "override"
    # The infra's mapping, endpoint and key were used for the judge request.
    assert [r["model"] for r in server.requests] == ["deployed-judge"]
    assert server.headers[0]["authorization"] == "Bearer sk-judge-proxy-0123456789"
    scored = json.loads((folder / "metrics.json").read_text())
    assert "GoalSuccessRate" in scored["metrics"]


def test_eval_model_source_is_override(server: Any, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_PROXY_KEY", "k")
    server.ok(VERDICT)
    config = tmp_path / "eval.yaml"
    config.write_text("model: from-the-file\nmetrics: [GoalSuccessRate]\n")
    infra = _infra(tmp_path / "infra.yaml", server.base_url)
    result = _invoke(str(_run_folder(tmp_path / "run")), "--infra", str(infra),
                     "--eval-config", str(config), "--model", "openai/flag-judge", "--json")
    assert result.exit_code == 0, result.output
    meta = json.loads(result.output)["metadata"]
    # The flag wins over the step's config.model, and says so.
    assert (meta["judge_model"], meta["judge_model_source"]) == ("openai/flag-judge", "override")
    assert [r["model"] for r in server.requests] == ["flag-judge"]


def test_eval_infra_must_be_an_infra_manifest(tmp_path: Path) -> None:
    bad = tmp_path / "infra.yaml"
    bad.write_text("apiVersion: mas/v1\nkind: Infra\nmetadata: {name: x}\n"
                   "spec: {generation: {timeout: -1}}\n")
    result = _invoke(str(_run_folder(tmp_path / "run")), "--infra", str(bad), "-m", "tokens")
    assert result.exit_code == 2
    assert "spec.generation.timeout" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("command", ["eval", "run", "compile", "validate"])
def test_eval_infra_of_another_kind_is_refused(command: str, mas_ctl: Any, tmp_path: Path) -> None:
    # An Agent given as --infra was left unread by eval (judge calls went out without the
    # deployment meant) and loaded as a second agent by run; every command refuses it.
    agent = tmp_path / "agent.yaml"
    agent.write_text("apiVersion: mas/v1\nkind: Agent\nmetadata: {name: a}\n"
                     "spec: {models: [{id: main, model: offline/default}]}\n")
    turns = tmp_path / "turns.jsonl"
    turns.write_text('"Hello"\n')
    first = {"eval": [str(_run_folder(tmp_path / "run")), "-m", "tokens"],
             "run": [str(agent), "--input", str(turns), "--out", str(tmp_path / "out")]}
    result = mas_ctl(command, *first.get(command, [str(agent)]), "--infra", agent)
    assert result.code == 2
    assert result.err.strip() == f"{agent}: kind: --infra takes an Infra manifest (got 'Agent')"
