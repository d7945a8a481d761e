"""Cost through LiteLLM's own cost logic: cache-write premiums, tiers, and overrides on top.

The end-to-end test runs the real LiteLLM Anthropic call path against a Messages API
server on 127.0.0.1, so the cache-write tokens travel the way a real Anthropic reply
carries them: provider usage -> LiteLLM's usage -> the engine -> LiteLLM's cost logic.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.catalog import Pricing, default_catalog
from mas.runtime.engine import Engine, call_cost
from mas.runtime.engine.cost import rates_cost
from mas.runtime.protocols import Usage
from mas.runtime.spec.windows import resolve_pricing

# Claude Sonnet 4.5 in LiteLLM's map: $3/M input, $0.30/M cache read, $3.75/M cache write,
# $15/M output. The test reads them from the map instead of trusting these figures.
SONNET = "claude-sonnet-4-5"


def _sonnet() -> Pricing:
    price = default_catalog().pricing(SONNET)
    assert price is not None and price.litellm_key == SONNET
    return price


def test_anthropic_cache_writes_are_charged_their_premium() -> None:
    price = _sonnet()
    usage = Usage(prompt_tokens=10_000, completion_tokens=500, cached_tokens=4_000,
                  cache_write_tokens=3_000)
    assert price.cache_write_per_million is not None and price.cached_input_per_million is not None
    expected = (3_000 * price.input_per_million + 4_000 * price.cached_input_per_million
                + 3_000 * price.cache_write_per_million + 500 * price.output_per_million) / 1e6
    assert call_cost(usage, price) == pytest.approx(expected)
    # Charged as plain input, the writes would cost less: the premium is really applied.
    plain = call_cost(Usage(10_000, 500, 4_000, 0), price)
    assert plain is not None and expected > plain


def test_tiered_prices_above_200k_tokens_are_applied() -> None:
    price = default_catalog().pricing("gemini-2.5-pro")
    assert price is not None and price.litellm_key is not None
    big = Usage(prompt_tokens=250_000, completion_tokens=1_000)
    flat = rates_cost(big, price)
    tiered = call_cost(big, price)
    assert tiered is not None and tiered > flat  # the map's above-200k rates are higher
    small = Usage(prompt_tokens=100_000, completion_tokens=1_000)
    assert call_cost(small, price) == pytest.approx(rates_cost(small, price))


def test_the_infra_override_is_priced_on_top_by_flat_rates() -> None:
    override = resolve_pricing(SONNET, infra_pricing={
        "input_per_million_tokens": 1.0, "cached_input_per_million_tokens": 0.1,
        "cache_write_per_million_tokens": 2.0, "output_per_million_tokens": 4.0,
    })
    assert override is not None and override.litellm_key is None
    assert override.source == "infra.generation.pricing"
    usage = Usage(10_000, 500, 4_000, 3_000)
    assert call_cost(usage, override) == pytest.approx((3_000 * 1.0 + 4_000 * 0.1 + 3_000 * 2.0 + 500 * 4.0) / 1e6)


def test_writes_without_their_own_rate_cost_the_input_rate() -> None:
    price = Pricing(2.0, 0.5, 8.0, None, "x")
    assert rates_cost(Usage(1_000, 0, 0, 1_000), price) == pytest.approx(0.002)


def test_a_model_litellm_cannot_price_falls_back_to_the_rates(caplog: pytest.LogCaptureFixture) -> None:
    price = Pricing(1.0, None, 2.0, None, "litellm-map x", litellm_key="acme/not-a-model")
    with caplog.at_level(logging.WARNING, logger="mas.runtime.engine.cost"):
        cost = call_cost(Usage(1_000, 1_000), price)
    assert cost == pytest.approx(0.003)
    assert "cannot price model 'acme/not-a-model'" in caplog.text


@given(
    prompt=st.integers(0, 150_000),
    cached=st.integers(0, 150_000),
    written=st.integers(0, 150_000),
    completion=st.integers(0, 20_000),
)
def test_litellm_and_the_formula_agree_below_every_tier(prompt: int, cached: int, written: int, completion: int) -> None:
    # Below 200k prompt tokens Sonnet has no tier, so LiteLLM's logic and spec 003's
    # formula over the same map rates must give one figure; neither is ever negative.
    cached = min(cached, prompt)
    written = min(written, prompt - cached)
    usage = Usage(prompt, completion, cached, written)
    price = _sonnet()
    cost = call_cost(usage, price)
    assert cost is not None and cost >= 0
    assert cost == pytest.approx(rates_cost(usage, price), rel=1e-9, abs=1e-12)


# -- end to end: an Anthropic Messages API server on 127.0.0.1 ------------------------------


def _anthropic_reply(model: str) -> dict[str, Any]:
    return {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": "hello from the fake Anthropic"}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 3_000, "output_tokens": 500,
                  "cache_creation_input_tokens": 3_000, "cache_read_input_tokens": 4_000},
    }


@pytest.fixture
def anthropic_base() -> Iterator[tuple[str, list[str]]]:
    """A Messages API server: its base URL and the request paths it saw."""
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            paths.append(self.path)
            data = json.dumps(_anthropic_reply(body.get("model", ""))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", paths
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_live_anthropic_call_is_priced_with_its_cache_writes(rec: Any, anthropic_base: tuple[str, list[str]]) -> None:
    base, paths = anthropic_base
    engine = Engine(rec.runtime, model=f"anthropic/{SONNET}", api_base=base, api_key="sk-ant-test",
                    num_retries=0)
    reply = engine.turn([{"role": "user", "content": "hello"}])
    assert paths and paths[0].endswith("/v1/messages")
    assert reply.usage == Usage(prompt_tokens=10_000, completion_tokens=500, cached_tokens=4_000,
                                cache_write_tokens=3_000)
    expected = call_cost(Usage(10_000, 500, 4_000, 3_000), _sonnet())
    assert reply.cost == pytest.approx(expected) and engine.ledger.cost == pytest.approx(expected)
    (event,) = rec.named("llm.call")
    assert event.data["cache_write_tokens"] == 3_000 and event.data["cost"] == pytest.approx(expected)
