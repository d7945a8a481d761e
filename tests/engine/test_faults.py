"""Faults of a real HTTP server, reached through LiteLLM's ``openai/`` provider.

Each case either recovers through the engine's retries or fails with one clear
ModelCallError; the response cache is intact afterwards. Waits are recorded, not slept.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mas.runtime.engine import Engine, ResponseCache
from mas.runtime.errors import ModelCallError

SECRET_KEY = "sk-test-do-not-leak-9f8e7d"
PROMPT = [{"role": "user", "content": "ping-marker-31337"}]
SEED = [{"role": "user", "content": "an earlier, cached request"}]


@pytest.fixture
def cache(tmp_path: Path) -> ResponseCache:
    with ResponseCache(tmp_path / "cache.sqlite") as store:
        yield store


def make_engine(rec, server, cache=None, **overrides) -> tuple[Engine, list[float]]:
    waits: list[float] = []
    settings = {
        "model": "openai/test-model",
        "api_base": server.base_url,
        "api_key": SECRET_KEY,
        # Generous: a loaded CI machine once took over 0.5 s to answer a retry from this
        # server. Only the hang case needs a short timeout, and it sets its own.
        "timeout": 10.0,
        "num_retries": 2,
        "retry_backoff": 0.25,
        "cache": cache,
        "sleep": waits.append,
    }
    settings.update(overrides)
    return Engine(rec.runtime, session_id="fault", **settings), waits


def seed_cache(engine: Engine, cache: ResponseCache) -> str:
    engine.turn(SEED)
    assert len(cache) == 1
    return engine.turn(SEED).text  # served from the cache


def assert_cache_intact(engine: Engine, cache: ResponseCache, seeded_text: str, before: int):
    assert len(cache) == before
    server_requests_before = engine.ledger.live_calls
    again = engine.turn(SEED)
    assert again.cache_hit and again.text == seeded_text
    assert engine.ledger.live_calls == server_requests_before


def assert_no_secret(rec) -> None:
    for event in rec.events:
        line = event.to_json()
        assert SECRET_KEY not in line
        assert "ping-marker-31337" not in line


def test_429_with_retry_after_recovers_and_honours_the_wait(rec, server, cache):
    engine, waits = make_engine(rec, server, cache)
    seeded = seed_cache(engine, cache)
    server.fail(429, headers={"Retry-After": "3"}).ok("after the rate limit")
    reply = engine.turn(PROMPT)
    assert reply.text == "after the rate limit"
    assert waits == [3.0]
    assert rec.named("llm.call")[-1].data["attempts"] == 2
    assert len(server.requests) == 3  # seed + 429 + success
    assert_cache_intact(engine, cache, seeded, before=2)
    assert_no_secret(rec)


def test_retry_after_is_capped(rec, server):
    engine, waits = make_engine(rec, server, max_retry_wait=5.0)
    server.fail(429, headers={"Retry-After": "3600"}).ok()
    engine.turn(PROMPT)
    assert waits == [5.0]


def test_500_recovers_with_exponential_backoff(rec, server, cache):
    engine, waits = make_engine(rec, server, cache)
    seeded = seed_cache(engine, cache)
    server.fail(500).fail(503).ok("third time lucky")
    assert engine.turn(PROMPT).text == "third time lucky"
    assert waits == [0.25, 0.5]
    assert_cache_intact(engine, cache, seeded, before=2)


def test_persistent_500_fails_once_with_a_clear_error(rec, server, cache):
    engine, waits = make_engine(rec, server, cache, num_retries=1)
    seeded = seed_cache(engine, cache)
    server.fail(500).fail(500).fail(500)
    with pytest.raises(ModelCallError) as caught:
        engine.turn(PROMPT)
    message = str(caught.value)
    assert "'openai/test-model'" in message and "after 2 attempt(s)" in message
    assert "InternalServerError" in message and "\n" not in message
    assert len(server.requests) == 3  # the seed, then two attempts
    assert server.script  # the third scripted 500 was never requested
    assert_cache_intact(engine, cache, seeded, before=1)


def test_a_timed_out_attempt_is_not_retried(rec, server, cache):
    # A single-slot server (llama.cpp, Ollama) is still busy with the abandoned request:
    # a retry would only queue behind it (docs/engine.md, "Failures and retries").
    engine, waits = make_engine(rec, server, cache, timeout=0.3, num_retries=2)
    seeded = seed_cache(engine, cache)
    server.hang().ok("never asked for")
    with pytest.raises(ModelCallError, match=r"on the first attempt.*no complete answer within "
                                             r"0.3s.*timed-out attempts are not retried"):
        engine.turn(PROMPT)
    assert waits == []
    assert server.script  # the scripted answer was never requested
    assert_cache_intact(engine, cache, seeded, before=1)


def test_malformed_json_is_retried(rec, server):
    engine, waits = make_engine(rec, server)
    server.malformed().ok("valid again")
    assert engine.turn(PROMPT).text == "valid again"
    assert len(waits) == 1


def test_malformed_json_without_retries_is_a_clear_error(rec, server, cache):
    engine, _ = make_engine(rec, server, cache, num_retries=0)
    seeded = seed_cache(engine, cache)
    server.malformed()
    with pytest.raises(ModelCallError, match="on the first attempt"):
        engine.turn(PROMPT)
    assert_cache_intact(engine, cache, seeded, before=1)


def test_empty_choice_list_is_an_error_and_is_not_cached(rec, server, cache):
    engine, waits = make_engine(rec, server, cache)
    seeded = seed_cache(engine, cache)
    server.empty_choices()
    with pytest.raises(ModelCallError, match="no choices"):
        engine.turn(PROMPT)
    assert waits == []
    assert_cache_intact(engine, cache, seeded, before=1)


def test_401_is_reported_once_without_retry_and_without_the_key(rec, server, cache):
    engine, waits = make_engine(rec, server, cache)
    seeded = seed_cache(engine, cache)
    requests_before = len(server.requests)
    server.fail(401, message=f"Incorrect API key provided: {SECRET_KEY}")
    with pytest.raises(ModelCallError) as caught:
        engine.turn(PROMPT)
    message = str(caught.value)
    assert message.startswith("authentication failed for model 'openai/test-model' at 127.0.0.1:")
    assert "api_key_env" in message
    assert SECRET_KEY not in message and "***" in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert waits == [] and len(server.requests) == requests_before + 1
    assert_cache_intact(engine, cache, seeded, before=1)
    assert_no_secret(rec)


def test_the_request_carries_key_tools_and_only_the_parameters_set(rec, server):
    engine, _ = make_engine(rec, server)
    tools = [{"type": "function", "function": {
        "name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
    engine.turn(PROMPT, tools=tools)
    body = server.requests[-1]
    assert body["model"] == "test-model"
    assert body["messages"] == PROMPT
    assert body["tools"] == tools
    assert "max_tokens" not in body and "temperature" not in body
    assert server.headers[-1]["authorization"] == f"Bearer {SECRET_KEY}"
    engine.complete(PROMPT, model="openai/test-model", temperature=0.0, seed=7, max_tokens=64)
    body = server.requests[-1]
    assert body["max_tokens"] == 64 and body["temperature"] == 0.0 and body["seed"] == 7


def test_provider_usage_and_cached_tokens_are_recorded(rec, server):
    engine, _ = make_engine(rec, server)
    reply = engine.turn(PROMPT)
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens,
            reply.usage.cached_tokens) == (11, 5, 3)
    event = rec.named("llm.call")[-1].data
    assert (event["prompt_tokens"], event["cached_tokens"]) == (11, 3)
    assert event["provider_usage_source"] == "provider"
    assert json.loads(rec.named("llm.call")[-1].to_json())["session_id"] == "fault"


def test_a_keyless_local_server_gets_a_placeholder_key(rec, server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    engine, _ = make_engine(rec, server, api_key=None)
    assert engine.turn(PROMPT).text == "hello from the fake server"
    assert server.headers[-1]["authorization"] == "Bearer no-key"


def test_missing_credentials_are_an_authentication_error_not_retried(rec, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    waits: list[float] = []
    engine = Engine(rec.runtime, model="openai/gpt-4o-mini", sleep=waits.append)
    with pytest.raises(ModelCallError, match="^authentication failed for model 'openai/gpt-4o"):
        engine.turn(PROMPT)
    assert waits == []
