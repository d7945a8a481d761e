"""Traces checked against a real collector: Arize Phoenix, started once on 127.0.0.1 from
its own venv (``make phoenix-venv``), receives ``mas-ctl lab run``'s spans over OTLP/HTTP
and ``mas-ctl eval``'s over OTLP/gRPC; its REST API gives back each span with the kind
Phoenix classified it as. Phoenix is kept off the network (no telemetry, no downloads,
no assistant) and its own log is checked for any attempt.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PHOENIX = ROOT / ".venv-phoenix" / "bin" / "phoenix"
MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))
START_TIMEOUT = 240.0
"""Seconds Phoenix has to answer /healthz (about 20 s of CPU; far more on a loaded machine)."""

OFFLINE = {
    "PHOENIX_TELEMETRY_ENABLED": "false",
    "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",  # the sandbox binary download
    "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",  # its docs server connects out at start
    "PHOENIX_ALLOWED_SANDBOX_PROVIDERS": "NONE",
    "PHOENIX_ENABLE_MCP_SERVER": "false",
}
"""What keeps Phoenix from reaching anything beyond 127.0.0.1."""

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class Phoenix:
    """A running Phoenix: its HTTP base (UI, REST and OTLP/HTTP), its gRPC address, its log."""

    url: str
    grpc: str
    log: Path

    def spans(self, project: str, expected: int = 1, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Every span of ``project`` as Phoenix stored it, once at least ``expected`` are in
        (Phoenix ingests a batch asynchronously after answering the export)."""
        deadline = time.monotonic() + timeout
        while True:
            found: list[dict[str, Any]] = []
            cursor = ""
            try:
                while True:
                    query = f"?limit=1000{f'&cursor={cursor}' if cursor else ''}"
                    with NO_PROXY.open(f"{self.url}/v1/projects/{project}/spans{query}",
                                       timeout=30) as answer:
                        page = json.loads(answer.read())
                    found.extend(page["data"])
                    cursor = page.get("next_cursor") or ""
                    if not cursor:
                        break
            except urllib.error.HTTPError as exc:
                if exc.code != 404:  # no such project yet: nothing ingested so far
                    raise
            if len(found) >= expected or time.monotonic() > deadline:
                return found
            time.sleep(0.5)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """One Phoenix for the test session, on free ports, with a fresh working folder."""
    if not PHOENIX.is_file():
        pytest.skip(f"Arize Phoenix is not installed ({PHOENIX}): make phoenix-venv")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "PHOENIX_")) and k.lower() not in ("http_proxy", "https_proxy")}
    env.update(OFFLINE, PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port),
               PHOENIX_GRPC_PORT=str(grpc_port), PHOENIX_WORKING_DIR=str(work))
    log = work / "phoenix.log"
    with log.open("wb") as out:
        server = subprocess.Popen([str(PHOENIX), "serve"], cwd=work, env=env, stdout=out,
                                  stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if server.poll() is not None:
                pytest.fail(f"phoenix serve exited {server.returncode}: "
                            f"{log.read_text(errors='replace')[-3000:]}")
            try:
                with NO_PROXY.open(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"phoenix serve did not answer in {START_TIMEOUT:.0f} s")
            time.sleep(0.5)
        yield Phoenix(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{grpc_port}", log)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _mas_ctl(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([MAS_CTL, *args], capture_output=True, text=True, timeout=600,
                          env={**clean, **env}, cwd=cwd)


def _tracing(endpoint: str, project: str, protocol: str) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            # Phoenix files the spans under the project their resource names.
            "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}


@pytest.fixture(scope="module")
def lab_spans(phoenix: Phoenix, tmp_path_factory: pytest.TempPathFactory,
              make_experiment: Callable[..., Path]) -> tuple[list[dict[str, Any]], Path]:
    """``mas-ctl lab run`` (one summarising session that compacts) traced over OTLP/HTTP:
    the spans Phoenix stored, and the session's run folder."""
    root = tmp_path_factory.mktemp("lab-phoenix")
    path = make_experiment(root / "exp", post="      - {type: run_sessions}\n")
    done = _mas_ctl(["lab", "run", str(path), "--flavour", "summarising", "--limit", "1",
                     "--runs-dir", str(root / "runs")],
                    _tracing(phoenix.url, "mas-lab-http", "http/protobuf"), root)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stderr.splitlines() if x.startswith("otel: "))
    assert line.endswith(f"exported to {phoenix.url}/v1/traces"), line
    sent = int(line.split()[1])
    spans = phoenix.spans("mas-lab-http", expected=sent)
    assert len(spans) == sent
    (folder,) = (root / "runs").glob("*/*/sessions/summarising/a-01/run-0")
    return spans, folder


