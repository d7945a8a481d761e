"""``transcript.json`` after a resume is byte-identical to an uninterrupted run's
(issue 26, item 12): messages read back from ``session.json`` come in another key order,
so the transcript writes every message in one order."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.session.run_folder import canonical_message

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))
TURNS = ['"My id is X-1."', '"What is my id?"', '"And again?"']


def _run(cwd: Path, turns: list[str], out: str) -> None:
    (cwd / "turns.jsonl").write_text("\n".join(turns) + "\n")
    done = subprocess.run([MAS_CTL, "run", "agent.yaml", "--input", "turns.jsonl", "--out", out],
                          cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_resumed_transcript_matches_an_uninterrupted_one(
    tmp_path: Path, offline_agent: Callable[[Path], Path]
) -> None:
    offline_agent(tmp_path)
    _run(tmp_path, TURNS, "full")
    _run(tmp_path, TURNS[:1], "resumed")
    _run(tmp_path, TURNS, "resumed")
    full = (tmp_path / "full/transcript.json").read_text()
    resumed = (tmp_path / "resumed/transcript.json").read_text()
    # Only the session id differs (each run folder is its own session).
    assert full.splitlines()[2:] == resumed.splitlines()[2:]
    assert '"role": "user",\n   "content": "My id is X-1."' in full


keys = st.sampled_from(["role", "content", "tool_calls", "name", "tool_call_id", "x"])


@given(st.dictionaries(keys, st.text(max_size=3) | st.dictionaries(keys, st.integers())))
def test_the_order_does_not_depend_on_the_order_given(message: dict[str, object]) -> None:
    reversed_message = dict(reversed(list(message.items())))
    assert list(canonical_message(message)) == list(canonical_message(reversed_message))
    assert canonical_message(message) == message
