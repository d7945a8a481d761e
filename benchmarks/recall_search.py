"""Recall search against Okapi BM25 on a long, dated, two-person conversation.

The conversation is generated (seeded) in the shape of LoCoMo: two speakers, dated
sessions of dialog lines — a few facts among chit-chat, the other speaker saying similar
things — and questions that carry the ids of their evidence lines, a fifth of them needing
two lines from different sessions. Questions are worded as people ask them, not as the
lines say it (``started`` / ``start``, ``activity`` / ``activities``).

The whole conversation goes into one :class:`~mas.runtime.context.archive.Archive` in
two layouts: a session per message (a header line with its date, then its dialog lines)
and a dialog line per message. Per question, each method returns what fits in the same
token budget (the archive's own estimator counts both), and a question counts when every
one of its evidence lines is in what came back:

- ``recall`` — :meth:`Archive.search` with the question as the query;
- ``recall, stemmed query`` — the same with the question cut to crude stems, as the
  offline model queries (``excit``, ``activitie``);
- ``message search, no stemming`` — the archive's search before line indexing, rebuilt
  here for comparison: whole messages ranked by FTS5 bm25 under ``unicode61``, any term,
  taken while they fit;
- ``bm25`` — Okapi BM25 (k1 1.2, b 0.75) over every dialog line, written here, taking
  the best lines until the budget is full; ``bm25, stemmed query`` likewise;
- ``recall's format, bm25 ranking`` — BM25's best lines offered to recall's own selection
  (:class:`~mas.runtime.context.recalled.Selection`): the heading, each line's message
  label, its session header and neighbours, in the same budget. Against ``recall`` it
  compares the rankings alone; against ``bm25`` it prices what recall's format carries.

With ``--locomo FILE`` the conversations are a LoCoMo file's instead (the published
``locomo10.json``, which you download: it is never shipped), read by the lab's own reader
(:func:`mas.library.lab.formats.read_benchmark`): a session per message as the lab's
sessions commit them, each conversation in an archive of its own, every question that
carries evidence lines, summed over the conversations.

Run: ``.venv/bin/python benchmarks/recall_search.py [--seed N] [--budget T ...]
[--locomo FILE [--limit N]]``
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mas.runtime.context.archive import Archive
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR
from mas.runtime.context.recalled import Selection

SPEAKERS = ("Caroline", "Melanie")
SESSIONS = 30
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")

# A fact: what a speaker says, a question about it worded otherwise, and its values.
FACTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "class": ("I started {0} classes last week and I'm really excited about it.",
              "What classes is {name} excited to start?",
              ("pottery", "painting", "swimming", "guitar", "yoga", "salsa", "climbing")),
    "trip": ("We finally went on that trip to {0}, the kids loved every minute.",
             "Where did {name}'s family travel on their trip?",
             ("Lisbon", "the lake house", "Boston", "the Alps", "Kyoto", "the coast")),
    "pet": ("We adopted a puppy and named her {0}.",
            "What is the name of {name}'s adopted puppy?",
            ("Luna", "Biscuit", "Pepper", "Maple", "Olive", "Juniper")),
    "book": ("I just finished reading {0}, it made me think a lot.",
             "Which book has {name} read recently?",
             ("Becoming", "Educated", "The Overstory", "Circe", "Dune", "Wild")),
    "job": ("I got the job at the {0}, my first day is Monday!",
            "Where does {name} have a new job?",
            ("animal shelter", "city library", "art museum", "bakery", "school district")),
    "event": ("Yesterday I went to a {0} and met so many kind people.",
              "What event did {name} attend where she met people?",
              ("support group", "charity run", "pride parade", "book fair", "town hall")),
    "activity": ("My favourite activity with the kids is {0} on Sundays.",
                 "What activities does {name} do with her kids?",
                 ("baking bread", "hiking", "camping", "museum visits", "stargazing")),
    "gift": ("My sister gave me a {0} for my birthday.",
             "What did {name} receive as a birthday gift?",
             ("red scarf", "new bike", "camera", "painting set", "telescope")),
}

# A second question per value, asking when or how, worded otherwise again.
WHEN: dict[str, str] = {
    "class": "When did {name} start taking {0} lessons?",
    "trip": "When did {name} travel to {0}?",
    "pet": "When did {name} adopt {0}?",
    "book": "When did {name} finish {0}?",
    "job": "When was {name} hired at the {0}?",
    "event": "When did {name} attend the {0}?",
    "activity": "How often does {name} go {0} with her children?",
    "gift": "Who gave {name} the {0}?",
}

# Lines that share a question's words without answering it (said to the other speaker).
DISTRACTORS: dict[str, str] = {
    "class": "{other}, are you still excited to start those classes you mentioned?",
    "trip": "{other}, where would your family travel if you could take any trip?",
    "pet": "{other}, have you picked a name for a puppy yet, if you ever adopt one?",
    "book": "{other}, which book have you read recently? I need ideas.",
    "job": "{other}, do you think you will look for a new job this year?",
    "event": "{other}, what events do you attend these days to meet people?",
    "activity": "{other}, what activities do you do with your kids on weekends?",
    "gift": "{other}, what was the best birthday gift you ever received?",
}

CHATTER = (
    "Hey {other}! It's been a while, how are you doing?",
    "Pretty good, thanks for asking. Work has been busy this week.",
    "That's awesome, I'm so happy for you!",
    "How did it go? Tell me everything.",
    "Haha, that sounds like a lot of fun.",
    "I know what you mean, the kids keep me busy too.",
    "The weather has been lovely lately, we spent a lot of time outside.",
    "I have been thinking about taking some classes myself.",
    "We should plan a trip together sometime.",
    "Thanks, that means a lot to me.",
    "Take care and talk soon!",
    "Really? I didn't know that about you.",
    "It was a long week but a good one.",
    "I'm trying to read more books this year.",
    "My family says hi, by the way.",
)


@dataclass
class Question:
    """A question with the ids of the lines that answer it."""

    text: str
    evidence: list[str]


@dataclass
class Conversation:
    """Dated sessions of ``(line id, text)`` and the questions about them."""

    sessions: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def lines(self) -> dict[str, str]:
        """Every dialog line by id."""
        return {i: t for _, lines in self.sessions for i, t in lines}


def build(seed: int) -> Conversation:
    """The seeded conversation: 30 sessions, two to four facts each among 16-24 lines of
    chatter."""
    rng = random.Random(seed)
    conv = Conversation()
    said: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for s in range(1, SESSIONS + 1):
        date = f"{rng.randint(1, 28)} {MONTHS[(s + 3) % 12]} {2022 + (s + 3) // 12}"
        lines: list[tuple[str, str]] = []
        facts = rng.sample(sorted(FACTS), rng.randint(2, 4))
        total = rng.randint(16, 24) + len(facts)
        at = set(rng.sample(range(total), len(facts)))
        for n in range(total):
            speaker, other = SPEAKERS[n % 2], SPEAKERS[(n + 1) % 2]
            line_id = f"D{s}:{n + 1}"
            if n in at:
                kind = facts.pop()
                value = rng.choice(FACTS[kind][2])
                lines.append((line_id, f"{speaker}: {FACTS[kind][0].format(value)}"))
                said.setdefault((speaker, kind), []).append((line_id, value))
            else:
                pool = CHATTER if rng.random() < 0.7 else tuple(DISTRACTORS.values())
                text = rng.choice(pool).format(other=other)
                lines.append((line_id, f"{speaker}: {text}"))
        conv.sessions.append((f"Session {s} - {date}", lines))
    for (speaker, kind), facts_said in sorted(said.items()):
        if len(facts_said) <= 2:  # "what" has one answer, or two to gather
            conv.questions.append(Question(FACTS[kind][1].format(name=speaker),
                                           [i for i, _ in facts_said]))
        for value in sorted({v for _, v in facts_said}):
            conv.questions.append(Question(WHEN[kind].format(value, name=speaker),
                                           [i for i, v in facts_said if v == value]))
    return conv


def from_locomo(path: Path, limit: int | None) -> list[Conversation]:
    """A LoCoMo file's conversations as the lab reads them: a turn per dated session (its
    header line, then ``Speaker: text`` lines) and the questions that carry evidence."""
    from mas.library.lab.formats import read_benchmark

    conversations = []
    for item in read_benchmark(path, str(path), "locomo", limit):
        conv = Conversation()
        ids: dict[str, str] = {}
        for number, turn in enumerate(item.turns, start=1):
            header, *texts = str(turn).split("\n")
            lines = [(f"T{number}:{n}", text) for n, text in enumerate(texts, start=1)]
            ids.update((text, line_id) for line_id, text in lines)
            conv.sessions.append((header, lines))
        conv.questions = [Question(str(p.question), [ids[text] for text in p.evidence])
                          for p in item.probes if p.evidence]
        conversations.append(conv)
    return conversations


def archive_of(conv: Conversation, layout: str) -> Archive:
    """The conversation in an archive: a session per message, or a line per message."""
    archive = Archive()
    position = 0
    for header, lines in conv.sessions:
        texts = [header] + [text for _, text in lines]
        if layout == "session":
            messages = [{"role": "user", "content": "\n".join(texts)},
                        {"role": "assistant", "content": "Noted."}]
        else:
            messages = [{"role": ("user", "assistant")[k % 2], "content": t}
                        for k, t in enumerate(texts)]
        archive.add(position, messages)
        position += len(messages)
    return archive


def archived_at(conv: Conversation, layout: str) -> list[tuple[int, int]]:
    """Where :func:`archive_of` put each dialog line, in :class:`BM25`'s order: its
    message's position and its line number there."""
    where = []
    position = 0
    for _, lines in conv.sessions:
        if layout == "session":
            where += [(position, n) for n in range(1, len(lines) + 1)]
            position += 2
        else:
            where += [(position + n, 0) for n in range(1, len(lines) + 1)]
            position += len(lines) + 1
    return where


