"""An attempt's deadline starts when its request is sent (issue 26, item 10).

LiteLLM's first call imports its HTTP stack and builds a client before anything goes out
(seconds on a loaded machine); that set-up is not counted against ``timeout``. Here the
set-up is made slow on purpose (a wrapper around LiteLLM's client factory) and the
request goes to the local fake provider.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mas.runtime import Runtime
from mas.runtime.engine import Engine, _retry
from mas.runtime.engine._litellm import load_litellm
from mas.runtime.errors import ModelCallError
from mas.runtime.fakeprovider import FakeProvider, serve

TIMEOUT = 3.0
MESSAGES = [{"role": "user", "content": "hello"}]


@pytest.fixture
def slow_setup(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """LiteLLM's OpenAI client set-up takes what the list's first value says (seconds)."""
    load_litellm()
    from litellm.llms.openai.openai import OpenAIChatCompletion

    original = OpenAIChatCompletion._get_openai_client
    pause = [TIMEOUT + 0.5]

    def slow(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(pause[0])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(OpenAIChatCompletion, "_get_openai_client", slow)
    yield pause


def _engine(provider: FakeProvider, timeout: float = TIMEOUT) -> Engine:
    return Engine(Runtime.create(entry_points=False), model="openai/fake",
                  api_base=provider.base_url, api_key="sk-fake", timeout=timeout, num_retries=0)


def test_set_up_longer_than_the_timeout_does_not_fail_the_call(slow_setup: list[float]) -> None:
    with serve() as provider:
        reply = _engine(provider).turn(MESSAGES)
    assert reply.text
    assert len(provider.requests) == 1


def test_the_deadline_still_bounds_the_answer_once_sent(slow_setup: list[float]) -> None:
    slow_setup[0] = 0.0
    with serve() as provider:
        provider.mode, provider.delay = "slow", 60.0
        try:
            with pytest.raises(ModelCallError, match="no complete answer within 0.5s"):
                _engine(provider, timeout=0.5).turn(MESSAGES)
        finally:
            provider.release.set()


def test_set_up_has_a_bound_of_its_own(slow_setup: list[float],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_retry, "SETUP_ALLOWANCE", 0.5)
    slow_setup[0] = 2.0
    with serve() as provider, pytest.raises(ModelCallError,
                                            match="was not sent within 0.5s of set-up"):
        _engine(provider, timeout=0.2).turn(MESSAGES)
