"""The public long-conversation benchmark formats, read into lab items.

- ``locomo`` (:mod:`.locomo`): LoCoMo's ``locomo10.json``, one item per conversation, a
  turn per session, a probe per question with its category and evidence lines;
- ``longmemeval`` (:mod:`.longmemeval`): LongMemEval's ``longmemeval_s/_m/_oracle.json``,
  one item per instance (its own haystack), a turn per haystack session, one probe.

Both files are one JSON array, read element by element (:mod:`.stream`), so a ``limit``
reads only the start of the file. The user supplies the file: nothing is shipped or
downloaded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mas.library.lab.dataset import Item, enough_problems, probe_problems
from mas.library.lab.formats.locomo import locomo_item
from mas.library.lab.formats.longmemeval import longmemeval_item
from mas.library.lab.formats.stream import json_array_items
from mas.runtime.errors import ManifestError, Problem

Reader = Callable[[Any, str, str], Item]
"""``reader(element, source, where)``: one element as an item, or ManifestError."""

READERS: dict[str, Reader] = {"locomo": locomo_item, "longmemeval": longmemeval_item}

SIGNATURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "locomo": ("LoCoMo", ("sample_id", "conversation")),
    "longmemeval": ("LongMemEval", ("question_id", "haystack_sessions")),
}
"""Per format, its authors' name for it and the keys every element of its files has."""


def format_of(element: Any) -> str | None:
    """The format whose keys ``element`` has (an element of its files), else ``None``."""
    if not isinstance(element, dict):
        return None
    return next((name for name, (_, keys) in SIGNATURES.items()
                 if all(k in element for k in keys)), None)


def other_format(element: Any, format: str) -> str | None:
    """The other format ``element`` plainly belongs to (it has none of ``format``'s keys
    and all of the other's), else ``None``."""
    if isinstance(element, dict) and any(k in element for k in SIGNATURES[format][1]):
        return None
    return format_of(element)  # with none of format's keys, never format itself


def read_benchmark(path: Path, source: str, format: str, limit: int | None) -> list[Item]:
    """The items of a benchmark file (the first ``limit`` elements).

    :raises ManifestError: every problem found, each naming the element (``[3].qa[5]``).
    """
    reader = READERS[format]
    problems: list[Problem] = []
    items: list[Item] = []
    seen: dict[str, int] = {}
    for index, element in enumerate(json_array_items(path, source, limit=limit)):
        if enough_problems(problems, source):
            break
        where = f"[{index}]"
        if index == 0 and (found := other_format(element, format)) is not None:
            # One line for the whole file, not every element's missing fields.
            title, keys = SIGNATURES[found]
            raise ManifestError([Problem(
                source, where, f"is a {title} element ({', '.join(keys)}), but the dataset's "
                f"format is {format}: set experiment.dataset.format: {found}")])
        try:
            item = reader(element, source, where)
        except ManifestError as exc:
            problems.extend(exc.problems)
            continue
        if item.id in seen:
            problems.append(Problem(source, where, f"duplicate id (first at [{seen[item.id]}])",
                                    item.id, True))
            continue
        seen[item.id] = index
        problems.extend(probe_problems(item, source, where))
        items.append(item)
    if not items and not problems:
        problems.append(Problem(source, "", "the dataset has no item"))
    if problems:
        raise ManifestError(problems)
    return items


__all__ = ["READERS", "SIGNATURES", "format_of", "other_format", "read_benchmark"]