_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased words and numbers."""
    return _WORD.findall(text.lower())


def stemmed(question: str) -> str:
    """The question as crude stems, the way the offline model queries."""
    out = []
    for word in words(question):
        for suffix in ("ing", "ed", "s"):
            if len(word) > len(suffix) + 3 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        out.append(word)
    return " ".join(out)


class BM25:
    """Okapi BM25 over dialog lines, best lines first within a token budget."""

    def __init__(self, lines: Iterable[str], k1: float = 1.2, b: float = 0.75) -> None:
        self.lines = list(lines)
        self.docs = [Counter(words(line)) for line in self.lines]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.average = sum(self.lengths) / max(len(self.docs), 1)
        df = Counter(w for d in self.docs for w in d)
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - f + 0.5) / (f + 0.5)) for w, f in df.items()}
        self.k1, self.b = k1, b

    def score(self, query: list[str], i: int) -> float:
        """BM25 of line ``i`` for ``query``."""
        doc, length = self.docs[i], self.lengths[i]
        total = 0.0
        for word in set(query):
            tf = doc.get(word, 0)
            if tf:
                norm = tf + self.k1 * (1 - self.b + self.b * length / self.average)
                total += self.idf[word] * tf * (self.k1 + 1) / norm
        return total

    def ranked(self, query: str) -> list[int]:
        """The lines that score for ``query``, best first."""
        terms = words(query)
        scores = [self.score(terms, i) for i in range(len(self.lines))]
        return sorted((i for i, s in enumerate(scores) if s > 0), key=lambda i: -scores[i])

    def search(self, query: str, max_tokens: int) -> str:
        """The best-scoring lines, one per row, while they fit ``max_tokens``."""
        chosen, used = [], 0
        for i in self.ranked(query):
            cost = DEFAULT_ESTIMATOR.text(self.lines[i]) + 1
            if used + cost <= max_tokens:
                chosen.append(self.lines[i])
                used += cost
        return "\n".join(chosen)


class MessageSearch:
    """Whole messages, FTS5 ``unicode61`` (no stemming), bm25, taken while they fit."""

    def __init__(self, messages: Iterable[str]) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("create virtual table m using fts5(text, tokenize='unicode61')")
        self.db.executemany("insert into m (text) values (?)", [(t,) for t in messages])

    def search(self, query: str, max_tokens: int) -> str:
        """The best messages for any of the query's words, while they fit."""
        match = " OR ".join(json.dumps(w) for w in dict.fromkeys(words(query)))
        if not match:
            return ""
        rows = self.db.execute(
            "select text from m where m match ? order by bm25(m) limit 50", (match,))
        chosen, used = [], 0
        for (text,) in rows:
            cost = DEFAULT_ESTIMATOR.text(text) + 1
            if used + cost <= max_tokens:
                chosen.append(text)
                used += cost
        return "\n".join(chosen)


