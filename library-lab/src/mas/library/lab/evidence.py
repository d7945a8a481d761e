"""Where a probe's evidence lines are when it is asked: in the request, in the summary, or
behind recall (DESIGN §13, "three places a fact can be at question time").

Computed in-process while the probe's session is alive, from the request that produced
the answer, and stored as booleans and shares only (``probes.jsonl``), never as text:

- *verbatim*: the line's text occurs, white space folded and case ignored, in the request
  before the question itself (the system message and the managed history, the summary
  block left out), so this turn's own tool results (a recall the model made) do not count;
- *in the summary*: the line occurs in the summary block of that request; its
  ``summary_words`` is the share of its content words (three letters or more, common
  words left out) the summary holds, for an abstractive summary that keeps the fact in
  other words (the evidence metric's ``summary_words`` threshold decides);
- *recall*: the line occurs in what the session's archive returns for the question
  (``recall_context(question)``'s search, within ``recall_max_tokens``), whether or not the
  model called it.

What this cannot see: a paraphrase with other words, a fact split over several lines of a
summary, or a recalled message shortened past the line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mas.library.eval.metrics.computed import normalize
from mas.runtime.context import AssembledRequest
from mas.runtime.context.archive import message_text
from mas.runtime.protocols import ArchiveSettings, ArchivingManager, Message
from mas.runtime.session import AgentSession

_WORD = re.compile(r"[a-z0-9]+")
_COMMON_WORDS = (
    "the and for are but not you all any can her was one our out "
    "day get has him his how new now see two way who did its let "
    "put say she too use that with have this will your from they know want "
    "been good much some time very when come here just like make many more only "
    "over such take than them well were what said each which their there about would "
    "these other into then also could because being both does done down had may might "
    "must should still those through under until upon where while whom whose why yes yet "
    "really think going got"
)
_COMMON = frozenset(_COMMON_WORDS.split())
"""Words too common to say whether a summary kept a line."""


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry its content (lower case, 3+ characters, not common)."""
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _COMMON}


def request_regions(request: AssembledRequest | None) -> tuple[str, str]:
    """The request's verbatim text and its summary text, both normalized.

    Verbatim is every message before the last user message (the question), the summary
    rows excepted; the summary is those rows (empty when the manager sent none).
    """
    if request is None:
        return "", ""
    managed = request.managed
    summary_rows = [managed.messages[i] for i in range(min(managed.summary_rows,
                                                          len(managed.messages)))]
    messages = list(request.messages)
    question = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
    verbatim = [m for m in messages[:question] if not _is_row(m, summary_rows)]
    sent_summary = [m for m in messages[:question] if _is_row(m, summary_rows)]
    return _joined(verbatim), _joined(sent_summary)


def _is_row(message: Message, rows: Sequence[Message]) -> bool:
    return any(message is row or message == row for row in rows)


def _joined(messages: Sequence[Message]) -> str:
    return normalize("\n".join(message_text(m) for m in messages))


def recall_region(session: AgentSession, question: str) -> str:
    """What the session's recall search returns for ``question``, normalized ('' without
    an archive).

    Every session with an archive counts, the manager's own or the one the session opens
    for what the final trim cut; the search gets ``recall_max_tokens`` (the manager's, else
    the default), not the room a particular request had left.
    """
    archive = session.archive
    if archive is None:
        return ""
    settings = session.cm.archive_settings if isinstance(session.cm, ArchivingManager) \
        else ArchiveSettings()
    # The recall tool's own cut of the query (its 500 characters), for the same results.
    return normalize(archive.search(question[:500], max_tokens=settings.recall_max_tokens)
                     .text())


def locate(evidence: Sequence[str], verbatim: str, summary: str, recalled: str
           ) -> list[dict[str, Any]]:
    """Per evidence line: ``verbatim``, ``summary``, ``summary_words`` and ``recall``."""
    words = content_words(summary)
    located = []
    for line in evidence:
        text = normalize(line)
        wanted = content_words(line)
        share = len(wanted & words) / len(wanted) if wanted else 0.0
        located.append({"verbatim": bool(text) and text in verbatim,
                        "summary": bool(text) and text in summary,
                        "summary_words": round(share, 4),
                        "recall": bool(text) and text in recalled})
    return located
