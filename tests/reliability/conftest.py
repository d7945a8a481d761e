"""Shared pieces of the reliability suite: a scripted summary engine and a bind helper.

``ScriptedEngine`` is a SummaryEngine double (the one in-process stand-in these tests use,
as in tests/standard): each call takes the next mode from its script — ``ok``, ``raise``,
``timeout``, ``empty`` or ``tool_calls`` — and records what it was sent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mas.runtime import Event, Runtime
from mas.runtime.protocols import BindContext, Message, ModelReply, Usage
from mas.runtime.spec.binding import Binding, bind
from mas.runtime.spec.model_ref import ModelChoice, ModelRow, ModelScope


class ScriptedEngine:
    """Answers summary calls by script; the last mode repeats once the script runs out."""

    def __init__(self, modes: Iterable[str] = ("ok",)) -> None:
        self.modes = list(modes) or ["ok"]
        self.calls: list[list[Message]] = []

    def summarize_messages(self, messages: list[Message], *, model: str,
                           tools: list[dict[str, Any]] | None = None,
                           max_tokens: int | None = None) -> ModelReply:
        mode = self.modes[min(len(self.calls), len(self.modes) - 1)]
        self.calls.append(messages)
        if mode == "raise":
            raise RuntimeError("summary provider down")
        if mode == "timeout":
            raise TimeoutError("summary call timed out")
        if mode == "empty":
            return ModelReply(text="", model=model)
        if mode == "tool_calls":
            call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            return ModelReply(text="", tool_calls=[call], model=model)
        return ModelReply(text=f"summary #{len(self.calls)}", usage=Usage(10, 3), model=model)


def bound_manager(raw: Any, runtime: Runtime | None = None) -> tuple[Any, list[Event]]:
    """Bind a context manager for a gpt-4o agent; returns it and the list its events go to."""
    runtime = runtime or Runtime.create()
    events: list[Event] = []
    runtime.add_listener(events.append)
    scope = ModelScope.build(agent_models=[ModelRow("main", "gpt-4o", context_window=128_000)],
                             package_default="gpt-4o")
    ctx = BindContext(runtime=runtime, agent_name="agent", model_scope=scope,
                      turn_model=ModelChoice("gpt-4o", "spec.models[id=main]", "main"))
    return bind("context_manager", Binding.model_validate(raw), ctx), events
