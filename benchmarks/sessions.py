"""Figures that need a real session, litellm, or a fresh process of their own."""

from __future__ import annotations

import gc
import json
import os
import random
import statistics
import tempfile
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks.synthetic import make_session

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: bench}
spec:
  instructions: You are a support operations agent. Answer from the conversation.
  models:
    - {id: main, model: offline/default, context_window: 8000, max_tokens: 256}
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""


def offline_session_cache_share(turns: int) -> tuple[float, int, int]:
    """Run an AgentSession on the offline model; cached share of turn-call prompt tokens.

    Calls made at a compaction (the request right after ``compaction.start``) and the
    summary calls themselves are left out: the figure is the share *between* compactions.

    :return: (share, turn calls counted, turn calls left out).
    """
    from mas.runtime import Runtime
    from mas.runtime.session import Tool, open_session
    from mas.runtime.spec.loader import load_manifest_set

    session_data = make_session(turns, seed=11)

    def fetch_logs(query: str) -> str:
        """Fetch log lines matching a query."""
        return json.dumps({"query": query, "lines": [f"line {i}: {query} ok" for i in range(40)]})

    runtime = Runtime.create()
    events: list[Any] = []
    runtime.add_listener(events.append)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agent.yaml"
        path.write_text(textwrap.dedent(AGENT))
        manifests = load_manifest_set([path])
        session = open_session(runtime, manifests.agents[0], manifests,
                               tools=[Tool.from_function(fetch_logs)])
        for i, turn in enumerate(session_data.turns):
            text = turn.user["content"]
            if i % 3 == 2:
                text += f'\nCALL fetch_logs {{"query": "order {i}"}}'
            session.send(text)
    cached = prompt = counted = skipped = 0
    at_compaction = False
    for event in events:
        if event.name == "compaction.start":
            at_compaction = True
        elif event.name == "llm.call" and event.data["purpose"] == "turn":
            if at_compaction:
                skipped += 1
                at_compaction = False
                continue
            counted += 1
            prompt += event.data["prompt_tokens"] or 0
            cached += event.data["cached_tokens"] or 0
    return cached / max(prompt, 1), counted, skipped


def estimate_errors(
    train_turns: int = 60, test_turns: int = 200, train_requests: int = 80
) -> dict[str, dict[str, Any]]:
    """Median relative error of the kernel estimate per message kind, raw and calibrated.

    Calibration learns from ``train_requests`` whole requests (the system prompt and a
    window of 1-40 messages of the first ``train_turns`` turns, with
    ``litellm.token_counter`` standing in for the provider's ``prompt_tokens``), and is
    scored on single messages of the next ones (a message's tokens: its count alone minus
    the per-request reply priming).
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    from mas.runtime.context import DEFAULT_ESTIMATOR
    from mas.runtime.context.calibration import Calibration, kind_of

    model = "gpt-4o"
    session = make_session(train_turns + test_turns, seed=23)
    system = {"role": "system", "content": session.system}
    overall = Calibration(enabled=True)
    train = session.messages(train_turns)
    rng = random.Random(3)
    for _ in range(train_requests):  # requests as an agent sends them: a window of history
        start = rng.randrange(len(train))
        request = [system, *train[start : start + rng.randint(1, 40)]]
        overall.observe(model, request, litellm.token_counter(model=model, messages=request))
    ratio = overall.ratio(model)
    errors: dict[str, dict[str, list[float]]] = {}
    priming = litellm.token_counter(model=model, messages=[])  # per request, not per message
    for message in session.messages()[sum(len(t.messages) for t in session.turns[:train_turns]):]:
        ref = litellm.token_counter(model=model, messages=[message]) - priming
        est = DEFAULT_ESTIMATOR.message(message)
        row = errors.setdefault(kind_of(message), {"raw": [], "model": [], "kind": []})
        row["raw"].append(abs(est - ref) / ref)
        row["model"].append(abs(round(est * ratio) - ref) / ref)
        row["kind"].append(abs(overall.message(model, message) - ref) / ref)
    return {
        kind: {"n": len(row["raw"]), **{k: statistics.median(v) for k, v in row.items()}}
        for kind, row in sorted(errors.items())
    }


def _status(field: str) -> int:
    """A ``/proc/self/status`` memory field in bytes (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def memory_probe(messages: int) -> None:
    """Build a session of ``messages`` messages through the session API; print peak memory.

    Runs in its own process. The peak-RSS mark is reset after the imports (writing 5 to
    ``/proc/self/clear_refs``), so the growth is the session's own. The history stays
    whole: ``stack`` keeps every message (the final trim bounds each request, not the
    history).
    """
    from benchmarks.harness import MasLab
    from benchmarks.synthetic import requests_of

    gc.collect()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status("VmRSS")
    tracemalloc.start()
    session = make_session(messages // 4 + 100, seed=5)
    while len(session.turns) > 1 and len(session.messages(len(session.turns) - 1)) >= messages:
        session.turns.pop()
    strategy = MasLab("stack (all)", session.system)
    for turn in session.turns:
        for user, working in requests_of(turn):
            strategy.request(user, working)
        strategy.commit(turn.messages)
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    peak = _status("VmHWM")
    history = strategy.history
    print(json.dumps({
        "messages": len(history),
        "json_bytes": len(json.dumps(history.to_state())),
        "rss_growth": peak - before,
        "rss_peak": peak,
        "traced_peak": traced_peak,
    }))
