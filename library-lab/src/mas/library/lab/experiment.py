"""Loading an experiment for the lab: every flavour compiled, the dataset read, the pipeline
checked — all before any session starts (the validation pass).

Every problem found (a missing application or overlay file, an unknown flavour, a bad
dataset line, an unknown step, a cycle, a model without a key) is collected and raised as
one :class:`~mas.runtime.errors.ManifestError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mas.library.lab.dataset import Dataset, Item, load_dataset
from mas.library.lab.keys import missing_key_problems
from mas.library.lab.pipeline import Pipeline, build_pipeline
from mas.runtime.errors import ManifestError, Problem
from mas.runtime.runtime import Runtime
from mas.runtime.spec.compile import CompiledAgent, compile_all
from mas.runtime.spec.experiment import DatasetSpec, Experiment, ExperimentBody
from mas.runtime.spec.loader import ManifestSet, load_manifest_set
from mas.runtime.spec.manifests import Agent
from mas.runtime.spec.overlay import deep_merge
from mas.runtime.spec.problems import problems_from_validation
from mas.runtime.spec.resolved import budget_check

DEFAULT_FLAVOUR = "default"
"""The single flavour of an experiment that lists none."""


@dataclass
class Flavour:
    """One arm of the ablation, compiled.

    :ivar name: the flavour name.
    :ivar manifests: the experiment and applications with this flavour's overlays and patch.
    :ivar agents: every application agent, bound and resolved.
    """

    name: str
    manifests: ManifestSet
    agents: list[CompiledAgent]

    @property
    def agent(self) -> CompiledAgent:
        """The agent a scripted session talks to: the first application agent."""
        return self.agents[0]


@dataclass
class LabExperiment:
    """An experiment ready to run.

    :ivar path: the experiment file.
    :ivar body: the ``experiment:`` mapping (after ``--model``).
    :ivar flavours: the selected flavours, compiled, in file order.
    :ivar dataset: the whole dataset; ``items`` is the ``--limit`` selection.
    :ivar pipeline: the steps, validated and ordered.
    :ivar base: the experiment and its applications as written (no flavour overlay or
        patch): the judge chain's step 7 reads the applications' ``spec.models[]`` here.
    """

    path: Path
    body: ExperimentBody
    flavours: list[Flavour]
    dataset: Dataset
    items: list[Item]
    pipeline: Pipeline
    options: dict[str, Any] = field(default_factory=dict)
    base: ManifestSet | None = None

    @property
    def name(self) -> str:
        """``experiment.name``."""
        return self.body.name

    def flavour(self, name: str) -> Flavour:
        """The compiled flavour called ``name``."""
        for flavour in self.flavours:
            if flavour.name == name:
                return flavour
        raise KeyError(name)


def load_lab_experiment(
    runtime: Runtime,
    path: Path,
    *,
    flavours: Sequence[str] = (),
    limit: int | None = None,
    model: str | None = None,
    config: Path | None = None,
    check_keys: bool = True,
    dataset: Path | None = None,
) -> LabExperiment:
    """Load, compile and check ``path`` for a lab run.

    :param flavours: only these flavours (``--flavour``); empty = all.
    :param limit: only the first ``limit`` dataset items (``--limit``).
    :param model: fill ``experiment.models.main`` with this model (``--model``).
    :param config: the local config.yaml.
    :param check_keys: refuse models whose provider key is not in the environment.
    :param dataset: read this file instead of ``experiment.dataset``'s (``--dataset``), in
        the format and with the options the experiment gives.
    :raises ManifestError: every problem found, before anything runs.
    """
    path = Path(path)
    source = str(path)
    base = _load(path, (), model, config)
    body = base.experiment.experiment  # type: ignore[union-attr]
    problems: list[Problem] = []
    declared = body.flavours or []
    known = [f.name for f in declared] or [DEFAULT_FLAVOUR]
    for wanted in flavours:
        if wanted not in known:
            problems.append(Problem(source, "--flavour", f"unknown flavour; the experiment has "
                                    f"{', '.join(known)}", wanted, True))
    compiled: list[Flavour] = []
    for index, declared_flavour in enumerate(declared):
        if flavours and declared_flavour.name not in flavours:
            continue
        where = f"experiment.flavours[{index}]"
        overlay_paths = []
        for j, overlay in enumerate(declared_flavour.overlays):
            overlay_path = path.parent / overlay
            if not overlay_path.is_file():
                problems.append(Problem(source, f"{where}.overlays[{j}]", "file not found",
                                        overlay, True))
            overlay_paths.append(overlay_path)
        if len(overlay_paths) != sum(p.is_file() for p in overlay_paths):
            continue
        flavour = _compile_flavour(runtime, path, declared_flavour.name, overlay_paths,
                                   declared_flavour.patch, where, model, config, problems)
        if flavour is not None:
            compiled.append(flavour)
    if not declared and (not flavours or DEFAULT_FLAVOUR in flavours):
        flavour = _compile_flavour(runtime, path, DEFAULT_FLAVOUR, [], {}, "experiment", model,
                                   config, problems)
        if flavour is not None:
            compiled.append(flavour)
    for flavour in compiled:  # what each session's budget would refuse (agent.md "Bounds")
        problems.extend(p for p in budget_check(flavour.agents, flavour.manifests)
                        if p not in problems)
    if not body.applications or any(not flavour.agents for flavour in compiled):
        problems.append(Problem(source, "experiment.applications",
                                "the lab needs an application with an Agent to talk to"))
    loaded = _dataset(path, body, problems, dataset)
    pipeline = build_pipeline(runtime, body.application.post, source, problems)
    problems.extend(_metric_problems(runtime, pipeline, source))
    if check_keys and not problems:
        problems.extend(missing_key_problems(runtime, compiled, pipeline, base, source))
    if problems:
        raise ManifestError(problems)
    assert loaded is not None
    options: dict[str, Any] = {"flavours": sorted(set(flavours)), "limit": limit, "model": model}
    if dataset is not None:
        options["dataset"] = str(dataset)
    return LabExperiment(
        path=path, body=body, flavours=compiled, dataset=loaded,
        items=loaded.limited(limit), pipeline=pipeline, options=options, base=base,
    )


def check_experiment(runtime: Runtime, path: Path, *, config: Path | None = None) -> list[Problem]:
    """The problems :func:`load_lab_experiment` would raise for ``path`` (``mas-ctl
    validate``): every check ``lab run`` runs before its first session, except provider
    keys, which belong to the machine that runs, not to the manifests."""
    try:
        load_lab_experiment(runtime, path, config=config, check_keys=False)
    except ManifestError as exc:
        return list(exc.problems)
    return []


def _load(
    path: Path, overlays: Sequence[Path], model: str | None, config: Path | None
) -> ManifestSet:
    manifests = load_manifest_set([path], overlays=list(overlays), config=config)
    if manifests.experiment is None:
        raise ManifestError([Problem(str(path), "", "not an experiment file (no top-level "
                                     "'experiment:' key)")])
    if model:
        body = manifests.experiment.experiment
        models = {**body.models, "main": model}
        body = body.model_copy(update={"models": models, "model": None})
        manifests.experiment = Experiment(experiment=body)
    return manifests


def _compile_flavour(
    runtime: Runtime, path: Path, name: str, overlays: list[Path], patch: dict[str, Any],
    where: str, model: str | None, config: Path | None, problems: list[Problem],
) -> Flavour | None:
    try:
        manifests = _load(path, overlays, model, config)
        if patch:
            _apply_patch(manifests, patch, str(path), f"{where}.patch")
        return Flavour(name, manifests, compile_all(runtime, manifests))
    except ManifestError as exc:
        problems.extend(p for p in exc.problems if p not in problems)
        return None


def _apply_patch(manifests: ManifestSet, patch: dict[str, Any], source: str, where: str) -> None:
    """Deep-merge a flavour's inline ``patch`` into every agent spec (after the overlays)."""
    for loaded in manifests.agents:
        data = loaded.agent.model_dump(mode="json", by_alias=True, exclude_unset=True)
        data["spec"] = deep_merge(data.get("spec") or {}, patch)
        try:
            loaded.agent = Agent.model_validate(data)
        except ValidationError as exc:
            found = problems_from_validation(exc, source, model=Agent)
            # The patch is of the spec: locate problems inside the patch, not the agent.
            raise ManifestError([replace(p, location=where + p.location.removeprefix("spec"))
                                 for p in found]) from None


