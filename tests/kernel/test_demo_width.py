"""`make demo`'s two commands, as the Makefile spells them, print within 100 columns
(issue 25 item 12): the session's story and the lab's table, claims and result fit a
terminal, and the full JSON stays behind ``--json``.

The lab runs one dataset item per flavour (``--limit 1``) so the test stays short; the
table's width depends on the flavours, not on the number of sessions.
"""

from __future__ import annotations

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
