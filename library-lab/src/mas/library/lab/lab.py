"""Running an experiment end to end, and re-reporting a run folder.

::

    from mas.library.lab import run_experiment
    outcome = run_experiment(Runtime.create(), Path("experiment.yaml"), max_concurrency=2)
    outcome.run.path / "report.html", outcome.ok
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from mas.library.lab.dataset import unresolved_evidence
from mas.library.lab.experiment import LabExperiment, load_lab_experiment
from mas.library.lab.pipeline import (
    BLOCKED,
    FAILED,
    OK,
    SKIPPED,
    Pipeline,
    PlannedStep,
    StepRecord,
    build_pipeline,
    run_pipeline,
)
from mas.library.lab.rundir import (
    PIPELINE_FILE,
    RUN_FILE,
    RunFolder,
    open_run,
    read_json,
    write_json,
)
from mas.library.lab.sessions import SessionFunction
from mas.library.lab.steps import StepContext
from mas.runtime.errors import ManifestError, MasError, Problem
from mas.runtime.runtime import Runtime
from mas.runtime.spec.experiment import Runner, StepSpec
from mas.runtime.spec.problems import problems_from_validation

log = logging.getLogger(__name__)

REPORT_STEPS = ("extract_trajectories", "aggregate", "report")
"""Step types ``mas-ctl lab report`` re-runs over an existing run folder."""


@dataclass
class LabOutcome:
    """What one pass did: the run folder, whether it was resumed, and each step's record."""

    run: RunFolder
    resumed: bool
    records: dict[str, StepRecord] = field(default_factory=dict)

    def vouches_for(self, name: str) -> bool:
        """Whether a step of this pass wrote the run-folder file ``name`` or found it
        current; a file no finished step names was left by an earlier pass."""
        return any(r.status in (OK, SKIPPED) and name in r.outputs
                   for r in self.records.values())

    @property
    def ok(self) -> bool:
        """No step failed or was blocked."""
        return all(r.status not in (FAILED, BLOCKED) for r in self.records.values())


def run_experiment(
    runtime: Runtime,
    path: Path,
    *,
    flavours: Sequence[str] = (),
    limit: int | None = None,
    model: str | None = None,
    max_concurrency: int = 2,
    overwrite: bool = False,
    new: bool = False,
    runs_root: Path = Path("runs"),
    config: Path | None = None,
    session_function: SessionFunction | None = None,
    stream: IO[str] | None = None,
    check_keys: bool = True,
    backend: str | None = None,
    address: str | None = None,
    dataset: Path | None = None,
) -> LabOutcome:
    """Validate everything, then run (or resume) the experiment's pipeline.

    :param session_function: how a session is run (default: the kernel's agent session).
    :param stream: progress and step lines (``None``: silent).
    :param backend: where sessions run (``local`` or ``ray``); default ``experiment.runner``.
    :param address: the Ray cluster to join; default ``experiment.runner.address``.
    :param dataset: read this file instead of ``experiment.dataset``'s (``--dataset``).
    :raises ManifestError: anything wrong in the experiment, before any session starts.
    """
    if max_concurrency < 1:
        raise ManifestError([_option_problem(path, "--max-concurrency", max_concurrency)])
    if limit is not None and limit < 1:
        raise ManifestError([_option_problem(path, "--limit", limit)])
    experiment = load_lab_experiment(runtime, path, flavours=flavours, limit=limit, model=model,
                                     config=config, check_keys=check_keys, dataset=dataset)
    _log_models(experiment)
    runner = runner_settings(experiment, path, backend=backend, address=address)
    run, resumed = open_run(runs_root, experiment, new=new)
    with run.locked():
        _store_pipeline(run, experiment.pipeline)
        _say(stream, f"{'resuming' if resumed else 'new'} run folder {run.path}")
        if (note := unresolved_evidence(experiment.items)) is not None:
            _say(stream, note)
        records = _run(runtime, run, experiment.pipeline, experiment=experiment,
                       overwrite=overwrite, session_function=session_function,
                       max_concurrency=max_concurrency, stream=stream, runner=runner)
    return LabOutcome(run, resumed, records)


