"""Issue 13 item 14: saving a turn costs the turn, not the session (an append-only journal
folded into session.json at the end), and one huge reply is capped."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mas.runtime import Runtime
from mas.runtime.session import open_session
from mas.runtime.session.store import StateJournal, journal_path, load_state
from mas.runtime.spec.loader import load_manifest_set

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: long}
spec:
  models: [{id: main, model: offline/default, context_window: 3000, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""


def _written() -> int:
    """Bytes this process has passed to write(2) so far (Linux /proc accounting)."""
    with open("/proc/self/io", encoding="ascii") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("wchar:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux /proc/self/io")
def test_item14_saving_a_turn_does_not_grow_with_the_session(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(textwrap.dedent(AGENT))
    manifests = load_manifest_set([tmp_path / "agent.yaml"])
    state = tmp_path / "run" / "session.json"
    session = open_session(Runtime.create(), manifests.agents[0], manifests, state_path=state)
    marks = []
    for i in range(120):
        if i % 30 == 0:
            marks.append(_written())
        session.send(f"turn {i}: note that code C-{i} matters. " + "filler words " * 20)
    marks.append(_written())
    per_window = [b - a for a, b in zip(marks, marks[1:], strict=False)]
    # Rewriting the whole transcript each turn makes the last window cost twice the
    # second; with the journal each window costs about the same.
    assert per_window[3] < 1.4 * per_window[1], per_window
    session.compact_state()  # what write_transcript does at the end
    assert not journal_path(state).exists()
    saved = load_state(state)
    assert saved["turns"] == 120 and len(saved["transcript"]) == 240


def test_item14_a_huge_reply_is_capped_and_counted(
    tmp_path: Path, write: Callable[[str, str], Path], mas_ctl: Callable[..., Any],
    fake_openai: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CAP_TEST_KEY", "sk-cap-test-0123456789")
    fake_openai.ok("y" * (8 << 20))  # an 8 MiB reply
    agent = write("agent.yaml", """
        apiVersion: mas/v1
        kind: Agent
        metadata: {name: capped}
        spec:
          models: [{id: main, model: openai/gpt-4o-mini, context_window: 8000}]
          budget: {max_reply_chars: 5000}
        """)
    infra = write("infra.yaml", f"""
        apiVersion: mas/v1
        kind: Infra
        metadata: {{name: local}}
        spec:
          generation: {{api_base: "{fake_openai.base_url}", api_key_env: CAP_TEST_KEY,
                       num_retries: 0}}
        """)
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps("say a lot") + "\n")
    result = mas_ctl("run", agent, "--infra", infra, "--input", turns, "--out", tmp_path / "run")
    assert result.code == 3, result.err  # degraded: the numbers are not the model's own
    assert "replies_capped: 1" in result.err
    assert "a reply of 8,388,608 characters cut to 5,000" in result.err
    state = load_state(tmp_path / "run" / "session.json")
    answer = state["transcript"][-1]["content"]
    assert answer == "y" * 5000 + "\n[reply cut at 5,000 characters]"
    assert (tmp_path / "run" / "session.json").stat().st_size < 100_000


def _state(turns: int) -> dict[str, Any]:
    transcript = []
    for i in range(turns):
        transcript += [{"role": "user", "content": f"u{i}"}, {"role": "assistant",
                                                              "content": f"a{i}"}]
    return {"turns": turns, "transcript": transcript, "history": {"base": 0, "messages": []}}


@settings(max_examples=max(30, settings().max_examples // 10))
@given(st.integers(1, 12), st.data())
def test_item14_a_journal_cut_anywhere_replays_to_a_whole_earlier_turn(
    turns: int, data: st.DataObject
) -> None:
    import tempfile

    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None  # fsync is cheap in memory
    with tempfile.TemporaryDirectory(dir=shm) as folder:
        path = Path(folder) / "session.json"
        store = StateJournal(path)
        for k in range(1, turns + 1):
            store.save(_state(k))
        raw = journal_path(path).read_bytes() if journal_path(path).exists() else b""
        cut = data.draw(st.integers(0, len(raw)))
        if raw:
            journal_path(path).write_bytes(raw[:cut])  # a kill mid-append
        resumed = StateJournal(path)
        loaded = resumed.load()
        assert loaded is not None
        k = loaded["turns"]
        assert 1 <= k <= turns and loaded["transcript"] == _state(k)["transcript"]
        resumed.save(_state(k + 1))  # the next append lands on a clean line
        assert load_state(path)["turns"] == k + 1


WIDE = """
apiVersion: mas/v1
kind: Agent
metadata: {name: wide}
spec:
  instructions: You are the long-session agent. Keep every code the user gives.
  models: [{id: main, model: offline/default, context_window: 1000000, max_tokens: 200}]
"""


def test_item14_the_saved_prefix_cache_of_a_turn_does_not_grow_with_the_window(
    tmp_path: Path,
) -> None:
    # The offline model's prefix cache is saved with each turn (provider_state). It
    # remembers the last requests of the conversation whole; a window that never compacts
    # holds the whole session, so a journal line storing those requests would grow with
    # it. Content-addressed, a line holds only the nodes the turn added.
    (tmp_path / "agent.yaml").write_text(textwrap.dedent(WIDE))
    manifests = load_manifest_set([tmp_path / "agent.yaml"])
    state = tmp_path / "run" / "session.json"
    session = open_session(Runtime.create(), manifests.agents[0], manifests, state_path=state)
    sizes: dict[int, int] = {}
    for i in range(1, 321):
        session.send(f"turn {i}: note that code C-{i} matters. " + "filler words " * 20)
        lines = journal_path(state).read_bytes().splitlines() if journal_path(
            state).exists() else []
        last = json.loads(lines[-1]) if lines else None
        if last is not None and last["turns"] == i:  # not a turn folded into the snapshot
            sizes[i] = len(json.dumps(last["state"]["provider_state"]))
    assert session.compactions == 0  # the window holds the whole session
    early = sizes[min(t for t in sizes if t >= 50)]
    late = max(sizes[t] for t in sizes if t > 300)
    assert late <= 2 * early, (early, late)
    session.compact_state()
    assert load_state(state)["provider_state"]
