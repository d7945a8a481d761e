"""Issue 26 item 1 for the summary clip (issue 23): dropping whole lines of a summary over
its room is linear in the summary, however its lines share the identifiers checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mas.library.standard.plugins.context.identifier_check import SECTION_HEAD, SummaryFit

CODES = {f"ORD-{n:04d}": n % 4 for n in range(50)}
"""The identifiers the summary was checked for: a fixed set, as a fold checks at most its
limit (the prose grows, they do not)."""

LINES: dict[str, Callable[[int], str]] = {
    "one_holder_each": lambda n: f"- Order ORD-{n % len(CODES):04d} was confirmed, note {n}.",
    "every_code_per_line": lambda n: "- " + " ".join(CODES) + f" ({n})",
    "no_identifier": lambda n: f"- They chatted about the weekend at some length ({n}).",
    "blank_lines": lambda n: "",
}
"""Shapes of summary lines: each the only holder of a code at first, every line holding
every code (the holders lists grow with the prose), none, empty lines."""


@pytest.mark.parametrize("shape", sorted(LINES))
def test_hostile2_item01_the_summary_clip_is_linear(shape: str, scaling: Any) -> None:
    section = SECTION_HEAD + "- ORD-0001: Order ORD-0001 was confirmed."

    def make(size: int) -> str:
        lines, used, number = [], 0, 0
        while used < size:
            lines.append(LINES[shape](number))
            used += len(lines[-1]) + 1
            number += 1
        return "\n".join(lines) + section

    def clip(text: str) -> str:
        # A room for about a fifth of the text: every size is clipped, none returned whole
        # at once, and the share of lines dropped does not change with the size.
        fit = SummaryFit(room=max(200, len(text) // 20), limit=10**9)
        return fit.clip(text, identifiers=CODES)

    ratio = scaling.ratio(clip, make)
    assert ratio < scaling.limit, (
        f"clip on {shape}: {scaling.growth}x the summary took {ratio:.1f}x as long")