def layout_texts(conv: Conversation, layout: str) -> list[str]:
    """The message texts of a layout (see :func:`archive_of`)."""
    texts = []
    for header, lines in conv.sessions:
        if layout == "session":
            texts.append("\n".join([header] + [t for _, t in lines]))
        else:
            texts += [header] + [t for _, t in lines]
    return texts


def share(conv: Conversation, search: Callable[[str], str]) -> tuple[float, float, int, int]:
    """Per cent of single- and multi-line questions whose evidence all came back."""
    lines = conv.lines()
    hits = {1: 0, 2: 0}
    totals = {1: 0, 2: 0}
    for q in conv.questions:
        found = search(q.text)
        kind = min(len(q.evidence), 2)
        totals[kind] += 1
        hits[kind] += all(lines[e] in found for e in q.evidence)
    return (100 * hits[1] / max(totals[1], 1), 100 * hits[2] / max(totals[2], 1),
            totals[1], totals[2])


def in_recall_format(archive: Archive, where: list[tuple[int, int]], bm25: BM25,
                     query: str, budget: int) -> str:
    """BM25's best lines as recall's selection takes them (``recall's format, bm25
    ranking`` in the module docstring)."""
    selection = Selection(budget, archive.estimator, archive.lines_of)
    for i in bm25.ranked(query):
        selection.offer(*where[i])
        if selection.left <= 0:
            break
    return selection.finish(1, 0).text()


