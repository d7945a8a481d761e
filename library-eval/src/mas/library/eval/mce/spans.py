"""A session run as raw OpenTelemetry span rows in the shape MCE reads.

MCE (``metrics-computation-engine``) builds its ``SessionEntity`` from span rows as its
collector stores them (the shape of ``examples/data/sample_data.json`` in MCE's wheel):
``SpanName`` ends in ``.chat`` for a model call and in ``.tool`` for a tool, and
``SpanAttributes`` hold the OpenLLMetry keys — ``gen_ai.prompt.<i>.role`` / ``.content``,
``gen_ai.completion.0.content``, ``gen_ai.completion.0.tool_calls.<j>.name`` /
``.arguments``, ``traceloop.entity.name`` / ``.input`` / ``.output``, ``session.id``.

One model-call span per assistant message of the transcript. Its prompt holds the
messages that arrived since the previous call (the user turn, tool results), not the whole
history: MCE's conversation enricher collects the prompt messages of *every* call, so a
full history per span would repeat each message once per later call. Timestamps are
synthetic and one millisecond apart: they order the spans, they are not wall time. Tool
results longer than ``max_tool_chars`` are clipped exactly as the native jury clips them,
so both backends judge the same material.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from typing import Any

from mas.library.eval.mce._prompt import clip, message_text
from mas.library.eval.run import SessionRun

SERVICE = "mas-lab"
SCOPE = "mas.library.eval.mce.spans"
_EPOCH = datetime(2026, 1, 1)


def _row(run: SessionRun, index: int, name: str, kind: str,
         attributes: dict[str, Any]) -> dict[str, Any]:
    """One span row with every column MCE's sample rows carry."""
    stamp = _EPOCH + timedelta(milliseconds=index)
    return {
        "Timestamp": stamp.strftime("%Y-%m-%d %H:%M:%S.%f"),
        "TraceId": hashlib.sha256(run.session_id.encode()).hexdigest()[:32],
        "SpanId": f"{index + 1:016x}",
        "ParentSpanId": "",
        "TraceState": "",
        "SpanName": name,
        "SpanKind": kind,
        "ServiceName": SERVICE,
        "ResourceAttributes": {"service.name": SERVICE},
        "ScopeName": SCOPE,
        "ScopeVersion": "",
        "SpanAttributes": {"session.id": run.session_id, "execution.id": run.session_id,
                           "ioa_start_time": f"{stamp.timestamp():.6f}", **attributes},
        "Duration": 1_000_000,
        "StatusCode": "Unset",
        "StatusMessage": "",
        "Events.Timestamp": [],
        "Events.Name": [],
        "Events.Attributes": [],
        "Links.TraceId": [],
        "Links.SpanId": [],
        "Links.TraceState": [],
        "Links.Attributes": [],
        "execution_id": run.session_id,
    }


def _completion(message: dict[str, Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": message_text(message),
        "gen_ai.completion.0.finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
    }
    for j, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        attributes[f"gen_ai.completion.0.tool_calls.{j}.id"] = str(call.get("id", ""))
        attributes[f"gen_ai.completion.0.tool_calls.{j}.name"] = str(function.get("name", ""))
        attributes[f"gen_ai.completion.0.tool_calls.{j}.arguments"] = \
            str(function.get("arguments", ""))
    return attributes


def otel_rows(run: SessionRun, *, max_tool_chars: int = 4000) -> list[dict[str, Any]]:
    """The span rows of ``run``: a ``.chat`` span per assistant message (and one without a
    completion for messages after the last answer), a ``.tool`` span per tool result, in
    transcript order."""
    rows: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    calls: dict[str, tuple[str, str]] = {}
    model = run.model or "unknown"
    def chat(completion: dict[str, Any]) -> None:
        prompt: dict[str, Any] = {}
        for i, earlier in enumerate(pending):
            prompt[f"gen_ai.prompt.{i}.role"] = str(earlier.get("role", ""))
            prompt[f"gen_ai.prompt.{i}.content"] = _content(earlier, max_tool_chars)
        rows.append(_row(run, len(rows), "openai.chat", "Client", {
            "gen_ai.system": "openai", "gen_ai.request.model": model,
            "gen_ai.response.model": model, **prompt, **completion}))

    for message in run.messages:
        role = str(message.get("role", ""))
        if role == "assistant":
            chat(_completion(message))
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                calls[str(call.get("id", ""))] = (str(function.get("name", "tool")),
                                                  str(function.get("arguments", "")))
            pending = []
            continue
        pending.append(message)
        if role == "tool":
            name, arguments = calls.get(str(message.get("tool_call_id", "")),
                                        (str(message.get("name") or "tool"), ""))
            rows.append(_row(run, len(rows), f"{name}.tool", "Internal", {
                "traceloop.span.kind": "tool", "traceloop.entity.name": name,
                "traceloop.entity.input": json.dumps({"arguments": arguments}),
                "traceloop.entity.output": json.dumps(
                    {"output": _content(message, max_tool_chars)}),
            }))
    if pending:  # a session that stopped before its last answer: the call that got none
        chat({})
    return rows


def _content(message: dict[str, Any], max_tool_chars: int) -> str:
    text = message_text(message)
    return clip(text, max_tool_chars) if message.get("role") == "tool" else text
