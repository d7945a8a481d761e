"""The realistic fake provider itself, reached through LiteLLM's real call path.

It must behave as the servers it stands for: a digit is a token, an over-long request is
refused with llama.cpp's or OpenAI's body (which LiteLLM maps to
ContextWindowExceededError), and its fault modes reach the engine as the faults they are.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime import Runtime
from mas.runtime.context import DEFAULT_ESTIMATOR
from mas.runtime.engine import Engine
from mas.runtime.engine._window import WindowExceededError, parse_overflow
from mas.runtime.errors import BudgetExceededError, ModelCallError
from mas.runtime.fakeprovider import (
    WINDOW_STYLES,
    closed_base_url,
    count_tokens,
    default_answer,
    request_tokens,
    serve,
)


@given(st.text(alphabet="0123456789", min_size=1, max_size=200))
def test_every_digit_is_one_token(digits: str) -> None:
    assert count_tokens(digits) == len(digits)


@given(st.text(max_size=300))
def test_the_tokenizer_never_counts_fewer_tokens_than_digits(text: str) -> None:
    assert count_tokens(text) >= sum(ch.isdigit() for ch in text)


def test_digit_dense_text_outnumbers_the_estimate_as_a_real_server_does() -> None:
    text = " ".join(f"order-{n:06d} qty {n % 97}" for n in range(200))
    assert count_tokens(text) > 2 * DEFAULT_ESTIMATOR.text(text)


def test_a_summary_answer_keeps_the_numbers_of_the_conversation() -> None:
    body = {"messages": [{"role": "system", "content": "rules 999"},
                         {"role": "user", "content": "ticket 4711 and order 31337"}]}
    assert default_answer(body) == "Noted. Identifiers so far: 4711, 31337."


def _engine(base_url: str, **overrides: object) -> Engine:
    settings: dict[str, object] = {"model": "openai/fake", "api_base": base_url,
                                   "api_key": "sk-fake", "timeout": 5.0, "num_retries": 0,
                                   "sleep": lambda _s: None}
    settings.update(overrides)
    return Engine(Runtime.create(entry_points=False), **settings)  # type: ignore[arg-type]


def test_usage_is_the_servers_own_count() -> None:
    with serve() as provider:
        messages = [{"role": "user", "content": "call 0123456789"}]
        reply = _engine(provider.base_url).turn(messages)
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == request_tokens({"messages": messages})
    assert provider.served == [reply.usage.prompt_tokens]


def test_calibration_learns_the_model_as_called_behind_an_infra_mapping() -> None:
    with serve() as provider:
        engine = _engine(provider.base_url, model="gpt-4o",
                         infra_mappings={"gpt-4o": "openai/gpt-4o"})
        for n in range(3):
            engine.turn([{"role": "user", "content": f"ticket {n} " + "0123456789 " * 40}])
    assert {body["model"] for body in provider.requests} == {"gpt-4o"}  # litellm strips openai/
    assert list(engine.calibration.to_state()) == ["openai/gpt-4o"]
    # The session asks by the manifest's name and reads what the deployed model taught.
    assert engine.calibration.learned("gpt-4o")
    assert engine.calibration.ratio("gpt-4o") == engine.calibration.ratio("openai/gpt-4o") > 1.5


@pytest.mark.parametrize("style", WINDOW_STYLES)
def test_an_over_long_request_is_re_sized_from_the_servers_numbers(style: str) -> None:
    with serve(window=1000, window_style=style) as provider:
        engine = _engine(provider.base_url, max_tokens=50)
        long = [{"role": "system", "content": "You keep ids."},
                {"role": "user", "content": " ".join(f"{n:07d}" for n in range(400))}]
        reply = engine.turn(long)
    assert reply.text.startswith("Noted.")
    assert provider.rejected[0] == request_tokens({"messages": long})
    assert 1 <= len(provider.rejected) <= 3
    assert provider.served and provider.served[-1] + 50 <= 1000
    counts = engine.degradation.counts
    assert counts["window_overflows_recovered"] == len(provider.rejected)
    assert not engine.degradation.degraded  # recovered: counted and shown, not degraded
    assert engine.ledger.llm_calls == 1 + len(provider.rejected)
    # The refused prompt's true size, in every wording, taught the calibration.
    seen = engine.calibration.to_state()["openai/fake"]
    assert seen["reported"] > 2 * seen["estimated"]  # type: ignore[operator]
    # Sized from the numbers, not halved: one refusal was enough.
    assert len(provider.rejected) == 1


def test_vllm_names_a_reply_that_does_not_fit_beside_the_prompt() -> None:
    with serve(window=1000, window_style="vllm") as provider:
        engine = _engine(provider.base_url, max_tokens=400)
        long = [{"role": "user", "content": " ".join(f"{n:07d}" for n in range(100))}]
        reply = engine.turn(long)
    assert reply.text.startswith("Noted.")
    assert provider.rejected and provider.rejected[0] < 1000  # the prompt alone fitted
    assert provider.served[-1] + 400 <= 1000


def test_a_request_that_cannot_fit_fails_after_bounded_re_sizing() -> None:
    with serve(window=12) as provider:
        engine = _engine(provider.base_url)
        with pytest.raises(ModelCallError, match="127.0.0.1") as caught:
            engine.turn([{"role": "user", "content": "7" * 400},
                         {"role": "user", "content": "8" * 400}])
    assert "longer than its window" in str(caught.value)
    assert 2 <= len(provider.rejected) <= 4


def test_re_sizing_stays_within_max_llm_calls() -> None:
    with serve(window=1000) as provider:
        engine = _engine(provider.base_url, max_llm_calls=1)
        with pytest.raises(BudgetExceededError):
            engine.turn([{"role": "user", "content": "7" * 3000}])
    assert len(provider.requests) == 1


_WORDINGS = [
    ("This model's maximum context length is 8192 tokens. However, you requested 8464 "
     "tokens (7440 in the messages, 1024 in the completion).", (8192, 8464, 1024)),
    ("This model's maximum context length is 4097 tokens, however you requested 4569 "
     "tokens (3545 in your prompt; 1024 for the completion).", (4097, 4569, 1024)),
    ("This model's maximum context length is 4097 tokens. However, your messages resulted "
     "in 4113 tokens. Please reduce the length of the messages.", (4097, 4113, 0)),
    ("This model's maximum context length is 1536 tokens. However, your request has 4176 "
     "input tokens. Please reduce the length of the input messages.", (1536, 4176, 0)),
    ("'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum "
     "context length is 4096 tokens and your request has 2778 input tokens "
     "(8000 > 4096 - 2778).", (4096, 10778, 8000)),
    ('{"type":"error","error":{"type":"invalid_request_error",'
     '"message":"prompt is too long: 208656 tokens > 200000 maximum"}}', (200000, 208656, 0)),
    ("The input token count (134123) exceeds the maximum number of tokens allowed (131072).",
     (131072, 134123, 0)),
    ("{'code': 400, 'n_prompt_tokens': 9001, 'n_ctx': 8192}", (8192, 9001, 0)),
    ("context too long", (None, None, 0)),
]
"""Each provider's overflow wording (as its users report it) and what it says."""


@pytest.mark.parametrize(("text", "said"), _WORDINGS)
def test_parse_overflow_reads_every_providers_wording(
        text: str, said: tuple[int | None, int | None, int]) -> None:
    assert parse_overflow(text) == said


def test_the_prompt_is_the_request_less_the_completion() -> None:
    error = WindowExceededError("x", window=8192, requested=8464, completion=1024)
    assert error.prompt_tokens == 7440


def test_a_closed_port_names_the_endpoint() -> None:
    base = closed_base_url()
    with pytest.raises(ModelCallError) as caught:
        _engine(base).turn([{"role": "user", "content": "hi"}])
    port = base.rsplit(":", 1)[1].split("/")[0]
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "sk-fake" not in str(caught.value)


def test_drop_mode_closes_the_connection_unanswered() -> None:
    with serve(mode="drop") as provider:
        with pytest.raises(ModelCallError, match="failed on the first attempt"):
            _engine(provider.base_url).turn([{"role": "user", "content": "hi"}])
        assert len(provider.requests) == 1
