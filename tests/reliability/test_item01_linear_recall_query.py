"""Issue 26, item 1 (recall's part): parsing a recall query is linear in its input.

Hostile queries — long runs of hyphens, of term characters that never end a term, of
separators — are parsed at a size and at four times it (two doublings); the time ratio
must stay near 4 (linear), well under the 16 a quadratic scan shows (the ``scaling``
fixture of ``conftest.py``). A ratio inside one run, never a wall-clock limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mas.runtime.context.archive import Archive
from mas.runtime.context.archive_query import MAX_QUERY_CHARS, questions, terms

HOSTILE: dict[str, Callable[[int], str]] = {
    "HUGE-": lambda n: "HUGE-" * (n // 5),
    "hyphens after a letter": lambda n: "a" + "-" * n,
    "underscores after a letter": lambda n: "a" + "_" * n,
    "letters with accents": lambda n: ("a" + "é" * 49) * (n // 50),
    "dots and hyphens": lambda n: "1" + ".-" * (n // 2),
    "separators": lambda n: ";\n" * (n // 2),
}

def parse(text: str) -> list[list[str]]:
    """Every question's terms, on the whole text (no cap: the scan itself is measured)."""
    return [terms(part) for part in text.split(";")] if ";" in text else [terms(text)]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_term_scan_is_linear(name: str, scaling: Any) -> None:
    ratio = scaling.ratio(parse, HOSTILE[name], size=100_000)
    assert ratio < scaling.limit, (
        f"{name}: {scaling.growth}x the query took {ratio:.2f}x as long")


def test_a_whole_search_reads_a_bounded_query(scaling: Any) -> None:
    archive = Archive()
    archive.add(0, [{"role": "user", "content": "HUGE-1 and HUGE-2 were shipped."}])
    ratio = scaling.ratio(lambda q: archive.search(q, max_tokens=200),
                          HOSTILE["HUGE-"], size=25_000)
    assert ratio < scaling.limit
    assert len(questions("a;" * MAX_QUERY_CHARS)) <= 4


def test_the_ratio_tells_a_quadratic_scan(scaling: Any) -> None:
    """The measure has teeth: a scan that copies the rest of the text at every step
    (quadratic) shows a ratio near 16."""
    def quadratic(text: str) -> int:
        return sum(len(text[i:]) for i in range(0, len(text), 500))

    assert scaling.ratio(quadratic, HOSTILE["HUGE-"], size=100_000) > scaling.limit
