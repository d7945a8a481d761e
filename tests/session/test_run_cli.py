"""mas-ctl run / chat / inspect: run folders and resume (serve: tests/kernel/test_control.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mas.runtime.session import load_state

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: runner}
spec:
  models: [{id: main, model: offline/default, context_window: 2500, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""
FILLER = "words about the weather and other small talk " * 25


def _turns(path: Path, count: int) -> Path:
    lines = [json.dumps("My booking reference is BK-4471.")]
    lines += [json.dumps({"user": f"Turn {i}. {FILLER}"}) for i in range(count)]
    lines.append(json.dumps("What is my booking reference?"))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_run_writes_a_run_folder(write: Callable[[str, str], Path], mas_ctl: Callable[..., object], tmp_path: Path) -> None:
    agent = write("agent.yaml", AGENT)
    turns = _turns(tmp_path / "turns.jsonl", 10)
    out = tmp_path / "run"
    result = mas_ctl("run", agent, "--input", turns, "--out", out)
    assert result.code == 0, result.err  # type: ignore[attr-defined]
    lines = result.out.splitlines()  # type: ignore[attr-defined]
    assert sum(line.startswith("turn ") for line in lines) == 12
    transcript = json.loads((out / "transcript.json").read_text())
    assert transcript["agent"] == "runner" and transcript["error"] is None
    assert len([m for m in transcript["messages"] if m["role"] == "user"]) == 12
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    names = {e["event"] for e in events}
    assert {"context.assembled", "llm.call", "session.turn"} <= names
    assert all(e["session_id"] == transcript["session_id"] for e in events)
    view = json.loads(mas_ctl("inspect", out).out)  # type: ignore[attr-defined]
    assert view["turns"] == 12 and view["window"] == 2500


def test_second_run_on_the_same_folder_resumes(write: Callable[[str, str], Path], mas_ctl: Callable[..., object], tmp_path: Path) -> None:
    agent = write("agent.yaml", AGENT)
    turns = _turns(tmp_path / "turns.jsonl", 3)
    out = tmp_path / "run"
    mas_ctl("run", agent, "--input", turns, "--out", out)
    again = mas_ctl("run", agent, "--input", turns, "--out", out)
    assert f"resuming {out} after turn 5" in again.out  # type: ignore[attr-defined]
    assert sum(line.startswith("turn ") for line in again.out.splitlines()) == 0  # type: ignore[attr-defined]
    assert load_state(out / "session.json")["turns"] == 5


def test_a_turns_file_saved_with_a_byte_order_mark_runs_its_first_turn(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., object], tmp_path: Path
) -> None:
    # Notepad's "UTF-8" starts the file with EF BB BF: line 1 is still the first turn.
    agent = write("agent.yaml", AGENT)
    turns = tmp_path / "turns.jsonl"
    turns.write_bytes(b"\xef\xbb\xbf" + b'"My booking reference is BK-4471."\n"Thanks."\n')
    result = mas_ctl("run", agent, "--input", turns, "--out", tmp_path / "run")
    assert result.code == 0, result.err  # type: ignore[attr-defined]
    transcript = json.loads((tmp_path / "run" / "transcript.json").read_text())
    users = [m["content"] for m in transcript["messages"] if m["role"] == "user"]
    assert users == ["My booking reference is BK-4471.", "Thanks."]


def test_bad_input_lines_are_reported_with_line_numbers(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., object], tmp_path: Path
) -> None:
    agent = write("agent.yaml", AGENT)
    bad = tmp_path / "turns.jsonl"
    # Line 4 is a lab dataset's turn: its tool results would be dropped without a word.
    bad.write_text('"fine"\n{not json\n{"user": 3}\n'
                   '{"user": "look it up", "tool_results": {"lookup": "42"}}\n')
    result = mas_ctl("run", agent, "--input", bad, "--out", tmp_path / "run")
    assert result.code == 2  # type: ignore[attr-defined]
    lines = result.err.strip().splitlines()  # type: ignore[attr-defined]
    assert lines[0].startswith(f"{bad}: line 2: not valid JSON")
    assert lines[1].startswith(f"{bad}: line 3: expected a JSON string")
    assert lines[2] == (f'{bad}: line 4.tool_results: unknown key; a turn here is a JSON '
                        'string or {"user": "..."} and nothing else')
    assert not (tmp_path / "run").exists()


def test_killed_mid_session_resumes_without_losing_or_repeating_turns(
    write: Callable[[str, str], Path], tmp_path: Path
) -> None:
    agent = write("agent.yaml", AGENT)
    turns = _turns(tmp_path / "turns.jsonl", 60)
    out = tmp_path / "run"
    mas_ctl = str(Path(sys.executable).with_name("mas-ctl"))
    command = [mas_ctl, "run", str(agent), "--input", str(turns), "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Bounds on a failure, not timings: a loaded machine takes long to start mas-ctl.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        state = out / "session.json"
        if state.is_file() and load_state(state)["turns"] >= 5:
            break
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    saved = load_state(out / "session.json")
    assert 5 <= saved["turns"] < 62
    users = [m for m in saved["transcript"] if m["role"] == "user"]
    assert len(users) == saved["turns"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    final = load_state(out / "session.json")
    texts = [m["content"] for m in final["transcript"] if m["role"] == "user"]
    expected = [json.loads(line) for line in turns.read_text().splitlines()]
    assert texts == [t if isinstance(t, str) else t["user"] for t in expected]


def test_chat_answers_and_inspects(write: Callable[[str, str], Path], tmp_path: Path) -> None:
    agent = write("agent.yaml", AGENT)
    mas_ctl_path = str(Path(sys.executable).with_name("mas-ctl"))
    done = subprocess.run(
        [mas_ctl_path, "chat", str(agent), "--out", str(tmp_path / "chat")],
        input="My locker number is 4412.\nWhat is my locker number?\n/inspect --json\n/exit\n",
        capture_output=True, text=True, timeout=300,  # a bound on a hang, not a timing
    )
    assert done.returncode == 0, done.stderr
    assert "runner> " in done.stdout and "4412" in done.stdout.split("What is")[-1]
    assert '"turns": 2' in done.stdout
