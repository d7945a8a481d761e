"""Issue 13 item 9: after any number of SIGKILLs, resuming gives what an uninterrupted run
gives: no event twice, no temp file left, and lab results equal byte for byte apart from
timing fields (and the provider-cache counters, see below).

The kill points are random but seeded, so a failure replays. The offline model keeps its
simulated prefix cache in memory, as a provider does on its side: a kill empties it, so
the cache-hit counters after a kill differ the way they would on a real provider. Those
fields are compared apart, with every other byte.
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
CACHE = {"cached_tokens", "CacheHitRate", "cache_rate", "cache_hit_rate", "cached_cost",
         "Cost", "cost", "cost_usd", "prompt_cache", "PromptCacheRate"}
"""Provider-cache counters and what is derived from them (the lab's PromptCacheRate row,
cost): a kill empties the offline model's in-memory prefix cache, as a provider's would."""


def _mas_ctl(*args: str | Path) -> list[str]:
    return [str(Path(sys.executable).with_name("mas-ctl")), *map(str, args)]


def _strip(value: Any, drop: set[str]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_strip(v, drop) for v in value]
    return value


def _results(run: Path) -> Any:
    return _strip(json.loads((run / "results.json").read_text()), TIMING | CACHE)


def test_item09_lab_results_after_kills_equal_an_uninterrupted_run(
    tmp_path: Path, make_lab: Callable[..., Path]
) -> None:
    experiment = make_lab(tmp_path / "exp", items=2, turns=8)
    reference = subprocess.run(_mas_ctl("lab", "run", experiment, "--runs-dir", tmp_path / "ref",
                                        "--max-concurrency", "1"),
                               capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr[-2000:]
    [ref_run] = list((tmp_path / "ref").glob("*/*/results.json"))
    rng = random.Random(1309)
    command = _mas_ctl("lab", "run", experiment, "--runs-dir", tmp_path / "k",
                       "--max-concurrency", "1")
    kills = 0
    for _ in range(4):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, cwd=tmp_path)
        time.sleep(rng.uniform(1.2, 3.5))
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.wait(timeout=60)
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert kills >= 2
    [run_results] = list((tmp_path / "k").glob("*/*/results.json"))
    run, ref = run_results.parent, ref_run.parent
    assert _results(run) == _results(ref)
    for events in sorted(run.glob("sessions/*/*/*/events.jsonl")):
        twin = ref / events.relative_to(run)
        names = [json.loads(line)["event"] for line in events.read_text().splitlines()]
        ref_names = [json.loads(line)["event"] for line in twin.read_text().splitlines()]
        assert names == ref_names, events  # no event twice, none lost
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
    rng = random.Random(913)
    kills = 0
    for _ in range(4):
        process = subprocess.Popen(command("k"), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(1.0, 2.5))
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.wait(timeout=60)
    assert subprocess.run(command("k"), capture_output=True, timeout=300).returncode == 0
    assert kills >= 2

    def events(out: str) -> list[Any]:
        lines = (tmp_path / out / "events.jsonl").read_text().splitlines()
        return [_strip(json.loads(line), TIMING | CACHE | {"session_id"}) for line in lines]

    def state(out: str) -> Any:
        return _strip(json.loads((tmp_path / out / "session.json").read_text()),
                      TIMING | CACHE | {"session_id"})

    assert [e["event"] for e in events("k")] == [e["event"] for e in events("ref")]
    assert [e for e in events("k") if e["event"] == "session.turn"] == [
        e for e in events("ref") if e["event"] == "session.turn"]
    assert state("k")["transcript"] == state("ref")["transcript"]
    names = {p.name for p in (tmp_path / "k").iterdir()}
    assert names == {p.name for p in (tmp_path / "ref").iterdir()}  # no temp file left
    assert "session.journal.jsonl" not in names  # folded into session.json at the end
