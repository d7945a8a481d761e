"""The session's archive and the opt-in ``recall_context`` tool (docs/context.md, "Recall").

:class:`SessionMemory` keeps the three promises of DESIGN §13 for one session:

- **Whatever leaves the request is archived.** A context manager that archives what it
  folds (:class:`~mas.runtime.protocols.ArchivingManager`) gets the session's
  :class:`~mas.runtime.context.archive.Archive` (``archive.sqlite`` beside the saved
  state, in memory without a folder). What the final trim cuts is archived by the session
  itself, counted as ``archive.cut``; for a manager that does not archive, the session
  also archives what the manager leaves out, in an archive it opens when first needed.
- **Recall serves the turn that asked.** With ``params.recall: true`` the model is
  offered ``recall_context(query)`` from the first turn after something is archived.
  Its result is working memory of that turn: sized to the room left in the request (so
  nothing is cut for it), left out of the manager's budget (so it never makes the
  manager fold), and committed as a short stub that keeps the tool call/result pair
  valid and says what was recalled. The transcript keeps the
  full result: it is what the model read. A strategy whose requests the final trim cuts
  anyway (``stack``) has no room left; there a recall may take up to a quarter of the
  hard budget, which the trim takes from the oldest history it sends — archived in turn.
- **Counted.** Each recall emits a ``recall`` event with counts only (questions, terms,
  lines found, tokens, budget), never the text; the session's totals are in
  ``inspect``'s ``recall``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mas.runtime.context import AssembledRequest, History
from mas.runtime.context.archive import Archive
from mas.runtime.context.assembler import trimmed_positions
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR, TokenEstimator
from mas.runtime.context.recalled import Recalled
from mas.runtime.paths import refuse_symlinks
from mas.runtime.protocols import ArchiveSettings, ArchivingManager, Message
from mas.runtime.session.tools import Tool

ARCHIVE_FILE = "archive.sqlite"
"""The archive's file name in a run folder."""

RECALL_TOOL = "recall_context"
"""The tool name the model calls."""

RESULT_SLACK = 16
"""Tokens kept free of recalled text in the room left: the tool message's overhead and id."""

CUT_SHARE = 4
"""When the request is cut anyway, a recall may take up to 1/CUT_SHARE of the hard budget."""


def archive_path(state_path: Path | None) -> Path | str:
    """Where a session saved at ``state_path`` keeps its archive (``":memory:"`` unsaved)."""
    if state_path is None:
        return ":memory:"
    folder = state_path.parent
    folder.mkdir(parents=True, exist_ok=True)
    # SQLite follows links: a planted one must not redirect the archive's writes.
    refuse_symlinks(folder, [ARCHIVE_FILE, f"{ARCHIVE_FILE}-journal"])
    return folder / ARCHIVE_FILE


def open_archive(cm: object, state_path: Path | None) -> Archive | None:
    """Attach an archive to ``cm`` when it archives what it folds; ``None`` otherwise."""
    if not isinstance(cm, ArchivingManager) or not cm.archive_settings.enabled:
        return None
    settings: ArchiveSettings = cm.archive_settings
    archive = Archive(archive_path(state_path), max_messages=settings.max_messages,
                      max_bytes=settings.max_bytes)
    cm.attach_archive(archive)
    return archive


@dataclass
class RecallCounts:
    """A session's recall totals (saved with it, shown by ``inspect`` as ``recall``).

    :ivar calls: ``recall_context`` calls.
    :ivar found: calls that brought something back.
    :ivar tokens: estimated tokens of recalled text the model read.
    :ivar released: tokens kept out of committed history by committing stubs instead.
    :ivar room_capped: calls given less than ``recall_max_tokens`` because the request
        had less room left.
    """

    calls: int = 0
    found: int = 0
    tokens: int = 0
    released: int = 0
    room_capped: int = 0


