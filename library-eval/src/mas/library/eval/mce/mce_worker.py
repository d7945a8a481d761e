"""The MCE worker: MCE's own metric classes, run in MCE's own venv, driven over a pipe.

Run as a script by the Python of ``.venv-mce`` (``python mce_worker.py``), never imported
by mas-lab's venv for scoring: ``metrics-computation-engine`` pins ``litellm<1.75``, which
cannot share a venv with the kernel. This file therefore imports only the standard library
at the top and MCE inside functions; it imports nothing from ``mas``.

Protocol: one JSON object per line. The parent writes requests on stdin; the worker
answers on the stdout it had at start (MCE's metrics ``print`` — those lines go to stderr
so they can never corrupt the protocol).

- ``{"op": "hello"}`` -> ``{"op": "ready", "versions": {...}, "metrics": [ids]}``
- ``{"op": "sample"}`` -> ``{"op": "sample", "rows": [...]}``: the trace in MCE's wheel.
- ``{"op": "session", "rows": [...]}`` -> ``{"op": "session", "session": {...}}``: what
  MCE's processing made of the rows (a summary, for tests and ``--json``).
- ``{"op": "score", "rows": [...], "metrics": [ids]}`` -> zero or more
  ``{"op": "judge", "metric": id, "messages": [...]}`` (each answered by the parent with
  ``{"op": "verdict", "score": x, "reasoning": "..."}`` or ``{"op": "verdict", "error":
  "..."}``), then ``{"op": "scored", "results": {id: {...}}}``.

A judge call is never made here: MCE's metrics get a judge whose ``judge(prompt,
response_format)`` builds the request exactly as MCE's own ``Jury`` does (MCE's system
prompt, the prompt augmented with the response schema) and forwards it to the parent, so
every call goes through mas-lab's engine and MCE needs no key and no network.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from importlib import metadata
from typing import Any, TextIO

ENTRY_POINTS = "metrics_computation_engine.plugins"
"""The entry-point group ``mce-metrics-plugin`` registers its metric classes in."""


class JudgeUnavailable(RuntimeError):
    """The parent could not give a verdict (every vote unscored, say)."""


class ForwardingJudge:
    """What MCE's metrics call as their jury: each call becomes one request to the parent."""

    def __init__(self, metric: str, send: Any, receive: Any) -> None:
        self.metric = metric
        self._send = send
        self._receive = receive
        self.calls = 0

    def judge(self, prompt: str, response_format: Any = None, mode: str = "default") -> Any:
        """``(score, reasoning)`` for ``prompt``, by the parent's jury."""
        # MCE is installed only in the worker's venv, never in the one mypy checks.
        from metrics_computation_engine.llm_judge.jury import Jury  # type: ignore[import-not-found]
        from metrics_computation_engine.llm_judge.prompts import (  # type: ignore[import-not-found]
            judge_system_prompt,
        )

        # MCE's Jury builds its request this way; reusing its method keeps MCE's prompt.
        user = Jury.augment_prompt_with_schema(None, prompt, response_format)
        fields = list(response_format.model_json_schema()["properties"]) if response_format \
            else []
        self.calls += 1
        self._send({"op": "judge", "metric": self.metric, "fields": fields,
                    "messages": [{"role": "system", "content": judge_system_prompt},
                                 {"role": "user", "content": user}]})
        reply = self._receive()
        if reply.get("error"):
            raise JudgeUnavailable(str(reply["error"]))
        return reply["score"], reply.get("reasoning", "")


def versions() -> dict[str, str]:
    """The versions that compute the metrics."""
    found = {"python": sys.version.split()[0]}
    for name in ("metrics-computation-engine", "mce-metrics-plugin", "litellm"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def metric_classes() -> dict[str, Any]:
    """MCE's registered metric classes by id (``GoalSuccessRate``, ...)."""
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINTS)}


