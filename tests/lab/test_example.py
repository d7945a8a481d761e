"""The shipped context-ablation experiment: valid, and runnable offline (one item here)."""

from __future__ import annotations

import json
from pathlib import Path

from mas.library.lab import run_experiment
from mas.library.lab.experiment import load_lab_experiment
from mas.runtime import Runtime

EXPERIMENT = (Path(__file__).resolve().parents[2] / "library-lab" / "examples" / "context-ablation"
              / "experiment.yaml")


def test_the_example_compiles_five_flavours(runtime: Runtime) -> None:
    experiment = load_lab_experiment(runtime, EXPERIMENT)
    bound = {f.name: (f.agent.binding.type, f.agent.summarizer_model) for f in experiment.flavours}
    assert {name: kind for name, (kind, _) in bound.items()} == {
        "summarising": "summarising", "sliding_window": "sliding_window", "stack": "stack",
        "summarising_cheap": "summarising", "summarising_recall": "summarising"}
    cheap = bound["summarising_cheap"][1]
    assert cheap is not None and (cheap.model, cheap.source) == ("offline/mini", "override")
    assert bound["summarising"][1] is not None and bound["summarising"][1].model == "offline/default"
    assert all(f.manifests.infra is not None for f in experiment.flavours)  # priced offline calls
    assert len(experiment.items) == 15  # 12 sessions, and 3 several windows long


def test_the_example_runs_offline_and_prices_its_calls(runtime: Runtime, tmp_path: Path) -> None:
    outcome = run_experiment(runtime, EXPERIMENT, runs_root=tmp_path, limit=1,
                             flavours=["summarising", "sliding_window"])
    assert outcome.ok
    results = json.loads((outcome.run.path / "results.json").read_text())["metrics"]
    assert results["summarising"]["FactRecall"]["mean"] == 1.0
    assert results["sliding_window"]["FactRecall"]["mean"] == 0.0
    assert results["summarising"]["Cost"]["mean"] > 0 and results["summarising"]["SummarizerCalls"]["mean"] >= 1
    assert (outcome.run.path / "plots" / "score_vs_cost.svg").is_file()
    html = (outcome.run.path / "report.html").read_text()
    assert "cost USD (offline model at hosted rates)" in html  # the cost says how it is priced
    judge = outcome.records["eval_mce"].metadata
    assert judge["judge_model"] == "offline/default" and judge["judge_calls"] >= 2
    assert judge["judge_cost"] > 0  # the jury goes through the same priced infra
