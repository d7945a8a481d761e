"""Fixtures of the standard-strategy tests: a bind context and the summary-engine double.

``EngineDouble`` is the one in-process stand-in allowed by the brief: it implements the
kernel's ``SummaryEngine`` protocol deterministically and records each request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mas.runtime import Event, Runtime
from mas.runtime.protocols import BindContext, Message, ModelReply, Usage
from mas.runtime.spec.binding import Binding, bind
from mas.runtime.spec.model_ref import ModelChoice, ModelRow, ModelScope


class EngineDouble:
    """Answers ``summarize_messages`` with a fixed summary, or fails as scripted.

    :param mode: ``ok``, ``raise``, ``timeout``, ``empty`` or ``tool_calls``.
    """

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.calls: list[dict[str, Any]] = []

    def summarize_messages(
        self,
        messages: list[Message],
        *,
        model: str,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        self.calls.append(
            {"messages": messages, "model": model, "tools": tools, "max_tokens": max_tokens}
        )
        if self.mode == "raise":
            raise RuntimeError("provider unavailable")
        if self.mode == "timeout":
            raise TimeoutError("summary call timed out")
        if self.mode == "empty":
            return ModelReply(text="  ", model=model)
        calls = [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
        if self.mode == "tool_calls":
            return ModelReply(text="partial", tool_calls=calls, model=model)
        return ModelReply(text=f"SUMMARY-{len(self.calls)}", usage=Usage(100, 20, 5), model=model)


class Recorder:
    """A runtime plus every event it emitted."""

    def __init__(self) -> None:
        self.runtime = Runtime.create()
        self.events: list[Event] = []
        self.runtime.add_listener(self.events.append)

    def names(self, prefix: str = "") -> list[str]:
        """Names of the recorded events starting with ``prefix``."""
        return [e.name for e in self.events if e.name.startswith(prefix)]

    def of(self, name: str) -> list[Event]:
        """The recorded events called ``name``."""
        return [e for e in self.events if e.name == name]


def make_ctx(
    runtime: Runtime, *, agent_models: list[ModelRow] | None = None, pin_activated: bool = True
) -> BindContext:
    """A bind context for agent ``agent`` whose turn model is gpt-4o (slot main)."""
    rows = agent_models or [ModelRow("main", "gpt-4o", context_window=128_000)]
    scope = ModelScope.build(agent_models=rows, package_default="gpt-4o")
    return BindContext(
        runtime=runtime,
        agent_name="agent",
        model_scope=scope,
        turn_model=ModelChoice("gpt-4o", "spec.models[id=main]", "main"),
        pin_activated=pin_activated,
        location="spec.context_manager",
    )


@pytest.fixture(scope="session")
def engine_double() -> type[EngineDouble]:
    """The summary-engine double class."""
    return EngineDouble


@pytest.fixture
def recorder() -> Recorder:
    """A fresh runtime (installed plugins) recording its events."""
    return Recorder()


@pytest.fixture(scope="session")
def binder() -> Callable[..., Any]:
    """``binder(raw_binding, runtime=None, **ctx_kwargs) -> (cm, Recorder)``."""

    def build(raw: Any, recorder: Recorder | None = None, **kwargs: Any) -> tuple[Any, Recorder]:
        rec = recorder or Recorder()
        ctx = make_ctx(rec.runtime, **kwargs)
        return bind("context_manager", Binding.model_validate(raw), ctx), rec

    return build


@pytest.fixture(scope="session")
def ctx_factory() -> Callable[..., BindContext]:
    """``ctx_factory(runtime, **kwargs)``: a bind context (see :func:`make_ctx`)."""
    return make_ctx
