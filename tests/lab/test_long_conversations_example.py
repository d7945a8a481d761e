"""The long-conversations example: a LoCoMo-format file end to end at a small window."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from mas.library.lab import run_experiment
from mas.library.lab.dataset import load_dataset
from mas.runtime import Runtime
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR

EXAMPLE = Path(__file__).resolve().parents[2] / "library-lab" / "examples" / "long-conversations"
LEVELS = ("EvidenceVerbatim", "EvidenceWithSummary", "EvidenceWithRecall")


def test_the_shipped_sample_is_what_the_generator_writes() -> None:
    spec = importlib.util.spec_from_file_location("generate", EXAMPLE / "generate_conversations.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = json.dumps(module.generate(), indent=1, ensure_ascii=False) + "\n"
    assert (EXAMPLE / "locomo-sample.json").read_text(encoding="utf-8") == text


def test_each_conversation_is_two_to_four_windows_long() -> None:
    items = load_dataset(EXAMPLE / "locomo-sample.json", format="locomo").items
    assert len(items) == 3
    for item in items:
        tokens = sum(DEFAULT_ESTIMATOR.message({"role": "user", "content": item.turn(i).user})
                     for i in range(len(item.turns)))
        assert 2 * 1600 <= tokens <= 4 * 1600, (item.id, tokens)
        assert {p.kind for p in item.probes} == {"1", "2", "4", "5"}


def test_the_example_runs_and_the_evidence_metric_ranks_the_flavours(
        runtime: Runtime, tmp_path: Path) -> None:
    outcome = run_experiment(runtime, EXAMPLE / "experiment.yaml", runs_root=tmp_path)
    assert outcome.ok
    results = json.loads((outcome.run.path / "results.json").read_text())
    assert results["flavours"] == ["summarising", "summarising_recall", "sliding_window", "stack"]
    per = results["metrics"]
    for flavour in results["flavours"]:
        shares = [per[flavour][level] for level in LEVELS]
        # 14 questions with evidence in each of the 3 conversations, pooled.
        assert all(s["method"] == "wilson_pooled" and s["n"] == 42 for s in shares)
        assert all(s["low"] <= s["mean"] <= s["high"] for s in shares)
        assert [s["mean"] for s in shares] == sorted(s["mean"] for s in shares)
        assert {"EvidenceVerbatim[4]", "EvidenceWithRecall[1]"} <= set(per[flavour])
    # The intervals separate flavours: some pair does not overlap on some level.
    separated = [(a, b, level) for level in LEVELS for a in results["flavours"]
                 for b in results["flavours"]
                 if per[a][level]["low"] > per[b][level]["high"]]
    assert separated
    table = (outcome.run.path / "results.txt").read_text()
    assert "evidence verbatim in request" in table and "evidence + recall [4]" in table
