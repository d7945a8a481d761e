"""Probes of a session, and the isolated ones asked from a copy of the session.

An isolated probe (``probes: isolated``, or a probe with its own ``question``) is asked
after ``probe.turn`` turns: the session's state and archive are taken once for every
probe of that point (:class:`Snapshot`); for each probe the archive is copied into a
scratch folder, a second session is opened there under its own id with that state, the
question is sent to it and the copy is thrown away. So no question sees another's turn, recall or
compaction, and none enters the session's history. Its model calls are real spend: they
are counted on its record (``llm_calls``, ``prompt_tokens``, ``completion_tokens``,
``cost``, ``compactions``), and what degraded in it (a budget cut, a failed compaction)
is added to the session's own degradation, naming the probe.

Every probe asked (isolated or inline) gets one line in ``probes.jsonl`` in the session
folder: its index, turn, mode, kind, where its evidence was (:mod:`.evidence`: booleans
and shares, never text) and, for an isolated probe, its answer (capped like a
trajectory's) and whether it holds every expected string. A resumed session asks only
the probes that have no line yet.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from mas.library.eval.run import PROBES, read_records
from mas.library.lab.dataset import Probe
from mas.library.lab.evidence import locate, recall_region, request_regions
from mas.library.lab.rundir import write_text
from mas.library.lab.sessions import SessionJob
from mas.runtime.context import AssembledRequest
from mas.runtime.events import Event
from mas.runtime.session import STATE, AgentSession, Tool, open_session
from mas.runtime.session.recall import ARCHIVE_FILE

ANSWER_CHARS = 300
"""Characters of an isolated probe's answer kept on its record."""


def contains(answer: str, expected: str) -> bool:
    """Case- and whitespace-insensitive containment (as FactRecall and ProbeRecall match)."""
    return " ".join(expected.lower().split()) in " ".join(answer.lower().split())


class ProbeLog:
    """``probes.jsonl`` of one session folder: the records so far, and appending more.

    A line torn by a kill is dropped when the log is opened (that probe is asked again).
    """

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / PROBES
        self.records = read_probe_records(folder)
        if self.path.is_file():
            write_text(self.path, "".join(_line(r) for r in self.records))

    def done(self) -> set[int]:
        """Indexes of the probes already recorded."""
        return {int(r["probe"]) for r in self.records if isinstance(r.get("probe"), int)}

    def add(self, record: dict[str, Any]) -> None:
        """Append ``record``."""
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(_line(record))
        self.records.append(record)


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def read_probe_records(folder: Path) -> list[dict[str, Any]]:
    """The records of ``folder/probes.jsonl`` (none when absent; torn lines skipped)."""
    path = Path(folder) / PROBES
    return read_records(path) if path.is_file() else []


def probe_record(number: int, probe: Probe, mode: str, session: AgentSession,
                 request: AssembledRequest | None, question: str) -> dict[str, Any]:
    """The record of probe ``number`` just answered by ``session`` with ``request``."""
    verbatim, summary = request_regions(request)
    recalled = recall_region(session, question) if probe.evidence else ""
    return {"probe": number, "turn": probe.turn, "mode": mode, "kind": probe.kind,
            "evidence": locate(probe.evidence, verbatim, summary, recalled),
            "evidence_unresolved": probe.evidence_unresolved}


class _Spend:
    """What one probe copy's events add up to (it is not recorded in events.jsonl)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.totals: dict[str, float] = {"llm_calls": 0, "prompt_tokens": 0,
                                         "completion_tokens": 0, "cost": 0.0, "compactions": 0}
        self.degraded: list[dict[str, Any]] = []

    def __call__(self, event: Event) -> None:
        if event.session_id != self.session_id:
            return
        data = event.data
        if event.name == "llm.call":
            self.totals["llm_calls"] += 1
            for key in ("prompt_tokens", "completion_tokens", "cost"):
                value = data.get(key)
                self.totals[key] += value if isinstance(value, (int, float)) else 0
        elif event.name == "compaction.stop":
            self.totals["compactions"] += 1
        elif event.name == "degraded":
            self.degraded.append(dict(data))


class Snapshot:
    """The session as it stands, once for every probe asked at this point: its state, and
    its archive copied aside (``with Snapshot(session) as snapshot:``)."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session
        self.state = session.to_state()
        self._folder = tempfile.TemporaryDirectory(prefix="mas-probes-")
        self.archive: Path | None = None
        if session.archive is not None and session.archive.path != ":memory:" \
                and Path(session.archive.path).is_file():
            self.archive = Path(self._folder.name) / ARCHIVE_FILE
            _copy_archive(Path(session.archive.path), self.archive)

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *_: object) -> None:
        self._folder.cleanup()


def ask_isolated(job: SessionJob, snapshot: Snapshot, number: int, probe: Probe,
                 tools: list[Tool]) -> dict[str, Any]:
    """Ask ``probe`` from a copy of the session in ``snapshot``; the record of it."""
    session = snapshot.session
    question = probe.asked()
    copy_id = f"{session.session_id}-probe-{number}"
    spend = _Spend(copy_id)
    with tempfile.TemporaryDirectory(prefix="mas-probe-") as scratch:
        folder = Path(scratch)
        if snapshot.archive is not None:
            shutil.copyfile(snapshot.archive, folder / ARCHIVE_FILE)
        stop = job.runtime.add_listener(spend)
        try:
            # No state file: the copy opens on the archive copy, is given the state in
            # memory, and never saves (nothing of it is kept).
            copy = open_session(job.runtime, job.flavour.agent, job.flavour.manifests,
                                session_id=copy_id, state_path=folder / STATE, tools=tools,
                                cache=job.cache)
            copy.restore({**snapshot.state, "session_id": copy_id})
            copy.state_path = None
            try:
                result = copy.send(question.user)
                record = probe_record(number, probe, "isolated", copy, result.request,
                                      question.user)
            finally:
                if copy.archive is not None:
                    copy.archive.close()
        finally:
            stop()
    for data in spend.degraded:
        session.degradation.add(str(data.get("kind")), int(data.get("count") or 1), reason=(
            f"probe {number}: {data.get('reason') or data.get('kind')}")[:300])
    hit = (all(contains(result.answer, e) for e in probe.expected)
           if probe.expected and result.answer else (False if probe.expected else None))
    return {**record, "answer": result.answer[:ANSWER_CHARS], "hit": hit,
            **{key: round(value, 6) if key == "cost" else int(value)
               for key, value in spend.totals.items()}}


def _copy_archive(source: Path, target: Path) -> None:
    """Copy the session's archive with SQLite's backup (consistent while it is open)."""
    with sqlite3.connect(source) as original, sqlite3.connect(target) as copy:
        original.backup(copy)
    # ``with`` commits but does not close.
    original.close()
    copy.close()
