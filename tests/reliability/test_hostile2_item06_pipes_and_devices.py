"""Pipes and devices are never read as files, and every input is read with a bound
(issue 26, item 6).

``run --input /dev/zero`` or a FIFO is one line, exit 2; a FIFO named ``session.json`` or a
journal under ``--runs`` is listed unreadable instead of hanging ``serve``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mas.runtime.control import StdioClient
from mas.runtime.paths import UnreadableFileError, read_regular
from mas.runtime.session import STATE
from mas.runtime.session.store import STATE_VERSION, journal_path
from mas.runtime.spec.jsonl import MAX_FILE_BYTES

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))


def run_with_input(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """``mas-ctl run agent.yaml --input SOURCE`` from ``tmp_path`` (agent.yaml written)."""
    return subprocess.run([MAS_CTL, "run", "agent.yaml", "--input", source, "--out", "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)


def test_run_input_from_a_device_is_refused_in_one_line(
    tmp_path: Path, offline_agent: Callable[[Path], Path]
) -> None:
    offline_agent(tmp_path)
    done = run_with_input(tmp_path, "/dev/zero")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "/dev/zero: cannot read file: not a regular file (a pipe, device or folder)"]


def test_run_input_from_a_fifo_is_refused_not_waited_on(
    tmp_path: Path, offline_agent: Callable[[Path], Path]
) -> None:
    offline_agent(tmp_path)
    os.mkfifo(tmp_path / "turns.jsonl")
    done = run_with_input(tmp_path, "turns.jsonl")
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr


@pytest.mark.parametrize("fifo", ["session", "journal"])
def test_a_fifo_in_the_runs_tree_is_listed_unreadable(tmp_path: Path, fifo: str) -> None:
    folder = tmp_path / "runs" / "a"
    folder.mkdir(parents=True)
    if fifo == "session":
        os.mkfifo(folder / STATE)
    else:
        (folder / STATE).write_text(json.dumps({"version": STATE_VERSION, "session_id": "s"}))
        os.mkfifo(journal_path(folder / STATE))
    with StdioClient([MAS_CTL, "serve", "--stdio", "--runs", str(tmp_path / "runs")],
                     timeout=30) as client:
        client.send_line('{"jsonrpc": "2.0", "id": 1, "method": "list_sessions"}')
        reply = client.read_reply()
    assert reply["result"] == {"sessions": [], "unreadable": [
        {"folder": "a", "reason": "SessionStateError"}]}


def test_reads_are_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    assert read_regular(big, 101) == b"x" * 101
    with pytest.raises(UnreadableFileError, match="too large \\(101 bytes; at most 100\\)"):
        read_regular(big, 100)
    assert MAX_FILE_BYTES == 256 << 20


def test_eval_never_waits_on_a_fifo_transcript(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mas.library.eval import cli as eval_cli

    folder = tmp_path / "run"
    folder.mkdir()
    os.mkfifo(folder / "transcript.json")
    done = CliRunner().invoke(eval_cli.eval_command, [str(folder), "-m", "tokens"])
    assert done.exit_code == 2, done.output  # a pipe does not make a run folder
    assert "not a run folder (no transcript.json)" in done.output


def test_a_fifo_skill_is_refused_not_waited_on(tmp_path: Path) -> None:
    from mas.runtime.session.skills import SkillLibrary

    (tmp_path / "runbook").mkdir()
    os.mkfifo(tmp_path / "runbook" / "SKILL.md")
    with pytest.raises(ValueError, match="skill 'runbook': not a regular file"):
        SkillLibrary(tmp_path).activate("runbook")


def test_a_fifo_manifest_is_refused_in_one_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "agent.yaml")
    done = subprocess.run([MAS_CTL, "compile", "agent.yaml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "agent.yaml: not a regular file (a manifest is a YAML file)")