def report_run(runtime: Runtime, run_dir: Path, *, stream: IO[str] | None = None) -> LabOutcome:
    """Redo trajectories, aggregate and report over an existing run folder.

    :raises MasError: ``run_dir`` is not a lab run folder or has no sessions.
    """
    run = RunFolder(Path(run_dir))
    info = read_json(run.path / RUN_FILE)
    if not isinstance(info, dict):
        raise MasError(f"{run_dir}: not a lab run folder (no {RUN_FILE})")
    specs = [StepSpec.model_validate(s) for s in info.get("pipeline") or []
             if s.get("type") in REPORT_STEPS]
    specs = specs or [StepSpec(type=t) for t in REPORT_STEPS]
    problems: list[Any] = []
    planned = build_pipeline(runtime, specs, str(run.path / RUN_FILE), problems)
    if problems:
        raise ManifestError(problems)
    kept = Pipeline([p for p in planned.steps if p.spec.type in REPORT_STEPS])
    for step in kept.steps:
        step.spec.depends_on = [d for d in step.spec.depends_on if d in kept.names()]
    with run.locked():
        records = _run(runtime, run, kept, overwrite=True, stream=stream)
    return LabOutcome(run, True, records)


def _run(runtime: Runtime, run: RunFolder, pipeline: Pipeline, *,
         experiment: LabExperiment | None = None, overwrite: bool,
         session_function: SessionFunction | None = None, max_concurrency: int = 2,
         stream: IO[str] | None = None, runner: Runner | None = None) -> dict[str, StepRecord]:
    stored = run.steps()

    def context(step: PlannedStep, records: dict[str, StepRecord]) -> StepContext:
        return StepContext(runtime=runtime, run=run, spec=step.spec, records=records,
                           experiment=experiment, session_function=session_function,
                           max_concurrency=max_concurrency, overwrite=overwrite, stream=stream,
                           runner=runner)

    def persist(record: StepRecord) -> None:
        stored[record.name] = record.to_json()
        write_json(run.path / PIPELINE_FILE, stored)
        detail = record.error or record.message
        _say(stream, f"{record.status:>7}  {record.name}: {detail}")

    return run_pipeline(pipeline, context, overwrite=overwrite, previous=dict(stored),
                        exists=lambda rel: (run.path / rel).exists(), on_record=persist)


def runner_settings(experiment: LabExperiment, path: Path, *, backend: str | None = None,
                    address: str | None = None) -> Runner:
    """``experiment.runner`` with ``--backend`` / ``--address`` on top.

    :raises ManifestError: an unknown backend, an address given for the local one, or a Ray
        address where nothing answers (before any run folder is made).
    """
    settings = experiment.body.runner.model_dump(exclude_unset=True)
    if backend:
        settings["backend"] = backend
        if backend == "local":
            settings.pop("address", None)  # --backend local runs here whatever the file says
    if address:
        settings["address"] = address
    try:
        runner = Runner.model_validate(settings)
    except ValidationError as exc:
        raise ManifestError(problems_from_validation(exc, str(path), "--backend",
                                                     model=Runner)) from None
    where = "--address" if address else "experiment.runner.address"
    if runner.backend == "local" and runner.address:
        raise ManifestError([Problem(str(path), where, "only the ray backend joins a cluster "
                                     "(set backend: ray, or --backend ray)", runner.address,
                                     True)])
    if runner.backend == "ray":
        from mas.library.lab.executors.ray_backend import unreachable

        problem = unreachable(runner.address)
        if problem:
            raise ManifestError([Problem(str(path), where, problem, runner.address, True)])
    return runner


def _store_pipeline(run: RunFolder, pipeline: Pipeline) -> None:
    info = run.info
    info["pipeline"] = [p.spec.model_dump(mode="json") for p in pipeline.steps]
    write_json(run.path / RUN_FILE, info)


def _log_models(experiment: LabExperiment) -> None:
    for flavour in experiment.flavours:
        agent = flavour.agent
        summarizer = agent.summarizer_model
        log.info("flavour %s: context_manager=%s turn model=%s source=%s "
                 "summarizer model=%s source=%s",
                 flavour.name, agent.binding.type, agent.turn_model.model,
                 agent.turn_model.source, summarizer.model if summarizer else None,
                 summarizer.source if summarizer else None)


def _option_problem(path: Path, option: str, value: object) -> Any:
    from mas.runtime.errors import Problem

    return Problem(str(path), option, "must be at least 1", value, True)


def _say(stream: IO[str] | None, text: str) -> None:
    if stream is not None:
        stream.write(text + "\n")
        stream.flush()
