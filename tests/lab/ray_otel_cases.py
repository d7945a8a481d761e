"""``mas-ctl lab run --backend ray`` with tracing on: the sessions played on Ray workers
land in the lab run's trace, under its span, by the ``traceparent`` each task carries.

Not collected by itself: ``test_lab_otel.py`` runs this file in a network namespace whose
only interface is loopback (Ray binds the host's own address), where the OTLP/HTTP
receiver of this process is the collector the driver and the workers export to.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))


def _spans(requests: list[Any]) -> list[tuple[Any, dict[str, Any], str]]:
    """Every received span with its attributes and its resource's ``process.pid``."""
    found = []
    for request in requests:
        for resource_spans in request.resource_spans:
            pid = next((str(a.value.int_value) for a in resource_spans.resource.attributes
                        if a.key == "process.pid"), "")
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    attrs = {a.key: getattr(a.value, a.value.WhichOneof("value"))
                             for a in span.attributes}
                    found.append((span, attrs, pid))
    return found


def test_worker_sessions_are_children_of_the_lab_run_span(
        tmp_path: Path, make_experiment: Callable[..., Path],
        otlp_receiver: tuple[str, list[Any], list[str]]) -> None:
    url, requests, _ = otlp_receiver
    path = make_experiment(tmp_path / "exp", post="      - {type: run_sessions}\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
           "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url}
    # --address local: a new instance that ends with the driver, whatever else runs here.
    done = subprocess.run([MAS_CTL, "lab", "run", str(path), "--backend", "ray", "--address",
                           "local", "--flavour", "stack", "--limit", "2",
                           "--runs-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"span(s) exported to {url}" in done.stderr
    spans = _spans(requests)
    (lab,) = [(s, a, pid) for s, a, pid in spans if s.name == "mas-ctl lab run"]
    lab_span, _, driver = lab
    sessions = [(s, a, pid) for s, a, pid in spans if s.name.startswith("mas.session ")]
    assert sorted(a["mas.lab.item"] for _, a, _ in sessions) == ["a-01", "a-02"]
    for span, attrs, pid in sessions:
        assert pid != driver  # played, and exported, by a worker process
        assert span.trace_id == lab_span.trace_id and span.parent_span_id == lab_span.span_id
        assert attrs["openinference.span.kind"] == "CHAIN"
    session_ids = {s.span_id for s, _, _ in sessions}
    turns = [s for s, _, _ in spans if s.name.startswith("invoke_agent")]
    assert len(turns) == 10 + 12  # every turn of both items, each under its session
    assert all(t.parent_span_id in session_ids and t.trace_id == lab_span.trace_id for t in turns)
