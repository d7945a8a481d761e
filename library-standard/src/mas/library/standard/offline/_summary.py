"""Rule 3 of the offline model: extractive summaries (docs/offline-model.md).

``offline/default`` keeps the sentences that carry details, verbatim, within its room;
``offline/mini`` paraphrases identifiers away, as small real models do, so that the
identifier check has something to repair.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from mas.library.standard import patterns
from mas.library.standard.offline._answer import NOTHING_TO_KEEP, Answer
from mas.library.standard.offline._lines import (
    content_score,
    header_date,
    is_greeting,
    speaker_labels,
    split_date,
    split_speaker,
)
from mas.library.standard.offline._text import (
    SKILL_SCORE,
    content_text,
    detail_score,
    line_sentences,
    lines,
    message_text,
    template,
)
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR
from mas.runtime.context.skills import mask_skills
from mas.runtime.protocols import Message

_SUMMARY_ASK = re.compile(
    r"\bsummar(?:y|ies|i[sz]e|i[sz]ing)\b|\bcondense\b|\bcheckpoint\b", re.IGNORECASE
)


def wants_summary(messages: list[Message], last_user: int | None) -> bool:
    """Whether the request asks for a summary: its last message (the user's) does, or it
    has the out-of-band summarizer shape."""
    if (
        last_user is not None
        and last_user == len(messages) - 1
        and _SUMMARY_ASK.search(content_text(messages[last_user].get("content")))
    ):
        return True
    return out_of_band(messages)


def out_of_band(messages: list[Message]) -> bool:
    """The out-of-band summarizer shape: a summary instruction as system prompt, then the
    material as user message(s), no assistant turn yet."""
    first = messages[0] if messages else {}
    return (
        first.get("role") == "system"
        and bool(_SUMMARY_ASK.search(content_text(first.get("content"))))
        and not any(m.get("role") == "assistant" for m in messages)
    )


def summarize(messages: list[Message], max_tokens: int | None) -> Answer:
    """Keep the lines and sentences that carry details, verbatim, in their original order.

    A speaker's line (a conversation) is one candidate, scored as the sum of its
    sentences and kept whole; other material is cut into sentences.

    Material: in the replayed-conversation shape, every message except the leading system
    prompt and the final instruction; in the out-of-band shape, every non-system message.
    Candidates are sentences with a positive :func:`_score`; of sentences sharing a
    :func:`template` only the first is kept. Session headers are not lines: their date
    goes before the first line kept from the session (:mod:`._lines`). The summary fits
    ``max_tokens`` estimated tokens (else a sixth of the material's, at least 150), so no
    caller has to cut it: the lowest-scoring sentences go first, the oldest first among
    equals.
    """
    if out_of_band(messages):
        material = [m for m in messages if m.get("role") != "system"]
    else:
        # Drop the agent's system prompt and the instruction; keep later system rows
        # (an earlier summary must survive the update).
        start = 1 if messages and messages[0].get("role") == "system" else 0
        material = messages[start:-1]
    texts = [message_text(mask_skills(message)) for message in material]
    speakers = speaker_labels(texts)
    wanted = _asked_to_quote(messages)
    kept: list[_Kept] = []
    seen: set[str] = set()
    session: tuple[int, str | None] = (0, None)
    for line in (line for text in texts for line in lines(text)):
        header, date = header_date(line)
        if header:
            session = (session[0] + 1, date)
            continue
        date, line = split_date(line)
        if date is not None:
            # An earlier summary's line, dated as _fit writes it: its session again.
            session = (session[0] + 1, date)
        speaker = split_speaker(line, speakers)[0]
        scored = []
        for index, sentence in enumerate(line_sentences(line)):
            shown = f"{speaker}: {sentence}" if speaker and index else sentence
            score = _score(split_speaker(sentence, speakers)[1] if index == 0 else sentence,
                           shown, wanted)
            scored.append((score, shown))
        if speaker:
            # A speaker's line is kept whole or not at all: it is how the conversation
            # said it, and what a reader (or the evidence metric) finds again.
            scored = [(sum(score for score, _ in scored), line)]
        for score, shown in scored:
            shape = template(shown)
            if score and shape not in seen:
                seen.add(shape)
                kept.append(_Kept(score, shown, *session))
    budget = max_tokens or max(150, DEFAULT_ESTIMATOR.text("\n".join(texts)) // 6)
    summary = _fit(kept, budget)
    return Answer("\n".join(summary) if summary else NOTHING_TO_KEEP, rule="summary")


@dataclass(frozen=True)
class _Kept:
    """A candidate line of the summary: its score, text, and session (number, date)."""

    score: int
    text: str
    session: int
    date: str | None


def _score(utterance: str, shown: str, wanted: list[str]) -> int:
    """What a sentence is worth to a summary: its details (:func:`detail_score`) and
    content (:func:`content_score`); greetings nothing; the identifiers the request asks
    to quote (the identifier check's re-ask) outrank everything but skill markers."""
    score = detail_score(utterance)
    if score >= SKILL_SCORE or utterance.endswith("?"):
        return score
    if is_greeting(utterance):
        return 0
    score += content_score(utterance)
    if any(identifier in shown for identifier in wanted):
        score += SKILL_SCORE // 10
    return score


def _fit(kept: list[_Kept], budget: int) -> list[str]:
    """The summary's lines within ``budget`` estimated tokens (each line's estimate plus
    one for its line break bounds the whole text's)."""
    cost = [DEFAULT_ESTIMATOR.text(f"- {k.text}") + 1 for k in kept]
    dated = Counter(k.session for k in kept if k.date)
    date_cost = {k.session: DEFAULT_ESTIMATOR.text(f"[{k.date}] ") for k in kept if k.date}
    used = sum(cost) + sum(date_cost.values())
    dropped: set[int] = set()
    order = sorted(range(len(kept)), key=lambda i: (kept[i].score, i))
    # First only lines whose session keeps another: a session's date (an identifier the
    # check looks for) goes last, after every session has been cut to one line.
    for last_too in (False, True):
        for index in order:
            if used <= budget:
                break
            session = kept[index].session
            if index in dropped or (kept[index].date and dated[session] == 1 and not last_too):
                continue
            dropped.add(index)
            used -= cost[index]
            if kept[index].date:
                dated[session] -= 1
                used -= date_cost[session] if not dated[session] else 0
    out: list[str] = []
    last = -1
    for index, k in enumerate(kept):
        if index in dropped:
            continue
        prefix = f"[{k.date}] " if k.date and k.session != last else ""
        last = k.session
        out.append(f"- {prefix}{k.text}")
    return out


def _asked_to_quote(messages: list[Message]) -> list[str]:
    """The identifiers the request's instructions ask to quote exactly (none: ``[]``)."""
    asked = (m for m in messages if m.get("role") in ("system", "user"))
    return next(
        (found.group(1).split("; ") for m in asked
         if (found := _MUST_QUOTE.search(message_text(m)))),
        [],
    )


LOSSY_MODEL = "mini"
"""``offline/mini``: the summarizer that loses identifiers (docs/offline-model.md)."""

_PARAPHRASE = (
    (patterns.EMAIL, "an e-mail address"),
    (patterns.AMOUNT, "an amount"),
    (patterns.CODE, "the reference"),
    (re.compile(r"\b\d[\d.,:/-]*\d\b|\b\d{3,}\b"), "a number"),
    (re.compile(r"(?<=[a-z0-9,;] )[A-Z][a-z]+(?: [A-Z][a-z]+)*"), "someone"),
)
_MUST_QUOTE = re.compile(
    r"must quote each of these identifiers exactly as written: ([^\n]+?)\.(?:\s|$)"
)


_NOT_CLAUSE = frozenset('"[]{}\n')
"""Characters that end a clause, besides a full stop ending a sentence."""


def _in_clause(text: str, index: int) -> bool:
    """Whether ``text[index]`` belongs to a clause: no quote, bracket or newline, and a
    full stop only inside a token (followed by a non-space)."""
    char = text[index]
    if char == ".":
        return index + 1 < len(text) and not text[index + 1].isspace()
    return char not in _NOT_CLAUSE


def clause_around(material: str, identifier: str) -> str | None:
    """The clause of ``material`` around the first occurrence of ``identifier`` (through
    the last occurrence the same clause holds), or ``None`` when it does not occur.

    A scan out from ``str.find``: a regular expression with a clause on either side of the
    identifier tries every start position over the whole material, which made each
    summary of a long session cost seconds.
    """
    first = material.find(identifier)
    if first < 0:
        return None
    start = first
    while start > 0 and _in_clause(material, start - 1):
        start -= 1
    run_end = first
    while run_end < len(material) and _in_clause(material, run_end):
        run_end += 1
    stop = material.rfind(identifier, first, run_end + len(identifier)) + len(identifier)
    while stop < len(material) and _in_clause(material, stop):
        stop += 1
    return material[start:stop]


def summarize_lossy(messages: list[Message], max_tokens: int | None) -> Answer:
    """What a small model often writes: the gist, with identifiers paraphrased away.

    The extractive summary's sentences with every code, amount, number, e-mail and name
    replaced by a phrase ("the reference", "an amount", ...). Asked to quote identifiers
    (the identifier check's re-ask), it quotes the first half of them and forgets the
    rest — so both the re-ask and the appended section show in a run.
    """
    text = summarize(messages, max_tokens).text
    for pattern, phrase in _PARAPHRASE:
        text = patterns.substitute(pattern, phrase, text)
    wanted = _asked_to_quote(messages)
    quoted = []
    material = " ".join(message_text(m) for m in messages if m.get("role") == "user")
    for identifier in wanted[: (len(wanted) + 1) // 2]:
        # The clause around the identifier, without the JSON framing of the input.
        clause = clause_around(material, identifier)
        quoted.append(" ".join(clause.split()) if clause is not None else identifier)
    if quoted:
        text += "\nKey references: " + " ".join(q.rstrip(".") + "." for q in quoted)
    return Answer(text, rule="summary")