def _by_name(spans: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [s for s in spans if s["name"].startswith(prefix)]


def test_phoenix_classifies_every_span_of_a_lab_run_sent_over_http(
        lab_spans: tuple[list[dict[str, Any]], Path]) -> None:
    spans, _ = lab_spans
    assert "UNKNOWN" not in {s["span_kind"] for s in spans}
    (lab,) = [s for s in spans if s["parent_id"] is None]
    assert lab["name"] == "mas-ctl lab run" and lab["span_kind"] == "CHAIN"
    assert {s["context"]["trace_id"] for s in spans} == {lab["context"]["trace_id"]}
    (session,) = _by_name(spans, "mas.session ")
    assert session["span_kind"] == "CHAIN" and session["parent_id"] == lab["context"]["span_id"]
    turns = _by_name(spans, "invoke_agent")
    assert len(turns) == 10 and {t["span_kind"] for t in turns} == {"AGENT"}
    assert {t["parent_id"] for t in turns} == {session["context"]["span_id"]}
    compactions = _by_name(spans, "mas.compaction")
    assert compactions and {c["span_kind"] for c in compactions} == {"CHAIN"}
    calls = _by_name(spans, "chat ")
    assert calls and {c["span_kind"] for c in calls} == {"LLM"}
    summaries = [c for c in calls if c["attributes"]["mas.llm.purpose"] == "summary"]
    assert {c["parent_id"] for c in summaries} <= {c["context"]["span_id"] for c in compactions}
    for call in summaries + calls[:1]:  # the opted-in text, the summarizer's call included
        attrs = call["attributes"]
        assert attrs["llm.input_messages.0.message.role"] and attrs["output.value"]
        assert "Marta Kowalski" in attrs["input.value"]  # the planted fact, in every request
        assert attrs["llm.token_count.total"] > 0


def test_phoenix_classifies_the_eval_trace_sent_over_grpc(
        phoenix: Phoenix, lab_spans: tuple[list[dict[str, Any]], Path], tmp_path: Path) -> None:
    _, folder = lab_spans
    done = _mas_ctl(["eval", str(folder), "-m", "GoalSuccessRate", "-m", "tokens", "--model",
                     "offline/default", "--backend", "native", "--overwrite"],
                    _tracing(phoenix.grpc, "mas-eval-grpc", "grpc"), tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    line = next(x for x in done.stderr.splitlines() if x.startswith("otel: "))
    assert line.endswith(f"exported to {phoenix.grpc}"), line
    spans = phoenix.spans("mas-eval-grpc", expected=int(line.split()[1]))
    assert "UNKNOWN" not in {s["span_kind"] for s in spans}
    (root,) = [s for s in spans if s["parent_id"] is None]
    assert root["name"] == "mas-ctl eval" and root["span_kind"] == "CHAIN"
    judges = _by_name(spans, "chat ")
    assert judges and {j["span_kind"] for j in judges} == {"LLM"}
    assert {j["parent_id"] for j in judges} == {root["context"]["span_id"]}
    assert all(j["attributes"]["mas.llm.purpose"] == "judge" for j in judges)
    assert all(j["attributes"]["input.value"] for j in judges)  # the judges' text, opted in
    (run,) = _by_name(spans, "mas.eval.run ")
    assert run["span_kind"] == "CHAIN" and run["parent_id"] == root["context"]["span_id"]
    metrics = {m["attributes"]["mas.eval.metric"]: m for m in _by_name(spans, "mas.eval.metric ")}
    assert set(metrics) == {"GoalSuccessRate", "Tokens"}  # canonical ids
    for metric in metrics.values():
        assert metric["span_kind"] == "EVALUATOR" and metric["parent_id"] == run["context"]["span_id"]
    assert metrics["Tokens"]["attributes"]["mas.eval.value"] > 0


def test_phoenix_reached_for_nothing_beyond_loopback(phoenix: Phoenix,
                                                     lab_spans: tuple[list[dict[str, Any]], Path]) -> None:
    log = phoenix.log.read_text(errors="replace")
    for attempt in ("Name or service not known", "pre-fetch", "Failed to initialize docs MCP",
                    "Temporary failure in name resolution"):
        assert attempt not in log
