"""Issue 13 item 5: ``mas-ctl eval --experiment`` sends judge calls where the experiment's
Infra says, never to the provider's public endpoint."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

VERDICT = json.dumps({"score": 1, "reasoning": "fine", "evidence": []})


def test_item05_eval_experiment_uses_the_experiments_infra(
    tmp_path: Path, mas_ctl: Callable[..., Any], fake_openai: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOCAL_JUDGE_KEY", "sk-local-judge-0123456789")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_openai.ok(VERDICT)
    (tmp_path / "agent.yaml").write_text(f"""\
apiVersion: mas/v1
kind: Agent
metadata: {{name: helper}}
spec:
  models: [{{id: main, model: openai/gpt-4o-mini}}]
---
apiVersion: mas/v1
kind: Infra
metadata: {{name: local}}
spec:
  generation: {{api_base: "{fake_openai.base_url}", api_key_env: LOCAL_JUDGE_KEY,
               num_retries: 0, timeout: 5}}
""")
    (tmp_path / "data.jsonl").write_text(json.dumps({"id": "i0", "turns": ["hi"]}) + "\n")
    experiment = tmp_path / "exp.yaml"
    experiment.write_text("experiment:\n  name: judged\n"
                          "  models: {main: openai/gpt-4o-mini, judge: openai/gpt-4o-mini}\n"
                          "  applications: [{manifest: ./agent.yaml}]\n"
                          "  flavours: [{name: plain}]\n  dataset: ./data.jsonl\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "transcript.json").write_text(json.dumps({
        "session_id": "s1", "agent": "helper", "model": "openai/gpt-4o-mini",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hi."}],
        "final_answer": "Hi.", "error": None}))
    (run / "events.jsonl").write_text("")
    result = mas_ctl("eval", run, "--experiment", experiment, "-m", "GoalSuccessRate", "--json")
    assert result.code == 0, result.err
    assert [r["model"] for r in fake_openai.requests] == ["gpt-4o-mini"]
    assert fake_openai.headers[0]["authorization"] == "Bearer sk-local-judge-0123456789"
    scored = json.loads((run / "metrics.json").read_text())
    assert scored["metrics"]["GoalSuccessRate"]["value"] == 1
