"""A lab run's trace: the run is the parent span, one ``mas.session`` span per session with
its turns, on the local executor's threads (in memory) and on Ray workers (over OTLP/HTTP
to a receiver on loopback, in a private network namespace: ``ray_otel_cases.py``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mas.library.lab import run_experiment
from mas.library.lab.sessions import default_session_function
from mas.library.lab.tracing import TracedSessions
from mas.runtime import Runtime
from mas.runtime.otel import TraceSettings, start_tracing
from mas.runtime.testing import run_in_loopback_namespace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def test_local_sessions_are_spans_under_the_lab_run_on_the_executor_threads(
        tmp_path: Path, make_experiment: Callable[..., Path]) -> None:
    runtime = Runtime.create()
    memory = InMemorySpanExporter()
    tracing = start_tracing(runtime, TraceSettings(True, "test"), exporter=memory)
    path = make_experiment(tmp_path / "exp", post="      - {type: run_sessions}\n")
    with tracing.span("mas-ctl lab run") as lab:
        outcome = run_experiment(runtime, path, flavours=("summarising", "stack"), limit=1,
                                 runs_root=tmp_path / "runs", max_concurrency=2,
                                 session_function=TracedSessions(default_session_function(), tracing))
    assert outcome.ok
    assert tracing.close() == [f"otel: {len(memory.get_finished_spans())} span(s) exported to "
                               "InMemorySpanExporter"]
    spans = memory.get_finished_spans()
    lab_id = lab.get_span_context()
    assert {s.context.trace_id for s in spans} == {lab_id.trace_id}  # the run is one trace
    sessions = [s for s in spans if s.name.startswith("mas.session ")]
    assert sorted((s.attributes or {})["mas.lab.flavour"] for s in sessions) == ["stack", "summarising"]
    by_id = {s.context.span_id: s for s in spans}
    for session in sessions:
        assert session.parent is not None and session.parent.span_id == lab_id.span_id
        assert (session.attributes or {})["openinference.span.kind"] == "CHAIN"
    turns = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len(turns) == 2 * 10  # item a-01's ten turns, per flavour
    for turn in turns:
        assert turn.parent is not None
        owner = by_id[turn.parent.span_id]
        assert owner in sessions
        assert (turn.attributes or {})["session.id"] == (owner.attributes or {})["session.id"]


def test_ray_workers_put_their_sessions_under_the_lab_run_by_traceparent() -> None:
    argv = [sys.executable, "-m", "pytest", str(HERE / "ray_otel_cases.py"), "-q", "-x",
            "-p", "no:cacheprovider"]
    try:
        done = run_in_loopback_namespace(argv, timeout=900, cwd=str(ROOT))
    except RuntimeError as exc:  # not root and no unprivileged namespaces: say why
        pytest.skip(str(exc))
    report = done.stdout[-8000:] + done.stderr[-4000:]
    assert done.returncode == 0, report
    assert " passed" in done.stdout and " failed" not in done.stdout, report
