"""What one recall returns: the best passages with their context, within a token budget.

The archive ranks *lines* (a message's text split at new lines); a conversation's facts
sit on lines, and a session folded as one message holds dozens of them. Each line that
ranks is offered with its neighbours (the line before and after, across message
boundaries, so a reply comes with its question) and its message's first line (a session's
date or header). Offers are taken best-first while they fit the budget; one that does
not fit whole is taken as the bare line, and a first line larger than the budget alone
is shortened in the middle. The ranked line itself comes whole whenever it fits what is
left (an evidence line cut in the middle is no longer the evidence); the lines around
it are capped at a third of the budget each, and at :data:`CONTEXT_SHARE` of it in all, so
context never crowds out the next best hit (a hit whose context no longer fits comes bare).
A line whose text was already recalled (a greeting, a question asked again) is not offered
twice: it would spend the budget on nothing new.
The text comes back grouped by message, best match first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mas.runtime.context.estimate import TokenEstimator
from mas.runtime.context.shorten import shorten_middle

HEADING = "Recalled, best match first:"
"""The first line of every non-empty recall result."""

CONTEXT_SHARE = 0.5
"""Share of a recall's budget that the lines around its hits may take, in all."""

GAP = "..."
"""Stands where lines of a message were left out."""

Lines = Callable[[int], tuple[str, list[str]] | None]
"""Role and lines of the archived message at a position (``None``: not archived)."""


@dataclass
class Block:
    """The recalled lines of one archived message.

    :ivar position: the message's absolute position in the conversation.
    :ivar role: its role.
    :ivar lines: line number → text (a line too long for the budget comes shortened).
    """

    position: int
    role: str
    lines: dict[int, str] = field(default_factory=dict)

    def label(self) -> str:
        """``[#12 user]``: where the lines come from."""
        return f"[#{self.position} {self.role}]"

    def render(self) -> list[str]:
        """The label, then the lines in order with :data:`GAP` where some were left out."""
        out = [self.label()]
        previous = -1
        for number in sorted(self.lines):
            if number > previous + 1:
                out.append(GAP)
            out.append(self.lines[number])
            previous = number
        return out


@dataclass
class Recalled:
    """The result of one recall.

    :ivar blocks: the recalled messages, best match first.
    :ivar tokens: estimated tokens of :meth:`text` (an upper bound).
    :ivar questions: questions searched.
    :ivar terms: terms searched, over all questions.
    :ivar hits: ranked lines taken (each with its context).
    """

    blocks: list[Block] = field(default_factory=list)
    tokens: int = 0
    questions: int = 0
    terms: int = 0
    hits: int = 0

    @property
    def positions(self) -> list[int]:
        """Positions of the recalled messages, best match first."""
        return [block.position for block in self.blocks]

    def text(self) -> str:
        """The recall as the model reads it ("" when nothing was found)."""
        if not self.blocks:
            return ""
        return "\n".join([HEADING, *(line for b in self.blocks for line in b.render())])