def methods(archive: Archive, where: list[tuple[int, int]], before: MessageSearch,
            bm25: BM25, budget: int) -> dict[str, Callable[[str], str]]:
    """Each compared method as question -> returned text, within ``budget`` tokens."""
    return {
        "recall": lambda q: archive.search(q, max_tokens=budget).text(),
        "recall's format, bm25 ranking": lambda q: in_recall_format(archive, where, bm25, q,
                                                                   budget),
        "recall, stemmed query": lambda q: archive.search(stemmed(q), max_tokens=budget).text(),
        "message search, no stemming": lambda q: before.search(q, budget),
        "message search, stemmed query": lambda q: before.search(stemmed(q), budget),
        "bm25": lambda q: bm25.search(q, budget),
        "bm25, stemmed query": lambda q: bm25.search(stemmed(q), budget),
    }


def run(seed: int, budgets: list[int]) -> list[str]:
    """The result table on the generated conversation, one row per layout, method and
    budget."""
    conv = build(seed)
    head = (f"seed {seed}: {len(conv.sessions)} sessions, {len(conv.lines())} dialog lines, "
            f"{len(conv.questions)} questions")
    return table(head, [conv], ("session", "line"), budgets)


def run_locomo(path: Path, limit: int | None, budgets: list[int]) -> list[str]:
    """The result table on a LoCoMo file's conversations, a session per message."""
    convs = from_locomo(path, limit)
    head = (f"{path.name}: {len(convs)} conversation(s), "
            f"{sum(len(c.sessions) for c in convs)} sessions, "
            f"{sum(len(c.lines()) for c in convs)} dialog lines, "
            f"{sum(len(c.questions) for c in convs)} questions with evidence")
    return table(head, convs, ("session",), budgets)


def table(head: str, convs: list[Conversation], layouts: Iterable[str],
          budgets: list[int]) -> list[str]:
    """One row per layout, method and budget: the share of questions, over every
    conversation, whose evidence lines all came back."""
    rows = [head, "",
            "| layout | method | budget | single-line evidence, % | two-line evidence, % |",
            "| --- | --- | --- | --- | --- |"]
    for layout in layouts:
        searchers = []
        for conv in convs:
            bm25 = BM25(t for _, lines in conv.sessions for _, t in lines)
            searchers.append((conv, archive_of(conv, layout), archived_at(conv, layout),
                              MessageSearch(layout_texts(conv, layout)), bm25))
        for budget in budgets:
            counts: dict[str, list[float]] = {}
            for conv, archive, where, before, bm25 in searchers:
                for name, search in methods(archive, where, before, bm25, budget).items():
                    one, two, ones, twos = share(conv, search)
                    total = counts.setdefault(name, [0.0, 0.0, 0.0, 0.0])
                    total[0] += one * ones / 100
                    total[1] += two * twos / 100
                    total[2] += ones
                    total[3] += twos
            for name, (hit1, hit2, n1, n2) in counts.items():
                rows.append(f"| {layout} per message | {name} | {budget} | "
                            f"{100 * hit1 / max(n1, 1):.1f} | {100 * hit2 / max(n2, 1):.1f} |")
    return rows


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--budget", type=int, nargs="+", default=[200, 500, 2000])
    parser.add_argument("--locomo", type=Path, help="a LoCoMo JSON file (locomo10.json)")
    parser.add_argument("--limit", type=int, help="with --locomo: its first N conversations")
    args = parser.parse_args()
    if args.locomo is not None:
        print("\n".join(run_locomo(args.locomo, args.limit, args.budget)))
    else:
        print("\n".join(run(args.seed, args.budget)))


if __name__ == "__main__":
    main()
