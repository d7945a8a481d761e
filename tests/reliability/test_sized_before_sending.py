"""Requests sized to the called model's window before they are sent (issue 11 item 2).

With the fake provider's digit tokenizer and an 8k window, a summary request bigger than
the window is cut (marked) by the engine's calibrated estimate and sent once: the provider
refuses nothing, the cut is counted as ``window_overflows_recovered`` with its reason. A
request that fits goes out untouched; a model whose window nobody states is still re-sized
from the provider's refusal. The window reaches the engine from the manifests' rows and
the Infra, as ``mas-ctl run`` builds it. Through LiteLLM's real call path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mas.runtime import Runtime
from mas.runtime.engine import Engine
from mas.runtime.engine._window import CUT_MARK
from mas.runtime.fakeprovider import request_tokens, serve

MARK = CUT_MARK.split("{n}")[0].strip()


def _summary_request(batches: int) -> list[dict[str, Any]]:
    turns = [{"role": "user" if t % 2 == 0 else "assistant",
              "content": f"Batch {t}: " + " ".join(f"{t * 1000 + n:07d}" for n in range(50))}
             for t in range(batches)]
    return [{"role": "system", "content": "Summarize; keep every identifier."}, *turns,
            {"role": "user", "content": "Write the summary now."}]


def _engine(base_url: str, **settings: Any) -> Engine:
    return Engine(Runtime.create(entry_points=False), model="offline/default",
                  api_base=base_url, api_key="sk-fake", num_retries=0,
                  sleep=lambda _s: None, **settings)


def test_a_summary_request_over_the_window_is_sized_before_sending() -> None:
    messages = _summary_request(40)
    assert request_tokens({"messages": messages}) > 8192 + 2000
    with serve(window=8192) as provider:
        engine = _engine(provider.base_url,
                         model_settings={"openai/local": {"context_window": 8192}})
        reply = engine.summarize_messages(messages, model="openai/local", max_tokens=1024)
    assert reply.text.startswith("Noted.")
    assert provider.rejected == [] and len(provider.requests) == 1
    assert engine.ledger.llm_calls == 1
    assert provider.served[0] + 1024 <= 8192
    assert reply.cut_chars > 0
    sent = provider.requests[0]["messages"]
    assert len(sent) == len(messages)
    assert sent[0] == messages[0] and sent[-1] == messages[-1]
    assert any(MARK in str(m["content"]) for m in sent)
    assert engine.degradation.counts == {"window_overflows_recovered": 1}
    assert not engine.degradation.degraded  # recovered before sending: counted, not degraded
    reason = engine.degradation.reasons["window_overflows_recovered"]
    assert reason.startswith("summary request to openai/local: about ")
    assert "8,192-token window" in reason and f"{reply.cut_chars:,} characters" in reason


def test_a_summary_request_that_fits_is_sent_untouched() -> None:
    messages = _summary_request(4)
    with serve(window=8192) as provider:
        engine = _engine(provider.base_url, context_window=8192)
        reply = engine.summarize_messages(messages, model="openai/local", max_tokens=1024)
    assert provider.requests[0]["messages"] == messages
    assert reply.cut_chars == 0 and provider.rejected == []
    assert engine.degradation.counts == {}


def test_an_unknown_window_leaves_the_refusal_to_re_size() -> None:
    messages = _summary_request(40)
    with serve(window=8192) as provider:
        engine = _engine(provider.base_url)
        reply = engine.summarize_messages(messages, model="openai/local", max_tokens=1024)
    assert engine.window_for("openai/local", "summary") is None
    assert provider.rejected, "sent whole, refused, then re-sized"
    assert reply.cut_chars > 0
    assert engine.degradation.counts["window_overflows_recovered"] == len(provider.rejected)
    assert engine.ledger.llm_calls == 1 + len(provider.rejected)


def test_the_calibration_learned_from_usage_sizes_the_next_request() -> None:
    # Short words and punctuation, no digits: this server counts about 1.5 times the
    # estimate and the digit prior does not see it. Three served requests teach it.
    prose = "Ok: no, go; as is, so be it. "
    big = [{"role": "user", "content": prose * 400}]
    with serve(window=2048) as provider:
        fresh = _engine(provider.base_url, context_window=2048)
        fresh.summarize_messages(big, model="openai/local", max_tokens=64)
        assert provider.rejected, "sized by chars/4 alone, the cut falls short and is refused"
        refused = len(provider.rejected)
        engine = _engine(provider.base_url, context_window=2048)
        for _ in range(3):
            engine.summarize_messages([{"role": "user", "content": prose * 10}],
                                      model="openai/local", max_tokens=64)
        assert engine.calibration.learned("openai/local")
        reply = engine.summarize_messages(big, model="openai/local", max_tokens=64)
    assert len(provider.rejected) == refused and reply.cut_chars > 0
    assert provider.served[-1] + 64 <= 2048


def test_the_windows_reach_the_engine_from_the_manifests(tmp_path: Path) -> None:
    from mas.runtime.session import open_session
    from mas.runtime.spec.loader import load_manifest_set

    agent = tmp_path / "agent.yaml"
    agent.write_text(
        "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: rows}\nspec:\n  models:\n"
        "    - {id: main, model: offline/default, context_window: 6000}\n"
        "    - {id: summarizer, model: openai/local, context_window: 8192}\n"
        "  context_manager: {type: summarising, params: {summarizer: {type: llm, params: "
        "{model: summarizer}}}}\n")
    infra = tmp_path / "infra.yaml"
    infra.write_text("apiVersion: mas/v1\nkind: Infra\nmetadata: {name: local}\n"
                     "spec: {generation: {context_window: 4096}}\n")
    manifests = load_manifest_set([agent, infra])
    engine = open_session(Runtime.create(), manifests.agents[0], manifests).engine
    assert engine.window_for("offline/default", "turn") == 6000  # the turn row's
    assert engine.window_for("openai/local", "summary") == 8192  # the summarizer row's
    # The turn row's window is the turn's: a summary by the same model is not held to it.
    assert engine.window_for("offline/default", "summary") == 4096  # the Infra's
    assert engine.window_for("openai/judge", "judge") == 4096


def test_a_model_only_the_catalog_knows_is_sized_to_the_catalogs_window() -> None:
    engine = Engine(Runtime.create(entry_points=False))
    assert engine.window_for("offline/default", "summary") == 128_000
    assert engine.window_for("openai/not-a-model-anyone-lists", "judge") is None


def test_mas_ctl_eval_sizes_judge_calls_to_the_infra_window(tmp_path: Path) -> None:
    from mas.library.eval.cli import make_engine
    from mas.runtime.spec.loader import load_manifest_set

    infra = tmp_path / "infra.yaml"
    infra.write_text("apiVersion: mas/v1\nkind: Infra\nmetadata: {name: local}\n"
                     "spec: {generation: {api_base: 'http://127.0.0.1:9/v1', "
                     "context_window: 8192}}\n")
    engine = make_engine(Runtime.create(), load_manifest_set([infra]).infra)
    assert isinstance(engine, Engine)
    assert engine.window_for("openai/local-qwen", "judge") == 8192


def test_a_cut_request_replayed_from_the_response_cache_is_still_counted(
        tmp_path: Path) -> None:
    from mas.runtime.engine import ResponseCache

    messages = _summary_request(40)
    cache = tmp_path / "cache.sqlite"
    with serve(window=8192) as provider:
        live = _engine(provider.base_url, context_window=8192, cache=ResponseCache(cache))
        first = live.summarize_messages(messages, model="openai/local", max_tokens=1024)
        replay = _engine(provider.base_url, context_window=8192,
                         cache=ResponseCache(cache, strict=True))
        again = replay.summarize_messages(messages, model="openai/local", max_tokens=1024)
    assert len(provider.requests) == 1 and again.cache_hit
    assert again.cut_chars == first.cut_chars > 0
    assert replay.degradation.counts == {"window_overflows_recovered": 1}
    assert "response cache" in replay.degradation.reasons["window_overflows_recovered"]
