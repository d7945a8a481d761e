"""Runtime events -> OpenTelemetry spans, following the GenAI semantic conventions.

Per session, per turn::

    mas.session <id>                 when the caller opens the session (the lab does)
      invoke_agent <agent>           one span per committed turn (gen_ai.operation.name)
        mas.compaction               compaction.start .. compaction.stop / .exception
          chat <summarizer model>    the summarizer's llm.call
        chat <model>                 each llm.call of the turn, CLIENT kind

A judge's call is never part of a turn: its span is a child of whatever span is current
where it was made (``mas-ctl eval``'s), else a root. Every span carries the kind both
Phoenix (``openinference.span.kind``) and Langfuse (``langfuse.observation.type``) read,
so neither shows it as unknown: model calls are LLM / generation, turns AGENT / agent,
sessions and compactions CHAIN / chain.

``cache.lookup`` events become span events of the call they preceded; each
``context.assembled`` is a span event of the turn, and its accounting numbers go on the
compaction span it follows. The spans are built after the fact, from the events' own
timestamps (a call's span starts ``latency_s`` before its ``llm.call``), so the kernel's
hot path never touches OpenTelemetry. Attributes are numbers and labels only; message
text goes on turn and model-call spans only when the user opts in, masked.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from mas.runtime.catalog import litellm_provider
from mas.runtime.events import Event
from mas.runtime.protocols import Message
from mas.runtime.secrets import mask

AttributeValue = str | bool | int | float
Attributes = dict[str, AttributeValue]
TurnMessages = Callable[[str, int], list[Message]]
"""Given a session id and a count, the last ``count`` messages of that session."""

_LABELS = frozenset({"model", "model_source", "trigger_source", "kind", "provider",
                     "window_source", "layer", "purpose", "tool", "mode"})
"""The only string-valued keys copied to attributes: names and sources, never content."""

_PROVIDERS = {
    "openai": "openai", "text-completion-openai": "openai", "azure": "azure.ai.openai",
    "anthropic": "anthropic", "vertex_ai": "gcp.vertex_ai", "gemini": "gcp.gemini",
    "bedrock": "aws.bedrock", "mistral": "mistral_ai", "groq": "groq",
    "deepseek": "deepseek", "xai": "x_ai", "cohere": "cohere", "perplexity": "perplexity",
}
"""LiteLLM provider names -> ``gen_ai.provider.name`` well-known values (others as is)."""


def provider_name(model: str) -> str:
    """``gen_ai.provider.name`` of a LiteLLM model string (its prefix, or LiteLLM's map)."""
    prefix = litellm_provider(model) or ""
    for name, value in _PROVIDERS.items():
        if prefix == name or prefix.startswith(f"{name}-"):
            return value
    return prefix or "unknown"


SPAN_KINDS = {
    "LLM": "generation", "CHAIN": "chain", "AGENT": "agent", "TOOL": "tool",
    "EVALUATOR": "evaluator", "RETRIEVER": "retriever", "EMBEDDING": "embedding",
    "GUARDRAIL": "guardrail",
}
"""OpenInference span kinds (Phoenix) -> Langfuse observation types, for :func:`kind`."""


def kind(name: str) -> Attributes:
    """The attributes that classify a span as OpenInference kind ``name`` in Phoenix and
    as the matching observation type in Langfuse (``CHAIN`` -> ``chain``, ...)."""
    return {"openinference.span.kind": name, "langfuse.observation.type": SPAN_KINDS[name]}


_CLOCKS = frozenset({"system_time", "monotonic_time"})
"""Event fields that only repeat the span's own timestamps."""


def flat_attributes(prefix: str, data: Mapping[str, Any]) -> Attributes:
    """Numbers, flags and known labels of ``data``, nested keys joined with dots."""
    out: Attributes = {}
    for key, value in data.items():
        if key in _CLOCKS:
            continue
        name = f"{prefix}.{key}"
        if isinstance(value, Mapping):
            out.update(flat_attributes(name, value))
        elif isinstance(value, (bool, int, float)) or (isinstance(value, str) and key in _LABELS):
            out[name] = value
    return out


def _ns(seconds: float) -> int:
    return int(seconds * 1e9)


@dataclass
class _SessionSpans:
    """The open spans of one session and what waits for a span to land on."""

    session: Span | None = None
    turn: Span | None = None
    compaction: Span | None = None
    compaction_open: bool = False
    compaction_end: int = 0
    lookups: list[Event] = field(default_factory=list)
    totals: dict[str, float] = field(default_factory=dict)
    error: str | None = None


class GenAiSpans:
    """An event listener that turns a runtime's events into spans (see the module doc).

    :param tracer: where spans go.
    :param agent_name: the agent's name for ``invoke_agent`` spans (when known).
    :param turn_messages: the text source for ``capture_content``; ``None``: no text ever.
    :param capture_content: put each turn's messages on its span (masked).
    """

    def __init__(
        self,
        tracer: trace.Tracer,
        *,
        agent_name: str | None = None,
        turn_messages: TurnMessages | None = None,
        capture_content: bool = False,
    ) -> None:
        self.tracer = tracer
        self.agent_name = agent_name
        self.turn_messages = turn_messages
        self.capture_content = capture_content
        self._sessions: dict[str, _SessionSpans] = {}
        self._unfinished = 0
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        """Handle one event (the :meth:`mas.runtime.Runtime.add_listener` protocol)."""
        handler = _HANDLERS.get(event.name, GenAiSpans._other)
        with self._lock:
            handler(self, self._sessions.setdefault(event.session_id, _SessionSpans()), event)

    def open_session(self, session_id: str, parent: Any = None,
                     attributes: Mapping[str, AttributeValue] | None = None) -> Span:
        """Start (and return) the ``mas.session`` span that ``session_id``'s turns go under.

        :param parent: the OpenTelemetry context it is a child of (the lab run's, from a
            traceparent); ``None``: the current one.
        """
        with self._lock:
            state = self._sessions.setdefault(session_id, _SessionSpans())
            if state.session is None:
                state.session = self.tracer.start_span(
                    f"mas.session {session_id}", context=parent, kind=SpanKind.INTERNAL,
                    attributes={**kind("CHAIN"), "session.id": session_id,
                                "gen_ai.conversation.id": session_id, **(attributes or {})})
            return state.session

    def close_session(self, session_id: str, error: str | None = None) -> None:
        """End ``session_id``'s spans: a turn left open ends as not committed (counted in
        what :meth:`close` returns); ``error`` marks the session span failed."""
        with self._lock:
            state = self._sessions.pop(session_id, None)
            if state is None:
                return
            self._unfinished += self._finish(state)
            if state.session is not None:
                if error is not None:
                    state.session.set_status(Status(StatusCode.ERROR, error))
                state.session.end()

    def close(self) -> int:
        """End every span still open (turns that never committed); returns how many spans
        ended unfinished, those of closed sessions included."""
        with self._lock:
            left, self._unfinished = self._unfinished, 0
            for state in self._sessions.values():
                left += self._finish(state)
                if state.session is not None:
                    state.session.end()
            self._sessions.clear()
            return left

    def _finish(self, state: _SessionSpans) -> int:
        left = 0
        if state.compaction is not None:
            self._end_compaction(state)
            left += 1
        if state.turn is not None:
            state.turn.set_status(Status(StatusCode.ERROR, "turn did not commit"))
            state.turn.set_attribute("error.type", state.error or "turn_not_committed")
            state.turn.end()
            state.turn = None
            left += 1
        return left

    # -- spans ---------------------------------------------------------------------------

    def _turn(self, state: _SessionSpans, event: Event) -> Span | None:
        # A session nobody opened goes under the current span: a root under ``run``, the
        # session's own span for the copies a lab session asks its isolated probes of.
        if not event.session_id:
            return None  # outside a session (a judge's call): each call is its own root
        if state.turn is None:
            name = f"invoke_agent {self.agent_name}" if self.agent_name else "invoke_agent"
            attributes: Attributes = {
                **kind("AGENT"),
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.conversation.id": event.session_id,
                "session.id": event.session_id,
            }
            if self.agent_name:
                attributes["gen_ai.agent.name"] = self.agent_name
            state.turn = self.tracer.start_span(
                name, context=self._context(state.session), kind=SpanKind.INTERNAL,
                start_time=_ns(event.ts), attributes=attributes,
            )
            state.totals, state.error = {}, None
        return state.turn

    def _context(self, parent: Span | None) -> Any:
        return trace.set_span_in_context(parent) if parent is not None else None

    def _end_compaction(self, state: _SessionSpans) -> None:
        if state.compaction is not None:
            state.compaction.end(end_time=state.compaction_end or None)
        state.compaction, state.compaction_open, state.compaction_end = None, False, 0

    # -- handlers, one per event name ----------------------------------------------------

    def _assembled(self, state: _SessionSpans, event: Event) -> None:
        turn = self._turn(state, event)
        data = {k: v for k, v in event.data.items() if not k.startswith("_") and k != "parts"}
        attributes = flat_attributes("mas.context", data)
        accounting = flat_attributes("mas.accounting", event.data.get("accounting") or {})
        if state.compaction is not None and not state.compaction_open:
            # The request after a compaction is the one its accounting numbers describe.
            state.compaction.set_attributes(accounting)
            self._end_compaction(state)
        if turn is not None:
            turn.add_event("mas.context.assembled", attributes, timestamp=_ns(event.ts))
            turn.set_attributes(accounting)

    def _compaction_start(self, state: _SessionSpans, event: Event) -> None:
        self._end_compaction(state)
        parent = self._turn(state, event)
        state.compaction = self.tracer.start_span(
            "mas.compaction",
            context=self._context(parent),
            kind=SpanKind.INTERNAL,
            start_time=_ns(event.ts),
            attributes={**kind("CHAIN"), "session.id": event.session_id,
                        **flat_attributes("mas.compaction", event.data)},
        )
        state.compaction_open = True

    def _compaction_end(self, state: _SessionSpans, event: Event) -> None:
        if state.compaction is None:
            self._compaction_start(state, event)
        assert state.compaction is not None
        state.compaction.set_attributes(flat_attributes("mas.compaction", event.data))
        if event.name == "compaction.exception":
            kind = str(event.data.get("kind") or "exception")
            state.compaction.set_attribute("error.type", kind)
            state.compaction.set_status(Status(StatusCode.ERROR, kind))
        state.compaction_open, state.compaction_end = False, _ns(event.ts)

    def _lookup(self, state: _SessionSpans, event: Event) -> None:
        if event.data.get("purpose") == "judge":
            # Judges vote on threads side by side: which lookup preceded which call is
            # not known, so the judge's lookups are not put on any span.
            return
        self._turn(state, event)
        state.lookups.append(event)

    def _call_span(self, state: _SessionSpans, event: Event, **extra: str) -> Span:
        # One model call's CLIENT span, under the open compaction or the turn, carrying the
        # cache lookups that preceded it; the caller ends it.
        data = event.data
        lookups: list[Event] = []
        parent = None  # a judge's call: scoring, not the agent's work (the current span's)
        if data.get("purpose") != "judge":
            turn = self._turn(state, event)
            parent = state.compaction if state.compaction_open else turn
            lookups = list(self._take_lookups(state))
        requested = str(data.get("requested_model") or data.get("model") or "")
        span = self.tracer.start_span(
            f"chat {requested}",
            context=self._context(parent),
            kind=SpanKind.CLIENT,
            start_time=_ns(event.ts - float(data.get("latency_s") or 0.0)),
            attributes={**_call_attributes(event), **extra},
        )
        if self.capture_content and event.content is not None:
            span.set_attributes(_call_content(event.content))
        for lookup in lookups:
            span.add_event("mas.cache.lookup", flat_attributes("mas.cache", lookup.data),
                           timestamp=_ns(lookup.ts))
        state.totals["llm_calls"] = state.totals.get("llm_calls", 0) + 1
        return span

    def _call(self, state: _SessionSpans, event: Event) -> None:
        data = event.data
        span = self._call_span(state, event)
        if data.get("cost_status") not in (None, "ok"):
            span.set_attribute("error.type", str(data["cost_status"]))
        span.end(end_time=_ns(event.ts))
        for key in ("prompt_tokens", "completion_tokens", "cached_tokens", "cost"):
            if isinstance(data.get(key), (int, float)):
                state.totals[key] = state.totals.get(key, 0) + data[key]

    def _call_failed(self, state: _SessionSpans, event: Event) -> None:
        # The call raised: its span says why by kind and a content-free message (never the
        # provider's text), and the turn, which will not commit, keeps the kind.
        kind = str(event.data.get("error_kind") or "exception")
        span = self._call_span(state, event, **{"error.type": kind})
        span.set_status(Status(StatusCode.ERROR, str(event.data.get("message") or kind)))
        span.end(end_time=_ns(event.ts))
        state.error = kind

    def _take_lookups(self, state: _SessionSpans) -> Iterator[Event]:
        lookups, state.lookups = state.lookups, []
        return iter(lookups)

    def _turn_committed(self, state: _SessionSpans, event: Event) -> None:
        turn = self._turn(state, event)
        if turn is None:
            return
        self._end_compaction(state)
        for lookup in self._take_lookups(state):
            turn.add_event("mas.cache.lookup", flat_attributes("mas.cache", lookup.data),
                           timestamp=_ns(lookup.ts))
        turn.set_attributes(flat_attributes("mas.turn", event.data))
        turn.set_attributes({f"mas.turn.{k}": v for k, v in state.totals.items()})
        if self.capture_content and self.turn_messages is not None:
            count = int(event.data.get("messages") or 0)
            turn.set_attributes(_content(self.turn_messages(event.session_id, count)))
        turn.end(end_time=_ns(event.ts))
        state.turn = None

    def _other(self, state: _SessionSpans, event: Event) -> None:
        # warning, degraded, tool.call, summary.checked, ...: a span event on the turn.
        turn = self._turn(state, event)
        if turn is None:
            return
        attributes = flat_attributes(f"mas.{event.name}", event.data)
        if event.name in ("warning", "degraded"):
            # Runtime-written text (what degraded and why), never the conversation's.
            for key in ("message", "reason"):
                if isinstance(event.data.get(key), str):
                    attributes[f"mas.{event.name}.{key}"] = mask(event.data[key])
        turn.add_event(f"mas.{event.name}", attributes, timestamp=_ns(event.ts))


_HANDLERS: dict[str, Callable[[GenAiSpans, _SessionSpans, Event], None]] = {
    "context.assembled": GenAiSpans._assembled,
    "compaction.start": GenAiSpans._compaction_start,
    "compaction.stop": GenAiSpans._compaction_end,
    "compaction.exception": GenAiSpans._compaction_end,
    "cache.lookup": GenAiSpans._lookup,
    "llm.call": GenAiSpans._call,
    "llm.error": GenAiSpans._call_failed,
    "session.turn": GenAiSpans._turn_committed,
}


def _call_attributes(event: Event) -> Attributes:
    data = event.data
    requested = str(data.get("requested_model") or data.get("model") or "")
    provider = provider_name(str(data.get("model") or requested))
    attributes: Attributes = {
        **kind("LLM"),
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": requested,
        "gen_ai.response.model": str(data.get("model") or requested),
        # OpenInference's names of the same facts: Phoenix counts tokens from these.
        "llm.provider": provider,
        "llm.model_name": str(data.get("model") or requested),
    }
    if event.session_id:
        attributes["gen_ai.conversation.id"] = event.session_id
        attributes["session.id"] = event.session_id
    usage = {
        "gen_ai.usage.input_tokens": "prompt_tokens",
        "gen_ai.usage.output_tokens": "completion_tokens",
        "gen_ai.usage.cache_read.input_tokens": "cached_tokens",
        "gen_ai.usage.cache_creation.input_tokens": "cache_write_tokens",
    }
    for name, key in usage.items():
        if isinstance(data.get(key), int):
            attributes[name] = data[key]
    tokens = {"llm.token_count.prompt": "prompt_tokens",
              "llm.token_count.completion": "completion_tokens",
              "llm.token_count.prompt_details.cache_read": "cached_tokens"}
    for name, key in tokens.items():
        if isinstance(data.get(key), int):
            attributes[name] = data[key]
    if isinstance(data.get("prompt_tokens"), int) and isinstance(data.get("completion_tokens"),
                                                                 int):
        attributes["llm.token_count.total"] = data["prompt_tokens"] + data["completion_tokens"]
    for key in ("purpose", "cache_hit", "cost", "cost_status", "attempts", "latency_s",
                "provider_usage_source", "messages", "tools", "tool_calls", "llm_calls"):
        value = data.get(key)
        if isinstance(value, (bool, int, float, str)):
            attributes[f"mas.llm.{key}"] = value
    return attributes


def _parts(message: Message) -> dict[str, Any]:
    # One message in the GenAI format (role + parts), every key the process knows masked.
    text = message.get("content")
    return {"role": message.get("role", ""),
            "parts": [{"type": "text", "content": mask(text)}] if isinstance(text, str) else []}


def _content(messages: list[Message]) -> Attributes:
    # A turn's text, only on opt-in: what the user and tools said, what the agent answered.
    inputs = [_parts(m) for m in messages if m.get("role") in ("user", "tool")]
    outputs = [_parts(m) for m in messages if m.get("role") == "assistant"]
    return {
        "gen_ai.input.messages": json.dumps(inputs, ensure_ascii=False),
        "gen_ai.output.messages": json.dumps(outputs, ensure_ascii=False),
    }


def _call_content(content: Mapping[str, Any]) -> Attributes:
    # One model call's request and reply, only on opt-in, masked: the GenAI attributes
    # (Langfuse, OpenTelemetry's own instrumentations) and OpenInference's (Phoenix).
    messages = [m for m in content.get("messages") or [] if isinstance(m, dict)]
    reply = content.get("reply")
    attributes: Attributes = {
        "gen_ai.input.messages": json.dumps([_parts(m) for m in messages], ensure_ascii=False),
        "input.value": json.dumps([{"role": m.get("role", ""), "content": mask(m["content"])
                                    if isinstance(m.get("content"), str) else ""}
                                   for m in messages], ensure_ascii=False),
        "input.mime_type": "application/json",
    }
    for index, message in enumerate(messages):
        prefix = f"llm.input_messages.{index}.message"
        attributes[f"{prefix}.role"] = str(message.get("role", ""))
        if isinstance(message.get("content"), str):
            attributes[f"{prefix}.content"] = mask(message["content"])
    text = getattr(reply, "text", None)
    if isinstance(text, str):
        answer = {"role": "assistant", "parts": [{"type": "text", "content": mask(text)}]}
        attributes["gen_ai.output.messages"] = json.dumps([answer], ensure_ascii=False)
        attributes["output.value"] = mask(text)
        attributes["output.mime_type"] = "text/plain"
        attributes["llm.output_messages.0.message.role"] = "assistant"
        attributes["llm.output_messages.0.message.content"] = mask(text)
    return attributes
