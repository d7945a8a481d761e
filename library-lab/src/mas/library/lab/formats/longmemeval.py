"""LongMemEval's JSON (``longmemeval_s.json``, ``_m``, ``_oracle``; xiaowu0162/LongMemEval).

The file is a list of instances, each with its own chat history::

    {"question_id": "e47becba", "question_type": "single-session-user",
     "question": "...", "answer": "...", "question_date": "2023/05/30 (Tue) 23:40",
     "haystack_session_ids": ["s1", ...], "haystack_dates": ["2023/05/20 (Sat) 02:21", ...],
     "haystack_sessions": [[{"role": "user", "content": "...", "has_answer": true}, ...], ...],
     "answer_session_ids": ["s1"]}

One item per instance: a user turn per haystack session in file order (its id and date
header, then each turn as ``role: content``), and one probe asked after the last session,
prefixed with the question date, with the question type as its ``kind`` and the
``has_answer`` turns as its evidence. The ``_oracle`` file keeps only the evidence
sessions, not sorted by date; they are played in file order too.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mas.library.lab.dataset import Item, UserText
from mas.library.lab.formats._shared import answer_text, built_item, parsed
from mas.runtime.errors import ManifestError, Problem


class ChatTurn(BaseModel):
    """One turn of a haystack session."""

    model_config = ConfigDict(extra="allow")

    role: str = Field(min_length=1)
    content: str
    has_answer: bool = False


class Instance(BaseModel):
    """One element of the file."""

    model_config = ConfigDict(extra="allow")

    question_id: str = Field(min_length=1)
    question_type: str = ""
    question: UserText
    answer: str | int | float | None = None
    question_date: str | None = None
    haystack_session_ids: list[str | int] = Field(default_factory=list)
    haystack_dates: list[str] = Field(default_factory=list)
    haystack_sessions: list[list[ChatTurn]] = Field(min_length=1)
    answer_session_ids: list[str | int] = Field(default_factory=list)


def render_turn(turn: ChatTurn) -> str:
    """A chat turn as the session turn shows it: ``role: content``."""
    return f"{turn.role}: {turn.content.strip()}"


def longmemeval_item(element: Any, source: str, where: str) -> Item:
    """One LongMemEval instance as a lab item.

    :raises ManifestError: a missing or mistyped field, ids or dates that do not match the
        sessions one for one.
    """
    instance = parsed(Instance, element, source, where)
    sessions = instance.haystack_sessions
    problems = [Problem(source, f"{where}.{name}", f"has {len(values)} entries for "
                        f"{len(sessions)} haystack_sessions", len(values), True)
                for name, values in (("haystack_session_ids", instance.haystack_session_ids),
                                     ("haystack_dates", instance.haystack_dates))
                if values and len(values) != len(sessions)]
    if problems:
        raise ManifestError(problems)
    turns: list[str] = []
    evidence: list[str] = []
    for index, session in enumerate(sessions):
        if not session:
            continue  # an empty session says nothing; it gets no turn
        header = "Session " + (str(instance.haystack_session_ids[index])
                               if instance.haystack_session_ids else str(index + 1))
        if instance.haystack_dates:
            header += f", {instance.haystack_dates[index]}"
        rendered = [render_turn(turn) for turn in session]
        evidence.extend(text for turn, text in zip(session, rendered, strict=True)
                        if turn.has_answer)
        turns.append(header + "\n" + "\n".join(rendered))
    if not turns:
        raise ManifestError([Problem(source, f"{where}.haystack_sessions",
                                     "every session is empty")])
    question = " ".join(instance.question.split())
    if instance.question_date:
        question = f"(Today is {instance.question_date}.) {question}"
    probe = {"turn": len(turns), "question": question, "kind": instance.question_type,
             "expected": answer_text(instance.answer), "evidence": evidence}
    return built_item({"id": instance.question_id, "turns": turns, "probes": [probe],
                       "format": "longmemeval"}, source, where, "question_id")
