"""Issue 13 item 9: after any number of SIGKILLs, resuming gives what an uninterrupted run
gives: no event twice, no temp file left, and lab results equal byte for byte apart from
timing fields, provider-cache counters and cost included.

The kill points are random but seeded, so a failure replays. They are drawn in committed
turns (plus a random part of the next one) rather than in seconds from the start: a
process spends its first seconds importing, and the offline sessions then play a turn in
milliseconds, so wall-clock kill points would almost never cut a session. The offline
model's simulated prefix cache lives in the process; the session saves it with every
committed turn and restores it on resume (docs/offline-model.md), so the cache counters
match too.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TIMING = {"seconds", "created", "duration", "ts", "elapsed", "started", "finished"}

LAB_AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: killed}
spec:
  models: [{id: main, model: any, context_window: 1500, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
---
apiVersion: mas/v1
kind: Infra
metadata: {name: priced}
spec:
  generation:
    pricing: {input_per_million_tokens: 2.5, cached_input_per_million_tokens: 0.25,
              output_per_million_tokens: 10.0}
"""
"""The offline model at made-up rates, so the cost the cache lowers is compared too."""

LAB_EXPERIMENT = """
experiment:
  name: kills
  models: {main: offline/default, judge: offline/default}
  applications: [{manifest: ./agent.yaml}]
  flavours:
    - {name: plain, patch: {}}
  dataset: ./data.jsonl
"""

LAB_TURNS = 24


def _mas_ctl(*args: str | Path) -> list[str]:
    return [str(Path(sys.executable).with_name("mas-ctl")), *map(str, args)]


def _strip(value: Any, drop: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_strip(v, drop) for v in value]
    return value


def _results(run: Path) -> Any:
    return _strip(json.loads((run / "results.json").read_text()), TIMING)


