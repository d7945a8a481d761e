"""The validation pass: every bad input is a clear error before any session starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mas.library.lab import run_experiment
from mas.library.lab.experiment import load_lab_experiment
from mas.runtime import Runtime
from mas.runtime.errors import ManifestError


def _refused(runtime: Runtime, path: Path, tmp_path: Path, **options: Any) -> list[str]:
    """Run and expect a ManifestError; no session may have started, no run folder made."""
    started: list[Any] = []
    with pytest.raises(ManifestError) as caught:
        run_experiment(runtime, path, runs_root=tmp_path / "runs", session_function=started.append,
                       **options)
    assert started == []
    assert not (tmp_path / "runs").exists()
    return [p.format() for p in caught.value.problems]


def test_the_tiny_experiment_is_valid(runtime: Runtime, tiny: Path) -> None:
    experiment = load_lab_experiment(runtime, tiny)
    assert [f.name for f in experiment.flavours] == ["summarising", "sliding_window", "stack"]
    assert [f.agent.binding.type for f in experiment.flavours] == ["summarising", "sliding_window", "stack"]
    assert [i.id for i in experiment.items] == ["a-01", "a-02"]


def test_missing_application_file(runtime: Runtime, make_experiment: Any, tmp_path: Path) -> None:
    path = make_experiment(tmp_path / "exp")
    (tmp_path / "exp" / "agent.yaml").unlink()
    lines = _refused(runtime, path, tmp_path)
    assert lines == [f"{path}: experiment.applications[0].manifest: file not found (got './agent.yaml')"]


def test_unknown_flavour(runtime: Runtime, tiny: Path, tmp_path: Path) -> None:
    lines = _refused(runtime, tiny, tmp_path, flavours=["stack", "sumarising"])
    assert lines == [f"{tiny}: --flavour: unknown flavour; the experiment has summarising, "
                     "sliding_window, stack (got 'sumarising')"]


def test_missing_overlay_file(runtime: Runtime, make_experiment: Any, tmp_path: Path) -> None:
    path = make_experiment(tmp_path / "exp")
    (tmp_path / "exp" / "overlays" / "stack.yaml").unlink()
    lines = _refused(runtime, path, tmp_path)
    assert lines == [f"{path}: experiment.flavours[2].overlays[0]: file not found "
                     "(got 'overlays/stack.yaml')"]


def test_unknown_step_reference_and_cycle(runtime: Runtime, make_experiment: Any, tmp_path: Path) -> None:
    post = ("      - {type: extract_trajectories, depends_on: [nowhere]}\n"
            "      - {type: eval_mce, depends_on: [aggregate]}\n")
    lines = _refused(runtime, make_experiment(tmp_path / "exp", post=post), tmp_path)
    assert any("post[0].depends_on[0]: step 'extract_trajectories' depends on an unknown step" in line
               for line in lines)
    assert any("the steps form a cycle: " in line and "eval_mce" in line and "aggregate" in line
               for line in lines)


def test_dataset_lines_that_are_not_json_or_lack_turns(runtime: Runtime, make_experiment: Any, tmp_path: Path) -> None:
    path = make_experiment(tmp_path / "exp")
    dataset = tmp_path / "exp" / "dataset.jsonl"
    dataset.write_text('{"id": "ok", "turns": ["hi"]}\n{broken\n{"id": "x"}\n')
    lines = _refused(runtime, path, tmp_path)
    assert [line.split(": ", 1)[1] for line in lines] == [
        "line 2: not valid JSON (Expecting property name enclosed in double quotes)",
        "line 3.turns: Field required",
    ]
    assert all(line.startswith(str(dataset)) for line in lines)


def test_missing_dataset_file_and_flavour_patch_errors(runtime: Runtime, make_experiment: Any, tmp_path: Path) -> None:
    path = make_experiment(tmp_path / "exp")
    text = path.read_text().replace("./dataset.jsonl", "./nope.jsonl").replace(
        "    - name: stack\n", "    - name: stack\n      patch: {budget: {max_llm_calls: 0}}\n")
    path.write_text(text)
    lines = _refused(runtime, path, tmp_path)
    assert f"{path}: experiment.dataset: file not found (got './nope.jsonl')" in lines
    assert f"{path}: experiment.flavours[2].patch.budget.max_llm_calls: Input should be greater " \
        "than or equal to 1 (got 0)" in lines


def test_a_model_with_no_key_configured(runtime: Runtime, tiny: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    lines = _refused(runtime, tiny, tmp_path, model="openai/gpt-4o-mini")
    assert lines == [f"{tiny}: models: no key configured for flavour summarising: turn model "
                     "(source experiment.models.main): set OPENAI_API_KEY in the environment "
                     "(got 'openai/gpt-4o-mini')"]


def test_a_judge_with_no_key_configured(runtime: Runtime, make_experiment: Any, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    post = "      - {type: eval_mce, config: {model: anthropic/claude-3-5-haiku-latest}}\n"
    lines = _refused(runtime, make_experiment(tmp_path / "exp", post=post), tmp_path)
    assert len(lines) == 1 and "step eval_mce: judge model (source eval_mce.config.model)" in lines[0]
    assert "ANTHROPIC_API_KEY" in lines[0]


def test_bad_options(runtime: Runtime, tiny: Path, tmp_path: Path) -> None:
    assert _refused(runtime, tiny, tmp_path, max_concurrency=0) == [
        f"{tiny}: --max-concurrency: must be at least 1 (got 0)"]
    assert _refused(runtime, tiny, tmp_path, limit=0) == [f"{tiny}: --limit: must be at least 1 (got 0)"]


def test_limit_and_flavour_selection(runtime: Runtime, tiny: Path) -> None:
    experiment = load_lab_experiment(runtime, tiny, flavours=["stack"], limit=1)
    assert [f.name for f in experiment.flavours] == ["stack"]
    assert [i.id for i in experiment.items] == ["a-01"]
    assert json.loads(json.dumps(experiment.options)) == {"flavours": ["stack"], "limit": 1, "model": None}


INFRA = """\
---
apiVersion: mas/v1
kind: Infra
metadata: {{name: local}}
spec:
  generation: {generation}
