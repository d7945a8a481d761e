"""Lenient reading of a judge's reply: find its final JSON object and check the score.

Judges wrap JSON in code fences, add a sentence after it, or echo JSON they saw in the
judged material before giving their own verdict. Only the *last* complete top-level JSON
object in the reply is taken as the verdict, so a quoted object earlier in the reply
cannot stand in for it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from mas.library.eval.metrics.base import Unit


class VerdictError(ValueError):
    """A reply that cannot be used as a vote; the message is quoted back to the judge."""


@dataclass(frozen=True)
class Verdict:
    """One judge's parsed answer.

    :ivar score: the score, inside the metric's unit range.
    :ivar reasoning: the judge's short justification.
    :ivar evidence: quotes the judge gave from the judged material.
    """

    score: float
    reasoning: str = ""
    evidence: list[str] = field(default_factory=list)


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text`` that parses, in order of appearance.

    Scans braces outside JSON strings, so braces inside string values do not confuse it;
    anything around the objects (prose, code fences) is ignored.
    """
    found: list[dict[str, Any]] = []
    depth = 0
    start = -1
    in_string = False
    escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"' and depth > 0:
            in_string = True
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                _append_object(text[start : index + 1], found)
    return found


def _append_object(candidate: str, found: list[dict[str, Any]]) -> None:
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError:
        return
    if isinstance(value, dict):
        found.append(value)


def parse_verdict(text: str, unit: Unit, *, score_keys: tuple[str, ...] = ("score",),
                  reasoning_keys: tuple[str, ...] = ("reasoning",)) -> Verdict:
    """Read the judge's final JSON object as a :class:`Verdict` on ``unit``'s scale.

    :param score_keys: field names that hold the score, first match wins (MCE's schema
        asks for ``metric_score``; a judge that answers ``score`` is understood too).
    :param reasoning_keys: likewise for the reasoning (``score_reasoning`` for MCE).
    :raises VerdictError: no JSON object, no usable score, or a score out of range;
        the message says which, for the re-ask.
    """
    objects = [obj for obj in json_objects(text) if any(key in obj for key in score_keys)]
    if not objects:
        if json_objects(text):
            raise VerdictError(f'the JSON object has no "{score_keys[0]}" field')
        raise VerdictError("no JSON object found in the reply")
    verdict = objects[-1]
    score = _number(next(verdict[key] for key in score_keys if key in verdict), score_keys[0])
    problem = unit.problem(score)
    if problem:
        raise VerdictError(problem)
    reasoning = next((verdict[key] for key in reasoning_keys if key in verdict), "")
    return Verdict(
        score=score,
        reasoning=reasoning if isinstance(reasoning, str) else json.dumps(reasoning),
        evidence=_quotes(verdict.get("evidence")),
    )


def _number(raw: Any, key: str = "score") -> float:
    # bool is an int subclass; "true" is not a score on any of our scales.
    if isinstance(raw, bool) or raw is None:
        raise VerdictError(f'"{key}" must be a number (got {raw!r})')
    if isinstance(raw, str):
        try:
            raw = float(raw.strip())
        except ValueError:
            raise VerdictError(f'"{key}" must be a number (got {raw!r})') from None
    if not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise VerdictError(f'"{key}" must be a finite number (got {raw!r})')
    return float(raw)


def _quotes(raw: Any) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw] if raw.strip() else []
    if isinstance(raw, list):
        return [item if isinstance(item, str) else json.dumps(item) for item in raw if item]
    return [json.dumps(raw)]