def build_session(rows: list[dict[str, Any]]) -> Any:
    """MCE's SessionEntity for ``rows``: MCE's parser, aggregator and enrichers, then the
    fields MCE 1.2.9's enrichers leave empty but ``mce-metrics-plugin`` reads."""
    from metrics_computation_engine.entities.core.trace_processor import (  # type: ignore[import-not-found]
        TraceProcessor,
    )
    from metrics_computation_engine.entities.models.session import (  # type: ignore[import-not-found]
        ConversationElement,
        ToolCall,
    )

    sessions = TraceProcessor().process_raw_traces(rows).sessions
    if len(sessions) != 1:
        raise ValueError(f"rows: expected the spans of one session (got {len(sessions)})")
    session = sessions[0]
    data = dict(session.conversation_data or {})
    elements = [e for e in data.get("elements") or [] if str(e.get("content") or "").strip()]
    # The session metrics format conversation_data["conversation"]; MCE's enricher writes
    # only "elements". Render those, in MCE's order, one "role: content" line each.
    data["conversation"] = "\n".join(f"{e['role']}: {e['content']}" for e in elements)
    session.conversation_data = data
    session.conversation_elements = [
        ConversationElement(role=str(e["role"]), content=str(e["content"])) for e in elements]
    session.tool_calls = [
        ToolCall(name=span.entity_name, description="",
                 input_parameters=span.input_payload or {}, output=span.output_payload or {})
        for span in session.tool_spans]
    # The earliest user message: what MCE's end-to-end enricher finds when the last call's
    # prompt holds the whole history, as instrumented frameworks record it.
    first_user = next((e["content"] for e in elements if e.get("role") == "user"), None)
    if first_user:
        session.input_query = str(first_user)
    return session


def describe(session: Any) -> dict[str, Any]:
    """A JSON summary of a SessionEntity: what MCE's metrics will read."""
    types: dict[str, int] = {}
    for span in session.spans:
        types[span.entity_type] = types.get(span.entity_type, 0) + 1
    data = session.conversation_data or {}
    return {
        "session_id": session.session_id,
        "span_types": types,
        "elements": len(data.get("elements") or []),
        "roles": [e.role for e in session.conversation_elements or []],
        "conversation_chars": len(data.get("conversation") or ""),
        "tool_calls": [call.name for call in session.tool_calls or []],
        "input_query": session.input_query,
        "final_response": session.final_response,
        "app_name": session.app_name,
    }


def score(session: Any, ids: list[str], send: Any, receive: Any) -> dict[str, Any]:
    """Each id's MCE MetricResult fields (or the error that stopped it)."""
    classes = metric_classes()
    results: dict[str, Any] = {}
    for metric_id in ids:
        if metric_id not in classes:
            results[metric_id] = {"value": None, "error": f"MCE has no metric {metric_id!r}"}
            continue
        metric = classes[metric_id].load()()
        judge = ForwardingJudge(metric_id, send, receive)
        metric.init_with_model(judge)
        try:
            outcome = asyncio.run(metric.compute(session))
        except Exception as exc:  # one metric's failure is its result, not the worker's
            results[metric_id] = {"value": None, "judge_calls": judge.calls,
                                  "error": f"{type(exc).__name__}: {exc}"}
            continue
        value = outcome.value if isinstance(outcome.value, (int, float)) else None
        results[metric_id] = {
            "value": value if outcome.success else None,
            "reasoning": outcome.reasoning or "",
            "success": bool(outcome.success),
            "error": outcome.error_message if not outcome.success else None,
            "aggregation_level": outcome.aggregation_level,
            "category": outcome.category,
            "judge_calls": judge.calls,
        }
    return results


def serve(requests: TextIO, replies: TextIO) -> None:
    """Answer requests until stdin closes."""
    def send(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message, default=str) + "\n")
        replies.flush()

    def receive() -> dict[str, Any]:
        line = requests.readline()
        if not line:
            raise EOFError("the parent closed the pipe")
        value: dict[str, Any] = json.loads(line)
        return value

    while True:
        line = requests.readline()
        if not line:
            return
        request = json.loads(line)
        op = request.get("op")
        try:
            if op == "hello":
                send({"op": "ready", "versions": versions(), "metrics": sorted(metric_classes())})
            elif op == "sample":
                from importlib import resources
                path = resources.files("metrics_computation_engine").joinpath(
                    "examples", "data", "sample_data.json")
                send({"op": "sample", "rows": json.loads(path.read_text("utf-8"))})
            elif op == "session":
                send({"op": "session", "session": describe(build_session(request["rows"]))})
            elif op == "score":
                session = build_session(request["rows"])
                send({"op": "scored", "session": describe(session),
                      "results": score(session, list(request["metrics"]), send, receive)})
            else:
                send({"op": "error", "error": f"unknown op {op!r}"})
        except EOFError:
            return
        except Exception as exc:  # a bad request is answered, the worker stays up
            send({"op": "error", "error": f"{type(exc).__name__}: {exc}"})


def main() -> None:
    """Keep the real stdout for the protocol; send everything else printed to stderr."""
    # LiteLLM (imported by MCE's judge module) fetches its price map at import time unless
    # told not to; the worker must never reach the network.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    serve(sys.stdin, replies)


if __name__ == "__main__":
    main()
