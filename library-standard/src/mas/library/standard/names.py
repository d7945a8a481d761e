"""People's and places' names without quotes: ``Priya Haddad``, ``New York``, ``Mel``.

The rule (docs/context.md, "Identifier check"), chosen for precision: a name family that
fired on the first word of every sentence would make the identifier check list every
sentence's opening and be ignored.

1. A *name word* is a capital followed by lower-case letters (``Priya``, ``O'Brien``,
   ``McDonald``, ``Jean-Luc``, ``Zoë``); words in capitals only (``API``, ``ORD``) and
   single letters (``I``) are not.
2. Name words joined by single spaces (and the particles of names such as ``da``,
   ``van``: ``Leonardo da Vinci``) form a *run*.
3. A common word (``The``, ``Hello``, ``Thanks``, ``When``, … :data:`COMMON_WORDS`) splits
   a run and is dropped: ``Hey Mel`` leaves ``Mel``, ``The Louvre`` leaves ``Louvre``.
4. What remains is a name when it has two name words or more, wherever it stands
   (``Priya Haddad joined.``), or when its one word does not open a sentence (``I met
   Henrik``, ``Hey Mel``). A single capitalised word that opens a sentence (``Oslo is
   cold.``) is not taken: there it cannot be told from any other opening word.

A sentence opens at the start of the text, after ``.``, ``!``, ``?``, ``:``, ``…``, ``]``,
``|`` or a line break, with spaces, quotes, brackets, bullets and dashes in between.
Like every scan of untrusted text it is linear: one regular-expression pass whose starts
never fall inside a word, then constant work per word found.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Upper-case letters of the Latin, Greek and Cyrillic blocks. Capital and lower-case
# classes must not share a letter: overlapping neighbouring classes would backtrack.
_UPPER = "".join(chr(c) for c in range(0x41, 0x530) if chr(c).isupper())
_CAP = f"[{_UPPER}]"
_LOW = rf"[^\W\d_{_UPPER}]"
_PART = rf"{_CAP}{_LOW}+(?:{_CAP}{_LOW}+)*"
_WORD = rf"(?:{_CAP}['’])?{_PART}(?:[-'’]{_PART})*(?!\w)"
# The first word of a run opens with its capital, its guard after it: ``re`` then skips
# in C to the next capital instead of trying the pattern at every position (issue 22;
# the same words as _WORD: ``C'`` before the part, read as ``C`` then ``'C``).
_FIRST_WORD = (
    rf"{_CAP}(?<![\w'’-].)(?:['’]{_CAP})?{_LOW}+(?:{_CAP}{_LOW}+)*(?:[-'’]{_PART})*(?!\w)"
)
_PARTICLE_TEXT = "al bin da das de del della den der di do dos du el ibn la le ten ter van von"
PARTICLES = frozenset(_PARTICLE_TEXT.split())
"""Lower-case words that may stand inside a name (``Ludwig van Beethoven``)."""

_RUN = re.compile(
    rf"{_FIRST_WORD}(?: (?:(?:{'|'.join(sorted(PARTICLES))}) )?{_WORD})*"
)

_COMMON_TEXT = """
a about above across after again against ago ah all almost along also although always am
among an and another any anyway anyways are around as at aw away awesome back be because
been before being below beside besides best better between both but by bye can cheers
congrats congratulations cool could day days dear definitely did do does doing done down
during each either else enough even evening ever every everybody everyone everything
exactly finally first for from glad good goodbye got great guess had haha happy has have
having he hello her here hers herself hey hi him himself his hiya hmm honestly hope how
however i if in indeed instead into is it its itself just last later lately let lets like
lol look looks lot lots love many maybe me meanwhile might mine more morning most much must
my myself near never next nice night no nobody none nope nor not nothing now of off oh ok
okay omg on once one only or other otherwise our ours ourselves out over perhaps please
plus probably quite rather really recently right said say says second see seems seriously
shall she should since so some somebody someone something sometimes soon sorry sounds
still such sure than thank thanks that the their theirs them themselves then there these
they thing things think third this those though through thus to today together tomorrow
tonight too totally true um under unless until up upon us very via was we week weekend well
were what whatever when whenever where wherever whether which while who whoever whole whom
whose why will wish with within without wonderful wow yeah year years yep yes yesterday yet
you your yours yourself yourselves yup
"""
COMMON_WORDS = frozenset(_COMMON_TEXT.split())
"""Words that are not names even when capitalised: function words, greetings, openers."""

_SKIP = frozenset(" \t\"'“‘”’([{*•#>_-–—")
_OPENS = frozenset(".!?:…]|\n\r\u2028\u2029")
_LOOK_BACK = 24
"""Characters looked at before a word to tell whether it opens a sentence (bounded, so
the check stays constant per word)."""


def names_in(text: str) -> Iterator[tuple[int, int]]:
    """Spans of the names in ``text`` (see the module docstring), in order."""
    for run in _RUN.finditer(text):
        word = run.group(0)
        if " " in word:
            yield from _names_of(text, run.start(), word.split(" "))
        # One word (most runs: a sentence's capitalised opening word) is a name when it
        # is not a common word and does not open a sentence: _names_of's rule, without
        # building its groups for each of a tool result's thousands of sentences.
        elif word.lower() not in COMMON_WORDS and not opens_sentence(text, run.start()):
            yield run.span()


def _names_of(text: str, start: int, words: list[str]) -> Iterator[tuple[int, int]]:
    """The names within one run of name words starting at ``start``."""
    group: list[tuple[int, int]] = []  # (start, stop) of the words of the current name
    at = start
    for word in words:
        if word.lower() in COMMON_WORDS and word[0].isupper():
            yield from _name(text, group)
            group = []
        else:
            group.append((at, at + len(word)))
        at += len(word) + 1
    yield from _name(text, group)


def _name(text: str, group: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The name a group of words makes, if it makes one (particles trimmed at its ends)."""
    while group and text[group[0][0]].islower():
        group = group[1:]
    while group and text[group[-1][0]].islower():
        group = group[:-1]
    if not group:
        return
    capitals = sum(1 for word_start, _ in group if not text[word_start].islower())
    if capitals >= 2 or not opens_sentence(text, group[0][0]):
        yield group[0][0], group[-1][1]


def opens_sentence(text: str, index: int) -> bool:
    """Whether the word at ``index`` is the first of a sentence (module docstring)."""
    floor = max(0, index - _LOOK_BACK)
    at = index - 1
    while at >= floor and text[at] in _SKIP:
        at -= 1
    return at < floor or text[at] in _OPENS
