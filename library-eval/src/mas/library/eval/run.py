"""Reading session run folders (transcript.json, events.jsonl, item.json, probes.jsonl).

A folder is a run folder iff it holds ``transcript.json``; a tree of runs is any directory
with run folders at any depth. Reading never changes anything on disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mas.runtime.errors import MasError
from mas.runtime.paths import MAX_RUN_FILE_BYTES, UnreadableFileError, read_regular
from mas.runtime.protocols import Message

TRANSCRIPT = "transcript.json"
EVENTS = "events.jsonl"
ITEM = "item.json"
METRICS = "metrics.json"
PROBES = "probes.jsonl"
"""The lab's per-probe records: where each probe's evidence was (docs/run-folder.md)."""


class RunFolderError(MasError):
    """A run folder (or the source given for scoring) cannot be read."""


@dataclass
class SessionRun:
    """One session's record, as stored in its run folder.

    :ivar path: the run folder.
    :ivar messages: the whole conversation as it happened (not the compacted view).
    :ivar error: the agent's error, or ``None`` when the session finished.
    :ivar events: ``events.jsonl`` records, in file order.
    :ivar has_events: the folder holds an ``events.jsonl`` (possibly empty).
    :ivar item: the dataset item (``item.json``), or ``None`` outside the lab.
    :ivar probes: the lab's probe records (``probes.jsonl``; empty when none were asked).
    :ivar warnings: problems met while reading (skipped event lines, say).
    """

    path: Path
    session_id: str
    agent: str = ""
    model: str = ""
    messages: list[Message] = field(default_factory=list)
    final_answer: str = ""
    error: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    has_events: bool = False
    item: dict[str, Any] | None = None
    probes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def events_named(self, name: str) -> list[dict[str, Any]]:
        """The events called ``name`` (e.g. ``llm.call``), in order."""
        return [event for event in self.events if event.get("event") == name]

    def missing(self, inputs: tuple[str, ...]) -> str | None:
        """Which of ``inputs`` is absent or empty, as a sentence; ``None`` if all present."""
        for name in inputs:
            if name == "events" and not self.has_events:
                return f"no {EVENTS} in the run folder"
            if name == "conversation" and not any(
                m.get("role") == "user" for m in self.messages
            ):
                return "the transcript has no user message"
            if name == "final_answer" and not self.final_answer.strip():
                return "the final answer is empty"
        return None


def load_run(path: Path | str) -> SessionRun:
    """Read the run folder at ``path``.

    :raises RunFolderError: no transcript, or a transcript / item file that is not the JSON
        object the run-folder contract describes.
    """
    folder = Path(path)
    transcript = _read_object(folder / TRANSCRIPT)
    messages = transcript.get("messages") or []
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise RunFolderError(f"{folder / TRANSCRIPT}: messages must be a list of chat messages")
    run = SessionRun(
        path=folder,
        session_id=str(transcript.get("session_id") or folder.name),
        agent=str(transcript.get("agent") or ""),
        model=str(transcript.get("model") or ""),
        messages=messages,
        final_answer=_text(transcript.get("final_answer")),
        error=_text(transcript.get("error")) or None,
    )
    if (folder / ITEM).is_file():
        run.item = _read_object(folder / ITEM)
    if (folder / EVENTS).is_file():
        run.has_events = True
        run.events = read_records(folder / EVENTS, run.warnings)
    if (folder / PROBES).is_file():
        run.probes = read_records(folder / PROBES, run.warnings)
    return run


def _text(raw: Any) -> str:
    if raw is None:
        return ""
    return raw if isinstance(raw, str) else json.dumps(raw)


def _read_object(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(read_regular(path, MAX_RUN_FILE_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise RunFolderError(f"{path.parent}: not a run folder (no {path.name})") from None
    except UnreadableFileError as exc:  # a pipe or device would hang or never end
        raise RunFolderError(str(exc)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunFolderError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise RunFolderError(f"{path}: must hold a JSON object (got {type(value).__name__})")
    return value


def read_records(path: Path, warnings: list[str] | None = None) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file (``events.jsonl``, ``probes.jsonl``), in order.

    A line that is not JSON (a crash can tear the last one) is skipped and named in
    ``warnings``; the rest of the record is still good.
    """
    warnings = warnings if warnings is not None else []
    events: list[dict[str, Any]] = []
    try:
        text = read_regular(path, MAX_RUN_FILE_BYTES).decode("utf-8")
    except UnreadableFileError as exc:
        raise RunFolderError(str(exc)) from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            # A crash can leave a torn last line; the rest of the record is still good.
            warnings.append(f"{path.name}:{number}: skipped a line that is not JSON")
            continue
        if isinstance(record, dict):
            events.append(record)
    return events


def find_runs(source: Path | str, *, recursive: bool = False) -> list[Path]:
    """The run folders to score under ``source``, sorted.

    :param source: a run folder, or (with ``recursive``) a tree of them.
    :raises RunFolderError: ``source`` is missing, or is not a run folder and
        ``recursive`` is off, or holds no run folder at all.
    """
    root = Path(source)
    if not root.exists():
        raise RunFolderError(f"{root}: no such file or directory")
    if (root / TRANSCRIPT).is_file():
        return [root]
    if not recursive:
        raise RunFolderError(
            f"{root}: not a run folder (no {TRANSCRIPT}); pass --recursive to score every "
            "run folder below it"
        )
    found = sorted(path.parent for path in root.rglob(TRANSCRIPT) if path.is_file())
    if not found:
        raise RunFolderError(f"{root}: no run folder (no {TRANSCRIPT}) at any depth")
    return found
