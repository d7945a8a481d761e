"""Skill files are in the lab's fingerprint (issue 26, item 8): changing an identifier in a
``SKILL.md`` (or adding a skill) is a new run, never a resume of the old results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mas.library.lab.experiment import load_lab_experiment
from mas.library.lab.rundir import fingerprint
from mas.runtime import Runtime

EXAMPLE = Path(__file__).resolve().parents[2] / "library-lab" / "examples" / "context-ablation"


def _print(folder: Path) -> str:
    experiment = load_lab_experiment(Runtime.create(), folder / "experiment.yaml", limit=1,
                                     check_keys=False)
    return fingerprint(experiment)


@pytest.mark.parametrize("change", ["edit", "add"])
def test_a_changed_skill_changes_the_fingerprint(tmp_path: Path, change: str) -> None:
    folder = tmp_path / "ablation"
    shutil.copytree(EXAMPLE, folder)
    before = _print(folder)
    assert _print(folder) == before  # stable
    skill = folder / "skills" / "refund-policy" / "SKILL.md"
    if change == "edit":
        text = skill.read_text()
        changed = text.replace("R", "Q", 1)
        assert changed != text
        skill.write_text(changed)
    else:
        extra = folder / "skills" / "new-one" / "SKILL.md"
        extra.parent.mkdir()
        extra.write_text(skill.read_text())
    assert _print(folder) != before


def test_moving_the_experiment_folder_keeps_the_fingerprint(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "one")
    shutil.copytree(EXAMPLE, tmp_path / "two")
    assert _print(tmp_path / "one") == _print(tmp_path / "two")
