"""Shared helpers of the eval tests: a scripted ChatEngine double and run-folder builders."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from mas.library.eval import schema
from mas.runtime.protocols import ModelReply, Usage

Reply = Callable[[str, str, list[dict[str, Any]]], str]
"""(criterion id, model, messages) -> reply text."""

_CRITERION = re.compile(r"^Criterion: (\S+)$", re.MULTILINE)


def criterion(messages: list[dict[str, Any]]) -> str:
    """The metric id a judge request is about."""
    found = _CRITERION.search(messages[1]["content"])
    assert found, "judge request without a Criterion line"
    return found.group(1)


def verdict(score: Any, reasoning: str = "ok", evidence: list[str] | None = None) -> str:
    """A well-formed judge reply."""
    return json.dumps({"score": score, "reasoning": reasoning, "evidence": evidence or []})


@dataclass
class ScriptedEngine:
    """A deterministic ChatEngine: replies come from ``reply``; every call is recorded."""

    reply: Reply = lambda metric, model, messages: verdict(1)
    calls: list[dict[str, Any]] = field(default_factory=list)
    in_flight: dict[str, int] = field(default_factory=dict)
    max_in_flight: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def complete(self, messages: list[dict[str, Any]], *, model: str,
                 temperature: float | None = None, seed: int | None = None,
                 max_tokens: int | None = None,
                 response_format: dict[str, Any] | None = None) -> ModelReply:
        with self.lock:
            self.calls.append({"messages": messages, "model": model, "temperature": temperature,
                               "seed": seed, "max_tokens": max_tokens,
                               "response_format": response_format})
            self.in_flight[model] = self.in_flight.get(model, 0) + 1
            self.max_in_flight[model] = max(self.max_in_flight.get(model, 0),
                                            self.in_flight[model])
        try:
            text = self.reply(criterion(messages), model, messages)
        finally:
            with self.lock:
                self.in_flight[model] -= 1
        return ModelReply(text=text, usage=Usage(100, 10, 40), model=model, cost=0.001)


def write_run(folder: Path, *, messages: list[dict[str, Any]] | None = None,
              final_answer: str = "Your order A-1042 ships on 12 May.",
              error: str | None = None, events: list[dict[str, Any]] | None = None,
              item: dict[str, Any] | None = None, model: str = "gpt-4o") -> Path:
    """Write a run folder following the run-folder contract; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    if messages is None:
        messages = [
            {"role": "user", "content": "My order is A-1042. When does it ship?"},
            {"role": "assistant", "content": "",
             "tool_calls": [{"id": "c1", "type": "function",
                             "function": {"name": "lookup", "arguments": '{"id": "A-1042"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "lookup",
             "content": '{"ships": "12 May"}'},
            {"role": "assistant", "content": final_answer},
        ]
    transcript = {"session_id": folder.name, "agent": "helper", "model": model,
                  "messages": messages, "final_answer": final_answer, "error": error}
    (folder / "transcript.json").write_text(json.dumps(transcript))
    lines = events if events is not None else [
        {"event": "llm.call", "session_id": folder.name, "ts": 1.0, "purpose": "turn",
         "prompt_tokens": 120, "completion_tokens": 20, "cached_tokens": 60, "cost": 0.002},
        {"event": "cache.lookup", "session_id": folder.name, "ts": 1.1,
         "layer": "infra_llm_cache", "hit": True},
        {"event": "cache.lookup", "session_id": folder.name, "ts": 1.2,
         "layer": "infra_llm_cache", "hit": False},
        {"event": "llm.call", "session_id": folder.name, "ts": 1.3, "purpose": "summary",
         "prompt_tokens": 80, "completion_tokens": 30, "cached_tokens": 0, "cost": 0.001},
        {"event": "compaction.stop", "session_id": folder.name, "ts": 1.4, "llm_called": True},
    ]
    (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    if item is not None:
        (folder / "item.json").write_text(json.dumps(item))
    return folder


def assert_schema_valid(document: dict[str, Any]) -> None:
    """Fail unless ``document`` follows data/metrics.schema.json."""
    jsonschema.Draft202012Validator(schema()).validate(document)


def read_metrics(folder: Path) -> dict[str, Any]:
    """The run's metrics.json, checked against the schema."""
    document: dict[str, Any] = json.loads((folder / "metrics.json").read_text())
    assert_schema_valid(document)
    return document


@pytest.fixture
def kit() -> SimpleNamespace:
    """The helpers above, for test modules (importlib mode cannot import conftest)."""
    return SimpleNamespace(
        ScriptedEngine=ScriptedEngine, verdict=verdict, criterion=criterion,
        write_run=write_run, read_metrics=read_metrics, assert_schema_valid=assert_schema_valid,
    )
