"""The offline model as a LiteLLM provider: registration, real completion path, usage and
the simulated prefix cache."""

from __future__ import annotations

import asyncio

import pytest

from mas.library.standard.offline import PrefixCache
from mas.runtime import Runtime
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR
from mas.runtime.engine import Engine

SYSTEM = {"role": "system", "content": "You are the prefix-cache test agent."}


@pytest.fixture(scope="module")
def litellm():
    """LiteLLM with the offline provider installed (through an engine, as in production)."""
    engine = Engine(Runtime.create())
    engine.turn([{"role": "user", "content": "warm up"}])
    import litellm as module

    return module


def test_the_standard_plugin_registers_the_offline_provider():
    entry = Runtime.create().registries.model_provider.get("offline")
    assert entry.provider.name == "standard"
    assert type(entry.factory()).__name__ == "OfflineLLM"


def test_litellm_completion_reaches_the_offline_model_with_estimator_usage(litellm):
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    messages = [{"role": "system", "content": "usage test 1"},
                {"role": "user", "content": "My plate is KX-4410. What is my plate?"}]
    response = litellm.completion(model="offline/default", messages=messages, tools=tools)
    assert response.choices[0].message.content == "My plate is KX-4410."
    assert response.usage.prompt_tokens == (
        DEFAULT_ESTIMATOR.messages(messages) + DEFAULT_ESTIMATOR.tools(tools)
    )
    assert response.usage.completion_tokens == DEFAULT_ESTIMATOR.text("My plate is KX-4410.")
    assert response.model == "offline/default"


def test_tool_calls_come_back_as_openai_tool_calls(litellm):
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    response = litellm.completion(
        model="offline/default", tools=tools,
        messages=[{"role": "user", "content": 'CALL lookup {"q": 1}'}],
    )
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "lookup" and call.function.arguments == '{"q": 1}'


def test_the_async_path_answers_the_same(litellm):
    messages = [{"role": "user", "content": "Code: 7781. What is the code?"}]
    sync = litellm.completion(model="offline/default", messages=messages)
    async_ = asyncio.run(litellm.acompletion(model="offline/default", messages=messages))
    assert async_.choices[0].message.content == sync.choices[0].message.content == "Code: 7781."


def test_max_tokens_truncates_with_finish_reason_length(litellm):
    messages = [{"role": "user", "content": "Address: 221B Baker Street, London NW1 6XE. "
                                            "What is the address?"}]
    response = litellm.completion(model="offline/default", messages=messages, max_tokens=2)
    assert response.choices[0].finish_reason == "length"
    content = response.choices[0].message.content
    assert content and "Address: 221B Baker Street".startswith(content)
    assert DEFAULT_ESTIMATOR.text(content) <= 2


def test_a_growing_conversation_hits_the_simulated_prefix_cache():
    cache = PrefixCache()
    first = [SYSTEM, {"role": "user", "content": "turn one " * 20}]
    tokens = DEFAULT_ESTIMATOR.messages(first)
    assert cache.probe("m", first, None, tokens) == 0
    second = [*first, {"role": "assistant", "content": "Noted."},
              {"role": "user", "content": "turn two"}]
    cached = cache.probe("m", second, None, DEFAULT_ESTIMATOR.messages(second))
    assert tokens - 10 <= cached <= tokens
    assert cache.probe("m", second, None, 5) == 5  # never more than the prompt


def test_a_changed_prefix_or_system_prompt_misses():
    cache = PrefixCache()
    base = [SYSTEM, {"role": "user", "content": "x" * 400}]
    cache.probe("m", base, None, 200)
    other_system = [{"role": "system", "content": "another agent"}, *base[1:]]
    assert cache.probe("m", other_system, None, 200) == 0
    assert cache.probe("other-model", base, None, 200) == 0
    edited_tools = cache.probe("m", base, [{"type": "function"}], 200)
    assert edited_tools == 0
    cache.clear()
    assert cache.probe("m", base, None, 200) == 0


def test_memory_is_bounded():
    cache = PrefixCache(per_conversation=2, conversations=3)
    for n in range(10):
        cache.probe("m", [{"role": "system", "content": f"agent {n}"}], None, 10)
    assert len(cache._seen) == 3
    assert all(len(v) <= 2 for v in cache._seen.values())


def test_offline_sessions_report_cache_rates_through_the_engine():
    engine = Engine(Runtime.create())
    system = {"role": "system", "content": "cache-rate agent " + "rules " * 50}
    messages = [system, {"role": "user", "content": "hello"}]
    engine.turn(messages)
    messages += [{"role": "assistant", "content": "Noted."},
                 {"role": "user", "content": "My locker is L-12."}]
    second = engine.turn(messages)
    assert second.usage is not None and second.usage.cached_tokens > 60
    assert engine.ledger.cached_tokens == second.usage.cached_tokens
