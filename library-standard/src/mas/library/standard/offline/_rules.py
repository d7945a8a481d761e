"""What the offline model answers: five rules, tried in order (docs/offline-model.md).

1. judge   — the request asks for JSON with a "score": a verdict by a fixed rule.
2. tools   — the last user message scripts ``CALL tool_name {json}``: emit the calls one
             by one, then answer with the tool results.
3. summary — the request asks for a summary: an extractive one that keeps identifiers,
             numbers, names and ``key: value`` lines (``offline/mini``: a lossy one that
             paraphrases identifiers away, as small real models do).
4. question — the last user message asks something: the best matching fact still present
             in the request, or "I don't know" — unless the request offers
             ``recall_context``: then it searches the archive first and answers from what
             comes back.
5. otherwise — "Noted."

Everything is a pure function of the request, so the same request gets the same answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from mas.library.standard import patterns
from mas.library.standard.offline._lines import (
    content_score,
    header_date,
    is_greeting,
    speaker_labels,
    split_speaker,
)
from mas.library.standard.offline._text import (
    SKILL_SCORE,
    content_text,
    detail_score,
    is_fact,
    keywords,
    line_sentences,
    lines,
    message_text,
    sentences,
    template,
)
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR
from mas.runtime.context.skills import mask_skills
from mas.runtime.protocols import Message

DONT_KNOW = "I don't know"
"""How every "not in my prompt" answer starts (the judge rule looks for it)."""

NOTHING_TO_KEEP = "Nothing specific to keep."
"""The summary of material without identifiers, numbers or names."""

# Every pattern here reads prompt text, so none may backtrack over a long stretch from
# many starts (issue 26, item 1): trailing spaces are stripped in Python, not by a lazy
# group before ``\s*$``, and white space at a line start does not run on into the next.
_CALL = re.compile(r"^\s*CALL\s+([A-Za-z_][\w\-]*)\s*(.*)")
_SUMMARY_ASK = re.compile(
    r"\bsummar(?:y|ies|i[sz]e|i[sz]ing)\b|\bcondense\b|\bcheckpoint\b", re.IGNORECASE
)
_QUESTION_START = re.compile(
    r"^\s*(what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|"
    r"could|tell me|remind me|recall)\b",
    re.IGNORECASE,
)
_EXPECTED = re.compile(
    r"^[^\S\n]*(?:expected(?: facts?| answer| output)?|reference(?: answer)?)\s*:\s*(.+)$",
    re.IGNORECASE | re.MULTILINE,
)
_LIKERT = re.compile(r"\b1\s*(?:-|–|to)\s*5\b")
_DONT_KNOW = re.compile(r"\bI don't know\b")


@dataclass(frozen=True)
class Answer:
    """The offline model's reply: text and OpenAI ``tool_calls`` entries."""

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    rule: str = ""


def respond(
    messages: list[Message],
    tools: list[dict[str, Any]] | None = None,
    response_format: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    model: str = "default",
) -> Answer:
    """The reply to one request, by the first rule that applies.

    :param model: the offline model's name; ``mini`` writes lossy summaries.
    """
    last_user = _last_index(messages, "user")
    if _wants_judgement(messages, response_format):
        return judge(messages)
    scripted = _scripted_calls(messages[last_user]) if last_user is not None else []
    if scripted:
        return follow_script(messages, last_user or 0, scripted, tools or [])
    if last_user is not None and _tool_results_after(messages, last_user):
        if _recalled(messages, last_user):
            return answer_question(messages, message_text(messages[last_user]))
        return Answer(_tool_summary(messages, last_user), rule="tools")
    if _wants_summary(messages, last_user):
        if model == LOSSY_MODEL:
            return summarize_lossy(messages, max_tokens)
        return summarize(messages, max_tokens)
    if last_user is not None:
        question = message_text(messages[last_user])
        if _is_question(question):
            answer = answer_question(messages, question)
            if answer.text.startswith(DONT_KNOW) and RECALL_TOOL in _tool_names(tools or []):
                return recall_call(question)
            return answer
    return Answer("Noted.", rule="statement")


# ------------------------------------------------------------------------------------
# Detection
# ------------------------------------------------------------------------------------


def _last_index(messages: list[Message], role: str) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == role:
            return index
    return None


def _wants_judgement(messages: list[Message], response_format: dict[str, Any] | None) -> bool:
    if response_format and str(response_format.get("type", "")).startswith("json"):
        return True
    instruction = "\n".join(
        content_text(m.get("content")) for m in messages if m.get("role") in ("system", "user")
    )
    return "JSON" in instruction and '"score"' in instruction


