"""Summaries chunked to fit the provider's count, not chars/4 (issue 11 item 2).

The fake provider counts every digit as a token: a folded range of digit-heavy tool
results is about twice what the plain estimate says. The ``llm`` summarizer asks the
engine how the provider will count the range and divides its room by that, so it
splits the range into more calls that each fit, and the engine never has to cut a
summary request (nor the provider refuse one). Through LiteLLM's real call path.
"""

from __future__ import annotations

from typing import Any

from mas.runtime import Runtime
from mas.runtime.context import DEFAULT_ESTIMATOR
from mas.runtime.engine import Engine
from mas.runtime.fakeprovider import serve
from mas.runtime.protocols import (
    BindContext,
    ModelReply,
    SizingEngine,
    SummaryRequest,
)
from mas.runtime.spec.binding import Binding, bind
from mas.runtime.spec.model_ref import ModelChoice, ModelRow, ModelScope

WINDOW = 8192


def _folded(results: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in range(results):
        out.append({"role": "user", "content": f"Look up batch {r}."})
        out.append({"role": "tool", "tool_call_id": f"c{r}", "content": " ".join(
            f"{r * 1000 + n:07d}" for n in range(120))})
    return out


def _summarizer(runtime: Runtime) -> Any:
    scope = ModelScope.build(agent_models=[
        ModelRow("main", "gpt-4o"), ModelRow("summarizer", "openai/local", context_window=WINDOW)])
    ctx = BindContext(runtime=runtime, agent_name="agent", model_scope=scope,
                      turn_model=ModelChoice("gpt-4o", "spec.models[id=main]", "main"),
                      location="spec.context_manager")
    return bind("summarizer", Binding.model_validate(
        {"type": "llm", "params": {"model": "summarizer"}}), ctx.at("params", "summarizer"))


class PlainEngine:
    """The same engine seen through the bare SummaryEngine protocol (no sizing)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def summarize_messages(self, messages: list[dict[str, Any]], **kwargs: Any) -> ModelReply:
        return self.engine.summarize_messages(messages, **kwargs)


def _engine(base_url: str, runtime: Runtime) -> Engine:
    return Engine(runtime, model="gpt-4o", api_base=base_url, api_key="sk-fake",
                  num_retries=0, sleep=lambda _s: None,
                  model_settings={"openai/local": {"context_window": WINDOW}})


def test_digit_heavy_folds_are_chunked_to_fit_and_nothing_is_cut() -> None:
    runtime = Runtime.create()
    folded = _folded(24)
    assert DEFAULT_ESTIMATOR.messages(folded) < 2 * WINDOW  # chars/4 thinks two calls do
    with serve(window=WINDOW) as provider:
        engine = _engine(provider.base_url, runtime)
        assert isinstance(engine, SizingEngine)
        result = _summarizer(runtime).summarize(SummaryRequest(folded), engine)
    assert result.text and result.unread_messages == 0
    assert provider.rejected == [], "no summary request was refused"
    assert engine.degradation.counts == {}, "and none was cut to fit"
    assert result.llm_calls == len(provider.served) >= 3
    assert max(provider.served) <= WINDOW


def test_an_engine_that_cannot_size_leaves_the_cut_to_the_engine() -> None:
    # The contrast: chunked by chars/4 alone, the same range needs cuts (counted).
    runtime = Runtime.create()
    with serve(window=WINDOW) as provider:
        engine = _engine(provider.base_url, runtime)
        result = _summarizer(runtime).summarize(SummaryRequest(_folded(24)), PlainEngine(engine))
    assert result.text
    assert engine.degradation.counts.get("window_overflows_recovered", 0) >= 1
