"""What ``run`` and ``chat`` show on the terminal (issue 14, items 6, 7, 8).

``run --json`` (or ``--quiet``) keeps stdout one JSON document (in a fresh process, so that litellm's
import is part of it); warnings that used to reach only
events.jsonl (an input far over the window) are printed on stderr; the first model call's
``latency_s`` no longer includes importing litellm, which is ``setup_s``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))

AGENT = """\
apiVersion: mas/v1
kind: Agent
metadata: {name: runner}
spec:
  models: [{id: main, model: offline/default, context_window: 1000, max_tokens: 100}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""
HUGE = "long " * 2000  # about 2,500 estimated tokens: 250 % of the window


def _mas_ctl(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MAS_CONFIG"}
    return subprocess.run(
        [MAS_CTL, *args], cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
        timeout=120,
    )


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    """The agent file, in tmp_path."""
    path = tmp_path / "agent.yaml"
    path.write_text(AGENT)
    return path


def _turns(tmp_path: Path, *texts: str) -> Path:
    path = tmp_path / "turns.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in texts))
    return path


def test_run_quiet_prints_one_json_document_and_times_setup_apart(
    tmp_path: Path, agent: Path
) -> None:
    turns = _turns(tmp_path, "My id is X-1.", "What is my id?")
    done = _mas_ctl(tmp_path, "run", str(agent), "--input", str(turns), "--out", "out", "--json")
    assert done.returncode == 0, done.stderr
    view = json.loads(done.stdout)
    assert view["turns"] == 2
    assert "run folder: out" in done.stderr

    events = [json.loads(line) for line in (tmp_path / "out/events.jsonl").read_text().splitlines()]
    first, second = [e for e in events if e["event"] == "llm.call"]
    # A fresh process imports litellm on its first call: that is set-up, timed apart.
    assert first["setup_s"] > first["latency_s"]
    assert second["setup_s"] < 0.05

    # --quiet is the older name of --json.
    again = _mas_ctl(tmp_path, "run", str(agent), "--input", str(turns), "--out", "out", "--quiet")
    assert json.loads(again.stdout)["turns"] == 2, "a resumed run is pure JSON too"
    assert "resuming out after turn 2" in again.stderr


def test_an_input_over_the_window_is_warned_about_in_run(tmp_path: Path, agent: Path, mas_ctl) -> None:  # type: ignore[no-untyped-def]
    turns = _turns(tmp_path, "My id is X-1.", HUGE, "What is my id?")
    done = mas_ctl("run", agent, "--input", turns, "--out", tmp_path / "out")
    warnings = [line for line in done.err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, done.err
    assert "exceeds the hard budget" in warnings[0] and "sent over budget" in warnings[0]


def test_an_input_over_the_window_is_warned_about_in_chat(
    tmp_path: Path, agent: Path, mas_ctl, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"Hello.\n{HUGE}\n/exit\n"))
    done = mas_ctl("chat", agent, "--out", tmp_path / "out")
    assert "warning: " in done.err and "exceeds the hard budget" in done.err


def test_validate_compile_and_run_json_report_problems_as_json(mas_ctl, write) -> None:  # type: ignore[no-untyped-def]
    good = write("good.yaml", AGENT)
    assert json.loads(mas_ctl("validate", "--json", good).out) == {
        "ok": True,
        "documents": 1,
        "agents": 1,
    }
    bad = write("bad.yaml", AGENT.replace("keep_turns: 2", "keep_turns: -1"))
    turns = write("turns.jsonl", '"Hello."\n')
    for command in (["validate"], ["compile"], ["run", "--input", turns]):
        done = mas_ctl(*command, "--json", bad)
        assert done.code == 2 and done.err == ""
        document = json.loads(done.out)
        assert document["ok"] is False
        [problem] = document["problems"]
        assert problem["location"] == "spec.context_manager.params.keep_turns"
        assert problem["value"] == -1
        assert problem["line"].startswith(f"{bad}: spec.context_manager.params.keep_turns: ")


@pytest.mark.parametrize("command", [["validate"], ["compile"], ["lab", "run"], ["lab", "report"],
                                     ["run", "--input", "turns.jsonl"]])
def test_a_command_line_error_under_json_is_a_json_problem_too(
    mas_ctl, tmp_path: Path, command: list[str]  # type: ignore[no-untyped-def]
) -> None:
    (tmp_path / "turns.jsonl").write_text('"Hello."\n')
    done = mas_ctl(*command, "--json", tmp_path / "missing.yaml")
    assert done.code == 2 and done.err == "", done.err
    [problem] = json.loads(done.out)["problems"]
    assert problem["source"] == "<command line>"
    assert "missing.yaml" in problem["message"] and "does not exist" in problem["message"]
