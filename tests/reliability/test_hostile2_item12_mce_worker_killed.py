"""A killed MCE worker is a tool failure, not bad input (issue 26, item 12): ``mas-ctl
eval --backend mce`` exits 4, as for a failed model call; a missing venv stays exit 2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from mas.library.eval import cli as eval_cli

# Answers the hello, then is killed (SIGKILL) when the first real request arrives.
KILLED_WORKER = """#!/bin/sh
read line
echo '{"op": "ready", "versions": {"metrics-computation-engine": "0"}, "metrics": []}'
read line
kill -9 $$
"""


@pytest.mark.parametrize(("worker", "code"), [("killed", 4), ("missing", 2)])
def test_exit_code_of_a_worker_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       stored_run: Callable[[Path], Path], worker: str,
                                       code: int) -> None:
    python = tmp_path / "python"
    if worker == "killed":
        python.write_text(KILLED_WORKER)
        python.chmod(0o755)
    monkeypatch.setenv("MAS_MCE_PYTHON", str(python))
    done = CliRunner().invoke(eval_cli.eval_command, [
        str(stored_run(tmp_path / "run")), "--backend", "mce", "--model", "openai/judge",
        "-m", "GoalSuccessRate"])
    assert done.exit_code == code, done.output
    assert "Traceback" not in done.output
    if worker == "killed":
        assert "exited with code -9" in done.output
