"""Issue 12, item 1: the judge chain's step 7 reads only concrete models written in the
application manifests, never the turn models resolved from the experiment or config.yaml."""

from __future__ import annotations

import json
from pathlib import Path

from mas.library.lab.lab import run_experiment
from mas.runtime import Runtime

AGENT = """\
apiVersion: mas/v1
kind: Agent
metadata: {name: inherits}
spec:
  models:
    - {id: main, model: any, context_window: 8000, max_tokens: 256}
"""


def _experiment(root: Path, models: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.yaml").write_text(AGENT)
    item = {"id": "i1", "turns": ["My locker is L-12.", "Which locker is mine?"],
            "expected_facts": ["L-12"]}
    (root / "dataset.jsonl").write_text(json.dumps(item) + "\n")
    (root / "config.yaml").write_text("defaults: {model: offline/default}\n")
    path = root / "experiment.yaml"
    path.write_text(
        "experiment:\n  name: step7\n" + models
        + "  applications: [{manifest: ./agent.yaml}]\n  dataset: ./dataset.jsonl\n"
        "  metadata: {model_name: offline/legacy-judge}\n"
        "  application:\n    post:\n"
        "      - {type: eval_mce, depends_on: [extract_trajectories],"
        " config: {metrics: [GoalSuccessRate]}}\n"
    )
    return path


def _judge(runtime: Runtime, path: Path, runs: Path) -> tuple[str, str]:
    outcome = run_experiment(runtime, path, runs_root=runs, config=path.parent / "config.yaml")
    assert outcome.ok, {n: r.error for n, r in outcome.records.items()}
    metadata = outcome.records["eval_mce"].metadata
    return metadata["judge_model"], metadata["judge_model_source"]


def test_judge_chain_step7_reads_only_manifest_models(runtime: Runtime, tmp_path: Path) -> None:
    # The agent is on `any`, so its turn model comes from config.yaml: that is not an
    # application model, and step 8 (metadata.model_name) must win, not config.yaml's model.
    path = _experiment(tmp_path / "exp")
    assert _judge(runtime, path, tmp_path / "runs") == (
        "offline/legacy-judge", "experiment.metadata.model_name")


def test_judge_chain_step7_ignores_a_turn_model_from_the_experiment(
    runtime: Runtime, tmp_path: Path
) -> None:
    # models.summarizer pins nothing the judge reads; the turn model still comes from
    # config.yaml, and a concrete row written in the agent would be needed for step 7.
    path = _experiment(tmp_path / "exp", "  models: {summarizer: offline/default}\n")
    model, source = _judge(runtime, path, tmp_path / "runs")
    assert source != "application.spec.models"
    assert (model, source) == ("offline/legacy-judge", "experiment.metadata.model_name")


def test_judge_chain_step7_takes_a_concrete_agent_row(runtime: Runtime, tmp_path: Path) -> None:
    path = _experiment(tmp_path / "exp")
    (path.parent / "agent.yaml").write_text(AGENT.replace("model: any", "model: offline/app"))
    assert _judge(runtime, path, tmp_path / "runs") == ("offline/app", "application.spec.models")
