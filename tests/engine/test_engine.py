"""The engine over the offline model: usage, events, budget, logging, mappings, pricing."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from mas.runtime.catalog import Pricing
from mas.runtime.engine import Engine
from mas.runtime.errors import BudgetExceededError
from mas.runtime.protocols import ChatEngine, SummaryEngine

SYSTEM = {"role": "system", "content": "You are the engine-test agent."}


def chat(*turns: str) -> list[dict]:
    return [SYSTEM, *({"role": "user", "content": t} for t in turns)]


def test_engine_follows_the_summary_and_chat_protocols(rec):
    engine = Engine(rec.runtime)
    assert isinstance(engine, SummaryEngine) and isinstance(engine, ChatEngine)
    assert engine.model == "offline/default"


def test_a_turn_runs_through_litellm_and_records_usage(rec):
    engine = Engine(rec.runtime, session_id="s-usage")
    reply = engine.turn(chat("My order ID is Q-777. What was my order ID?"))
    assert reply.usage is not None and reply.usage.prompt_tokens > 0
    assert reply.model == "offline/default" and not reply.cache_hit
    (event,) = rec.named("llm.call")
    assert event.session_id == "s-usage"
    data = event.data
    assert data["purpose"] == "turn" and data["model"] == "offline/default"
    assert data["prompt_tokens"] == reply.usage.prompt_tokens
    assert data["provider_usage_source"] == "provider" and data["attempts"] == 1
    ledger = engine.ledger
    assert ledger.llm_calls == ledger.live_calls == 1
    assert ledger.prompt_tokens == reply.usage.prompt_tokens
    assert ledger.last_usage == reply.usage


def test_events_never_carry_prompt_or_reply_text(rec):
    engine = Engine(rec.runtime, api_key="sk-never-in-events")
    engine.turn(chat("The vault code is ZEBRA-4411-SECRET. What is the vault code?"))
    for event in rec.events:
        line = event.to_json()
        assert "ZEBRA" not in line and "sk-never" not in line
    assert "sk-never" not in repr(engine)


def test_the_budget_refuses_the_call_after_max_llm_calls(rec):
    engine = Engine(rec.runtime, max_llm_calls=2)
    engine.turn(chat("one"))
    engine.summarize_messages(chat("summarize: two"), model="offline/default")
    with pytest.raises(BudgetExceededError) as caught:
        engine.complete(chat("three"), model="offline/default")
    message = str(caught.value)
    assert "spec.budget.max_llm_calls" in message and "all 2 model call(s)" in message
    assert "judge call was refused" in message
    assert len(rec.named("llm.call")) == 2


def test_summaries_log_the_spec_line_and_mark_an_override(rec, caplog):
    engine = Engine(rec.runtime)
    with caplog.at_level(logging.INFO, logger="mas.runtime.engine.llm_live"):
        engine.summarize_messages(chat("summarize please"), model="offline/default")
        engine.summarize_messages(chat("a", "summarize please"), model="offline/cheap")
    lines = [r.getMessage() for r in caplog.records if r.name == "mas.runtime.engine.llm_live"]
    assert lines == [
        "history summarizer: completing 2 message(s) model=offline/default",
        "history summarizer: completing 3 message(s) model=offline/cheap (override)",
    ]
    assert [e.data["purpose"] for e in rec.named("llm.call")] == ["summary", "summary"]


def test_infra_mappings_choose_the_deployed_model(rec):
    engine = Engine(rec.runtime, model="house-model", infra_mappings={"house-model": "offline/x"})
    reply = engine.turn(chat("hello"))
    assert reply.model == "offline/x"
    data = rec.named("llm.call")[0].data
    assert (data["requested_model"], data["model"]) == ("house-model", "offline/x")


def test_infra_pricing_prices_every_call_with_the_spec_formula(rec):
    pricing = {"input_per_million_tokens": 1_000_000.0,
               "cached_input_per_million_tokens": 100_000.0,
               "output_per_million_tokens": 2_000_000.0}
    engine = Engine(rec.runtime, infra_pricing=pricing)
    first = engine.turn(chat("My name is Ada Lovelace."))
    u = first.usage
    assert u is not None
    expected = (u.prompt_tokens - u.cached_tokens) * 1.0 + u.cached_tokens * 0.1 \
        + u.completion_tokens * 2.0
    assert first.cost == pytest.approx(expected)
    second = engine.turn(chat("My name is Ada Lovelace.", "What is my name?"))
    assert engine.ledger.cost == pytest.approx(first.cost + second.cost)
    assert engine.ledger.cost_status == "ok"
    assert rec.named("llm.call")[-1].data["session_cost"] == pytest.approx(engine.ledger.cost)


def test_an_unpriced_model_marks_the_session_cost_unavailable(rec):
    engine = Engine(rec.runtime, model="offline/unpriced-variant")
    reply = engine.turn(chat("hello"))
    assert reply.cost is None
    assert engine.ledger.cost_status == "pricing_or_usage_unavailable"
    assert rec.named("llm.call")[0].data["cost_status"] == "pricing_or_usage_unavailable"


def test_the_catalog_prices_the_offline_default_at_zero(rec):
    engine = Engine(rec.runtime)
    assert engine.turn(chat("hello")).cost == 0.0
    assert engine.ledger.cost_status == "ok"


def test_explicit_pricing_object_is_used(rec):
    engine = Engine(rec.runtime, model="offline/unpriced-variant",
                    infra_pricing=Pricing(3.0, None, 6.0, None, "test"))
    reply = engine.turn(chat("hello"))
    assert reply.usage is not None and reply.cost is not None
    assert reply.cost == pytest.approx(
        (reply.usage.prompt_tokens * 3.0 + reply.usage.completion_tokens * 6.0) / 1e6
    )


@pytest.mark.parametrize(("field", "value", "text"), [
    ("timeout", 0, "timeout: must be a positive number of seconds (got 0)"),
    ("num_retries", -1, "num_retries: must be 0 or more (got -1)"),
    ("max_llm_calls", 0, "max_llm_calls: must be at least 1 (got 0)"),
    ("max_tokens", 0, "max_tokens: must be at least 1 (got 0)"),
    ("retry_backoff", -1.0, "retry_backoff: must be 0 or more seconds (got -1.0)"),
    ("max_retry_wait", -2, "max_retry_wait: must be 0 or more seconds (got -2)"),
])
def test_bad_settings_name_the_field_and_value(rec, field, value, text):
    with pytest.raises(ValueError, match=text.replace("(", r"\(").replace(")", r"\)")):
        Engine(rec.runtime, **{field: value})


def test_unknown_purpose_is_rejected(rec):
    with pytest.raises(ValueError, match="purpose: must be one of turn, summary, judge"):
        Engine(rec.runtime).call(chat("x"), purpose="chat")


def test_building_an_engine_does_not_import_litellm():
    code = (
        "import sys\n"
        "from mas.runtime import Runtime\n"
        "from mas.runtime.engine import Engine, ResponseCache\n"
        "Engine(Runtime.create())\n"
        "print('litellm' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_max_tokens_is_sent_only_when_set(rec):
    engine = Engine(rec.runtime, max_tokens=3)
    reply = engine.turn(chat("My order ID is Q-777 and my address is 12 Long Street.",
                             "What is my address?"))
    assert reply.usage is not None and reply.usage.completion_tokens <= 3
    unlimited = Engine(rec.runtime).turn(chat(
        "My order ID is Q-777 and my address is 12 Long Street.", "What is my address?"))
    assert "12 Long Street" in unlimited.text