def _metric_problems(runtime: Runtime, pipeline: Pipeline, source: str) -> list[Problem]:
    """Unknown metric ids and bad prompt metrics of the ``eval_mce`` steps."""
    from mas.library.eval import bind_metrics

    problems: list[Problem] = []
    for step in pipeline.steps:
        if step.entry.name != "eval_mce":
            continue
        try:
            config: Any = step.params
            bind_metrics(runtime, config.metrics, config.prompt_metrics, source=source,
                         location=f"{step.declared}.config")
        except ManifestError as exc:
            problems.extend(exc.problems)
    return problems


def _dataset(path: Path, body: ExperimentBody, problems: list[Problem],
             override: Path | None = None) -> Dataset | None:
    """The experiment's dataset; ``override`` (``--dataset``) replaces its file."""
    spec = body.dataset
    if spec is None and override is None:
        problems.append(Problem(str(path), "experiment.dataset",
                                "the lab needs a dataset (a JSONL file, or {path, format})"))
        return None
    spec = spec or DatasetSpec(path=str(override))
    location = "--dataset" if override is not None else "experiment.dataset"
    dataset_path = Path(override) if override is not None else path.parent / spec.path
    if not dataset_path.is_file():
        problems.append(Problem("<command line>" if override is not None else str(path),
                                location, "file not found", str(override or spec.path), True))
        return None
    try:
        return load_dataset(dataset_path, format=spec.format, limit=spec.limit,
                            questions=spec.questions, probes=spec.probes)
    except ManifestError as exc:
        problems.extend(exc.problems)
        return None
