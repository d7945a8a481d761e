"""Root conftest: the kernel's pytest plugin, hypothesis profiles, and CLI/file fixtures.

``HYPOTHESIS_PROFILE=thorough`` runs the property suite with 5,000 examples per invariant;
the default profile (``make test``) runs 300.
"""

from __future__ import annotations

import os
import textwrap
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from mas.runtime.cli import main

pytest_plugins = ["mas.runtime.testing"]

settings.register_profile(
    "default", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="session", autouse=True)
def native_eval_backend() -> Iterator[None]:
    """Score the stock ids with the native rubrics unless a test names a backend.

    ``backend: auto`` (the default) would pick MCE's worker whenever .venv-mce is found from
    the working directory, which ``make test`` builds: every lab and eval test would then
    start one (seconds each) and assert on MCE's prompts. Session-wide, so that module
    fixtures running experiments see it too; the tests of ``auto`` itself and of ``mce``
    (tests/eval/test_mce_backend.py) unset or override it.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MAS_EVAL_BACKEND", "native")
        yield


@dataclass
class CliResult:
    """Exit code and captured streams of one in-process mas-ctl run."""

    code: int
    out: str
    err: str


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """``write(name, yaml_text)`` writes a dedented file under tmp_path and returns its path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    return _write


@pytest.fixture
def mas_ctl(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., CliResult]:
    """Run ``mas-ctl ARGS`` in-process, from tmp_path so no stray config.yaml is read."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MAS_CONFIG", raising=False)

    def run(*args: str | Path) -> CliResult:
        capsys.readouterr()
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return CliResult(int(code or 0), captured.out, captured.err)

    return run


@pytest.fixture
def otlp_receiver() -> Iterator[tuple[str, list[Any], list[str]]]:
    """An OTLP/HTTP traces endpoint on 127.0.0.1: its URL, the decoded
    ``ExportTraceServiceRequest`` messages and their content types."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    requests: list[Any] = []
    types: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            types.append(self.headers.get("Content-Type", ""))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            requests.append(request)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", requests, types
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
