"""`make demo`'s two commands, as the Makefile spells them, print within 100 columns
(issue 25 item 12): the session's story and the lab's table, claims and result fit a
terminal, and the full JSON stays behind ``--json``.

The lab runs one dataset item per flavour (``--limit 1``) so the test stays short; the
table's width depends on the flavours, not on the number of sessions.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 100


def demo_commands() -> list[list[str]]:
    """The ``mas-ctl`` lines of the Makefile's demo recipe, its variables filled in."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^(\w+) :?= (.*)$", text, re.M))
    variables["BIN"] = str(Path(sys.executable).parent)
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe is not None
    commands = []
    for line in recipe[1].splitlines():
        line = line.strip().lstrip("@")
        if line.startswith("$(BIN)/mas-ctl "):
            line = re.sub(r"\$\((\w+)\)", lambda m: variables[m[1]], line)
            commands.append(line.split())
    return commands


@pytest.mark.slow
def test_the_demo_prints_within_100_columns(tmp_path: Path) -> None:
    for folder in ("library-standard", "library-lab"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    run, lab = demo_commands()
    assert run[1] == "run" and lab[1:3] == ["lab", "run"]
    printed = {}
    for command in (run, [*lab, "--limit", "1"]):
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        lines = (done.stdout + done.stderr).splitlines()
        assert not [line for line in lines if len(line) > WIDTH], command[1:3]
        assert not [line for line in lines if line.lower().startswith("info")], "INFO only with -v"
        printed[command[1]] = done.stdout
    assert '"session_id"' not in printed["run"], "the view's JSON only with --json"
    assert "mas-ctl inspect runs/demo-session --html" in printed["run"]
    assert "report: runs/context-ablation/" in printed["lab"]


@pytest.mark.slow
@pytest.mark.skipif(not (ROOT / ".venv-mce" / "bin" / "python").is_file(),
                    reason="no .venv-mce (make demo builds it; MCE needs Python 3.11+)")
def test_the_demo_scores_the_stock_ids_with_mces_own_metrics(tmp_path: Path) -> None:
    # As on a machine where `make demo` built .venv-mce beside the checkout (issue 25
    # item 7): no backend is named anywhere, so the stock ids are MCE's own, and the eval
    # step and the table say so.
    for folder in ("library-standard", "library-lab", ".venv-mce"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    _, lab = demo_commands()
    env = {k: v for k, v in os.environ.items() if k not in ("MAS_EVAL_BACKEND", "MAS_MCE_PYTHON")}
    done = subprocess.run([*lab, "--limit", "1"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    # the step lines go to stderr with the progress, the table to stdout
    assert re.search(r"^ +ok  eval_mce: judge offline/default \(experiment\.models\.judge\), "
                     r"MCE 1\.2\.9; 5 scored$", done.stderr, re.M), done.stderr
    assert re.search(r"^GoalSuccessRate \(mce\) +higher ", done.stdout, re.M)
    assert "scored by mas-lab's rubrics" not in done.stderr


def test_install_and_demo_build_the_mce_venv() -> None:
    # What the demo's eval step finds (above); make test builds it too.
    for target in ("install", "demo", "test"):
        done = subprocess.run(["make", "-B", "-n", target], cwd=ROOT, capture_output=True,
                              text=True, check=True)
        assert ".venv-mce/bin/python -m pip install" in done.stdout, target
        assert "-r requirements-mce.txt" in done.stdout, target

