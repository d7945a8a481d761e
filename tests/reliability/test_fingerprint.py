"""The run fingerprint covers every input (issue 11 item 3): a changed Infra, overlay,
config.yaml or dataset is a new run, never a resume of the old one's results."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mas.library.lab.experiment import load_lab_experiment
from mas.library.lab.rundir import fingerprint
from mas.runtime import Runtime

EXAMPLE = Path(__file__).resolve().parents[2] / "library-lab" / "examples" / "context-ablation"


def _print(folder: Path, config: Path | None = None) -> str:
    experiment = load_lab_experiment(Runtime.create(), folder / "experiment.yaml", limit=1,
                                     config=config, check_keys=False)
    return fingerprint(experiment)


@pytest.mark.parametrize("change", ["infra", "overlay", "dataset", "config"])
def test_each_input_changes_the_fingerprint(tmp_path: Path, change: str) -> None:
    folder = tmp_path / "ablation"
    shutil.copytree(EXAMPLE, folder)
    config = tmp_path / "config.yaml"
    config.write_text("defaults: {model: offline/default}\n")
    before = _print(folder, config)
    assert _print(folder, config) == before  # stable
    if change == "infra":
        path = folder / "infra.yaml"
        path.write_text(path.read_text().replace("0.15", "0.16"))
    elif change == "overlay":
        path = folder / "overlays" / "cheap_summarizer.yaml"
        path.write_text(path.read_text().replace("250", "260"))
    elif change == "dataset":
        path = folder / "dataset.jsonl"
        # A change to what a turn says (the first "a" of the file is in a key's name).
        path.write_text(path.read_text().replace('"turns": ["', '"turns": ["Hi. ', 1))
    else:
        config.write_text("defaults: {model: offline/mini}\n")
    assert _print(folder, config) != before
