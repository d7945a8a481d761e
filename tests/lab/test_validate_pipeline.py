"""Issue 12, item 4: ``mas-ctl validate`` runs every check ``lab run`` runs before its first
session, through the ``mas_check_manifests`` hook (the lab answers with its own code)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mas.library.lab import run_experiment
from mas.runtime import Runtime
from mas.runtime.errors import ManifestError

CASES = {
    "unknown_depends_on": ("      - {type: extract_trajectories, depends_on: [nowhere]}\n",
                           "post[0].depends_on[0]: step 'extract_trajectories' depends on an "
                           "unknown step"),
    "unknown_step_type": ("      - {type: extract_trajectorys, name: x}\n",
                          "post[0].type: unknown lab_step type 'extract_trajectorys'"),
    "cycle": ("      - {type: eval_mce, depends_on: [aggregate]}\n",
              "the steps form a cycle: "),
    "prompt_metric_without_prompt": (
        "      - {type: eval_mce, config: {prompt_metrics: [{id: Brief}]}}\n",
        "post[0].config.prompt_metrics[0].prompt: Field required"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_runs_the_lab_pre_run_checks(case: str, make_experiment: Any, tmp_path: Path,
                                               mas_ctl: Callable[..., Any],
                                               runtime: Runtime) -> None:
    post, expected = CASES[case]
    path = make_experiment(tmp_path / "exp", post=post)
    result = mas_ctl("validate", path)
    assert result.code == 2, result.out
    assert expected in result.err, result.err
    assert "Traceback" not in result.err
    # lab run refuses the same file with the same line, before any session.
    with pytest.raises(ManifestError) as caught:
        run_experiment(runtime, path, runs_root=tmp_path / "runs", check_keys=False)
    assert any(expected in p.format() for p in caught.value.problems)
    lab_lines = {p.format() for p in caught.value.problems}
    assert set(result.err.strip().splitlines()) <= lab_lines


def test_validate_accepts_a_valid_experiment(make_experiment: Any, tmp_path: Path,
                                             mas_ctl: Callable[..., Any]) -> None:
    result = mas_ctl("validate", make_experiment(tmp_path / "exp"))
    assert result.code == 0, result.err
    assert result.out.startswith("ok: ")


def test_validate_checks_the_dataset_like_lab_run(make_experiment: Any, tmp_path: Path,
                                                  mas_ctl: Callable[..., Any]) -> None:
    path = make_experiment(tmp_path / "exp")
    (tmp_path / "exp" / "dataset.jsonl").write_text("not json\n")
    result = mas_ctl("validate", path)
    assert result.code == 2 and "dataset.jsonl" in result.err


def test_validate_and_lab_run_refuse_a_budget_out_of_bounds(make_experiment: Any, tmp_path: Path,
                                                           mas_ctl: Callable[..., Any],
                                                           runtime: Runtime) -> None:
    # Issue 12, item 5, for experiments: every flavour's budget is checked before any session.
    path = make_experiment(tmp_path / "exp")
    agent = tmp_path / "exp" / "agent.yaml"
    agent.write_text(agent.read_text().replace("max_tokens: 256", "max_tokens: 8000"))
    expected = (f"{agent}: spec.models[id=main].max_tokens: a completion reserve of 8,000 "
                "tokens leaves no room for input")
    result = mas_ctl("validate", path)
    assert result.code == 2 and expected in result.err
    started: list[Any] = []
    with pytest.raises(ManifestError) as caught:
        run_experiment(runtime, path, runs_root=tmp_path / "runs", check_keys=False,
                       session_function=started.append)
    assert started == [] and any(expected in p.format() for p in caught.value.problems)
