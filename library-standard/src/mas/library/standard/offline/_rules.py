"""What the offline model answers: five rules, tried in order (docs/offline-model.md).

1. judge   — the request asks for JSON with a "score": a verdict by a fixed rule.
2. tools   — the last user message scripts ``CALL tool_name {json}``: emit the calls one
             by one, then answer with the tool results.
3. summary — the request asks for a summary: an extractive one that keeps identifiers,
             numbers, names and ``key: value`` lines (``offline/mini``: a lossy one that
             paraphrases identifiers away, as small real models do).
4. question — the last user message asks something (its last line is a question): the
             best matching fact still present in the request, or "I don't know" —
             unless the request offers ``recall_context``: then it searches the archive
             first and answers from what comes back.
5. otherwise — "Noted."

Everything is a pure function of the request, so the same request gets the same answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from mas.library.standard.offline._answer import DONT_KNOW, NOTHING_TO_KEEP, Answer
from mas.library.standard.offline._summary import (
    LOSSY_MODEL,
    summarize,
    summarize_lossy,
    wants_summary,
)
from mas.library.standard.offline._text import (
    content_text,
    is_fact,
    keywords,
    line_sentences,
    lines,
    message_text,
    query_words,
    sentences,
)
from mas.runtime.protocols import Message

# Every pattern here reads prompt text, so none may backtrack over a long stretch from
# many starts (issue 26, item 1): trailing spaces are stripped in Python, not by a lazy
# group before ``\s*$``, and white space at a line start does not run on into the next.
_CALL = re.compile(r"^\s*CALL\s+([A-Za-z_][\w\-]*)\s*(.*)")
_QUESTION_START = re.compile(
    r"^\s*(what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|"
    r"could|tell me|remind me|recall)\b",
    re.IGNORECASE,
)
_EXPECTED = re.compile(
    r"^[^\S\n]*(?:expected(?: facts?| answer| output)?|reference(?: answer)?)\s*:\s*(.+)$",
    re.IGNORECASE | re.MULTILINE,
)
# A line of a pasted dialog: a speaker's name (one to three capitalised words), a colon.
_SPEAKER_LINE = re.compile(r"^\s*[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,2}:\s")
_LIKERT = re.compile(r"\b1\s*(?:-|–|to)\s*5\b")
_DONT_KNOW = re.compile(r"\bI don't know\b")


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
    if wants_summary(messages, last_user):
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


def _is_question(text: str) -> bool:
    # The last line decides: a pasted transcript holds other people's questions, and a
    # model told to read along notes it rather than answering (or recalling for) them.
    # So does a dialog that ends on a speaker's line: that question is the other
    # speaker's to answer.
    said = lines(text)
    last = said[-1] if said else ""
    if _is_dialog_line(last, said):
        return False
    return "?" in last or bool(_QUESTION_START.match(last))


def _is_dialog_line(last: str, said: list[str]) -> bool:
    """``last`` is a speaker's line of a dialog: its speaker spoke earlier, and so did
    another (``key: value`` lines name a different key each, so they are no dialog)."""
    speaker = _SPEAKER_LINE.match(last)
    if speaker is None:
        return False
    speakers = [m.group(0).strip() for line in said[:-1] if (m := _SPEAKER_LINE.match(line))]
    return speaker.group(0).strip() in speakers and len(set(speakers)) > 1


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
    """Ask the archive for what the question is about: the content words of the question
    sentences of its last line (the line that made it a question, whole when none ends in
    "?"), in order, as a model writes a query; several go separated by ``;``."""
    last = lines(question)[-1:]
    said = line_sentences(last[0]) if last else []
    asked = [s for s in said if s.endswith("?")] or said
    query = "; ".join(" ".join(words) for s in asked if (words := query_words(s)))
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
