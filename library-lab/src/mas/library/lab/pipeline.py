"""The pipeline: stock steps plus ``experiment.application.post``, checked and run as a DAG.

Every experiment runs the stock template ``run_sessions`` -> ``extract_trajectories`` ->
``eval_mce`` -> ``aggregate`` -> ``report``. A ``post`` step whose name matches a stock
step replaces it; other ``post`` steps are added, run after ``run_sessions``, and feed
``aggregate``. When ``post`` declares a step of type ``eval_mce`` (under any name), the
stock ``eval_mce`` is left out.

Checks before anything runs: every type registered, every config valid for its type, every
``depends_on`` naming a step, no cycle (the cycle is named). While running, a failed step
skips its dependents but not the independent steps; a step whose declared outputs all
exist is skipped unless ``overwrite``.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from mas.runtime.errors import Problem, UnknownTypeError
from mas.runtime.protocols import Step, StepResult
from mas.runtime.registry import TypeEntry, fold_type_name
from mas.runtime.runtime import Runtime
from mas.runtime.spec.experiment import StepSpec
from mas.runtime.spec.problems import problems_from_validation

log = logging.getLogger(__name__)

SESSIONS = "run_sessions"
EVAL = "eval_mce"
AGGREGATE = "aggregate"

STOCK: tuple[tuple[str, tuple[str, ...]], ...] = (
    (SESSIONS, ()),
    ("extract_trajectories", (SESSIONS,)),
    (EVAL, ("extract_trajectories",)),
    (AGGREGATE, ("extract_trajectories",)),
    ("report", (AGGREGATE,)),
)
"""The stock template: step name (= type) and what it depends on."""

OK, SKIPPED, FAILED, BLOCKED = "ok", "skipped", "failed", "blocked"


@dataclass
class PlannedStep:
    """A step of the pipeline, validated.

    :ivar spec: name, type, effective ``depends_on`` and raw config.
    :ivar entry: the registered type.
    :ivar params: the validated config.
    :ivar declared: where it was declared (``experiment.application.post[i]`` or ``stock``).
    """

    spec: StepSpec
    entry: TypeEntry
    params: BaseModel
    declared: str

    @property
    def name(self) -> str:
        """The step name."""
        return self.spec.step_name

    def build(self) -> Step:
        """The step object: ``factory(params, spec)``."""
        step: Step = self.entry.factory(self.params, self.spec)
        return step


@dataclass
class Pipeline:
    """The steps in a topological order (ties keep declaration order)."""

    steps: list[PlannedStep]

    def names(self) -> list[str]:
        """Step names, in run order."""
        return [step.name for step in self.steps]


def build_pipeline(
    runtime: Runtime, post: list[StepSpec], source: str, problems: list[Problem]
) -> Pipeline:
    """The checked, ordered pipeline; problems are appended to ``problems``."""
    declared = {step.step_name: (step, f"experiment.application.post[{i}]")
                for i, step in enumerate(post)}
    has_eval = any(fold_type_name(step.type) == EVAL for step in post)
    specs: dict[str, tuple[StepSpec, str]] = {}
    for name, needs in STOCK:
        if name == EVAL and has_eval and name not in declared:
            continue
        stock = (StepSpec(type=name, depends_on=list(needs)), "stock")
        specs[name] = declared.pop(name) if name in declared else stock
    specs.update(declared)
    extra = [name for name, (_, where) in specs.items()
             if where != "stock" and name not in dict(STOCK)]
    planned: dict[str, PlannedStep] = {}
    for name, (spec, where) in specs.items():
        depends = list(spec.depends_on)
        if name != SESSIONS and SESSIONS not in depends:
            depends.insert(0, SESSIONS)
        if name == AGGREGATE and where == "stock":
            depends += [n for n in [*extra, EVAL] if n in specs and n not in depends]
        spec = spec.model_copy(update={"depends_on": depends})
        step = _plan(runtime, spec, where, source, problems)
        if step is not None:
            planned[name] = step
    for name, (spec, where) in specs.items():
        for j, needed in enumerate(spec.depends_on):
            if needed not in specs:
                problems.append(Problem(source, f"{where}.depends_on[{j}]",
                                        f"step {name!r} depends on an unknown step; steps: "
                                        f"{', '.join(specs)}", needed, True))
    cycle = find_cycle({n: [d for d in p.spec.depends_on if d in planned]
                        for n, p in planned.items()})
    if cycle:
        problems.append(Problem(source, "experiment.application.post",
                                f"the steps form a cycle: {' -> '.join(cycle)}"))
        return Pipeline(list(planned.values()))
    return Pipeline(_order(planned))


def _plan(runtime: Runtime, spec: StepSpec, where: str, source: str,
          problems: list[Problem]) -> PlannedStep | None:
    try:
        entry = runtime.registries.lab_step.get(spec.type)
    except UnknownTypeError as exc:
        problems.append(Problem(source, f"{where}.type", str(exc)))
        return None
    try:
        params = entry.validate_params(spec.config)
    except ValidationError as exc:
        problems.extend(problems_from_validation(exc, source, f"{where}.config",
                                                model=entry.params))
        return None
    return PlannedStep(spec, entry, params, where)


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """A cycle of ``graph`` (node -> nodes it depends on) as ``[a, b, ..., a]``, or ``None``."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for needed in graph.get(node, []):
            if state.get(needed) == 1:
                return [*stack[stack.index(needed):], needed]
            if needed not in state:
                found = visit(needed)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in graph:
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _order(planned: dict[str, PlannedStep]) -> list[PlannedStep]:
    done: list[str] = []
    remaining = list(planned)
    while remaining:
        ready = next(n for n in remaining
                     if all(d in done or d not in planned for d in planned[n].spec.depends_on))
        done.append(ready)
        remaining.remove(ready)
    return [planned[name] for name in done]


