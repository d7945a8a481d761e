"""Fixtures of the engine tests: a runtime that records events, and a scripted
OpenAI chat-completions server on 127.0.0.1 (the suite's fake provider,
:mod:`mas.runtime.fakeprovider`).

Each POST takes the next scripted action (``server.fail(429, headers=...)``,
``server.hang()``, ``server.malformed()``, ``server.empty_choices()``, ``server.ok()``);
when the script runs out, the server answers normally. It records every request body.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from mas.runtime import Event, Runtime
from mas.runtime.fakeprovider import FakeProvider
from mas.runtime.fakeprovider import serve as serve_provider


def _scripted_answer(body: dict[str, Any]) -> str:
    return "hello from the fake server"


class FakeOpenAI(FakeProvider):
    """The fake provider with the engine tests' script verbs and fixed usage (11, 5, 3)."""

    def __init__(self) -> None:
        super().__init__(answer=_scripted_answer, usage=(11, 5, 3))

    def fail(self, status: int, *, headers: dict[str, str] | None = None,
             message: str = "scripted failure") -> FakeOpenAI:
        """Queue one error response."""
        self.push("status", status=status, headers=headers or {}, message=message)
        return self

    def hang(self) -> FakeOpenAI:
        """Queue one request that gets no answer until the client has given up."""
        self.push("slow", delay=60.0)
        return self

    def malformed(self) -> FakeOpenAI:
        """Queue one 200 response whose body is cut-off JSON."""
        self.push("malformed")
        return self

    def empty_choices(self) -> FakeOpenAI:
        """Queue one 200 response with ``choices: []``."""
        self.push("empty_choices")
        return self

    def ok(self, text: str = "hello from the fake server") -> FakeOpenAI:
        """Queue one normal answer."""
        self.push("ok", text=text)
        return self


@contextmanager
def serve() -> Iterator[FakeOpenAI]:
    """Run a scripted fake server on an ephemeral port for the duration of the block."""
    state = FakeOpenAI()
    with serve_provider(provider=state):
        yield state


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
