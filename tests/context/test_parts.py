"""Spec 003: "Context sections are ordered by placement and then priority";
"ContextPart.skills() pins the skill catalog by default"."""

from __future__ import annotations

import pytest

from mas.runtime.context import ContextPart, order_parts, system_text


def test_parts_are_ordered_by_placement_then_priority_then_arrival() -> None:
    parts = [
        ContextPart("x", "ctx/late", "C2", placement="context", priority=50),
        ContextPart("x", "skills", "S", placement="skills", priority=0),
        ContextPart("x", "role", "R", placement="system", priority=900),
        ContextPart("x", "ctx/early", "C1", placement="context", priority=5),
        ContextPart("x", "mem", "M", placement="memory"),
        ContextPart("x", "ctx/late2", "C3", placement="context", priority=50),
    ]
    assert [p.text for p in order_parts(parts)] == ["R", "M", "C1", "C2", "C3", "S"]
    assert system_text(parts) == "R\n\nM\n\nC1\n\nC2\n\nC3\n\nS"


def test_skill_catalog_and_activated_skills_are_pinned_by_default() -> None:
    assert ContextPart.skills("catalog").pinned
    part = ContextPart.activated_skill("alpha", "body")
    assert part.pinned and part.section_id == "skills/activated/alpha"


def test_an_unknown_placement_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="placement 'header' is not one of system, memory"):
        ContextPart("x", "s", "t", placement="header")
