"""Datasets: JSONL files of scripted multi-turn sessions (format in docs/lab.md).

One item per line::

    {"id": "a-01", "turns": ["text", {"user": "CALL fetch {}", "tool_results": {"fetch": "..."}}],
     "expected_facts": ["INV-1"], "probes": [{"turn": 1, "expected": ["..."]}]}

A turn is a string (the user message, never blank) or an object with ``user`` and, for
scripted tool calls, ``tool_results``: tool name -> the result it returns (a list of
results is returned one per call, in order). Every problem of the file is collected
before raising.

The public benchmark formats (LoCoMo, LongMemEval) are read by :mod:`mas.library.lab.formats`
into the same items; :func:`load_dataset` picks the reader from ``format``.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from mas.runtime.errors import ManifestError, Problem
from mas.runtime.spec.jsonl import parse_line, read_lines
from mas.runtime.spec.manifests import FolderName
from mas.runtime.spec.problems import problems_from_validation


def _not_blank(text: str) -> str:
    # mas-ctl run refuses a blank turn too: a blank user message is a slip, not a turn.
    if not text.strip():
        raise ValueError("must not be blank")
    return text


UserText = Annotated[str, AfterValidator(_not_blank)]
"""A user message: any text but a blank one."""


class Turn(BaseModel):
    """One user turn: the message and the results its scripted tool calls return."""

    model_config = ConfigDict(extra="forbid")

    user: UserText = Field(description="The user message.")
    tool_results: dict[str, Any] = Field(
        default_factory=dict,
        description="Tool name -> result (or list of results, one per call) for this turn.",
    )


def _turn_shape(raw: Any) -> str | None:
    # The tags are bracketed so that a problem's location leaves them out
    # (problems_from_validation drops such segments): the user wrote turns[1], not a branch.
    if isinstance(raw, str):
        return "[text]"
    if isinstance(raw, dict | Turn):
        return "[turn]"
    return None


TurnSpec = Annotated[
    Annotated[UserText, Tag("[text]")] | Annotated[Turn, Tag("[turn]")],
    Discriminator(
        _turn_shape,
        custom_error_type="turn_shape",
        custom_error_message='a turn is a string or an object {"user": ..., "tool_results": '
        "{...}}",
    ),
]
"""A turn as a file has it: the user message, or a :class:`Turn`. The branch is picked by
the value's shape, so a wrong turn is one problem about the branch it meant (an object's
unknown key), not one per branch."""


class Probe(BaseModel):
    """A question whose answer must contain ``expected``.

    Without ``question`` the probe *is* turn ``turn`` of the session (asked inline). With
    ``question`` it is asked on its own after the first ``turn`` turns were played, from
    a copy of the session at that point (docs/lab.md, "Probes asked in isolation").
    """

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=0, description="Index of the asking turn in ``turns`` (inline); "
                      "turns played before it is asked (with ``question``).")
    expected: list[str] = Field(default_factory=list,
                                description="Strings the answer must contain.")
    kind: str = Field(default="", description="Free label or category (planted, 1, "
                      "temporal-reasoning, ...).")
    question: TurnSpec | None = Field(
        default=None, description="The question, asked in isolation after ``turn`` turns.")
    evidence: list[str] = Field(
        default_factory=list,
        description="Text of the conversation lines that hold the answer (the evidence metric).")
    evidence_ids: list[str] = Field(
        default_factory=list, description="The dataset's ids of those lines (LoCoMo dia_ids).")
    evidence_unresolved: int = Field(
        default=0, ge=0, description="Evidence ids that name no line of the conversation.")

    @model_validator(mode="after")
    def _expected_inline(self) -> Probe:
        if self.question is None and not self.expected and not self.evidence:
            raise ValueError("an inline probe needs at least one expected string (or "
                             "evidence lines)")
        return self

    def asked(self) -> Turn:
        """The question as a turn (``question`` must be set)."""
        if self.question is None:
            raise ValueError("an inline probe has no question of its own")
        return self.question if isinstance(self.question, Turn) else Turn(user=self.question)


class Item(BaseModel):
    """One dataset line: a scripted session and its ground truth."""

    model_config = ConfigDict(extra="allow")

    id: FolderName = Field(min_length=1, description="Unique item id (folder name).")
    turns: list[TurnSpec] = Field(min_length=1, description="User turns, in order.")
    expected_facts: list[str] = Field(
        default_factory=list, description="Strings the final answer must contain (FactRecall)."
    )
    probes: list[Probe] = Field(default_factory=list, description="Mid-session questions.")


    def turn(self, index: int) -> Turn:
        """Turn ``index`` as a :class:`Turn` (strings become ``Turn(user=...)``)."""
        raw = self.turns[index]
        return raw if isinstance(raw, Turn) else Turn(user=raw)

    def tool_names(self) -> list[str]:
        """Every tool a turn or an isolated question scripts a result for, sorted."""
        scripted = [*self.turns, *(p.question for p in self.probes)]
        return sorted({name for t in scripted if isinstance(t, Turn) for name in t.tool_results})

    def isolated(self) -> Item:
        """This item with every inline probe made an isolated question.

        The probe's turn leaves ``turns`` and becomes its ``question``, asked after the
        turns that came before it; what follows is played as before.
        """
        inline = {p.turn for p in self.probes if p.question is None}
        if not inline:
            return self
        kept = [turn for index, turn in enumerate(self.turns) if index not in inline]
        if not kept:
            raise ValueError("every turn is a probe: nothing is left to play before them")
        # played[t]: turns still played among the first t (a question's new position).
        played = [0]
        for index in range(len(self.turns)):
            played.append(played[-1] + (index not in inline))
        probes = [p.model_copy(update={"turn": played[p.turn]}) if p.question is not None
                  else p.model_copy(update={"question": self.turns[p.turn],
                                            "turn": played[p.turn]})
                  for p in self.probes]
        return self.model_copy(update={"turns": kept, "probes": probes})

    def inlined(self) -> Item:
        """This item with every isolated question made a turn of the session, at its place.

        The questions then accumulate in the history, one after another, as the turns of
        a scripted session do; a question with neither expected strings nor evidence
        becomes a plain turn.
        """
        if all(p.question is None for p in self.probes):
            return self
        turns: list[str | Turn] = []
        at: dict[int, int] = {}  # an original turn's new index
        asked: dict[int, int] = {}  # a question's new index
        for point in range(len(self.turns) + 1):
            for number, probe in enumerate(self.probes):
                if probe.question is not None and probe.turn == point:
                    asked[number] = len(turns)
                    turns.append(probe.question)
            if point < len(self.turns):
                at[point] = len(turns)
                turns.append(self.turns[point])
        probes = [p.model_copy(update={"turn": at[p.turn]}) if p.question is None
                  else p.model_copy(update={"turn": asked[n], "question": None})
                  for n, p in enumerate(self.probes)
                  if p.question is None or p.expected or p.evidence]
        return self.model_copy(update={"turns": turns, "probes": probes})

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


MAX_PROBLEMS = 20
"""Problems a dataset file reports before the rest of it is left unread: a field wrong in
every element of a 500-instance file is one mistake, not 500 lines to scroll past."""


def enough_problems(problems: list[Problem], source: str) -> bool:
    """Whether ``problems`` reached :data:`MAX_PROBLEMS`; if so, a last line says the rest
    of ``source`` was not checked (a benchmark file's rest is not even read)."""
    if len(problems) < MAX_PROBLEMS:
        return False
    problems.append(Problem(source, "", f"stopped after {len(problems)} problems; the rest "
                            "of the file was not checked"))
    return True


def unresolved_evidence(items: Sequence[Item]) -> str | None:
    """One line on the evidence ids of ``items`` that name no line of their conversation,
    or ``None`` when every id resolved (the published LoCoMo file has a few such ids)."""
    ids = questions = nameless = 0
    for item in items:
        for probe in item.probes:
            if probe.evidence_unresolved:
                ids += probe.evidence_unresolved
                questions += 1
                nameless += not probe.evidence
    if not ids:
        return None
    left_out = (f"; left out of the evidence metrics: {nameless} naming none"
                if nameless else "")
    return (f"dataset: {ids} evidence id(s) in {questions} question(s) name no line of "
            f"their conversation: judged on the lines they name{left_out}")


def load_dataset(path: Path, *, source: str | None = None, format: str = "jsonl",
                 limit: int | None = None, questions: int | None = None,
                 probes: str | None = None) -> Dataset:
    """Read and validate a dataset file.

    :param source: how errors name the file (default: the path).
    :param format: ``jsonl`` (this module), ``locomo`` or ``longmemeval``
        (:mod:`mas.library.lab.formats`).
    :param limit: only the first ``limit`` items of the file (the rest is not read).
    :param questions: only the first ``questions`` probes of each item.
    :param probes: ``isolated`` turns inline probes into isolated questions, ``inline``
        isolated questions into turns (:meth:`Item.inlined`); ``None`` keeps the items as
        read.
    :raises ManifestError: every problem of the file (unknown file, bad line or element,
        duplicate id, a probe pointing past the last turn).
    """
    name = source or str(path)
    if format == "jsonl":
        dataset = _load_jsonl(Path(path), name, limit)
    else:
        # Imported here: the format readers build this module's items.
        from mas.library.lab.formats import read_benchmark

        dataset = Dataset(Path(path), read_benchmark(Path(path), name, format, limit))
    items = dataset.items
    if questions is not None:
        items = [_first_questions(item, questions) for item in items]
    if probes == "isolated":
        problems = []
        isolated = []
        for item in items:
            try:
                isolated.append(item.isolated())
            except ValueError as exc:
                problems.append(Problem(name, f"item {item.id!r}.probes", str(exc)))
        if problems:
            raise ManifestError(problems)
        items = isolated
    elif probes == "inline":
        items = [item.inlined() for item in items]
    return Dataset(dataset.path, items)


def _first_questions(item: Item, questions: int) -> Item:
    """``item`` with its first ``questions`` probes; inline probes beyond are plain turns."""
    return item.model_copy(update={"probes": item.probes[:questions]})


def _not_json_lines(path: Path, name: str, line: int) -> ManifestError:
    """The error of a JSONL dataset that is one JSON array: the format to set when its
    first element is a benchmark's (a LoCoMo or LongMemEval file given as a plain path)."""
    # Imported here: the format readers build this module's items.
    from mas.library.lab.formats import SIGNATURES, format_of
    from mas.library.lab.formats.stream import json_array_items

    try:
        element = next(iter(json_array_items(path, name, limit=1)), None)
    except ManifestError:  # not even its first element parses: the message says enough
        element = None
    found = format_of(element)
    fix = (f"a {SIGNATURES[found][0]} file: set experiment.dataset: {{path: ..., format: "
           f"{found}}}" if found else "a benchmark file needs experiment.dataset.format "
           "(locomo or longmemeval)")
    return ManifestError([Problem(name, f"line {line}", "opens a JSON array, but a JSON "
                                  f"Lines dataset has an item (a JSON object) per line; {fix}")])


def _load_jsonl(path: Path, name: str, limit: int | None) -> Dataset:
    """The items of a JSONL dataset (the first ``limit`` lines holding one)."""
    lines = read_lines(Path(path), name, "dataset")
    first = next((n for n, line in enumerate(lines, start=1) if line.strip()), None)
    if first is not None and lines[first - 1].lstrip().startswith("["):
        # One problem for the file, not one per line of an indented array.
        raise _not_json_lines(Path(path), name, first)
    problems: list[Problem] = []
    items: list[Item] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if enough_problems(problems, name):
            break
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
        misspelt = misspelt_fields(data)
        problems.extend(Problem(name, f"{where}.{key}", f"not a field of an item: did you mean "
                                f"{field!r}? (other keys are kept in item.json)")
                        for key, field in misspelt.items())
        try:
            item = Item.model_validate(data)
        except ValidationError as exc:
            # "turns: Field required" beside "turn: did you mean 'turns'?" says it twice.
            meant = {f"{where}.{field}" for field in misspelt.values()}
            problems.extend(p for p in problems_from_validation(exc, name, where, model=Item)
                            if not (p.location in meant and not p.has_value))
            continue
        if misspelt:
            continue
        if item.id in seen:
            problems.append(Problem(name, f"{where}.id",
                                    f"duplicate id (first on line {seen[item.id]})", item.id, True))
            continue
        seen[item.id] = number
        problems.extend(probe_problems(item, name, where))
        items.append(item)
        if limit is not None and len(items) >= limit:
            break
    if not items and not problems:
        problems.append(Problem(name, "", "the dataset has no item"))
    if problems:
        raise ManifestError(problems)
    return Dataset(path, items)


def misspelt_fields(data: dict[str, Any]) -> dict[str, str]:
    """The keys of an item that read as one of its fields misspelt (``expected_fact``,
    ``probe``), each with the field it reads as. Any other key is kept in ``item.json``;
    one of these would be kept too, and the facts or probes it meant to give would be
    scored as none, without a word. A key that holds a field's whole name
    (``probes_v2``, ``ids``) is a deliberate extra, not a slip, and is kept."""
    fields = list(Item.model_fields)
    found = {}
    for key in data:
        if key in Item.model_fields or any(name in key for name in fields):
            continue
        if close := difflib.get_close_matches(key, fields, n=1, cutoff=0.8):
            found[key] = close[0]
    return found


def probe_problems(item: Item, source: str, where: str) -> list[Problem]:
    """Probes of ``item`` that point past its turns: an inline probe must name a turn, an
    isolated question may come after the last one."""
    problems = []
    for index, probe in enumerate(item.probes):
        last = len(item.turns) if probe.question is not None else len(item.turns) - 1
        if probe.turn > last:
            problems.append(Problem(source, f"{where}.probes[{index}].turn",
                                    f"no such turn (the item has {len(item.turns)})",
                                    probe.turn, True))
    return problems
