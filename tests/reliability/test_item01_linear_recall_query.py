"""Issue 26, item 1 (recall's part): parsing a recall query is linear in its input.

Hostile queries — long runs of hyphens, of term characters that never end a term, of
separators — are parsed at doubled sizes; the time ratio of the two must stay near 2
(linear), well under the 4 a quadratic scan shows. A ratio inside one run, never a wall
clock limit.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

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

MAX_RATIO = 3.0
"""Doubling a linear scan's input doubles its time; a quadratic one quadruples it."""


def _best(scan: Callable[[str], object], text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        scan(text)
        best = min(best, time.perf_counter() - start)
    return best


def doubling_ratio(scan: Callable[[str], object], make: Callable[[int], str],
                   size: int = 200_000, rounds: int = 3, repeats: int = 5) -> float:
    """Time of ``scan`` on ``make(2 * size)`` over its time on ``make(size)``.

    Each side is the best of ``repeats`` runs with the garbage collector paused, and the
    smallest ratio of ``rounds`` is returned: a busy machine slows single runs, never
    all of them, while a quadratic scan is slow in every round.
    """
    small, large = make(size), make(2 * size)
    ratios = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        _best(scan, small, 1)  # warm up
        for _ in range(rounds):
            ratios.append(_best(scan, large, repeats) / max(_best(scan, small, repeats), 1e-9))
    finally:
        if enabled:
            gc.enable()
    return min(ratios)


def parse(text: str) -> list[list[str]]:
    """Every question's terms, on the whole text (no cap: the scan itself is measured)."""
    return [terms(part) for part in text.split(";")] if ";" in text else [terms(text)]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_term_scan_is_linear(name: str) -> None:
    ratio = doubling_ratio(parse, HOSTILE[name])
    assert ratio < MAX_RATIO, f"{name}: doubling the query took {ratio:.2f}x as long"


def test_a_whole_search_reads_a_bounded_query() -> None:
    archive = Archive()
    archive.add(0, [{"role": "user", "content": "HUGE-1 and HUGE-2 were shipped."}])
    ratio = doubling_ratio(lambda q: archive.search(q, max_tokens=200),
                           HOSTILE["HUGE-"], size=50_000)
    assert ratio < MAX_RATIO
    assert len(questions("a;" * MAX_QUERY_CHARS)) <= 4


def test_the_ratio_tells_a_quadratic_scan() -> None:
    """The measure has teeth: a scan that copies the rest of the text at every step
    (quadratic) shows a ratio near 4."""
    def quadratic(text: str) -> int:
        return sum(len(text[i:]) for i in range(0, len(text), 500))

    assert doubling_ratio(quadratic, HOSTILE["HUGE-"]) > MAX_RATIO
