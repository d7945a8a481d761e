"""Issue 13 item 9: the simulated prefix cache is saved with each committed turn and
restored on resume, so a resumed session reports the cache hits of an uninterrupted one."""

from __future__ import annotations

import json
import logging
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mas.library.standard.offline import PrefixCache
from mas.runtime import Runtime
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR
from mas.runtime.session import AgentSession, load_state, open_session
from mas.runtime.session.store import StateJournal, journal_path
from mas.runtime.spec.loader import load_manifest_set

SYSTEM = {"role": "system", "content": "You are the resume test agent. " + "rule " * 60}

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: resumed}
spec:
  instructions: You are the resume test agent. Keep every code the user gives.
  models: [{id: main, model: offline/default, context_window: 1200, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""

TURNS = [f"turn {i}: code C-{i} matters. " + "filler words " * 20 for i in range(12)]


def _requests() -> list[list[dict[str, str]]]:
    requests, messages = [], [SYSTEM, {"role": "user", "content": "opening " * 30}]
    for n in range(5):
        requests.append(list(messages))
        messages += [{"role": "assistant", "content": f"Noted {n}."},
                     {"role": "user", "content": f"turn {n} " * 8}]
    return requests


def _probe(cache: PrefixCache, messages: list[dict[str, str]], owner: str) -> int:
    return cache.probe("m", messages, None, DEFAULT_ESTIMATOR.messages(messages), owner)


def test_an_export_restored_under_a_new_owner_continues_the_conversation() -> None:
    requests = _requests()
    uninterrupted = PrefixCache()
    expected = [_probe(uninterrupted, r, "s/one") for r in requests]
    before = PrefixCache()
    got = [_probe(before, r, "s/old") for r in requests[:3]]
    saved = json.loads(json.dumps(before.export("s/old")))  # as it is stored: JSON
    after = PrefixCache()  # a new process
    after.restore("s/new", saved)
    got += [_probe(after, r, "s/new") for r in requests[3:]]
    assert got == expected and expected[-1] > 0


def test_restore_replaces_only_its_owner_and_forgets_what_came_after_the_export() -> None:
    requests = _requests()
    cache = PrefixCache()
    for r in requests[:2]:
        _probe(cache, r, "mine")
        _probe(cache, r, "other")
    saved = cache.export("mine")
    _probe(cache, requests[2], "mine")  # the turn a kill cut short
    cache.restore("mine", saved)
    reference = PrefixCache()
    for r in requests[:2]:
        _probe(reference, r, "x")
    assert _probe(cache, requests[2], "mine") == _probe(reference, requests[2], "x")
    assert cache.export("other") is not None
    cache.restore("other", None)
    assert cache.export("other") is None
    assert cache.export("nobody") is None


def test_one_small_entry_per_conversation_texts_once_and_message_json_as_digests() -> None:
    cache = PrefixCache()
    for r in _requests():
        _probe(cache, r, "o")
    _probe(cache, [{"role": "system", "content": "another agent"}], "o")
    saved = cache.export("o")
    assert saved is not None
    conversations = {k: v for k, v in saved.items() if k.startswith("c/")}
    assert len(conversations) == 2
    first, second = sorted(conversations.values(), key=lambda entry: entry["after"] is not None)
    assert len(first["requests"]) == 4 and len(second["requests"]) == 1
    assert all(len(json.dumps(entry)) < 600 for entry in conversations.values())
    texts = [entry[1] for key, entry in saved.items() if key.startswith("r/")]
    assert texts.count(SYSTEM["content"]) == 1 and texts.count("another agent") == 1
    assert len(texts) == len(set(texts))  # the four requests share their prefix's rows
    assert '"role"' not in json.dumps(saved)


def _changed(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What a journal line stores of ``after`` (as the session store computes it)."""
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    return changed | {k: None for k in before.keys() - after.keys()}


@pytest.mark.parametrize("drop", [0, 2], ids=["growing", "sliding"])
def test_an_export_changes_by_what_the_request_added_not_by_the_window(drop: int) -> None:
    cache = PrefixCache()
    messages: list[dict[str, str]] = [SYSTEM]
    exports = []
    for n in range(400):
        messages += [{"role": "user", "content": f"question {n} " * 20},
                     {"role": "assistant", "content": f"answer {n} " * 20}]
        if drop and len(messages) > 201:  # a sliding window: the oldest turn goes
            del messages[1:1 + drop]
        _probe(cache, messages, "o")
        exports.append(json.loads(json.dumps(cache.export("o"))))
    step = _changed(exports[-2], exports[-1])
    added = [k for k, v in step.items() if k.startswith("r/") and v is not None]
    assert len(added) == 2  # the turn's two new messages (and, sliding, two gone)
    assert len([k for k in step if k.startswith("r/")]) == 2 + drop
    assert len(step) < 30  # the conversation's entry, a few nodes per level added and gone
    assert len(json.dumps(step)) < len(json.dumps(messages)) / 8
    assert len(json.dumps(step)) < 2 * len(json.dumps(_changed(exports[48], exports[49])))
    restored = PrefixCache()
    restored.restore("p", exports[-1])
    follow = [*messages, {"role": "user", "content": "one more"}]
    assert _probe(restored, follow, "p") == _probe(cache, follow, "o") > 0


def test_a_state_of_another_shape_starts_cold_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = PrefixCache()
    requests = _requests()
    _probe(cache, requests[0], "o")
    torn = {"k": {"version": 1, "rank": 0, "texts": [], "requests": [["t", 0, [["d", 5, 1]]]]}}
    with caplog.at_level(logging.WARNING):
        cache.restore("o", torn)
    assert "cold cache" in caplog.text
    assert cache.export("o") is None
    cache.restore("o", {"k": {"version": 99}})
    assert _probe(cache, requests[1], "o") == 0
    saved = cache.export("o")
    assert saved is not None
    row = next(k for k in saved if k.startswith("r/"))
    saved[row] = [saved[row][0], saved[row][1] + " edited", saved[row][2]]  # not its key
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        cache.restore("o", saved)
    assert "cold cache" in caplog.text and cache.export("o") is None


def _session(tmp_path: Path, folder: str, runtime: Runtime) -> AgentSession:
    (tmp_path / "agent.yaml").write_text(textwrap.dedent(AGENT))
    manifests = load_manifest_set([tmp_path / "agent.yaml"])
    return open_session(runtime, manifests.agents[0], manifests,
                        state_path=tmp_path / folder / "session.json")


def _cached(session: AgentSession) -> int:
    return session.engine.ledger.cached_tokens


def test_a_resumed_session_reports_the_cache_hits_of_an_uninterrupted_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = Runtime.create()
    whole = _session(tmp_path, "whole", runtime)
    totals = []
    for turn in TURNS:
        whole.send(turn)
        totals.append(_cached(whole))
    assert whole.compactions > 0  # the summarizer's conversation is resumed too

    first = _session(tmp_path, "cut", runtime)
    for turn in TURNS[:5]:
        first.send(turn)
    # A turn the kill cut short: its requests reach the provider, nothing is saved. A
    # provider that remembered them would give the replayed turn a full hit.
    def killed() -> None:
        raise RuntimeError("killed before the turn was saved")

    monkeypatch.setattr(first, "save", killed)
    with pytest.raises(RuntimeError, match="killed"):
        first.send(TURNS[5])
    resumed = _session(tmp_path, "cut", runtime)  # a new engine with a new trace id
    assert resumed.engine.trace_id != first.engine.trace_id
    got = totals[:5]
    for turn in TURNS[5:]:
        resumed.send(turn)
        got.append(_cached(resumed))
    assert got == totals
    assert _without_ids(load_state(tmp_path / "cut" / "session.json")) == _without_ids(
        load_state(tmp_path / "whole" / "session.json"))


def test_a_session_resumed_with_no_turn_left_keeps_its_saved_state(tmp_path: Path) -> None:
    runtime = Runtime.create()
    session = _session(tmp_path, "done", runtime)
    for turn in TURNS[:3]:
        session.send(turn)
    before = load_state(tmp_path / "done" / "session.json")
    assert before["provider_state"] and before["context_usage"]
    again = _session(tmp_path, "done", runtime)
    again.compact_state()  # what write_transcript does when the last turn was committed
    assert load_state(tmp_path / "done" / "session.json") == before


def _without_ids(state: Any) -> Any:
    """``state`` without its session ids (each ``open_session`` draws a new one)."""
    if isinstance(state, dict):
        return {k: _without_ids(v) for k, v in state.items() if k != "session_id"}
    return state


def test_journal_lines_carry_only_the_provider_entries_that_changed(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    journal = StateJournal(path)

    def state(turns: int, entries: dict[str, Any]) -> dict[str, Any]:
        return {"turns": turns, "transcript": [{"role": "user", "content": str(turns)}] * turns,
                "provider_state": {"offline": entries} if entries else {}}

    old = {"rank": 0, "texts": ["a summary the next compaction replaced " * 50]}
    journal.save(state(1, {"old": old, "live": {"rank": 1, "n": 1}}))  # the first: a snapshot
    journal.save(state(2, {"old": old, "live": {"rank": 1, "n": 2}}))
    journal.save(state(3, {"live": {"rank": 0, "n": 3}}))  # "old" went
    lines = [json.loads(line) for line in journal_path(path).read_text().splitlines()]
    assert [line["state"]["provider_state"] for line in lines] == [
        {"offline": {"live": {"rank": 1, "n": 2}}},
        {"offline": {"old": None, "live": {"rank": 0, "n": 3}}},
    ]
    assert load_state(path)["provider_state"] == {"offline": {"live": {"rank": 0, "n": 3}}}
    journal.save(state(4, {}))
    assert load_state(path)["provider_state"] == {}
    reopened = StateJournal(path)
    reopened.load()
    reopened.save(state(5, {"live": {"rank": 0, "n": 5}}))
    assert load_state(path)["provider_state"] == {"offline": {"live": {"rank": 0, "n": 5}}}
