"""Fixtures of the engine tests: a runtime that records events, and a scripted
OpenAI chat-completions server on 127.0.0.1.

Each POST takes the next scripted action (``server.fail(429, headers=...)``,
``server.hang()``, ``server.malformed()``, ``server.empty_choices()``, ``server.ok()``);
when the script runs out, the server answers normally. It records every request body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mas.runtime import Event, Runtime


@dataclass
class Action:
    """What the server does for one request.

    :ivar kind: ``ok``, ``status`` (send ``status`` with ``body``), ``hang`` (sleep
        ``delay`` seconds before answering ok), ``malformed`` (200 with broken JSON) or
        ``empty_choices`` (200 with ``choices: []``).
    """

    kind: str = "ok"
    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    text: str = "hello from the fake server"


def completion_body(text: str, model: str, *, prompt: int = 11, completion: int = 5,
                    cached: int = 3) -> dict[str, Any]:
    """A well-formed chat.completion response."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": text},
        }],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


class FakeOpenAI:
    """The server state: the script and the requests seen."""

    def __init__(self) -> None:
        self.script: list[Action] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        self.base_url = ""

    def next_action(self) -> Action:
        return self.script.pop(0) if self.script else Action()

    def fail(self, status: int, *, headers: dict[str, str] | None = None,
             message: str = "scripted failure") -> FakeOpenAI:
        """Queue one error response."""
        self.script.append(Action("status", status, {"error": {"message": message}},
                                  headers or {}))
        return self

    def hang(self) -> FakeOpenAI:
        """Queue one request that gets no answer until the client has given up."""
        self.script.append(Action("hang", delay=60.0))
        return self

    def malformed(self) -> FakeOpenAI:
        """Queue one 200 response whose body is cut-off JSON."""
        self.script.append(Action("malformed"))
        return self

    def empty_choices(self) -> FakeOpenAI:
        """Queue one 200 response with ``choices: []``."""
        self.script.append(Action("empty_choices"))
        return self

    def ok(self, text: str = "hello from the fake server") -> FakeOpenAI:
        """Queue one normal answer."""
        self.script.append(Action(text=text))
        return self


def _handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw or b"{}")
            state.requests.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            action = state.next_action()
            model = body.get("model", "")
            if action.kind == "hang":
                # Waits for the client to give up (or the test to end), never for a clock.
                state.release.wait(action.delay)
                self._send(200, completion_body(action.text, model))
            elif action.kind == "status":
                self._send(action.status, action.body or {"error": {"message": "scripted"}},
                           action.headers)
            elif action.kind == "malformed":
                self._raw(200, b'{"id": "x", "choices": [ {"message": ')
            elif action.kind == "empty_choices":
                body_out = completion_body("", model)
                body_out["choices"] = []
                self._send(200, body_out)
            else:
                self._send(200, action.body or completion_body(action.text, model))

        def _send(self, status: int, payload: dict[str, Any],
                  headers: dict[str, str] | None = None) -> None:
            self._raw(status, json.dumps(payload).encode(), headers)

        def _raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                # The client gave up first (the timeout tests hang on purpose): nothing
                # is left to answer, and the server must keep serving the next test.
                return

    return Handler


@contextmanager
def serve() -> Iterator[FakeOpenAI]:
    """Run a fake server on an ephemeral port for the duration of the block."""
    state = FakeOpenAI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


class Recorder:
    """A runtime plus every event it emitted."""

    def __init__(self) -> None:
        self.runtime = Runtime.create()
        self.events: list[Event] = []
        self.runtime.add_listener(self.events.append)

    def named(self, name: str) -> list[Event]:
        """Events called ``name``, in order."""
        return [e for e in self.events if e.name == name]


@pytest.fixture
def rec() -> Recorder:
    """A fresh runtime with installed plugins, recording events."""
    return Recorder()


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (ephemeral port)."""
    with serve() as state:
        yield state