"""


def test_an_infra_key_variable_is_what_must_be_set(runtime: Runtime, make_experiment: Any, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAB_TEST_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = make_experiment(tmp_path / "exp")
    agent = tmp_path / "exp" / "agent.yaml"
    base = agent.read_text()
    agent.write_text(base + INFRA.format(generation="{api_key_env: LAB_TEST_KEY}"))
    lines = _refused(runtime, path, tmp_path, flavours=["stack"], model="openai/gpt-4o-mini")
    assert lines == [f"{path}: models: no key configured for flavour stack: set LAB_TEST_KEY "
                     "(infra generation.api_key_env) in the environment (got 'openai/gpt-4o-mini')"]
    monkeypatch.setenv("LAB_TEST_KEY", "k")
    assert load_lab_experiment(runtime, path, flavours=["stack"], model="openai/gpt-4o-mini")
    # A server of one's own needs no key from the provider's usual variable.
    agent.write_text(base + INFRA.format(generation="{api_base: 'http://127.0.0.1:9/v1'}"))
    assert load_lab_experiment(runtime, path, flavours=["stack"], model="openai/gpt-4o-mini")


def test_n_runs_repeat_every_cell_with_distinct_seeds(runtime: Runtime, make_experiment: Any,
                                                      tmp_path: Path) -> None:
    from mas.library.lab.rundir import RunFolder
    from mas.library.lab.runner import plan_jobs

    path = make_experiment(tmp_path / "exp", extra="  n_runs: 2\n")
    experiment = load_lab_experiment(runtime, path, flavours=["stack"])
    jobs = plan_jobs(experiment, RunFolder(tmp_path / "run"), runtime)
    assert [(j.item.id, j.run_index) for j in jobs] == [("a-01", 0), ("a-01", 1), ("a-02", 0), ("a-02", 1)]
    assert jobs[1].folder == tmp_path / "run" / "sessions" / "stack" / "a-01" / "run-1"
    assert len({j.seed for j in jobs}) == 4


def test_an_experiment_without_an_agent(runtime: Runtime, make_experiment: Any, tmp_path: Path) -> None:
    path = make_experiment(tmp_path / "exp")
    text = path.read_text()
    start, end = text.index("  flavours:"), text.index("  dataset:")
    path.write_text(text[:start] + text[end:])  # no flavours: the single `default` one
    (tmp_path / "exp" / "agent.yaml").write_text(INFRA.lstrip("-\n").format(generation="{}"))
    lines = _refused(runtime, path, tmp_path)
    assert f"{path}: experiment.applications: the lab needs an application with an Agent to talk to" in lines


def test_an_experiment_without_flavours_has_one_called_default(runtime: Runtime, make_experiment: Any,
                                                               tmp_path: Path) -> None:
    path = make_experiment(tmp_path / "exp")
    text = path.read_text()
    path.write_text(text[:text.index("  flavours:")] + text[text.index("  dataset:"):])
    experiment = load_lab_experiment(runtime, path)
    assert [(f.name, f.agent.binding.type) for f in experiment.flavours] == [("default", "summarising")]
    assert _refused(runtime, path, tmp_path, flavours=["stack"]) == [
        f"{path}: --flavour: unknown flavour; the experiment has default (got 'stack')"]
