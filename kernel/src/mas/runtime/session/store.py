"""Saving and restoring session state: an atomic snapshot plus an append-only journal.

``session.json`` is a snapshot: written to a temporary file in the same folder, flushed,
fsynced and renamed over the old one, so a crash leaves the old snapshot or the new one,
never a torn file. Between snapshots each committed turn appends one line to
``session.journal.jsonl`` (:class:`StateJournal`): that turn's new transcript messages
and the rest of the state (history window, manager state, counters), not the whole
transcript again. Saving a turn therefore costs the turn plus the live window, however
long the session; the journal is folded into a new snapshot once it outgrows the
snapshot, and at the end of the session.

Reading (:func:`load_state`) takes the snapshot and replays the journal lines after it;
a line cut short by a kill is ignored, and :meth:`StateJournal.load` truncates it away
before the next append.

The history window is journaled against the transcript: it is the transcript's tail
from the first message not folded away, with the tool results pruning replaced and the
recall results committed as stubs, so a line holds where the window starts and those
replacements, not the window again.

``provider_state`` (per provider, a mapping of independent entries) is journaled like
the transcript: a line holds only the entries that changed since the line before
(``None`` for one that went), and replay merges them. The offline model's simulated
prefix cache exports content-addressed entries (each message once, tree nodes over them,
a small entry per conversation), so a turn changes its new messages, a few nodes and its
conversation's entry, however long the window or the session.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from mas.runtime.errors import MasError, StorageError
from mas.runtime.paths import (
    MAX_RUN_FILE_BYTES,
    UnreadableFileError,
    open_append,
    read_regular,
    refuse_symlinks,
    truncate_own,
)
from mas.runtime.secrets import mask

STATE_VERSION = 1

MIN_JOURNAL_BYTES = 1 << 20
"""The journal is folded into the snapshot once it is larger than both this and the
snapshot itself (so snapshots cost, amortized, no more than the journal lines)."""

# Temporary files of an interrupted atomic write: ".<name>." or ".<name>-" plus mkstemp's
# eight characters.
_ORPHAN = re.compile(r"^\..+\.(json|jsonl|txt|html|svg|yaml)[.-][a-z0-9_]{8}$")

HISTORY = "history"
"""The state key journal lines carry as a delta against the transcript (module docstring)."""

MERGED = "provider_state"
"""The state key whose entries journal lines carry as changes (see the module docstring)."""

Entries = dict[str, dict[str, Any]]


class SessionStateError(MasError):
    """A session file is unreadable or from an incompatible version."""


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so readers see the old or the new content, whole.

    Keys are masked first (:func:`mas.runtime.secrets.mask`): nothing stored holds one.
    """
    path = Path(path)
    text = mask(text)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise StorageError.writing(path, exc) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise StorageError.writing(path, exc) from exc
        raise


def save_state(path: Path, state: dict[str, Any]) -> None:
    """Write a session state dict (with its format version) atomically."""
    write_atomic(path, json.dumps({"version": STATE_VERSION, **state}, sort_keys=True))


def load_state(path: Path) -> dict[str, Any]:
    """Read a state written by :func:`save_state`.

    :raises SessionStateError: unreadable, not JSON, or another format version.
    :raises UnsafePathError: ``path`` is a symlink (it would read and then replace a file
        elsewhere).
    """
    state, _ = _read(Path(path))
    return state


def journal_path(path: Path) -> Path:
    """The journal beside the snapshot ``path`` (``session.json`` -> ``session.journal.jsonl``)."""
    path = Path(path)
    return path.with_name(f"{path.stem}.journal.jsonl")


