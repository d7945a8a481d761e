"""Issue 12, item 12: two identical lab runs give identical results. Sessions run
concurrently, and the offline prefix cache is per session, so cache-hit rates (and every
other metric) do not depend on how the threads interleaved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mas.library.lab import run_experiment
from mas.runtime import Runtime


def _metrics(run: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted((run / "sessions").rglob("metrics.json")):
        values = json.loads(path.read_text())["metrics"]
        found[str(path.parent.relative_to(run))] = {
            name: metric.get("value") for name, metric in values.items()}
    return found


def test_determinism_two_identical_lab_runs_give_identical_results(
    runtime: Runtime, make_experiment: Any, tmp_path: Path
) -> None:
    path = make_experiment(tmp_path / "exp")
    runs = [run_experiment(runtime, path, runs_root=tmp_path / f"runs-{n}", max_concurrency=4)
            for n in (1, 2)]
    assert all(outcome.ok for outcome in runs)
    first, second = (_metrics(outcome.run.path) for outcome in runs)
    assert first and first == second
    rates = [m["CacheHitRate"] for m in first.values()]
    assert all(rate is not None for rate in rates) and max(rates) > 0
    # The table the user reads (the prompt cache-hit rate among its rows) is the same too.
    tables = [(o.run.path / "results_table.json").read_text() for o in runs]
    assert tables[0] == tables[1]
    tokens = [[(row["cached_tokens"], row["prompt_tokens"])
               for row in map(json.loads, (o.run.path / "trajectories.jsonl").read_text()
                              .splitlines())] for o in runs]
    assert sorted(tokens[0]) == sorted(tokens[1])
