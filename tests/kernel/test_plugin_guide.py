"""docs/plugins.md, "Your first plugin, step by step", followed verbatim (issue 14.3).

Every ``File `path`:`` block is written where it says, every ``bash`` block is run in
order in one shell, in a throwaway venv that sees the workspace: a newcomer copying the
guide gets an installed, tested, bindable plugin, with nothing else changed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))
GUIDE = ROOT / "docs/plugins.md"
SECTION = "## Your first plugin, step by step"
BLOCK = re.compile(r"(?:File `(?P<path>[^`]+)`:\n\n)?```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.M | re.S)


def guide_steps() -> tuple[dict[str, str], list[str]]:
    """The files the section asks for (path to text) and its shell commands, in order."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    # The reference subsections after the walk-through show shapes, not steps.
    section = section[: section.index("\n### ")]
    files: dict[str, str] = {}
    commands: list[str] = []
    for match in BLOCK.finditer(section):
        if match["path"]:
            files[match["path"]] = match["body"]
        elif match["lang"] == "bash":
            commands += [line for line in match["body"].splitlines() if line.strip()]
    return files, commands


def test_the_guide_names_every_file_and_command() -> None:
    files, commands = guide_steps()
    assert {Path(p).name for p in files} >= {"pyproject.toml", "plugin.py", "test_headline.py"}
    assert "pip install -e ." in commands


@pytest.mark.slow
def test_following_the_plugin_guide_verbatim_gives_a_working_plugin(
    tmp_path: Path, overlay_venv: Callable[[], dict[str, str]]
) -> None:
    env = overlay_venv()
    work = tmp_path / "work"
    work.mkdir()
    files, commands = guide_steps()
    script = "set -euo pipefail\n" + "\n".join(commands[:1])
    subprocess.run(["bash", "-c", script], cwd=work, env=env, check=True, timeout=60)
    for path, body in files.items():
        (work / path).write_text(body, encoding="utf-8")
    script = "set -euo pipefail\n" + "\n".join(commands[1:])
    done = subprocess.run(
        ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "3 passed" in done.stdout
    project = work / "headline-summarizer"

    shown = subprocess.run(
        ["mas-ctl", "plugins", "headline"], cwd=project, env=env, capture_output=True, text=True
    )
    [entry] = json.loads(shown.stdout)
    assert (entry["kind"], entry["plugin"], entry["distribution"]) == (
        "summarizer",
        "headline",
        "headline-summarizer",
    )
    assert set(entry["params"]["properties"]) == {"max_words", "max_chars", "title"}

    events = [
        json.loads(line)
        for line in (project / "runs/headline/events.jsonl").read_text().splitlines()
    ]
    stops = [e for e in events if e["event"] == "compaction.stop"]
    assert stops, "the agent compacted with the guide's summarizer"

    # The plugin lives in the throwaway venv only: the shared one never sees it.
    shared = subprocess.run([MAS_CTL, "plugins"], cwd=tmp_path, capture_output=True, text=True)
    assert '"headline"' not in shared.stdout