def remove_orphans(folder: Path) -> list[Path]:
    """Delete the temporary files interrupted atomic writes left in ``folder``.

    Only safe while the folder is locked (``mas-ctl run`` and ``lab run`` hold its lock):
    then no writer is alive to own them. Returns what was removed.
    """
    removed = []
    for path in Path(folder).glob(".*"):
        if _ORPHAN.match(path.name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


class StateJournal:
    """The snapshot and journal of one session (see the module docstring).

    :param path: the snapshot, ``session.json``.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.journal = journal_path(self.path)
        self._saved: int | None = None  # transcript messages already on disk
        self._snapshot_bytes = 0
        self._journal_bytes = 0
        self._entries: dict[str, dict[str, str]] = {}  # provider -> entry -> JSON on disk

    def load(self) -> dict[str, Any] | None:
        """The saved state, ``None`` when there is none; cleans up after a kill.

        Orphaned temporary files are removed and a torn or stale journal tail is cut, so
        the next append starts on a clean line.

        :raises SessionStateError: unreadable snapshot or another format version.
        """
        remove_orphans(self.path.parent)
        if not self.path.is_file() and not self.path.is_symlink():
            return None
        state, good = _read(self.path)
        if self.journal.is_file() and self.journal.stat().st_size > good:
            truncate_own(self.journal, good)
        self._saved = len(state.get("transcript") or [])
        self._snapshot_bytes = self.path.stat().st_size
        self._journal_bytes = good
        self._entries = _entry_texts(state.get(MERGED))
        return state

    def save(self, state: dict[str, Any]) -> None:
        """Persist ``state`` after a committed turn: one journal line, or a new snapshot.

        :raises StorageError: the disk is full or the folder unwritable.
        """
        transcript = state.get("transcript") or []
        grown = self._journal_bytes > max(MIN_JOURNAL_BYTES, self._snapshot_bytes)
        if self._saved is None or self._saved > len(transcript) or grown:
            self.compact(state)
            return
        entries = _entry_texts(state.get(MERGED))
        rest = {k: v for k, v in state.items() if k != "transcript"}
        if MERGED in rest:
            rest[MERGED] = _changes(self._entries, entries)
        if isinstance(rest.get(HISTORY), dict):
            rest[HISTORY] = _history_delta(rest[HISTORY], transcript)
        record = {"version": STATE_VERSION, "turns": state.get("turns"),
                  "transcript_from": self._saved, "transcript_tail": transcript[self._saved:],
                  "state": rest}
        line = (mask(json.dumps(record, sort_keys=True, ensure_ascii=False)) + "\n").encode()
        try:
            fd = open_append(self.journal)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StorageError.writing(self.journal, exc) from exc
        self._saved = len(transcript)
        self._journal_bytes += len(line)
        self._entries = entries

    def compact(self, state: dict[str, Any]) -> None:
        """Write ``state`` as the snapshot and drop the journal it supersedes.

        :raises StorageError: the disk is full or the folder unwritable.
        """
        text = json.dumps({"version": STATE_VERSION, **state}, sort_keys=True)
        write_atomic(self.path, text)
        # After the snapshot: a kill in between leaves journal lines the snapshot already
        # covers, and replay skips those.
        self.journal.unlink(missing_ok=True)
        self._saved = len(state.get("transcript") or [])
        self._snapshot_bytes = len(text)
        self._journal_bytes = 0
        self._entries = _entry_texts(state.get(MERGED))


def _read(path: Path) -> tuple[dict[str, Any], int]:
    """The snapshot with its journal replayed, and how many journal bytes were used."""
    refuse_symlinks(path.parent, [path.name, journal_path(path).name])
    try:
        data = json.loads(read_regular(path, MAX_RUN_FILE_BYTES).decode("utf-8"))
    except (OSError, ValueError, UnreadableFileError) as exc:
        raise SessionStateError(f"cannot read session file {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
        found = data.get("version") if isinstance(data, dict) else None
        raise SessionStateError(
            f"session file {path} has format version {found!r}; expected {STATE_VERSION}"
        )
    try:
        raw = read_regular(journal_path(path), MAX_RUN_FILE_BYTES)
    except FileNotFoundError:
        return data, 0
    except UnreadableFileError as exc:
        raise SessionStateError(f"cannot read session journal {exc}") from exc
    except OSError as exc:
        raise SessionStateError(f"cannot read session journal {journal_path(path)}: "
                                f"{exc.strerror}") from exc
    good = 0
    transcript = list(data.get("transcript") or [])
    for line in raw.splitlines(keepends=True):
        record = _record(line)
        if record is None:
            break  # torn by a kill, or not ours: nothing after it is trusted
        turns = int(data.get("turns") or 0)
        if record["turns"] <= turns:
            good += len(line)  # already in the snapshot (a kill between snapshot and unlink)
            continue
        if record["turns"] != turns + 1 or record["transcript_from"] != len(transcript):
            break
        transcript.extend(record["transcript_tail"])
        merged = _merge(data.get(MERGED), record["state"].get(MERGED))
        data = {**record["state"], "version": STATE_VERSION}
        if merged is not None:
            data[MERGED] = merged
        if isinstance(data.get(HISTORY), dict):
            data[HISTORY] = _history_of(data[HISTORY], transcript)
        good += len(line)
    data["transcript"] = transcript
    return data, good


def _record(line: bytes) -> dict[str, Any] | None:
    if not line.endswith(b"\n"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    keys = ("turns", "transcript_from", "transcript_tail", "state")
    if not isinstance(record, dict) or record.get("version") != STATE_VERSION or any(
            k not in record for k in keys):
        return None
    return record


def _history_delta(history: dict[str, Any], transcript: list[Any]) -> dict[str, Any]:
    """What a journal line stores of the history window: where it starts in the transcript
    and the messages that differ from it, when the window is the transcript's tail with
    those replacements (it is for every built-in strategy); the window itself otherwise.

    A replaced message is either pruned (its original, kept in ``originals``, is the
    transcript's message) or committed differently from what the transcript shows (a
    recall result kept as its stub, which has no original): ``stubbed`` lists those.
    """
    base, messages = history.get("base"), history.get("messages")
    originals = history.get("originals") or {}
    if not isinstance(base, int) or not isinstance(messages, list) or (
            base + len(messages) != len(transcript)):
        return history
    replaced = {str(base + i): m for i, m in enumerate(messages)
                if m is not transcript[base + i] and m != transcript[base + i]}
    if not set(originals) <= set(replaced) or any(
            originals[k] != transcript[int(k)] for k in originals):
        return history
    delta: dict[str, Any] = {"base": base, "replaced": replaced}
    stubbed = sorted(set(replaced) - set(originals), key=int)
    if stubbed:
        delta["stubbed"] = stubbed
    return {"tail_of_transcript": delta}


def _history_of(saved: dict[str, Any], transcript: list[Any]) -> dict[str, Any]:
    """The history window of a journal line, rebuilt from :func:`_history_delta`."""
    delta = saved.get("tail_of_transcript")
    if not isinstance(delta, dict):
        return saved
    base, replaced = int(delta["base"]), dict(delta.get("replaced") or {})
    messages = [replaced.get(str(i), m) for i, m in enumerate(transcript[base:], start=base)]
    history: dict[str, Any] = {"base": base, "messages": messages}
    pruned = set(replaced) - set(delta.get("stubbed") or ())
    if pruned:
        history["originals"] = {k: transcript[int(k)] for k in sorted(pruned, key=int)}
    return history


def _entry_texts(value: Any) -> dict[str, dict[str, str]]:
    """Per provider, each entry of a full ``provider_state`` as its JSON text."""
    if not isinstance(value, dict):
        return {}
    return {provider: {key: json.dumps(entry, sort_keys=True) for key, entry in entries.items()}
            for provider, entries in value.items() if isinstance(entries, dict)}


def _changes(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> Entries:
    """What a journal line stores of ``provider_state``: changed and new entries, and
    ``None`` for the ones that went."""
    changes: Entries = {}
    for provider in before.keys() | after.keys():
        old, new = before.get(provider, {}), after.get(provider, {})
        changed: dict[str, Any] = {key: json.loads(text) for key, text in new.items()
                                   if old.get(key) != text}
        changed.update({key: None for key in old.keys() - new.keys()})
        if changed:
            changes[provider] = changed
    return changes


def _merge(base: Any, changes: Any) -> Entries | None:
    """``base`` (a full ``provider_state``) with a journal line's changes applied."""
    if not isinstance(changes, dict):
        return base if isinstance(base, dict) else None
    start = base if isinstance(base, dict) else {}
    merged: Entries = {p: dict(e) for p, e in start.items() if isinstance(e, dict)}
    for provider, entries in changes.items():
        target = merged.setdefault(provider, {})
        for key, entry in (entries or {}).items():
            if entry is None:
                target.pop(key, None)
            else:
                target[key] = entry
        if not target:
            del merged[provider]
    return merged
