"""The response cache: key stability, misses on any change, hits cost zero, strict mode."""

from __future__ import annotations

import copy
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.engine import Engine, ResponseCache, ResponseCacheMissError, request_key
from mas.runtime.protocols import ModelReply, Usage

MESSAGES = [
    {"role": "system", "content": "You are a cache test."},
    {"role": "user", "content": "What is the parcel number?"},
]
TOOLS = [{"type": "function", "function": {
    "name": "track", "description": "Track a parcel",
    "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}}]
PARAMS = {"max_tokens": 100, "temperature": 0.0, "seed": 1,
          "response_format": {"type": "json_object"}}


def base_key(**changes) -> str:
    args = {"model": "openai/gpt-4o", "messages": MESSAGES, "tools": TOOLS, "params": PARAMS}
    args.update(changes)
    return request_key(args["model"], args["messages"], args["tools"], args["params"])


def test_the_key_is_stable_across_calls_and_dict_key_order():
    reordered = [dict(reversed(list(m.items()))) for m in MESSAGES]
    params = dict(reversed(list(PARAMS.items())))
    assert base_key() == base_key() == base_key(messages=reordered, params=params)
    assert len(base_key()) == 64


def test_the_key_is_pinned_so_recorded_cache_files_stay_valid():
    # A change of serialization would silently orphan every recorded replay file.
    key = request_key("offline/default", [{"role": "user", "content": "hi"}], None, {"seed": 1})
    assert key == "7349a660fe69274f36fc5629d8bd42939952e6c9efd882c2173294bf74239f82"


@pytest.mark.parametrize("change", [
    {"model": "openai/gpt-4o-mini"},
    {"messages": [*MESSAGES, {"role": "user", "content": "and?"}]},
    {"messages": [MESSAGES[0], {"role": "user", "content": "What is the parcel number!"}]},
    {"messages": list(reversed(MESSAGES))},
    {"tools": []},
    {"tools": [{**TOOLS[0], "function": {**TOOLS[0]["function"], "description": "Track"}}]},
    {"params": {**PARAMS, "max_tokens": 101}},
    {"params": {**PARAMS, "temperature": 0.5}},
    {"params": {**PARAMS, "seed": 2}},
    {"params": {**PARAMS, "response_format": {"type": "text"}}},
    {"params": {k: v for k, v in PARAMS.items() if k != "seed"}},
])
def test_changing_anything_that_decides_the_answer_changes_the_key(change):
    assert base_key(**change) != base_key()


@given(st.lists(st.text(max_size=30), min_size=1, max_size=5), st.text(max_size=30))
def test_any_edit_of_any_message_changes_the_key(contents, extra):
    messages = [{"role": "user", "content": c} for c in contents]
    edited = copy.deepcopy(messages)
    edited[-1]["content"] += extra + "x"
    assert request_key("m", messages) != request_key("m", edited)
    assert request_key("m", messages) == request_key("m", copy.deepcopy(messages))


def test_unset_parameters_equal_absent_ones():
    assert request_key("m", MESSAGES, None, {"seed": None}) == request_key("m", MESSAGES)
    assert request_key("m", MESSAGES, [], {}) == request_key("m", MESSAGES)


def test_store_round_trip_and_persistence(tmp_path: Path):
    path = tmp_path / "sub" / "cache.sqlite"
    reply = ModelReply("answer", [{"id": "c1", "type": "function",
                                   "function": {"name": "f", "arguments": "{}"}}],
                       Usage(10, 2, 4), "offline/default", cost=0.5)
    with ResponseCache(path) as cache:
        assert cache.get("k") is None
        cache.put("k", reply)
    with ResponseCache(path) as reopened:
        hit = reopened.get("k")
    assert hit == ModelReply("answer", reply.tool_calls, Usage(10, 2, 4), "offline/default",
                             cost=0.0, cache_hit=True)
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def run_threads(target: Any, count: int) -> None:
    """Run ``target(n)`` for n in range(count), each on its own thread, and wait for all."""
    threads = [threading.Thread(target=target, args=(n,)) for n in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_two_handles_and_many_threads_share_one_file(tmp_path: Path):
    path = tmp_path / "cache.sqlite"
    first, second = ResponseCache(path), ResponseCache(path)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                store = first if i % 2 else second
                store.put(f"{n}-{i}", ModelReply(f"r{n}-{i}"))
                assert store.get(f"{n}-{i}") is not None
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    run_threads(work, 8)
    assert errors == []
    assert len(first) == len(second) == 160
    assert second.get("3-7") == ModelReply("r3-7", cost=0.0, cache_hit=True)
    first.close()
    second.close()


def test_sessions_that_open_a_new_cache_file_together_all_get_it(tmp_path: Path):
    # Found by CI: the local runner's threads (and the Ray keeper beside them) opening one new
    # file at once; SQLite refuses a concurrent switch to WAL without waiting.
    errors: list[BaseException] = []
    for trial in range(40):
        path = tmp_path / f"cache-{trial}.sqlite"
        barrier = threading.Barrier(6)

        def open_and_use(n: int, path: Path = path, barrier: threading.Barrier = barrier) -> None:
            try:
                barrier.wait()
                with ResponseCache(path) as cache:
                    cache.put(str(n), ModelReply(str(n)))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        run_threads(open_and_use, 6)
        assert errors == []
        with ResponseCache(path) as cache:
            assert len(cache) == 6


def test_a_hit_costs_zero_and_is_marked_cached_response(rec, tmp_path: Path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    engine = Engine(rec.runtime, cache=cache,
                    infra_pricing={"input_per_million_tokens": 1.0,
                                   "output_per_million_tokens": 1.0})
    # A system prompt no other test sends: the offline provider's prefix cache is cold.
    messages = [{"role": "system", "content": "cold prefix for the hit-cost test"}, MESSAGES[1]]
    live = engine.turn(messages)
    hit = engine.turn(messages)
    assert not live.cache_hit and live.cost and live.cost > 0
    assert hit.cache_hit and hit.cost == 0.0 and hit.text == live.text
    assert hit.usage == live.usage  # the original usage, kept for analysis
    lookups = [e.data for e in rec.named("cache.lookup")]
    assert lookups == [
        {"layer": "infra_llm_cache", "hit": False, "strict": False, "purpose": "turn"},
        {"layer": "provider_cache", "hit": False, "purpose": "turn", "cached_tokens": 0},
        {"layer": "infra_llm_cache", "hit": True, "strict": False, "purpose": "turn"},
    ]
    calls = [e.data for e in rec.named("llm.call")]
    assert [c["provider_usage_source"] for c in calls] == ["provider", "cached_response"]
    assert [c["cache_hit"] for c in calls] == [False, True]
    ledger = engine.ledger
    assert ledger.cost == pytest.approx(live.cost)
    assert (ledger.llm_calls, ledger.live_calls) == (2, 1)
    assert (ledger.requests_hit, ledger.requests_missed) == (1, 1)
    assert ledger.request_hit_rate == 0.5
    assert ledger.layers["infra_llm_cache"].hit_rate == 0.5
    assert ledger.layers["provider_cache"].lookups == 1  # only the live call probed it
    assert ledger.last_usage_source == "cached_response"


def test_strict_mode_replays_hits_and_refuses_misses(rec, tmp_path: Path):
    path = tmp_path / "replay.sqlite"
    Engine(rec.runtime, cache=ResponseCache(path)).turn(MESSAGES)
    rec.events.clear()
    strict = Engine(rec.runtime, cache=ResponseCache(path, strict=True))
    assert strict.turn(MESSAGES).cache_hit
    with pytest.raises(ResponseCacheMissError) as caught:
        strict.turn([*MESSAGES, {"role": "user", "content": "a new question?"}])
    assert "strict response cache" in str(caught.value) and "offline/default" in str(caught.value)
    lookups = [(e.data["layer"], e.data["hit"]) for e in rec.named("cache.lookup")]
    assert lookups == [("infra_llm_cache", True), ("infra_llm_cache", False)]
    # The miss is a lookup event, not a fabricated completion.
    assert len(rec.named("llm.call")) == 1
    assert strict.ledger.live_calls == 0


def test_nested_layers_count_a_request_once_overall_and_once_per_layer(rec, tmp_path: Path):
    engine = Engine(rec.runtime, cache=ResponseCache(tmp_path / "n.sqlite"))
    system = {"role": "system", "content": "nested layers agent " + "policy " * 40}
    engine.turn([system, {"role": "user", "content": "first"}])
    engine.turn([system, {"role": "user", "content": "second"}])  # provider prefix hit
    engine.turn([system, {"role": "user", "content": "second"}])  # response-cache hit
    ledger = engine.ledger
    assert (ledger.requests_hit, ledger.requests_missed) == (2, 1)
    infra, provider = ledger.layers["infra_llm_cache"], ledger.layers["provider_cache"]
    assert (infra.hits, infra.misses) == (1, 2)
    assert (provider.hits, provider.misses) == (1, 1)
    hit_event = [e.data for e in rec.named("cache.lookup") if e.data["layer"] == "provider_cache"]
    assert hit_event[1]["hit"] and hit_event[1]["cached_tokens"] > 40


def test_processes_write_one_cache_file_concurrently(tmp_path: Path):
    import subprocess
    import sys

    path = tmp_path / "shared.sqlite"
    ResponseCache(path).close()  # create the file and its schema once
    code = (
        "import sys\n"
        "from mas.runtime.engine import ResponseCache\n"
        "from mas.runtime.protocols import ModelReply\n"
        "cache = ResponseCache(sys.argv[1])\n"
        "for i in range(100):\n"
        "    cache.put(f'{sys.argv[2]}-{i}', ModelReply(f'reply {i}'))\n"
        "cache.close()\n"
    )
    workers = [subprocess.Popen([sys.executable, "-c", code, str(path), f"p{n}"])
               for n in range(3)]
    assert [w.wait() for w in workers] == [0, 0, 0]
    with ResponseCache(path) as cache:
        assert len(cache) == 300
        assert cache.get("p2-99") == ModelReply("reply 99", cost=0.0, cache_hit=True)
