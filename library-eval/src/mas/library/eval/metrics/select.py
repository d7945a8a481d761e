"""Turning what a user names (ids, aliases, bindings, inline prompt metrics) into metrics.

``GoalSuccessRate``, ``goal_success_rate`` and ``goal-success-rate`` all bind the same
registered metric; the result always carries the MCE id. Every problem is reported before
anything is scored, one line each, naming the field and the value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from mas.library.eval.metrics.base import Metric
from mas.library.eval.metrics.judge import PromptMetricParams, prompt_metric
from mas.runtime.errors import ManifestError, Problem, UnknownTypeError
from mas.runtime.registry import TypeEntry
from mas.runtime.runtime import Runtime
from mas.runtime.spec.binding import Binding
from mas.runtime.spec.problems import problems_from_validation

PROMPT_METRIC_TYPE = "prompt_metric"
"""Registry name of the inline prompt metric (bound from ``prompt_metrics``, not by id)."""


@dataclass(frozen=True)
class CatalogEntry:
    """One available metric for ``--list-metrics``: ids, aliases, what it judges, inputs."""

    id: str
    name: str
    aliases: tuple[str, ...]
    kind: str
    description: str
    inputs: tuple[str, ...]
    provider: str
    default: bool


def _build_default(runtime: Runtime, entry: TypeEntry) -> Metric | None:
    # A metric whose params have required fields (prompt_metric) is a template, not a
    # ready-made id: it is only bound with params.
    try:
        params = entry.validate_params({})
    except ValidationError:
        return None
    try:
        metric: Metric = entry.factory(params, None)
    except BaseException as exc:  # nobody asked for it by name: fault its plugin, score the rest
        runtime.fail_factory(entry, exc, stage="call")
        return None
    return metric


def catalog(runtime: Runtime) -> list[CatalogEntry]:
    """Every registered ready-made metric, sorted by id."""
    found = []
    for entry in runtime.registries.eval_metric:
        metric = _build_default(runtime, entry)
        if metric is None:
            continue
        found.append(CatalogEntry(
            id=metric.id, name=entry.name, aliases=entry.aliases, kind=metric.kind,
            description=metric.description or entry.description, inputs=tuple(metric.inputs),
            provider=entry.provider.describe(), default=True,
        ))
    return sorted(found, key=lambda item: item.id)


def available_ids(runtime: Runtime) -> str:
    """``GoalSuccessRate (goal_success_rate), ...`` for error messages."""
    return ", ".join(f"{item.id} ({item.name})" for item in catalog(runtime))


def bind_metrics(
    runtime: Runtime,
    metrics: list[str | dict[str, Any]] | None = None,
    prompt_metrics: Sequence[PromptMetricParams | dict[str, Any]] = (),
    *,
    source: str = "<eval>",
    location: str = "",
) -> list[Metric]:
    """The metrics to score: named ones (or every ready-made one) plus inline prompt metrics.

    :param metrics: ids, aliases or ``{type, params}`` bindings; ``None`` = every registered
        metric that needs no params.
    :param prompt_metrics: inline metrics (``id``, ``prompt``, ``unit``, ``evidence``).
    :param source: file name for error lines; ``location``: YAML path of the config.
    :raises ManifestError: unknown ids (listing the available ones), invalid params, a
        prompt metric without ``prompt``, duplicate ids.
    """
    problems: list[Problem] = []
    bound: list[Metric] = []
    registry = runtime.registries.eval_metric
    where = f"{location}." if location else ""
    if metrics is None:
        # Looked up by name, so the registry counts each as used (a run's provenance).
        bound = [m for m in (_build_default(runtime, registry.get(e.name)) for e in registry)
                 if m is not None]
    for index, raw in enumerate(metrics or []):
        at = f"{where}metrics[{index}]"
        try:
            binding = Binding.model_validate(raw)
        except ValidationError as exc:
            problems.extend(problems_from_validation(exc, source, at, model=Binding))
            continue
        try:
            entry = registry.get(binding.type)
            params = entry.validate_params(binding.params)
        except UnknownTypeError as exc:
            problems.append(Problem(source, at, f"unknown metric id{_hint(exc)}; available: "
                                    f"{available_ids(runtime)}", raw, True))
            continue
        except ValidationError as exc:
            problems.extend(problems_from_validation(exc, source, f"{at}.params",
                                                     model=entry.params))
            continue
        bound.append(entry.factory(params, None))
    for index, item in enumerate(prompt_metrics):
        at = f"{where}prompt_metrics[{index}]"
        try:
            params = item if isinstance(item, PromptMetricParams) else \
                PromptMetricParams.model_validate(item)
        except ValidationError as exc:
            problems.extend(problems_from_validation(exc, source, at,
                                                     model=PromptMetricParams))
            continue
        if params.id in registry:
            problems.append(Problem(source, f"{at}.id", "clashes with a registered metric id; "
                                    "pick another id", params.id, True))
            continue
        bound.append(prompt_metric(params))
    problems.extend(_duplicates(bound, source, location))
    if problems:
        raise ManifestError(problems)
    return bound


def _hint(exc: UnknownTypeError) -> str:
    message = str(exc)
    start = message.find(" (did you mean")
    return message[start: message.find(")", start) + 1] if start >= 0 else ""


def _duplicates(bound: list[Metric], source: str, location: str) -> list[Problem]:
    seen: set[str] = set()
    problems = []
    for metric in bound:
        if metric.id in seen:
            problems.append(Problem(source, location or "metrics", "metric id given twice",
                                    metric.id, True))
        seen.add(metric.id)
    return problems