def _wants_summary(messages: list[Message], last_user: int | None) -> bool:
    if (
        last_user is not None
        and last_user == len(messages) - 1
        and _SUMMARY_ASK.search(content_text(messages[last_user].get("content")))
    ):
        return True
    return _out_of_band(messages)


def _out_of_band(messages: list[Message]) -> bool:
    # The out-of-band summarizer shape: a summary instruction as system prompt, then the
    # material as user message(s), no assistant turn yet.
    first = messages[0] if messages else {}
    return (
        first.get("role") == "system"
        and bool(_SUMMARY_ASK.search(content_text(first.get("content"))))
        and not any(m.get("role") == "assistant" for m in messages)
    )


def _is_question(text: str) -> bool:
    return "?" in text or bool(_QUESTION_START.match(text))


# ------------------------------------------------------------------------------------
# Rule 2: scripted tool calls
# ------------------------------------------------------------------------------------


def _scripted_calls(message: Message) -> list[tuple[str, str]]:
    calls = []
    for line in content_text(message.get("content")).splitlines():
        match = _CALL.match(line)
        if match:
            calls.append((match.group(1), match.group(2).strip() or "{}"))
    return calls


def _tool_results_after(messages: list[Message], index: int) -> list[Message]:
    return [m for m in messages[index + 1:] if m.get("role") == "tool"]


def _calls_made_after(messages: list[Message], index: int) -> int:
    return sum(
        len(m.get("tool_calls") or [])
        for m in messages[index + 1:]
        if m.get("role") == "assistant"
    )


def follow_script(
    messages: list[Message], last_user: int, scripted: list[tuple[str, str]],
    tools: list[dict[str, Any]],
) -> Answer:
    """Emit the next scripted call not yet made; when all are made, report their results."""
    done = _calls_made_after(messages, last_user)
    if done >= len(scripted):
        return Answer(_tool_summary(messages, last_user), rule="tools")
    name, raw_args = scripted[done]
    available = sorted(_tool_names(tools))
    if name not in available:
        listing = ", ".join(available) or "none"
        return Answer(
            f"I can't call {name}: it is not among the available tools ({listing}).",
            rule="tools",
        )
    try:
        args = json.loads(raw_args)
    except ValueError:
        return Answer(f"I can't call {name}: its arguments are not valid JSON.", rule="tools")
    arguments = json.dumps(args, sort_keys=True, ensure_ascii=False)
    seed = f"{done}\x1f{name}\x1f{arguments}\x1f{content_text(messages[last_user].get('content'))}"
    call_id = "call_" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return Answer("", [call], rule="tools")


RECALL_TOOL = "recall_context"
"""The session's archive search (docs/context.md, "Recall")."""


def recall_call(question: str) -> Answer:
    """Ask the archive for what the question is about: its keywords as the query."""
    query = " ".join(sorted(keywords(question)))
    arguments = json.dumps({"query": query}, ensure_ascii=False)
    call_id = "call_" + hashlib.sha256(f"recall\x1f{question}".encode()).hexdigest()[:16]
    call = {"id": call_id, "type": "function",
            "function": {"name": RECALL_TOOL, "arguments": arguments}}
    return Answer("", [call], rule="recall")


def _recalled(messages: list[Message], last_user: int) -> bool:
    return any(
        (call.get("function") or {}).get("name") == RECALL_TOOL
        for m in messages[last_user + 1 :] if m.get("role") == "assistant"
        for call in m.get("tool_calls") or []
    )


def _tool_names(tools: list[dict[str, Any]]) -> set[str]:
    names = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def _tool_summary(messages: list[Message], last_user: int) -> str:
    names = {}
    for message in messages[last_user + 1:]:
        for call in message.get("tool_calls") or []:
            names[call.get("id")] = (call.get("function") or {}).get("name", "tool")
    parts = []
    for message in _tool_results_after(messages, last_user):
        name = message.get("name") or names.get(message.get("tool_call_id"), "tool")
        result = " ".join(content_text(message.get("content")).split())
        if len(result) > 400:
            result = result[:397] + "..."
        parts.append(f"{name} returned: {result}")
    return "\n".join(parts) if parts else "No tool results."


# ------------------------------------------------------------------------------------
# Rule 3: extractive summary
# ------------------------------------------------------------------------------------