class Selection:
    """Best-first selection of ranked lines within ``max_tokens`` (module docstring).

    :param max_tokens: the budget of :meth:`Recalled.text`.
    :param estimator: counts the tokens.
    :param lines_of: reads an archived message's role and lines.
    """

    def __init__(self, max_tokens: int, estimator: TokenEstimator, lines_of: Lines) -> None:
        self.est = estimator
        self.lines_of = lines_of
        self.left = max_tokens - estimator.text(HEADING) - 1
        # A line longer than this is shortened, so one long line cannot fill the budget.
        self.line_cap = max(max_tokens // 3, 16)
        self.context_left = int(max_tokens * CONTEXT_SHARE)
        self.result = Recalled()
        self._blocks: dict[int, Block] = {}
        self._cache: dict[int, tuple[str, list[str]] | None] = {}
        self._texts: set[str] = set()

    def _source(self, position: int) -> tuple[str, list[str]] | None:
        if position not in self._cache:
            self._cache[position] = self.lines_of(position)
        return self._cache[position]

    def _line(self, text: str, cap: int) -> tuple[str, int]:
        cost = self.est.text(text)
        if cost > cap:
            text = shorten_middle(text, self.est.chars_for(cap, like=text))
            cost = self.est.text(text)
        return text, cost + 2  # its new line, and a gap marker it may open

    def _wanted(self, position: int, line: int, lines: list[str]) -> list[tuple[int, int]]:
        """The hit, then its message's first line, then the lines around it."""
        wanted = [(position, line)]
        if line > 1:
            wanted.append((position, 0))
        if line > 0:
            wanted.append((position, line - 1))
        else:
            before = self._source(position - 1)
            if before is not None and before[1]:
                wanted.append((position - 1, len(before[1]) - 1))
        if line + 1 < len(lines):
            wanted.append((position, line + 1))
        elif self._source(position + 1):
            wanted.append((position + 1, 0))
        return wanted

    def _cost(self, wanted: list[tuple[int, int]]
              ) -> tuple[int, int, list[tuple[int, int, str]]]:
        """What taking ``wanted`` costs in all and in context (beyond the hit), and the
        lines it adds."""
        cost = hit_cost = 0
        new_blocks: set[int] = set()
        picked: list[tuple[int, int, str]] = []
        for position, number in wanted:
            block = self._blocks.get(position)
            if block is not None and number in block.lines:
                continue
            source = self._source(position)
            if source is None or number >= len(source[1]) or (
                    picked and source[1][number] in self._texts):
                continue
            if block is None and position not in new_blocks:
                new_blocks.add(position)
                cost += self.est.text(f"[#{position} {source[0]}]") + 1
            # The hit itself comes whole when it fits what is left (an evidence line cut
            # in the middle is no longer the evidence); the lines around it, and a hit
            # too long for the rest of the budget, are capped so none can fill it.
            line = source[1][number]
            whole = (position, number) == wanted[0] and self.est.text(line) + 2 <= self.left
            text, line_cost = self._line(line, self.left if whole else self.line_cap)
            cost += line_cost
            if (position, number) == wanted[0]:
                hit_cost = cost
            picked.append((position, number, text))
        return cost, cost - hit_cost, picked

    def offer(self, position: int, line: int) -> bool:
        """Take the ranked line ``line`` of message ``position`` if it fits; ``True`` if taken."""
        source = self._source(position)
        if source is None or line >= len(source[1]) or self.left <= 0:
            return False
        if source[1][line] in self._texts:
            return False
        for wanted in (self._wanted(position, line, source[1]), [(position, line)]):
            cost, context, picked = self._cost(wanted)
            if not picked:
                return False  # already recalled with an earlier, better line
            if cost <= self.left and context <= self.context_left:
                self.context_left -= context
                self._take(picked, cost)
                return True
        if self._blocks:
            return False
        # Nothing recalled yet and this line alone is over the budget: shorten it to fit.
        label = self.est.text(f"[#{position} {source[0]}]") + 1
        text, cost = self._line(source[1][line], max(self.left - label - 2, 1))
        if label + cost > self.left:
            return False
        self._take([(position, line, text)], label + cost)
        return True

    def _take(self, picked: list[tuple[int, int, str]], cost: int) -> None:
        for position, number, text in picked:
            block = self._blocks.get(position)
            if block is None:
                role = (self._source(position) or ("", []))[0]
                block = self._blocks[position] = Block(position, role)
                self.result.blocks.append(block)
            block.lines[number] = text
            self._texts.add((self._source(position) or ("", []))[1][number])
        self.left -= cost
        self.result.hits += 1

    def finish(self, questions: int, terms: int) -> Recalled:
        """The result, with its counts."""
        result = self.result
        result.questions, result.terms = questions, terms
        result.tokens = self.est.text(result.text()) if result.blocks else 0
        return result


__all__ = ["GAP", "HEADING", "Block", "Recalled", "Selection"]
