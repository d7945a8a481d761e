"""ContextPart: one section of the system message (spec 003, "Request Composition").

Sections are ordered by placement, then priority (smaller first), then the order they
were collected. ``pinned`` parts are never evicted by a budget strategy; unpinned parts
may be, largest priority number first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

PLACEMENTS: tuple[str, ...] = ("system", "memory", "context", "skills", "tail")
"""Placements in request order: role prompt, memory seeds, context, skills, closing notes."""

_RANK = {name: rank for rank, name in enumerate(PLACEMENTS)}

SECTION_SEPARATOR = "\n\n"
"""Between two sections of the system message."""


@dataclass(frozen=True)
class ContextPart:
    """One section of the system message.

    :ivar source: who contributed it (plugin or subsystem name).
    :ivar section_id: a stable id such as ``skills/catalog`` or ``skills/activated/<name>``.
    :ivar placement: one of :data:`PLACEMENTS`.
    :ivar priority: order within the placement, smaller first; unpinned parts with the
        largest number are evicted first.
    :ivar pinned: never evicted, even over budget (then a warning is emitted).
    :ivar text: the section's text.
    """

    source: str
    section_id: str
    text: str
    placement: str = "context"
    priority: int = 100
    pinned: bool = False

    def __post_init__(self) -> None:
        if self.placement not in _RANK:
            raise ValueError(
                f"ContextPart {self.section_id!r}: placement {self.placement!r} is not one of "
                f"{', '.join(PLACEMENTS)}"
            )

    @property
    def rank(self) -> int:
        """Position of the placement in :data:`PLACEMENTS`."""
        return _RANK[self.placement]

    @classmethod
    def skills(cls, text: str, *, source: str = "skills", pinned: bool = True) -> ContextPart:
        """The skill catalog section, pinned by default."""
        return cls(source, "skills/catalog", text, placement="skills", priority=0, pinned=pinned)

    @classmethod
    def activated_skill(
        cls, name: str, body: str, *, source: str = "skills", pinned: bool = True
    ) -> ContextPart:
        """The pinned body of an activated skill (``skills/activated/<name>``)."""
        return cls(
            source,
            f"skills/activated/{name}",
            body,
            placement="skills",
            priority=10,
            pinned=pinned,
        )


@dataclass(frozen=True)
class PartsLayout:
    """What one list of parts makes of the system message: its order and its text.

    :ivar parts: the parts as given.
    :ivar ordered: the parts in request order (:func:`order_parts`).
    :ivar text: the system message text (:func:`system_text`).
    """

    parts: tuple[ContextPart, ...]
    ordered: tuple[ContextPart, ...]
    text: str


_last_layout: PartsLayout | None = None


def layout(parts: Iterable[ContextPart]) -> PartsLayout:
    """The :class:`PartsLayout` of ``parts``, remembered for the last parts seen.

    A session sends the same part objects on every request and the assembler reads their
    order and text several times a request. Parts are frozen values, so parts equal to the
    remembered ones have the same layout.
    """
    global _last_layout
    given = tuple(parts)
    last = _last_layout
    # Tuple equality checks identity first, in C; equal frozen parts lay out the same.
    if last is not None and last.parts == given:
        return last
    ordered = given
    if not all((a.rank, a.priority) <= (b.rank, b.priority) for a, b in pairwise(given)):
        indexed = sorted(enumerate(given), key=lambda item: (item[1].rank, item[1].priority,
                                                             item[0]))
        ordered = tuple(part for _, part in indexed)
    found = PartsLayout(given, ordered, SECTION_SEPARATOR.join(p.text for p in ordered if p.text))
    _last_layout = found
    return found


def order_parts(parts: Iterable[ContextPart]) -> list[ContextPart]:
    """Parts in request order: placement, then priority, then collection order."""
    return list(layout(parts).ordered)


def system_text(parts: Iterable[ContextPart]) -> str:
    """The system message text: ordered, non-empty section texts joined by a blank line."""
    return layout(parts).text
