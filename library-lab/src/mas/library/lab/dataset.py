"""Datasets: JSONL files of scripted multi-turn sessions (format in docs/lab.md).

One item per line::

    {"id": "a-01", "turns": ["text", {"user": "CALL fetch {}", "tool_results": {"fetch": "..."}}],
     "expected_facts": ["INV-1"], "probes": [{"turn": 1, "expected": ["..."]}]}

A turn is a string (the user message) or an object with ``user`` and, for scripted tool
calls, ``tool_results``: tool name -> the result it returns (a list of results is
returned one per call, in order). Every problem of the file is collected before raising.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mas.runtime.errors import ManifestError, Problem
from mas.runtime.spec.jsonl import parse_line, read_lines
from mas.runtime.spec.manifests import FolderName
from mas.runtime.spec.problems import problems_from_validation


class Turn(BaseModel):
    """One user turn: the message and the results its scripted tool calls return."""

    model_config = ConfigDict(extra="forbid")

    user: str = Field(min_length=1, description="The user message.")
    tool_results: dict[str, Any] = Field(
        default_factory=dict,
        description="Tool name -> result (or list of results, one per call) for this turn.",
    )


class Probe(BaseModel):
    """A mid-session question whose answer must contain ``expected``."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=0, description="Index of the asking turn in ``turns``.")
    expected: list[str] = Field(min_length=1, description="Strings the answer must contain.")
    kind: str = Field(default="", description="Free label (planted, tool_output, skill...).")


class Item(BaseModel):
    """One dataset line: a scripted session and its ground truth."""

    model_config = ConfigDict(extra="allow")

    id: FolderName = Field(min_length=1, description="Unique item id (folder name).")
    turns: list[str | Turn] = Field(min_length=1, description="User turns, in order.")
    expected_facts: list[str] = Field(
        default_factory=list, description="Strings the final answer must contain (FactRecall)."
    )
    probes: list[Probe] = Field(default_factory=list, description="Mid-session questions.")


    def turn(self, index: int) -> Turn:
        """Turn ``index`` as a :class:`Turn` (strings become ``Turn(user=...)``)."""
        raw = self.turns[index]
        return raw if isinstance(raw, Turn) else Turn(user=raw)

    def tool_names(self) -> list[str]:
        """Every tool a turn scripts a result for, sorted."""
        return sorted({name for t in self.turns if isinstance(t, Turn) for name in t.tool_results})

    def record(self) -> dict[str, Any]:
        """The item as JSON data (``item.json``), extra fields included."""
        return self.model_dump(mode="json", exclude_defaults=False)


@dataclass
class Dataset:
    """The validated items of one file."""

    path: Path
    items: list[Item] = field(default_factory=list)

    def limited(self, limit: int | None) -> list[Item]:
        """The first ``limit`` items (all when ``None``)."""
        return self.items if limit is None else self.items[:limit]


def load_dataset(path: Path, *, source: str | None = None) -> Dataset:
    """Read and validate a JSONL dataset.

    :param source: how errors name the file (default: the path).
    :raises ManifestError: one problem per bad line (``line N``), unknown file, duplicate id,
        or a probe pointing past the last turn.
    """
    name = source or str(path)
    lines = read_lines(Path(path), name, "dataset")
    problems: list[Problem] = []
    items: list[Item] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        try:
            data = parse_line(line)
        except ValueError as exc:
            problems.append(Problem(name, where, str(exc)))
            continue
        if not isinstance(data, dict):
            problems.append(Problem(name, where, "an item must be a JSON object", data, True))
            continue
        try:
            item = Item.model_validate(data)
        except ValidationError as exc:
            problems.extend(problems_from_validation(exc, name, where))
            continue
        if item.id in seen:
            problems.append(Problem(name, f"{where}.id",
                                    f"duplicate id (first on line {seen[item.id]})", item.id, True))
            continue
        seen[item.id] = number
        for index, probe in enumerate(item.probes):
            if probe.turn >= len(item.turns):
                problems.append(Problem(name, f"{where}.probes[{index}].turn",
                                        f"no such turn (the item has {len(item.turns)})",
                                        probe.turn, True))
        items.append(item)
    if not items and not problems:
        problems.append(Problem(name, "", "the dataset has no item"))
    if problems:
        raise ManifestError(problems)
    return Dataset(Path(path), items)