@dataclass
class StepRecord:
    """What happened to one step in one pipeline pass (stored in ``pipeline.json``)."""

    name: str
    type: str
    status: str
    message: str = ""
    outputs: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The record as JSON data."""
        return asdict(self)


def run_pipeline(
    pipeline: Pipeline,
    make_context: Callable[[PlannedStep, dict[str, StepRecord]], Any],
    *,
    overwrite: bool = False,
    previous: dict[str, dict[str, Any]] | None = None,
    exists: Callable[[str], bool],
    on_record: Callable[[StepRecord], None] = lambda record: None,
) -> dict[str, StepRecord]:
    """Run every step in order.

    :param make_context: builds the step's context from the step and the records so far.
    :param previous: records of an earlier pass (a skipped step keeps its metadata).
    :param exists: whether a run-folder-relative output path exists.
    :param on_record: called with each record as soon as it is known (to persist it).
    """
    records: dict[str, StepRecord] = {}
    for planned in pipeline.steps:
        blocked = [d for d in planned.spec.depends_on if records[d].status in (FAILED, BLOCKED)]
        if blocked:
            record = StepRecord(planned.name, planned.spec.type, BLOCKED,
                                f"not run: {', '.join(blocked)} did not finish")
        else:
            # A step whose input was just rewritten is redone even if its outputs exist.
            stale = any(records[d].status == OK for d in planned.spec.depends_on)
            record = _run_one(planned, make_context(planned, records), overwrite or stale,
                              (previous or {}).get(planned.name), exists)
        records[planned.name] = record
        on_record(record)
    return records


def _run_one(planned: PlannedStep, ctx: Any, overwrite: bool,
             previous: dict[str, Any] | None, exists: Callable[[str], bool]) -> StepRecord:
    started = time.monotonic()
    try:
        step = planned.build()
        outputs = step.outputs(ctx)
        if outputs and not overwrite and all(exists(path) for path in outputs):
            earlier = previous or {}
            return StepRecord(planned.name, planned.spec.type, SKIPPED,
                              "outputs exist (use --overwrite to redo)", outputs,
                              dict(earlier.get("metadata") or {}))
        result: StepResult = step.run(ctx)
    except Exception as exc:  # one failed step must not stop independent steps
        log.debug("step %s failed:\n%s", planned.name, traceback.format_exc())
        return StepRecord(planned.name, planned.spec.type, FAILED,
                          error=f"{type(exc).__name__}: {exc}",
                          seconds=round(time.monotonic() - started, 3))
    return StepRecord(planned.name, planned.spec.type, OK, result.message, list(result.outputs),
                      dict(result.metadata), seconds=round(time.monotonic() - started, 3))