class SessionMemory:
    """One session's archive, its recall tool, and what leaves its requests.

    :param cm: the bound context manager.
    :param state_path: the saved state (the archive goes beside it), or ``None``.
    :param emit: sends a ``recall`` event's data.
    :param estimator: counts recalled and stubbed tokens (the history's).
    """

    def __init__(
        self,
        cm: object,
        state_path: Path | None,
        emit: Callable[[dict[str, Any]], None],
        estimator: TokenEstimator = DEFAULT_ESTIMATOR,
    ) -> None:
        self.state_path = state_path
        self.estimator = estimator
        self.emit = emit
        settings = cm.archive_settings if isinstance(cm, ArchivingManager) else None
        self.archive = open_archive(cm, state_path)
        # A standard manager with ``archive.enabled: false``: the user said no.
        self.enabled = settings.enabled if settings is not None else True
        self.manager_archives = settings is not None and self.archive is not None
        self.max_tokens = settings.recall_max_tokens if settings is not None else 0
        offered = self.archive is not None and settings is not None and settings.recall
        self.tool = self._tool() if offered else None
        self.counts = RecallCounts()
        self._room = 0
        self._pending: list[tuple[str, Recalled]] = []  # (the text returned, the recall)
        self._stubs: dict[str, tuple[str, int]] = {}  # call id -> (stub, tokens released)
        self._left_through = 0

    # -- what leaves the request ----------------------------------------------------

    def after_request(self, history: History, request: AssembledRequest) -> int:
        """Archive what left ``request``: the trim's cuts (and, for a manager that does
        not archive, what it left out). Returns how many messages were new to the archive."""
        if not self.enabled:
            return 0
        new = 0
        if not self.manager_archives:
            first_live = history.end - (len(request.managed.messages)
                                        - request.managed.leading_rows)
            start = max(self._left_through, history.base)
            if first_live > start:
                new += self._store().add(start, history.originals(start, first_live))
            self._left_through = max(self._left_through, first_live)
        cut = request.accounting.cut.messages if request.accounting is not None else 0
        if cut and request.trim.dropped_history:
            for start, stop in _runs(trimmed_positions(history, request.managed, request.trim)):
                new += self._store().add(start, history.originals(start, stop), cut=True)
        return new

    def _store(self) -> Archive:
        if self.archive is None:
            self.archive = Archive(archive_path(self.state_path))
        return self.archive

    # -- the recall tool ------------------------------------------------------------

    def has_archived(self) -> bool:
        """Whether the archive holds anything to recall (the tool is offered from then)."""
        return self.archive is not None and self.archive.holds_messages()

    def _tool(self) -> Tool:
        # The description is sent with every request once offered: kept short.
        def recall_context(query: str) -> str:
            """Search earlier parts of this conversation no longer in view: the
            best-matching lines come back verbatim, with their context."""
            return self._recall(str(query))

        return Tool.from_function(
            recall_context,
            name=RECALL_TOOL,
            parameters={
                "type": "object",
                "properties": {"query": {
                    "type": "string",
                    "description": "Words, names or codes to look for; "
                                   "';' between questions."}},
                "required": ["query"],
            },
        )

    def begin_round(self, request: AssembledRequest, assistant: Message) -> None:
        """Before this round's tools run: the room ``request`` leaves once ``assistant``
        (the reply calling them) joins it, which recalled text may fill."""
        self._room = (request.budget.hard_budget - request.estimate
                      - self.estimator.message(assistant))
        cut = request.accounting is not None and request.accounting.cut.messages > 0
        if cut:
            # The trim cuts this strategy's requests anyway: room comes from the oldest
            # history sent, which goes to the archive, not from the turns kept verbatim.
            self._room = max(self._room, request.budget.hard_budget // CUT_SHARE)

    def _recall(self, query: str) -> str:
        archive = self.archive
        assert archive is not None  # the tool exists only with an archive
        budget = max(min(self.max_tokens, self._room - RESULT_SLACK), 0)
        found = archive.search(query, max_tokens=budget)
        self._room -= found.tokens
        self.counts.calls += 1
        self.counts.found += int(bool(found.blocks))
        self.counts.tokens += found.tokens
        self.counts.room_capped += int(budget < self.max_tokens)
        self.emit({"questions": found.questions, "terms": found.terms, "found": found.hits,
                   "messages": len(found.blocks), "tokens": found.tokens, "budget": budget})
        if found.blocks:
            text = found.text()
        elif budget <= 0:
            text = "Nothing recalled: this request has no room left for earlier text."
        else:
            text = f"Nothing earlier in this conversation matches {query[:80]!r}."
        self._pending.append((text, found))
        return text

    def track(self, calls: list[dict[str, Any]], results: list[Message], turn: int) -> None:
        """Note this round's recall results, to commit them as stubs (``turn``: its number)."""
        by_id = {str(c.get("id", "")): (c.get("function") or {}).get("name") for c in calls}
        # Matched by the text returned: a recall call whose arguments were unusable never
        # reached the tool, and its error result must not take another call's stub.
        served = dict(self._pending)
        self._pending.clear()
        for result in results:
            call_id, content = str(result.get("tool_call_id", "")), result.get("content")
            found = served.get(content) if isinstance(content, str) else None
            if by_id.get(call_id) != RECALL_TOOL or found is None:
                continue
            stub = _stub(found, turn)
            released = self.estimator.text(content or "") - self.estimator.text(stub)
            if released > 0:
                self._stubs[call_id] = (stub, released)

    @property
    def served_tokens(self) -> int:
        """Tokens of this turn's recall results beyond their stubs (kept out of the
        manager's budget)."""
        return sum(released for _, released in self._stubs.values())

    def start_turn(self) -> None:
        """Forget the recalls of a turn that did not commit."""
        self._stubs.clear()
        self._pending.clear()

    def committed(self, messages: list[Message]) -> list[Message]:
        """``messages`` as committed history keeps them: recall results as their stubs."""
        if not self._stubs:
            return messages
        out = []
        for message in messages:
            stub = self._stubs.get(str(message.get("tool_call_id", ""))) \
                if message.get("role") == "tool" else None
            if stub is not None:
                message = {**message, "content": stub[0]}
                self.counts.released += stub[1]
            out.append(message)
        self._stubs.clear()
        return out

    # -- saving ---------------------------------------------------------------------

    def to_state(self) -> dict[str, int]:
        """The recall totals as JSON data."""
        return asdict(self.counts)

    def load_state(self, state: dict[str, Any] | None) -> None:
        """Restore totals saved by :meth:`to_state` (``None``: a session saved before)."""
        fields = RecallCounts.__dataclass_fields__
        self.counts = RecallCounts(**{k: int(v) for k, v in (state or {}).items() if k in fields})


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Sorted ``positions`` as ``[start, stop)`` runs of consecutive numbers."""
    runs: list[tuple[int, int]] = []
    for position in positions:
        if runs and runs[-1][1] == position:
            runs[-1] = (runs[-1][0], position + 1)
        else:
            runs.append((position, position + 1))
    return runs


def _stub(found: Recalled, turn: int) -> str:
    """What committed history keeps of a recall result: what came back, not the text."""
    where = ", ".join(f"#{p}" for p in found.positions[:8])
    more = f" and {len(found.positions) - 8} more" if len(found.positions) > 8 else ""
    return (f"[recall_context result shown in turn {turn} only: {found.hits} line(s) from "
            f"{len(found.blocks)} earlier message(s) ({where}{more}), {found.tokens} tokens; "
            "call recall_context again to read them]")


__all__ = ["ARCHIVE_FILE", "RECALL_TOOL", "RecallCounts", "SessionMemory", "archive_path",
           "open_archive"]
