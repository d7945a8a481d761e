"""Seeded synthetic agent sessions in OpenAI chat format, shared by every benchmark.

A session is a list of user turns. Each turn is the user message, zero to two rounds of
parallel tool calls (one to three calls, each answered by a ``tool`` result), and the
final assistant answer. 4 % of tool results are 20,000–60,000 characters; the rest are a
few hundred to two thousand. The first turns plant facts (``FACT-xxxx`` codes) that the
last turn asks about, so a strategy that silently loses history loses them too.

The same seed always gives the same session, so every strategy and every peer sees
byte-identical messages.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]

WORDS = (
    "the", "order", "invoice", "customer", "shipment", "warehouse", "delayed", "refund",
    "status", "ticket", "account", "priority", "region", "server", "latency", "deploy",
    "rollback", "branch", "release", "note", "schedule", "meeting", "budget", "quarter",
    "forecast", "supplier", "contract", "renewal", "payment", "overdue", "address", "route",
    "driver", "parcel", "label", "inventory", "stock", "count", "audit", "report", "draft",
    "review", "approve", "reject", "escalate", "resolve", "pending", "confirm", "update",
    "cancel", "request", "reply", "summary", "detail", "error", "timeout", "retry", "cache",
    "index", "query", "result", "table", "column", "value", "field", "record", "batch",
    "job",
)
TOOLS = ("search_orders", "get_invoice", "lookup_customer", "fetch_logs", "read_file")
BIG_SHARE = 0.04
"""Share of tool results that are 20–60k characters."""


@dataclass(frozen=True)
class Shape:
    """How a session's turns are drawn: tool rounds per turn, calls per round, result sizes.

    The defaults are the shape of issue 7's figures (most turns one round or none, one to
    three parallel calls, results of a few hundred to two thousand characters); the draws
    happen in the same order whatever the shape, so a seed always gives the same session.
    A workload with another shape overrides :meth:`rounds` or :meth:`calls`.

    :ivar big_share: share of tool results drawn from ``big_chars``.
    :ivar big_chars: size range, in characters, of the large tool results.
    :ivar small_chars: size range of the others.
    :ivar codes: give every tool-result row a reference code (``ORD-48213``), as order
        and ticket tools do; the prose lower-cases its codes, so without this the
        identifier check finds little but the planted facts.
    """

    big_share: float = BIG_SHARE
    big_chars: tuple[int, int] = (20_000, 60_000)
    small_chars: tuple[int, int] = (200, 2_000)
    codes: bool = False

    def rounds(self, rng: random.Random) -> int:
        """Tool rounds of one turn: none for 40 % of turns, two for 30 % of the rest."""
        if rng.random() < 0.6:
            return 2 if rng.random() < 0.3 else 1
        return 0

    def calls(self, rng: random.Random) -> int:
        """Parallel tool calls of one round."""
        return rng.randint(1, 3)

    def size(self, rng: random.Random) -> int:
        """Characters of one tool result."""
        return rng.randint(*self.big_chars) if rng.random() < self.big_share \
            else rng.randint(*self.small_chars)


@dataclass
class Turn:
    """One user turn: its messages in order, and the planted fact it carries (if any)."""

    messages: list[Message]
    fact: str | None = None

    @property
    def user(self) -> Message:
        """The turn's user message."""
        return self.messages[0]


@dataclass
class Session:
    """A whole synthetic session and the facts planted in it."""

    seed: int
    turns: list[Turn]
    system: str
    facts: list[str] = field(default_factory=list)

    def messages(self, turns: int | None = None) -> list[Message]:
        """Every message of the first ``turns`` turns (all by default), in order."""
        return [m for t in self.turns[:turns] for m in t.messages]


SHORT = (
    "the", "a", "to", "of", "in", "and", "is", "for", "on", "it", "we", "you", "this",
    "that", "was", "with", "at", "by", "as", "be",
)
"""Function words: prose is about half of them, as real prose is."""


def _word(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(SHORT)
    if roll < 0.56:
        return f"{rng.choice(('INV', 'ORD', 'TK', 'SKU'))}-{rng.randint(100, 99999)}"
    if roll < 0.62:
        return str(rng.randint(1, 2_000))
    word = rng.choice(WORDS)
    return word + "," if roll > 0.97 else word


def _sentence(rng: random.Random, words: int) -> str:
    chosen = [_word(rng) for _ in range(words)]
    return " ".join(chosen).capitalize() + "."


def _text(rng: random.Random, words: int) -> str:
    out: list[str] = []
    left = words
    while left > 0:
        n = min(left, rng.randint(6, 16))
        out.append(_sentence(rng, n))
        left -= n
    return " ".join(out)


def _tool_result(rng: random.Random, call_id: str, name: str, size: int, codes: bool) -> str:
    rows = []
    length = 0
    while length < size:
        row: dict[str, object] = {"id": rng.randint(1000, 99999)}
        if codes:
            row["ref"] = f"{rng.choice(('INV', 'ORD', 'TK', 'SKU'))}-{rng.randint(100, 99999)}"
        row["status"] = rng.choice(WORDS)
        row["note"] = _sentence(rng, rng.randint(4, 10))
        text = json.dumps(row)
        rows.append(text)
        length += len(text) + 2
    return f'{{"tool": "{name}", "call": "{call_id}", "rows": [' + ", ".join(rows) + "]}"


def make_session(
    turns: int, seed: int = 7, *, facts: int = 5, shape: Shape | None = None
) -> Session:
    """A seeded session of ``turns`` user turns; the first ``facts`` turns plant facts.

    :param shape: how turns are drawn (default: :class:`Shape`'s defaults).
    """
    shape = shape or Shape()
    rng = random.Random(seed)
    system = "You are a support operations agent. " + _text(rng, 60)
    out: list[Turn] = []
    planted: list[str] = []
    for t in range(turns):
        fact = None
        text = _text(rng, rng.randint(15, 90))
        if t < facts:
            fact = f"FACT-{rng.randint(1000, 9999)}"
            planted.append(fact)
            text = f"Please remember that the reference for item {t} is {fact}. {text}"
        if t == turns - 1 and planted:
            text = "Which references did I ask you to remember at the start? " + text
        messages: list[Message] = [{"role": "user", "content": text}]
        for r in range(shape.rounds(rng)):
            calls = []
            for k in range(shape.calls(rng)):
                name = rng.choice(TOOLS)
                args = json.dumps({"query": _sentence(rng, rng.randint(2, 6)),
                                   "limit": rng.randint(5, 50)})
                calls.append({"id": f"call_{t}_{r}_{k}", "type": "function",
                              "function": {"name": name, "arguments": args}})
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for call in calls:
                messages.append({
                    "role": "tool", "tool_call_id": call["id"],
                    "content": _tool_result(rng, call["id"], call["function"]["name"],
                                            shape.size(rng), shape.codes),
                })
        messages.append({"role": "assistant", "content": _text(rng, rng.randint(20, 120))})
        out.append(Turn(messages, fact))
    return Session(seed, out, system, planted)


def requests_of(turn: Turn) -> list[tuple[Message, list[Message]]]:
    """The model calls of one turn: (current user message, working memory so far).

    A turn with ``r`` tool rounds makes ``r + 1`` calls: one before each round's tool
    calls and one for the final answer.
    """
    user, rest = turn.messages[0], turn.messages[1:]
    calls: list[tuple[Message, list[Message]]] = [(user, [])]
    for i, message in enumerate(rest):
        if message.get("role") == "tool" and (
            i + 1 == len(rest) or rest[i + 1].get("role") != "tool"
        ):
            calls.append((user, rest[: i + 1]))
    return calls
