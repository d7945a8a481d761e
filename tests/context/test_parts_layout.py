"""The remembered parts layout answers for exactly the parts it was asked about."""

from __future__ import annotations

from mas.runtime.context import TokenEstimator
from mas.runtime.context.parts import ContextPart, layout, order_parts, system_text
from mas.runtime.context.trimmer import parts_sizes


def part(text: str, placement: str = "context", priority: int = 100) -> ContextPart:
    return ContextPart("test", f"test/{text}", text, placement=placement, priority=priority)


def test_a_new_list_of_parts_is_laid_out_anew_even_after_a_hit() -> None:
    role, notes = part("role", "system", 0), part("notes")
    parts = [notes, role]
    assert system_text(parts) == "role\n\nnotes"
    assert layout(parts) is layout(list(parts)), "the same part objects: one layout"
    parts.append(part("more"))  # the same list object, changed
    assert system_text(parts) == "role\n\nnotes\n\nmore"
    assert [p.text for p in order_parts([notes, role])] == ["role", "notes"]
    twin = part("role", "system", 0)  # equal to ``role``, another object: the same layout
    assert layout([notes, twin]).text == layout([notes, role]).text == "role\n\nnotes"
    assert layout([notes, part("other", "system", 0)]).text == "other\n\nnotes"


def test_sizes_follow_the_estimator_and_the_layout() -> None:
    parts = [part("alpha " * 40), part("beta")]
    coarse, fine = TokenEstimator(chars_per_token=8), TokenEstimator(chars_per_token=2)
    a, b = parts_sizes(parts, coarse), parts_sizes(parts, fine)
    assert a.system < b.system
    assert b.parts == tuple(fine.text(p.text) for p in parts)
    assert parts_sizes([], fine).system == 0
