"""Steady-state cost of one turn's context work on a 10,000-message history.

One *turn* here is what the session loop does around a model call when no compaction
fires: ``prepare_request`` (fixed costs, budget, ``summarising.manage_history``,
assembly, final trim, the ``context.assembled`` event) plus the write-back after the
turn (``history.extend`` + ``cm.commit``). The model call itself is not included.

The history is 10,000 short messages under a 1,048,576-token window (Gemini 2.5 Flash),
so the soft trigger is not reached and the figure is the incremental path only.

Run: ``.venv/bin/python benchmarks/bench_session_turn.py``

A second figure times the over-budget path: ``stack`` with no cap under a 128,000-token
window, where the final trim cuts about 3,500 old messages on every call.

``make bench`` records the figure per strategy beside trim_messages' in
benchmarks/RESULTS.md ("Per-turn cost on every path").
"""

from __future__ import annotations

import statistics
import time

from mas.runtime import Runtime
from mas.runtime.context import ContextPart, History, prepare_request
from mas.runtime.protocols import BindContext
from mas.runtime.spec.binding import Binding, bind
from mas.runtime.spec.model_ref import ModelChoice, ModelRow, ModelScope

WINDOW = 1_048_576
MESSAGES = 10_000
TOOLS = [{"type": "function", "function": {"name": f"tool_{i}", "description": "A tool.",
          "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
         for i in range(5)]
PARTS = [ContextPart("agent", "agent/instructions", "You are a careful assistant.",
                     placement="system", priority=0, pinned=True),
         ContextPart.skills("Skills: alpha, beta.")]


def turn(i: int) -> list[dict[str, str]]:
    """One user message and its answer, about 20 tokens each."""
    return [{"role": "user", "content": f"Question number {i}: what is the status of ticket {i}?"},
            {"role": "assistant", "content": f"Ticket {i} is open and assigned to team {i % 7}."}]


def main(
    turns: int = 2_000, *, with_events: bool = True, strategy: str = "summarising",
    window: int = WINDOW,
) -> float:
    """Median microseconds per turn of ``strategy`` under ``window``; prints the figure."""
    runtime = Runtime.create()
    scope = ModelScope.build(agent_models=[ModelRow("main", "gemini-2.5-flash")])
    ctx = BindContext(runtime=runtime, agent_name="bench", model_scope=scope,
                      turn_model=ModelChoice("gemini-2.5-flash", "spec.models[id=main]", "main"))
    cm = bind("context_manager", Binding.model_validate(strategy), ctx)
    history = History([m for i in range(MESSAGES // 2) for m in turn(i)])
    samples = []
    for i in range(MESSAGES // 2, MESSAGES // 2 + turns):
        user, answer = turn(i)
        started = time.perf_counter()
        request = prepare_request(
            cm=cm, history=history, parts=PARTS, current_input=user, tools=TOOLS,
            window=window, reserve=2_000, runtime=runtime if with_events else None,
        )
        history.extend([user, answer])
        cm.commit(history)
        samples.append(time.perf_counter() - started)
        assert not request.managed.compacted
    median_us = statistics.median(samples) * 1e6
    label = "with context.assembled event" if with_events else "without events"
    if request.trim.dropped_history:
        label = f"{strategy}, final trim cutting {request.trim.dropped_history} messages"
    print(f"steady-state turn at {MESSAGES:,}+ messages ({label}): median {median_us:.1f} us, "
          f"p95 {statistics.quantiles(samples, n=20)[18] * 1e6:.1f} us over {turns} turns")
    return median_us


if __name__ == "__main__":
    main(with_events=False)
    main(with_events=True)
    main(200, strategy="stack", window=128_000)
