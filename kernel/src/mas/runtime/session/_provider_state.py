"""Provider-side state saved with a session's committed turns (``provider_state``).

A real provider keeps some state per conversation on its side (its prompt cache), and a
client crash does not lose it. A model provider that simulates such state in-process
(today the offline model's prefix cache, docs/offline-model.md) would lose it with a
``SIGKILL``, and a resumed session would then report other cache hits and cost than an
uninterrupted one. So the session saves that state with every committed turn and gives
it back to its new engine on resume: the provider then sees the conversation exactly as
the last committed turn left it, and what a turn cut short by the kill sent is forgotten
with the turn.

The protocol is duck-typed on the handlers installed in LiteLLM's process-wide
``custom_provider_map`` (the engine installs every registered ``model_provider`` there):

- ``export_session_state(*, session_id, trace_id) -> dict | None``: the JSON-ready state
  of the engine with these ids (``None`` when it has none);
- ``import_session_state(*, session_id, trace_id, state)``: replace that engine's state
  with one an earlier engine exported (``state`` ``None``: none).

Hosted providers define neither, so for them nothing is saved.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

from mas.runtime.engine import Engine

EXPORT = "export_session_state"
IMPORT = "import_session_state"


def _handlers() -> Iterator[tuple[str, Any]]:
    # Only when litellm is loaded: before that no provider has been called, so none holds
    # state, and reading it must not cost the seconds litellm takes to import.
    litellm = sys.modules.get("litellm")
    for entry in list(getattr(litellm, "custom_provider_map", None) or []):
        if isinstance(entry, dict):
            yield str(entry.get("provider")), entry.get("custom_handler")


def _ids(engine: Engine) -> dict[str, str]:
    return {"session_id": engine.session_id, "trace_id": getattr(engine, "trace_id", "")}


def capture(engine: Engine) -> dict[str, Any]:
    """Per provider name, the state its handler keeps for ``engine`` (empty: none)."""
    saved = {}
    for name, handler in _handlers():
        export = getattr(handler, EXPORT, None)
        if callable(export):
            state = export(**_ids(engine))
            if state:
                saved[name] = state
    return saved


def restore(engine: Engine, saved: Mapping[str, Any]) -> None:
    """Hand each provider the state :func:`capture` saved for an earlier engine of this
    session, now for ``engine`` (installing the providers first: nothing called yet)."""
    if not saved:
        return  # a new engine holds no provider state: nothing to replace
    engine.prepare()
    for name, handler in _handlers():
        load = getattr(handler, IMPORT, None)
        if callable(load):
            load(**_ids(engine), state=saved.get(name))
