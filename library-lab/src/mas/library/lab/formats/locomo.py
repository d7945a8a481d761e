"""LoCoMo's JSON (``locomo10.json``, snap-research/locomo) as lab items.

The file is a list of samples::

    {"sample_id": "conv-26",
     "conversation": {"speaker_a": "...", "speaker_b": "...",
                      "session_1_date_time": "1:56 pm on 8 May, 2023",
                      "session_1": [{"speaker": "...", "dia_id": "D1:1", "text": "...",
                                     "img_url": [...], "blip_caption": "..."}, ...], ...},
     "qa": [{"question": "...", "answer": "...", "evidence": ["D1:3"], "category": 2},
            {"question": "...", "adversarial_answer": "...", "evidence": [...], "category": 5}],
     "event_summary": {...}, "observation": {...}, "session_summary": {...}}

One item per sample: a user turn per session (its date header, then each line as
``Speaker: text``, a shared image as its caption), and a probe per question asked after
the last session, with the question's category as its ``kind``, its answer as
``expected`` (none for an adversarial question without one) and its evidence lines'
text resolved from the dia_ids. An evidence entry that names no line is counted on the
probe (``evidence_unresolved``), not fatal: the published file has a few.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mas.library.lab.dataset import Item, UserText
from mas.library.lab.formats._shared import answer_text, built_item, parsed
from mas.runtime.errors import ManifestError, Problem

_SESSION = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"D\d+:\d+")


class Line(BaseModel):
    """One dialog line of a session."""

    model_config = ConfigDict(extra="allow")

    speaker: str = Field(min_length=1)
    dia_id: str = Field(min_length=1)
    text: str
    blip_caption: str | None = None


class Question(BaseModel):
    """One ``qa`` entry."""

    model_config = ConfigDict(extra="allow")

    question: UserText
    answer: str | int | float | None = None
    adversarial_answer: str | None = None
    evidence: list[str] = Field(default_factory=list)
    category: int


class Sample(BaseModel):
    """One element of the file (the summaries and observations are not used)."""

    model_config = ConfigDict(extra="allow")

    sample_id: str = Field(min_length=1)
    conversation: dict[str, Any]
    qa: list[Question] = Field(default_factory=list)


def render_line(line: Line) -> str:
    """A dialog line as the session turn shows it: ``Speaker: text [shares ...]``."""
    text = f"{line.speaker}: {' '.join(line.text.split())}"
    if line.blip_caption:
        text += f" [shares a photo: {' '.join(line.blip_caption.split())}]"
    return text


def locomo_item(element: Any, source: str, where: str) -> Item:
    """One LoCoMo sample as a lab item.

    :raises ManifestError: a missing or mistyped field, a session that is not a list of
        lines, two lines with one dia_id.
    """
    sample = parsed(Sample, element, source, where)
    conversation = sample.conversation
    problems: list[Problem] = []
    speakers = " and ".join(str(conversation[k]) for k in ("speaker_a", "speaker_b")
                            if isinstance(conversation.get(k), str))
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.match(key)))
    turns: list[str] = []
    lines: dict[str, str] = {}
    for number in numbers:
        key = f"session_{number}"
        raw = conversation[key]
        if not isinstance(raw, list):
            problems.append(Problem(source, f"{where}.conversation.{key}",
                                    "must be a list of dialog lines", type(raw).__name__, True))
            continue
        session: list[str] = []
        for index, data in enumerate(raw):
            try:
                line = parsed(Line, data, source, f"{where}.conversation.{key}[{index}]")
            except ManifestError as exc:
                problems.extend(exc.problems)
                continue
            rendered = render_line(line)
            if line.dia_id in lines:
                problems.append(Problem(source, f"{where}.conversation.{key}[{index}].dia_id",
                                        "two lines have this dia_id", line.dia_id, True))
            lines[line.dia_id] = rendered
            session.append(rendered)
        if not session:
            continue  # an empty session says nothing; it gets no turn
        date = conversation.get(f"{key}_date_time")
        header = f"Session {number}" + (f", {' '.join(date.split())}" if isinstance(date, str)
                                        and date.strip() else "")
        header += f" ({speakers})" if speakers else ""
        turns.append(header + "\n" + "\n".join(session))
    if not turns and not problems:
        problems.append(Problem(source, f"{where}.conversation",
                                "has no session_<N> with a dialog line"))
    if problems:
        raise ManifestError(problems)
    probes = [_probe(question, lines, len(turns)) for question in sample.qa]
    return built_item({"id": sample.sample_id, "turns": turns, "probes": probes,
                       "format": "locomo"}, source, where, "sample_id")


def _probe(question: Question, lines: dict[str, str], after: int) -> dict[str, Any]:
    ids: list[str] = []
    unresolved = 0
    for entry in question.evidence:
        found = _DIA_ID.findall(entry)
        unresolved += not found
        ids.extend(found)
    known = [i for i in dict.fromkeys(ids) if i in lines]
    unresolved += len(set(ids)) - len(known)
    return {"turn": after, "question": " ".join(question.question.split()),
            "expected": answer_text(question.answer), "kind": str(question.category),
            "evidence": [lines[i] for i in known], "evidence_ids": known,
            "evidence_unresolved": unresolved}
