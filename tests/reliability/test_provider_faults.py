"""Provider faults against the fake provider, through LiteLLM's real call path (issue 13
items 11 and 12): ``timeout`` bounds a whole attempt, retries are decided per status, and
a failing summarizer is backed off instead of being called on every later turn."""

from __future__ import annotations

import time

import pytest

from mas.runtime import Runtime
from mas.runtime.engine import Engine
from mas.runtime.engine._backoff import MAX_SKIP, SummarizerBackoffError
from mas.runtime.engine._retry import RETRY_STATUSES, endpoint
from mas.runtime.errors import ModelCallError
from mas.runtime.fakeprovider import serve

PROMPT = [{"role": "user", "content": "hello"}]


def _engine(base_url: str, **overrides: object) -> tuple[Engine, list[float]]:
    waits: list[float] = []
    settings: dict[str, object] = {"model": "openai/fake", "api_base": base_url,
                                   "api_key": "sk-fake", "timeout": 5.0, "num_retries": 2,
                                   "sleep": waits.append}
    settings.update(overrides)
    return Engine(Runtime.create(entry_points=False), **settings), waits  # type: ignore[arg-type]


@pytest.mark.serial  # the wall clock against a 1 s timeout: other tests' load would skew it
def test_a_trickling_reply_is_cut_off_at_the_timeout_not_per_read() -> None:
    with serve(delay=0.05) as provider:  # ~300 bytes: 15 s in all
        engine, waits = _engine(provider.base_url, timeout=1.0, num_retries=2)
        engine.turn(PROMPT)  # warm: LiteLLM's first call imports more of itself
        provider.mode = "trickle"
        started = time.monotonic()
        with pytest.raises(ModelCallError, match="no complete answer within 1s"):
            engine.turn(PROMPT)
        took = time.monotonic() - started
    assert took < 3.0
    assert waits == [] and len(provider.requests) == 2


@pytest.mark.parametrize("status", sorted(RETRY_STATUSES - {408, 409}))
def test_transient_statuses_are_retried(status: int) -> None:
    with serve() as provider:
        provider.push("status", status=status)
        engine, waits = _engine(provider.base_url)
        assert engine.turn(PROMPT).text == "Noted."
    assert len(provider.requests) == 2 and len(waits) == 1


@pytest.mark.parametrize("status", [400, 404, 422])
def test_other_client_errors_are_not_retried(status: int) -> None:
    with serve() as provider:
        provider.push("status", status=status)
        engine, waits = _engine(provider.base_url)
        with pytest.raises(ModelCallError, match="on the first attempt"):
            engine.turn(PROMPT)
    assert len(provider.requests) == 1 and waits == []


def test_a_model_rows_own_retries_and_timeout_override_the_infra_ones() -> None:
    with serve(mode="status", status=502) as provider:
        engine, waits = _engine(provider.base_url, num_retries=5,
                                model_settings={"openai/fake": {"num_retries": 1}})
        with pytest.raises(ModelCallError, match="after 2 attempt"):
            engine.turn(PROMPT)
    assert len(provider.requests) == 2


def test_summary_retries_are_counted_as_degradation() -> None:
    with serve() as provider:
        provider.push("status", status=503)
        engine, _ = _engine(provider.base_url)
        engine.summarize_messages(PROMPT, model="openai/fake")
    assert engine.degradation.counts == {"summarizer_retries": 1}
    assert engine.degradation.degraded


def test_a_failing_summarizer_is_backed_off_then_tried_again() -> None:
    with serve(mode="status", status=500) as provider:
        engine, _ = _engine(provider.base_url, num_retries=0)
        outcomes = []
        for _ in range(12):
            try:
                engine.summarize_messages(PROMPT, model="openai/fake")
                outcomes.append("ok")
            except SummarizerBackoffError:
                outcomes.append("skip")
            except ModelCallError:
                outcomes.append("fail")
            if len(outcomes) == 6:
                provider.mode = "ok"
    # 1 failure skips 1 call, 2 failures skip 2; then the server is back and a call succeeds.
    assert outcomes[:6] == ["fail", "skip", "fail", "skip", "skip", "fail"]
    assert "ok" in outcomes[6:] and outcomes[-1] == "ok"
    assert len(provider.requests) == outcomes.count("fail") + outcomes.count("ok")
    # Turn calls are never backed off.
    assert MAX_SKIP >= 4


def test_endpoint_names_host_and_port_and_never_a_key() -> None:
    assert endpoint("http://user:sk-secret@10.0.0.5:8080/v1", "openai/x") == "10.0.0.5:8080"
    assert endpoint("https://api.example.com/v1", "openai/x") == "api.example.com:443"
    assert endpoint(None, "anthropic/claude") == "anthropic default endpoint"


def test_model_rows_set_their_own_timeout_and_retries(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from mas.runtime.session import open_session
    from mas.runtime.spec.loader import load_manifest_set

    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: rows}\nspec:\n  models:\n"
        "    - {id: main, model: offline/default, timeout: 300}\n"
        "    - {id: summarizer, model: openai/local, timeout: 1.5, num_retries: 0}\n"
        "  context_manager: {type: summarising, params: {summarizer: {type: llm, params: "
        "{model: summarizer}}}}\n")
    manifests = load_manifest_set([agent])
    session = open_session(Runtime.create(), manifests.agents[0], manifests)
    assert session.engine.model_settings == {
        "offline/default": {"timeout": 300.0},
        "openai/local": {"timeout": 1.5, "num_retries": 0},
    }
