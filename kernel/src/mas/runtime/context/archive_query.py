"""Recall queries: split into questions, cut into terms, turned into FTS5 match strings.

A ``recall_context`` query may carry several questions, separated by ``;`` or new lines;
each is searched on its own, so one question's words do not drown another's. A question
is cut into *terms*: words (``excited``, ``excit``), and codes or amounts that keep their
inner punctuation (``ORD-7781``, ``142.50``, ``50%``).

A question's function words (``what``, ``did``, ``the``, ``her``: :data:`FUNCTION_WORDS`)
are not searched unless it has nothing else: they match greetings and other questions
rather than the line that answers, most of all in a small archive where they are rare, and
they would take the place of content words under :data:`MAX_QUERY_TERMS`. Words that may
be a name, a month or a noun (``May``, ``Will``, ``can``) are not among them.

Models often query with stems (``excit``, ``activitie``): a word term also tries the
common inflections of itself (``-s``, ``-es``, ``-ed``, ``-ing``, ``-e``), and the
archive's Porter stemmer (:mod:`mas.runtime.context.archive`) brings each variant to the
stem the conversation's words were indexed under; variants that land on the same stem
are searched once (:meth:`~mas.runtime.context.archive.Archive.search`), so no word
weighs more than another.

Every scan here is linear in the query: one pass of a single character class, then
constant work per term (issue 26, item 1).
"""

from __future__ import annotations

import re

MAX_QUERY_CHARS = 2_000
"""Characters of a recall query that are read (the rest is ignored)."""

MAX_QUESTIONS = 4
"""Questions of one query that are searched."""

MAX_QUERY_TERMS = 12
"""Terms of one question that are searched (the rest are ignored)."""

_FUNCTION_TEXT = (
    "a about am an and are as at be been being but by did do does doing done for from had "
    "has have having he her hers him his how i if in into is it its me mine my no not of "
    "on or our ours she so than that the their theirs them then there these they this "
    "those to was we were what when where which who whom whose why with would could "
    "should you your yours"
)
FUNCTION_WORDS = frozenset(_FUNCTION_TEXT.split())
"""Words a question is not searched for while it has others (module docstring)."""

INFLECTIONS = ("", "s", "es", "ed", "ing", "e")
"""Suffixes a word term is tried with, so a stem finds the word it was cut from."""

# Three disjoint kinds of piece, each matched as one maximal run: letters and digits,
# the punctuation a term may carry inside (``ORD-7781``, ``142.50``), and anything else,
# which ends a term. Disjoint classes leave the engine nothing to backtrack: linear.
_PIECE = re.compile(r"([^\W_]+)|([_.@/$€%-]+)|[^\w.@/$€%-]+")
_SEPARATORS = re.compile(r"[;\n]")


def questions(query: str) -> list[str]:
    """The questions of ``query``: split at ``;`` and new lines, blanks dropped, at most
    :data:`MAX_QUESTIONS` (the text past :data:`MAX_QUERY_CHARS` is not read)."""
    parts = (p.strip() for p in _SEPARATORS.split(query[:MAX_QUERY_CHARS]))
    return [p for p in parts if p][:MAX_QUESTIONS]


def terms(question: str) -> list[str]:
    """The distinct terms of one question, lower-cased, in order, at most
    :data:`MAX_QUERY_TERMS`: runs of letters and digits joined by inner punctuation; a
    term may end in ``%``, never in other punctuation. :data:`FUNCTION_WORDS` are left
    out, unless the question has no other term."""
    found: dict[str, None] = {}
    function: dict[str, None] = {}  # kept only for a question of function words alone
    term: list[str] = []  # its pieces, joined once it ends (joining as it grows is quadratic)
    inner = ""
    for piece in _PIECE.finditer(question + " "):
        word, punctuation = piece.group(1), piece.group(2)
        if word:
            term += [inner, word] if inner else [word]
            inner = ""
        elif punctuation and term:
            inner = punctuation
        elif not punctuation:
            if term:
                text = ("".join(term) + ("%" if inner.startswith("%") else "")).lower()
                if text in FUNCTION_WORDS:
                    if len(function) < MAX_QUERY_TERMS:
                        function.setdefault(text)
                else:
                    found.setdefault(text)
                    if len(found) == MAX_QUERY_TERMS:
                        break
            term, inner = [], ""
    return list(found or function)


def is_word(term: str) -> bool:
    """A term of letters only (it gets inflection variants); codes and numbers do not."""
    return term.isalpha()


def variants(term: str) -> list[str]:
    """The strings searched for ``term``: itself, and for a word of three letters or more
    its inflections (:data:`INFLECTIONS`)."""
    if not is_word(term) or len(term) < 3:
        return [term]
    return [term + suffix for suffix in INFLECTIONS]


def phrase(text: str) -> str:
    """``text`` as one FTS5 phrase (quotes doubled, so nothing in it is query syntax)."""
    return '"' + text.replace('"', '""') + '"'


__all__ = [
    "FUNCTION_WORDS",
    "INFLECTIONS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "MAX_QUESTIONS",
    "is_word",
    "phrase",
    "questions",
    "terms",
    "variants",
]
