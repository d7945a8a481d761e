"""Issue 13 item 2: a symlink planted in a run folder never redirects a write."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mas.runtime.events import Event, JsonlEventSink
from mas.runtime.paths import UnsafePathError

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: linked}
spec:
  models: [{id: main, model: offline/default, context_window: 4000, max_tokens: 200}]
"""


@pytest.mark.parametrize("planted", ["events.jsonl", "session.json", "transcript.json"])
def test_item02_session_run_folder_with_a_symlink_is_refused(
    planted: str, tmp_path: Path, write: Callable[[str, str], Path], mas_ctl: Callable[..., Any],
) -> None:
    agent = write("agent.yaml", AGENT)
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps("hello") + "\n")
    target = tmp_path / "target.txt"
    target.write_text("untouched\n")
    out = tmp_path / "run"
    out.mkdir()
    (out / planted).symlink_to(target)
    result = mas_ctl("run", agent, "--input", turns, "--out", out)
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err.strip() == (f"error: {out / planted}: is a symbolic link; run folders hold "
                                  "no symlinks (remove it and run again)")
    assert target.read_text() == "untouched\n"


def test_item02_event_sink_does_not_follow_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("x")
    (tmp_path / "events.jsonl").symlink_to(target)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        JsonlEventSink(tmp_path / "events.jsonl")(Event("e"))
    assert target.read_text() == "x"


def test_item02_lab_lock_symlink_does_not_truncate_its_target(
    tmp_path: Path, make_lab: Callable[..., Path], mas_ctl: Callable[..., Any],
) -> None:
    experiment = make_lab(tmp_path / "exp", items=1)
    runs = tmp_path / "runs"
    assert mas_ctl("lab", "run", experiment, "--runs-dir", runs).code == 0
    [lock] = list(runs.glob("*/*/.lock"))
    target = tmp_path / "important.txt"
    target.write_text("do not truncate me\n")
    lock.unlink()
    lock.symlink_to(target)
    result = mas_ctl("lab", "run", experiment, "--runs-dir", runs)
    assert result.code == 2 and "Traceback" not in result.err
    assert "symbolic link" in result.err
    assert target.read_text() == "do not truncate me\n"
