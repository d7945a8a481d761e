"""Shared pieces of the reliability suite: a scripted summary engine, a bind helper, and a
tiny offline lab experiment (``make_lab``).

``ScriptedEngine`` is a SummaryEngine double (the one in-process stand-in these tests use,
as in tests/standard): each call takes the next mode from its script — ``ok``, ``raise``,
``timeout``, ``empty`` or ``tool_calls`` — and records what it was sent.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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


TINY_AGENT = """\
apiVersion: mas/v1
kind: Agent
metadata: {{name: {agent}}}
spec:
  models: [{{id: main, model: any, context_window: 4000, max_tokens: 200}}]
  context_manager: {{type: summarising, params: {{keep_turns: 1}}}}
"""

TINY_EXPERIMENT = """\
experiment:
  name: {name}
  models: {{main: offline/default, judge: offline/default}}
  applications: [{{manifest: ./agent.yaml}}]
  flavours:
    - {{name: {flavour}, patch: {{}}}}
  dataset: ./data.jsonl
"""


def tiny_lab(root: Path, *, name: str = "tiny", flavour: str = "plain", agent: str = "tiny",
             items: int = 2, turns: int = 3) -> Path:
    """Write a one-flavour experiment on the offline model under ``root``; returns its file.

    Each item plants a fact, adds filler turns and asks for the fact last.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "agent.yaml").write_text(TINY_AGENT.format(agent=json.dumps(agent)))
    lines = []
    for i in range(items):
        script = [f"My locker is L-{i}7."] + [f"filler {k} words" for k in range(turns - 2)]
        lines.append(json.dumps({"id": f"i{i}", "turns": [*script, "Which locker is mine?"],
                                 "expected_facts": [f"L-{i}7"]}))
    (root / "data.jsonl").write_text("\n".join(lines) + "\n")
    path = root / "exp.yaml"
    path.write_text(TINY_EXPERIMENT.format(name=json.dumps(name), flavour=json.dumps(flavour)))
    return path


@pytest.fixture
def make_lab() -> Callable[..., Path]:
    """:func:`tiny_lab` as a fixture (test modules cannot import this conftest)."""
    return tiny_lab


OFFLINE_AGENT = """\
apiVersion: mas/v1
kind: Agent
metadata: {name: small}
spec:
  models: [{id: main, model: offline/default, context_window: 4000, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""


@pytest.fixture
def offline_agent() -> Callable[[Path], Path]:
    """Writes ``agent.yaml`` (an agent on the offline model) into a folder; returns it."""

    def write(folder: Path) -> Path:
        path = folder / "agent.yaml"
        path.write_text(OFFLINE_AGENT)
        return path

    return write


@pytest.fixture
def stored_run() -> Callable[[Path], Path]:
    """Writes a minimal stored run (one exchange, no events) as a new folder; returns it."""

    def write(folder: Path) -> Path:
        folder.mkdir(parents=True)
        messages = [{"role": "user", "content": "Hello"},
                    {"role": "assistant", "content": "Hi."}]
        (folder / "transcript.json").write_text(json.dumps({
            "session_id": "s1", "agent": "helper", "model": "gpt-4o", "messages": messages,
            "final_answer": "Hi.", "error": None}))
        (folder / "events.jsonl").write_text("")
        return folder

    return write


ENGINE_CONFTEST = Path(__file__).resolve().parents[1] / "engine" / "conftest.py"


@pytest.fixture
def fake_openai() -> Iterator[Any]:
    """The scripted OpenAI-compatible server of tests/engine/conftest.py, on 127.0.0.1."""
    spec = importlib.util.spec_from_file_location("_mas_engine_fake_server", ENGINE_CONFTEST)
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(spec.name)
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up here
        spec.loader.exec_module(module)
    with module.serve() as state:
        yield state


LINEAR_GROWTH = 8.0
"""Largest time ratio a linear scan may show when its input grows :data:`GROWTH` times
(about 4 for a linear scan; about 16 for a quadratic one): wide enough that a busy
machine, which slows some runs and not others, does not fail a linear scan."""

GROWTH = 4
"""How many times larger the second input is: two doublings."""


def growth_ratio(scan: Callable[[str], Any], make: Callable[[int], str], *,
                 size: int | None = None, floor: float = 0.005, rounds: int = 3,
                 repeats: int = 3) -> float:
    """Best time of ``scan`` on ``make(GROWTH * n)`` over its best time on ``make(n)``.

    ``n`` is ``size``, or the first of 1,000, 2,000, 4,000, ... whose run takes ``floor``
    seconds (a linear scan is then timed on milliseconds, not on noise, and a quadratic one
    is caught while it is still fast). Each time is the best of ``repeats`` interleaved
    runs with the garbage collector paused, and the ratio the smallest of up to ``rounds``
    rounds: load slows single runs, never every one, while a quadratic scan is slow in all.
    A ratio inside one run, never a wall-clock bound.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        n = size or 1_000
        while size is None and n < 1_000_000 and _best_times(scan, [make(n)], 1)[0] < floor:
            n *= 2
        samples = [make(n), make(GROWTH * n)]
        _best_times(scan, samples, 1)  # warm up
        ratios: list[float] = []
        for _round in range(rounds):
            small, large = _best_times(scan, samples, repeats)
            ratios.append(large / max(small, 1e-9))
            if ratios[-1] < LINEAR_GROWTH:
                break
        return min(ratios)
    finally:
        if enabled:
            gc.enable()


def _best_times(scan: Callable[[str], Any], samples: list[str], repeats: int) -> list[float]:
    """The best of ``repeats`` times of ``scan`` on each sample, interleaved.

    Each time is the CPU time of this thread, not the wall clock: on a loaded machine a
    scan long enough to span several time slices waits for the CPU between them, which a
    short one does not, and that wait would count as growth.
    """
    best = [float("inf")] * len(samples)
    for _repeat in range(repeats):
        for side, sample in enumerate(samples):
            start = time.thread_time()
            scan(sample)
            best[side] = min(best[side], time.thread_time() - start)
    return best


@dataclass(frozen=True)
class Scaling:
    """How a scan's time grows with its input (issue 26 item 1):
    ``assert scaling.ratio(scan, make) < scaling.limit``."""

    limit: float = LINEAR_GROWTH
    growth: int = GROWTH

    def ratio(self, scan: Callable[[str], Any], make: Callable[[int], str],
              **options: Any) -> float:
        """:func:`growth_ratio` of ``scan`` on ``make``."""
        return growth_ratio(scan, make, **options)


@pytest.fixture(scope="session")
def scaling() -> Scaling:
    """The shared growth measure of the linear-scan tests."""
    return Scaling()

@pytest.fixture
def fake_openai_agent(write: Callable[[str, str], Path], fake_openai: Any) -> tuple[Path, Path]:
    """An agent on ``openai/gpt-4o-mini`` and an Infra sending it to ``fake_openai``, with
    no retries (each scripted answer is used once): ``(agent.yaml, infra.yaml)``."""
    agent = write("agent.yaml", """
        apiVersion: mas/v1
        kind: Agent
        metadata: {name: leaky}
        spec:
          models: [{id: main, model: openai/gpt-4o-mini, context_window: 4000}]
        """)
    infra = write("infra.yaml", f"""
        apiVersion: mas/v1
        kind: Infra
        metadata: {{name: local}}
        spec:
          generation: {{api_base: "{fake_openai.base_url}", num_retries: 0, timeout: 5}}
        """)
    return agent, infra
