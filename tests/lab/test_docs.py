"""docs/lab.md's custom-step example runs as written, and the guide covers the lab."""

from __future__ import annotations

import json
import re
import types
from pathlib import Path
from typing import Any

from mas.library.lab import run_experiment

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "lab.md").read_text()


def _example_module() -> types.ModuleType:
    section = GUIDE.split("## Writing a custom step", 1)[1]
    code = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]
    module = types.ModuleType("lab_steps_example")
    exec(compile(code, "docs/lab.md", "exec"), module.__dict__)  # noqa: S102
    return module


def test_the_custom_step_example_runs_in_a_pipeline(tmp_path: Path, register_plugin: Any,
                                                    make_experiment: Any) -> None:
    runtime = register_plugin(_example_module(), "my_steps")
    post = ("      - {type: longest_answer, config: {top: 5}, "
            "depends_on: [extract_trajectories]}\n")
    path = make_experiment(tmp_path / "exp", post=post)
    outcome = run_experiment(runtime, path, runs_root=tmp_path / "runs", flavours=["stack"], limit=1)
    record = outcome.records["longest_answer"]
    assert record.status == "ok" and record.metadata == {"sessions": 1}
    rows = json.loads((outcome.run.path / "longest_answer.json").read_text())
    assert rows[0][1:] == ["stack", "a-01"] and rows[0][0] > 0
    assert outcome.ok  # aggregate waited for the added step, and everything finished


def test_the_guide_covers_experiments_datasets_and_steps() -> None:
    for heading in ("## Writing an experiment", "## Writing a dataset", "## Writing a custom step",
                    "## The run folder", "## Commands"):
        assert heading in GUIDE
    for name in ("run_sessions", "extract_trajectories", "eval_mce", "aggregate", "report"):
        assert f"`{name}`" in GUIDE