def _lab(root: Path) -> Path:
    """Two items long enough to compact twice each: the summarizer's conversation with
    the simulated provider is cut by kills as well as the turns'."""
    root.mkdir(parents=True)
    (root / "agent.yaml").write_text(LAB_AGENT)
    items = []
    for i in range(2):
        fillers = [f"turn {k}: code K-{k}. " + "filler " * 30 for k in range(LAB_TURNS - 2)]
        items.append({"id": f"i{i}", "turns": [f"My locker is L-{i}7.", *fillers,
                                               "Which locker is mine?"],
                      "expected_facts": [f"L-{i}7"]})
    (root / "data.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))
    (root / "exp.yaml").write_text(LAB_EXPERIMENT)
    return root / "exp.yaml"


def _committed(runs: Path) -> int:
    """Turns the lab run under ``runs`` has played so far (its ``session.turn`` events)."""
    return sum(path.read_bytes().count(b'"session.turn"')
               for path in runs.glob("*/*/sessions/*/*/*/events.jsonl"))


def _kill_when(command: list[str], ready: Callable[[], bool], delay: float,
               cwd: Path | None = None) -> bool:
    """Start ``command``, SIGKILL it ``delay`` seconds after ``ready()`` holds; whether it
    was still running to be killed."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd=cwd)
    while process.poll() is None and not ready():
        time.sleep(0.002)
    time.sleep(delay)
    killed = process.poll() is None
    if killed:
        os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)
    return killed


def _kill_mid_session(command: list[str], committed: Callable[[], int], total: int,
                      rng: random.Random, *, rounds: int = 4,
                      cwd: Path | None = None) -> int:
    """Kill ``command`` ``rounds`` times, each a few random milliseconds after a random
    number of committed turns in the first half of those left (so every round still
    finds turns to cut). Returns how many kills cut the turns short."""
    cut = 0
    for _ in range(rounds):
        done = committed()
        target = rng.randint(done + 1, max(done + 1, (done + total) // 2))
        if _kill_when(command, lambda t=target: committed() >= t, rng.uniform(0, 0.01), cwd):
            cut += 0 < committed() < total
    return cut


def test_item09_lab_results_after_kills_equal_an_uninterrupted_run(tmp_path: Path) -> None:
    experiment = _lab(tmp_path / "exp")
    reference = subprocess.run(_mas_ctl("lab", "run", experiment, "--runs-dir", tmp_path / "ref",
                                        "--max-concurrency", "1"),
                               capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr[-2000:]
    [ref_run] = list((tmp_path / "ref").glob("*/*/results.json"))
    total = _committed(tmp_path / "ref")
    assert total == 2 * LAB_TURNS
    rng = random.Random(1309)
    command = _mas_ctl("lab", "run", experiment, "--runs-dir", tmp_path / "k",
                       "--max-concurrency", "1")
    def committed() -> int:
        return _committed(tmp_path / "k")

    mid_session = _kill_mid_session(command, committed, total, rng, cwd=tmp_path)
    # And once after the last turn is committed: in the eval, trajectory or report steps
    # when this process played it, during start-up when an earlier one did.
    _kill_when(command, lambda: committed() >= total, rng.uniform(0, 0.2), tmp_path)
    done_run = subprocess.run(command, capture_output=True, text=True, timeout=300,
                              cwd=tmp_path)
    assert done_run.returncode == 0, done_run.stderr[-2000:]
    assert mid_session >= 3
    [run_results] = list((tmp_path / "k").glob("*/*/results.json"))
    run, ref = run_results.parent, ref_run.parent
    metrics = _results(ref)["metrics"]["plain"]
    assert metrics["Compactions"]["mean"] > 0 and metrics["PromptCacheRate"]["mean"] > 0.5
    assert metrics["Cost"]["mean"] > 0
    assert _results(run) == _results(ref)
    for events in sorted(run.glob("sessions/*/*/*/events.jsonl")):
        twin = ref / events.relative_to(run)
        names = [json.loads(line)["event"] for line in events.read_text().splitlines()]
        ref_names = [json.loads(line)["event"] for line in twin.read_text().splitlines()]
        assert names == ref_names, events  # no event twice, none lost
    for state in sorted(run.glob("sessions/*/*/*/session.json")):
        twin = ref / state.relative_to(run)
        assert _strip(json.loads(state.read_text()), TIMING) == _strip(
            json.loads(twin.read_text()), TIMING), state  # cache counters and usage too
    leftovers = [p for p in run.rglob(".*") if p.is_file() and p.name != ".lock"]
    assert leftovers == []


AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: killed}
spec:
  models: [{id: main, model: offline/default, context_window: 3000, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""


def test_item09_a_session_killed_anywhere_resumes_to_the_same_folder(
    tmp_path: Path, write: Callable[[str, str], Path]
) -> None:
    agent = write("agent.yaml", AGENT)
    turns = tmp_path / "turns.jsonl"
    turns.write_text("".join(json.dumps(f"turn {i}: code K-{i}. " + "filler " * 30) + "\n"
                             for i in range(30)))
    def command(out: str) -> list[str]:
        return _mas_ctl("run", agent, "--input", turns, "--out", tmp_path / out, "--quiet")

    assert subprocess.run(command("ref"), capture_output=True, timeout=300).returncode == 0

    def committed() -> int:
        path = tmp_path / "k" / "events.jsonl"
        return path.read_bytes().count(b'"session.turn"') if path.is_file() else 0

    mid_session = _kill_mid_session(command("k"), committed, 30, random.Random(913))
    assert subprocess.run(command("k"), capture_output=True, timeout=300).returncode == 0
    assert mid_session >= 3

    def events(out: str) -> list[Any]:
        lines = (tmp_path / out / "events.jsonl").read_text().splitlines()
        return [_strip(json.loads(line), TIMING | {"session_id"}) for line in lines]

    def state(out: str) -> Any:
        return _strip(json.loads((tmp_path / out / "session.json").read_text()),
                      TIMING | {"session_id"})

    assert [e["event"] for e in events("k")] == [e["event"] for e in events("ref")]
    assert [e for e in events("k") if e["event"] == "session.turn"] == [
        e for e in events("ref") if e["event"] == "session.turn"]
    assert state("k") == state("ref")  # transcript, ledger, cache counters, provider cache
    names = {p.name for p in (tmp_path / "k").iterdir()}
    assert names == {p.name for p in (tmp_path / "ref").iterdir()}  # no temp file left
    assert "session.journal.jsonl" not in names  # folded into session.json at the end