def summarize(messages: list[Message], max_tokens: int | None) -> Answer:
    """Keep the sentences that carry details, verbatim, in their original order.

    Material: in the replayed-conversation shape, every message except the leading system
    prompt and the final instruction; in the out-of-band shape, every non-system message.
    Candidates are sentences with a positive :func:`_score`; of sentences sharing a
    :func:`template` only the first is kept. Session headers are not lines: their date
    goes before the first line kept from the session (:mod:`._lines`). The summary fits
    ``max_tokens`` estimated tokens (else a sixth of the material's, at least 150), so no
    caller has to cut it: the lowest-scoring sentences go first, the oldest first among
    equals.
    """
    if _out_of_band(messages):
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
        speaker = split_speaker(line, speakers)[0]
        for index, sentence in enumerate(line_sentences(line)):
            shown = f"{speaker}: {sentence}" if speaker and index else sentence
            score = _score(split_speaker(sentence, speakers)[1] if index == 0 else sentence,
                           shown, wanted)
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


# ------------------------------------------------------------------------------------
# Rule 4: questions answered from the prompt
# ------------------------------------------------------------------------------------


def answer_question(messages: list[Message], question: str) -> Answer:
    """The fact sentence sharing the most keywords with the question (ties: the latest).

    Keywords come from the question sentences of the last user message (the whole message
    when it has no "?"). A sentence anywhere in the request — that message included —
    qualifies when it states a fact (see ``is_fact``), is not a question, is not an earlier
    "I don't know", and shares at least half of the question's keywords.
    """
    asked = [s for s in sentences(question) if s.endswith("?")]
    wanted = keywords(" ".join(asked) if asked else question)
    if not wanted:
        return Answer(f"{DONT_KNOW}: the question names nothing to look for.", rule="question")
    needed = max(1, (len(wanted) + 1) // 2)
    best: tuple[int, int] | None = None
    best_sentence = ""
    position = 0
    for message in messages:
        for sentence in sentences(message_text(message)):
            position += 1
            if sentence.startswith(DONT_KNOW) or not is_fact(sentence):
                continue
            score = len(wanted & keywords(sentence))
            if score >= needed and (best is None or (score, position) >= best):
                best = (score, position)
                best_sentence = sentence
    if best is None:
        topic = ", ".join(sorted(wanted))
        return Answer(f"{DONT_KNOW}: nothing in this conversation mentions {topic}.",
                      rule="question")
    return Answer(best_sentence, rule="question")


# ------------------------------------------------------------------------------------
# Rule 1: judge verdicts
# ------------------------------------------------------------------------------------


def judge(messages: list[Message]) -> Answer:
    """``{"score", "reasoning", "evidence": [quotes]}`` by a fixed rule.

    With an ``Expected: a; b`` (or ``Reference:``) line in the prompt: score 1 when every
    expected item occurs, case-insensitively, elsewhere in the prompt. Without one: score 1
    unless the judged material contains an "I don't know" answer. A prompt that mentions a
    1-5 scale gets 5 or 1 instead of 1 or 0.
    """
    prompt = "\n".join(content_text(m.get("content")) for m in messages)
    likert = bool(_LIKERT.search(prompt))
    expected_lines = _EXPECTED.findall(prompt)
    if expected_lines:
        body = _EXPECTED.sub("", prompt).lower()
        items = [i.strip() for line in expected_lines for i in re.split(r"[;|]", line)]
        items = [i for i in items if i]
        missing = [i for i in items if i.lower() not in body]
        passed = not missing
        reasoning = (
            f"all {len(items)} expected item(s) appear in the material"
            if passed else f"{len(missing)} of {len(items)} expected item(s) are missing"
        )
        evidence = items if passed else missing
    else:
        match = _DONT_KNOW.search(prompt)
        passed = match is None
        reasoning = (
            "no reply admits missing information"
            if passed else "a reply says the information is not known"
        )
        evidence = [] if match is None else [_line_at(prompt, match.start())]
    score = (5 if passed else 1) if likert else (1 if passed else 0)
    verdict = {"score": score, "reasoning": reasoning, "evidence": evidence}
    return Answer(json.dumps(verdict, ensure_ascii=False), rule="judge")


def _line_at(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    line = text[start:end if end >= 0 else len(text)].strip()
    return line if len(line) <= 200 else line[:197] + "..."


__all__ = ["DONT_KNOW", "NOTHING_TO_KEEP", "Answer", "respond"]
