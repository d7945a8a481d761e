"""The runner's interface to agent sessions: one scripted session -> one run folder.

A *session function* takes a :class:`SessionJob` and writes the job's run folder as the
run-folder contract says (``transcript.json`` last, ``events.jsonl`` as it goes); it raises
on failure. The runner writes ``item.json`` before and records a failure itself when the
function leaves no transcript, so a session function only runs the conversation:

- send ``job.item.turn(i).user`` for each turn, in order;
- answer a tool call named in ``turn.tool_results`` with :func:`scripted_result`;
- write every event of ``job.session_id`` to ``events.jsonl``.

:func:`default_session_function` is the kernel's agent session (``mas.runtime.session``);
tests and other harnesses pass their own function to the runner.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mas.library.lab.dataset import Item, Turn
from mas.runtime.engine.cache import ResponseCache
from mas.runtime.runtime import Runtime

TRANSCRIPT = "transcript.json"
EVENTS = "events.jsonl"
ITEM = "item.json"


@dataclass(frozen=True)
class SessionJob:
    """One cell of the grid: a flavour's agent, one dataset item, one repetition.

    :ivar flavour: the compiled flavour (``flavour.agent`` is the agent to run).
    :ivar seed: deterministic per (experiment, flavour, item, run) — same grid, same seeds.
    :ivar cache: the response cache to use instead of opening the Infra's own file (the
        Ray executor passes the driver's; ``None``: as the Infra says).
    """

    experiment: str
    flavour: Any
    item: Item
    run_index: int
    seed: int
    session_id: str
    folder: Path
    runtime: Runtime
    cache: ResponseCache | None = None

    @property
    def agent(self) -> Any:
        """The :class:`~mas.runtime.spec.compile.CompiledAgent` of this flavour."""
        return self.flavour.agent


SessionFunction = Callable[[SessionJob], None]
"""Runs one scripted session and writes its run folder; raises on failure."""


def session_seed(experiment: str, flavour: str, item: str, run_index: int) -> int:
    """A stable 31-bit seed for one grid cell."""
    digest = hashlib.sha256(f"{experiment}\x1f{flavour}\x1f{item}\x1f{run_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def scripted_result(turn: Turn, tool: str, call_number: int) -> str:
    """What tool ``tool`` returns on its ``call_number``-th call (0-based) in ``turn``.

    A list of results is consumed one per call (the last repeats); anything that is not a
    string is sent as JSON. A tool the turn does not script returns an error result.
    """
    if tool not in turn.tool_results:
        return json.dumps({"error": f"no scripted result for tool {tool!r} in this turn"})
    value = turn.tool_results[tool]
    if isinstance(value, list) and value:
        value = value[min(call_number, len(value) - 1)]
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def tool_schema(name: str) -> dict[str, Any]:
    """The OpenAI tool schema of a scripted tool: any JSON object as arguments."""
    return {"type": "function", "function": {
        "name": name,
        "description": f"Scripted tool {name} (its result comes from the dataset).",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
    }}


def default_session_function() -> SessionFunction:
    """The kernel's agent session loop (``mas.runtime.session``) as a session function."""
    from mas.library.lab._kernel_session import run_kernel_session

    return run_kernel_session
